/**
 * The log texts Spice's snapshot reader prints for the events the dataset machine also meets,
 * word for word (its waiting line, its rollback warning, its bootstrap-failure and fallback lines),
 * so operators who grep Spice's logs find the same lines in Ferry's. Ferry's structured fields
 * travel beside them in each entry's `fields`.
 */
import { S3_AUTH_DOCS, SNAPSHOTS_DOCS } from '../spice-docs.js';

/** Nothing is published yet for the dataset (no metadata.json, no entry, no current snapshot). */
export function waitingForFirstSnapshot(dataset: string, location: string): string {
  return (
    `Snapshot acceleration for dataset '${dataset}' is waiting for its first snapshot. ` +
    `Ensure the snapshot location '${location}' is correct and that the writer has published a snapshot. ` +
    `See: ${SNAPSHOTS_DOCS}`
  );
}

/** The store's current snapshot id is below the loaded one: logged on every such poll. */
export const OLDER_THAN_LOADED =
  'snapshot metadata current id is older than the locally loaded snapshot; skipping reload to avoid regression';

/** A candidate whose entry names no `snapshot-engine` is downloaded with no engine check: said at each download. */
export const DOWNLOADING_WITHOUT_ENGINE =
  'Downloading snapshot without engine metadata; skipping engine compatibility validation which may restore an incompatible snapshot';

/** `warn` (or a failure nothing retries): the bootstrap attempt is given up until the next check. */
export function bootstrapContinuing(dataset: string, location: string, error: string): string {
  return `Failed to bootstrap snapshot; continuing without a downloaded snapshot. dataset=${dataset} location=${location} error=${error}`;
}

/** `retry`: the bootstrap attempt is repeated after the backoff. */
export function bootstrapRetrying(dataset: string, location: string, error: string): string {
  return `Failed to bootstrap snapshot; retrying. dataset=${dataset} location=${location} error=${error}`;
}

/** What Spice calls a rejected fallback candidate, by the rejection's code. */
function rejectionKind(code: string): string {
  if (code === 'ERR_SNAPSHOT_ENGINE_MISMATCH') return 'engine mismatch';
  if (code === 'ERR_SNAPSHOT_SCHEMA_MISMATCH' || code === 'ERR_SNAPSHOT_MISSING_TABLE')
    return 'schema mismatch';
  return 'integrity issue';
}

/** `fallback`: a candidate was rejected; the next one is tried. */
export function attemptingNextSnapshot(code: string, dataset: string, uri: string, sha: string): string {
  return `Snapshot ${rejectionKind(code)}; attempting next available snapshot. dataset=${dataset} snapshot=${uri} sha=${sha}`;
}

/** `fallback`: every candidate was rejected. */
export function allSnapshotsFailed(dataset: string): string {
  return `All available snapshots failed validation; continuing without bootstrapping. dataset=${dataset}`;
}

/** `fallback`: a candidate failed on an error that is not a rejection, which ends the fallback. */
export function fallbackDownloadFailed(dataset: string, uri: string, sha: string, error: string): string {
  return `Failed to download snapshot while attempting fallback. dataset=${dataset} snapshot=${uri} sha=${sha} error=${error}`;
}

/** `fallback`: the attempt ended on such an error. */
export function fallbackBootstrapFailed(dataset: string, location: string, error: string): string {
  return `Failed to bootstrap snapshot even after fallback attempts; continuing. dataset=${dataset} location=${location} error=${error}`;
}

// The lines of Spice's snapshot data connector (`from: s3://…`, `file_format: snapshot`) while the
// dataset serves nothing, and once it loads.

/** `file_format`: nothing published (no metadata.json, no entry, no current snapshot); `why` says which. */
export function noSnapshotToLoadYet(dataset: string, why: string): string {
  return `Dataset '${dataset}' has no snapshot to load yet, so it cannot be queried until one is published: ${why}. Spice keeps checking for it. See: ${SNAPSHOTS_DOCS}`;
}

/** `file_format`: metadata.json could not be read. */
export function snapshotListUnreadable(dataset: string, error: string): string {
  return `Failed to read the snapshot list of dataset '${dataset}', so it cannot be queried until a read succeeds. Check that the dataset's \`s3_*\` params reach the bucket and that its credentials can read the object; Spice keeps retrying. Cause: ${error}. See: ${S3_AUTH_DOCS}`;
}

/** `file_format`: anything else kept the first snapshot from loading (an invalid list, a refused or failed snapshot). */
export function snapshotListInvalid(dataset: string, error: string): string {
  return `Failed to read the snapshot list of dataset '${dataset}', so it cannot be queried until a valid one is published; Spice keeps checking. Cause: ${error}. See: ${SNAPSHOTS_DOCS}`;
}

/** `file_format`: its first snapshot loaded. */
export function loadsPublishedSnapshots(dataset: string, engine: string, location: string): string {
  return `Dataset '${dataset}' loads the ${engine} snapshots published at '${location}'; it is read-only and checks for newer snapshots on its refresh interval`;
}
