/**
 * `@ferry/core/base`: the core without its two heavy parts — config values and their rules, the
 * metadata model, notification routing, signing, locations, errors, and the dataset machine's
 * plain-data views (status, staleness). What the runtime's threads other than a dataset thread load
 * (a dataset thread takes its share from `@ferry/core/machine`). Not here:
 *
 * - the dataset machine's chart (`createDatasetMachine`, `datasetMachine`: XState, and the machine
 *   built when its module loads, ~35 ms of a thread's start): `@ferry/core/machine`, `@ferry/core`;
 * - the spicepod loader (`loadSpicepod`: the `yaml` parser, ~60 ms): `@ferry/core`.
 *
 * `test/architecture/thread-imports.test.ts` holds each thread to what it needs.
 */
export * from './backoff.js';
export * from './config/index.js';
export * from './engines.js';
export * from './error-status.js';
export * from './errors.js';
export * from './location.js';
export * from './log-levels.js';
export * from './machine/views.js';
export * from './metadata/index.js';
export * from './notifications/index.js';
export * from './ports.js';
export * from './signing/index.js';
export * from './snapshot-pins.js';
export * from './spice-docs.js';
