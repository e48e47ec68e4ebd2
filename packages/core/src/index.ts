/**
 * @ferry/core: the pure heart of Ferry — config, metadata model, dataset machine, routing. No I/O.
 *
 * Narrower entries, for threads that must start cheaply:
 * - `@ferry/core/base`: all of it but the spicepod loader (`yaml`, ~60 ms to load) and the dataset
 *   machine's chart (XState and the machine built at load, ~35 ms);
 * - `@ferry/core/machine`: a dataset thread's share (the chart, its status views, errors);
 * - `@ferry/core/common`: errors and log levels, for the plumbing every thread loads.
 */

export * from './base.js';
export { loadSpicepod, throwIfFatal, throwIfInvalid } from './config/spicepod.js';
export * from './machine/index.js';
