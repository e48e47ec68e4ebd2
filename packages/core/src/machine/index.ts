/** The dataset machine's public face: the machine, its types and the status view. */
export { type DatasetMachine, type DatasetSnapshot, datasetMachine } from './dataset-machine.js';
export { ActorNotProvidedError, CurrentSnapshotMissingError } from './errors.js';
export {
  type DatasetSnapshotLike,
  type DatasetStateName,
  type DatasetStatus,
  datasetStateName,
  datasetStatus,
} from './status.js';
export type * from './types.js';
