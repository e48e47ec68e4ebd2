/** @ferry/writer: build snapshot files and publish them to a snapshot store (S3 or file://). */

export {
  type BuildSnapshotOptions,
  type BuiltSnapshot,
  buildSnapshotFile,
  type SnapshotSource,
} from './build.js';
export { DUCKDB_BUILD_SETTINGS } from './build-duckdb.js';
export { type SqliteColumn, sqliteColumnFor } from './build-sqlite.js';
export * from './errors.js';
export {
  type IncrementalPublishResult,
  type PublishIncrementalOptions,
  publishIncremental,
} from './incremental.js';
export { type PublishResult, type PublishSnapshotOptions, publishSnapshot } from './publish.js';
export {
  type HeartbeatOptions,
  type HeartbeatResult,
  publishHeartbeat,
  type SigningKeyInput,
} from './sign.js';
export { snapshotKey, snapshotTimestamp } from './snapshot-key.js';
export type { ProgressCallback } from './upload.js';
