/** @ferry/core: the pure heart of Ferry — config, metadata model, dataset machine, routing. No I/O. */
export * from './errors.js';
export * from './metadata/schema.js';
export * from './metadata/types.js';
export * from './ports.js';
