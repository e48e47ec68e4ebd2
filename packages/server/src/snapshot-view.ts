/**
 * `GET /v1/datasets/:name/acceleration/snapshots` (and `…/snapshots/:id`, one entry): the runtime's snapshot listing in Spice's
 * `SnapshotSummary` shape (snake_case; optional fields left out when metadata.json has none).
 * `status` is `verified` when a HEAD found the object with its recorded size, else `unverified`;
 * `held` (Ferry's) is true for the snapshots this reader holds: the current one and those kept for
 * pinned reads (`ferry_retain_snapshots`, `X-Ferry-Snapshot`).
 */
import type { Runtime, SnapshotInfo, SnapshotListing } from '@ferry/runtime';
import { SnapshotNotFoundError } from './errors.js';

export interface SpiceSnapshotEntry {
  readonly snapshot_id: number;
  readonly timestamp_ms: number;
  readonly location: string;
  readonly checksum: string;
  readonly checksum_algorithm: string;
  readonly size_bytes: number;
  readonly engine?: string;
  readonly row_count?: number;
  readonly is_current: boolean;
  readonly status: 'verified' | 'unverified';
  /** Ferry's: this reader holds it (serves it, or keeps it for pinned reads). */
  readonly held: boolean;
}

export interface SpiceSnapshotSummary {
  readonly dataset_name: string;
  readonly location: string;
  /** Null when the location has no metadata.json yet. */
  readonly last_updated_ms: number | null;
  readonly engine?: string;
  readonly current_snapshot_id?: number;
  readonly snapshots: readonly SpiceSnapshotEntry[];
}

/** One snapshot's entry, as `GET …/acceleration/snapshots/<id>` answers it. */
export function entryView(snapshot: SnapshotInfo): SpiceSnapshotEntry {
  return {
    snapshot_id: snapshot.snapshotId,
    timestamp_ms: snapshot.timestampMs,
    location: snapshot.uri,
    checksum: snapshot.checksum,
    checksum_algorithm: snapshot.checksumAlgorithm,
    size_bytes: snapshot.size,
    ...(snapshot.engine === undefined ? {} : { engine: snapshot.engine }),
    ...(snapshot.rowCount === undefined ? {} : { row_count: snapshot.rowCount }),
    is_current: snapshot.isCurrent,
    status: snapshot.verified ? 'verified' : 'unverified',
    held: snapshot.held,
  };
}

export function snapshotSummary(listing: SnapshotListing): SpiceSnapshotSummary {
  return {
    dataset_name: listing.dataset,
    location: listing.location,
    last_updated_ms: listing.lastUpdatedMs,
    ...(listing.engine === undefined ? {} : { engine: listing.engine }),
    ...(listing.currentSnapshotId === undefined ? {} : { current_snapshot_id: listing.currentSnapshotId }),
    snapshots: listing.snapshots.map(entryView),
  };
}

/**
 * `GET /v1/datasets/:name/acceleration/snapshots/:id`: that snapshot's entry as the store records it
 * now (Spice's `SnapshotInfo`); `SnapshotNotFoundError` (404) when metadata.json does not record it.
 */
export async function snapshotEntry(
  runtime: Runtime,
  dataset: string,
  snapshotId: number,
): Promise<SpiceSnapshotEntry> {
  const listing = await runtime.snapshots(dataset);
  const found = listing.snapshots.find((snapshot) => snapshot.snapshotId === snapshotId);
  if (found === undefined) {
    throw new SnapshotNotFoundError(
      listing.dataset,
      snapshotId,
      listing.snapshots.map((snapshot) => snapshot.snapshotId),
    );
  }
  return entryView(found);
}
