/** The dataset machine's public face: the machine (and its factory), its types and the status view. */
export {
  createDatasetMachine,
  type DatasetMachine,
  type DatasetSnapshot,
  datasetMachine,
  type PollTimerInput,
} from './dataset-machine.js';
export { ActorNotProvidedError, CurrentSnapshotMissingError } from './errors.js';
export {
  type BoundedStaleness,
  datasetStaleness,
  formatStaleness,
  isStalerThan,
  nextStaleCrossingMs,
  type StaleCrossing,
  type Staleness,
  type StalenessFacts,
  staleCrossingMessage,
  staleCrossings,
} from './staleness.js';
export {
  type DatasetSnapshotLike,
  type DatasetStateName,
  type DatasetStatus,
  datasetStateName,
  datasetStatus,
} from './status.js';
export type * from './types.js';
