/** The snapshot swap pipeline: download, then verify, into a temporary file; atomic swap; serving across swaps. */
export {
  DiskFullError,
  InsufficientDiskSpaceError,
  PreparedSnapshotGoneError,
  TruncatedDownloadError,
} from './errors.js';
export {
  GENERATIONS_KEPT,
  generationDirFor,
  generationsRoot,
  generationsRootFor,
  linkGeneration,
  pruneGenerations,
} from './generations.js';
export { ServingEngine, type ServingEngineOptions, type ServingLease } from './serving-engine.js';
export {
  type CommitControl,
  type CommitStep,
  commitSnapshot,
  type DownloadedSnapshot,
  type DownloadProgress,
  discardPrepared,
  downloadSnapshot,
  type LiveFileOptions,
  type LocalSnapshot,
  manifestPath,
  nextManifestPath,
  type PrepareControl,
  type PreparedSnapshot,
  prepareSnapshot,
  releasePrepared,
  removeTemporaries,
  restoreLocal,
  type SnapshotFilesOptions,
  type SnapshotTarget,
  verifySnapshot,
} from './snapshot-files.js';
