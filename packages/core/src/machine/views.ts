/**
 * The dataset machine's plain-data face, without the chart (no XState at run time): its types, its
 * errors, the status and staleness views. `@ferry/core/base` exports this; `./index.ts` adds the chart.
 */
export type { DatasetMachine, DatasetSnapshot, PollTimerInput } from './dataset-machine.js';
export { ActorNotProvidedError, CurrentSnapshotMissingError } from './errors.js';
export {
  type BoundedStaleness,
  datasetStaleness,
  formatStaleness,
  freshnessClock,
  isStalerThan,
  nextStaleCrossingMs,
  type StaleCrossing,
  type Staleness,
  type StalenessFacts,
  staleCrossingMessage,
  staleCrossings,
  storeVouchesFor,
} from './staleness.js';
export {
  type DatasetSnapshotLike,
  type DatasetStateName,
  type DatasetStatus,
  datasetStateName,
  datasetStatus,
} from './status.js';
export type * from './types.js';
