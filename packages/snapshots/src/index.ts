/** The snapshot swap pipeline: download, then verify, into a temporary file; atomic swap; restore; generations. */
export { SnapshotCheckers, type SnapshotCheckersOptions } from './checkers.js';
export { blocksPath, type SnapshotTransfer } from './delta-download.js';
export {
  DiskFullError,
  InsufficientDiskSpaceError,
  PreparedSnapshotGoneError,
  TruncatedDownloadError,
} from './errors.js';
export {
  GENERATIONS_KEPT,
  type GenerationFile,
  generationDirFor,
  generationFile,
  generationsRoot,
  generationsRootFor,
  heldGenerations,
  linkGeneration,
  pruneGenerations,
  pruneRetained,
} from './generations.js';
export {
  type Authenticated,
  type AuthenticateInput,
  authenticateSnapshot,
  type LiveSnapshot,
  liveSignatureProblem,
  readHeartbeat,
} from './signatures.js';
export {
  type CommitControl,
  type CommitStep,
  checkLiveFile,
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
  removeTemporaries,
  restoreLocal,
  type SnapshotFilesOptions,
  type SnapshotTarget,
  type VerifyControl,
  verifySnapshot,
} from './snapshot-files.js';
