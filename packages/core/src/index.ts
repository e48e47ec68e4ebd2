/** @ferry/core: the pure heart of Ferry — config, metadata model, dataset machine, routing. No I/O. */

export * from './backoff.js';
export * from './config/index.js';
export * from './engines.js';
export * from './error-status.js';
export * from './errors.js';
export * from './location.js';
export * from './log-levels.js';
export * from './machine/index.js';
export * from './metadata/index.js';
export * from './notifications/index.js';
export * from './ports.js';
export * from './signing/index.js';
export * from './snapshot-pins.js';
export * from './spice-docs.js';
