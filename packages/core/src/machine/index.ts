/** The dataset machine's public face: the machine (and its factory), its types, the status view and the backoff rule. */
export { BACKOFF_JITTER, backoffBaseMs, DEFAULT_MAX_BACKOFF_MS, retryBackoffMs } from './backoff.js';
export {
  createDatasetMachine,
  type DatasetMachine,
  type DatasetSnapshot,
  datasetMachine,
  type PollTimerInput,
} from './dataset-machine.js';
export { ActorNotProvidedError, CurrentSnapshotMissingError } from './errors.js';
export { SNAPSHOTS_DOCS } from './log-lines.js';
export {
  type DatasetSnapshotLike,
  type DatasetStateName,
  type DatasetStatus,
  datasetStateName,
  datasetStatus,
} from './status.js';
export type * from './types.js';
