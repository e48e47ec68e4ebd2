/**
 * The fan-out filter: after the coordinator re-reads a location's `metadata.json`, only the datasets
 * whose `current-snapshot-id` moved are told to poll. Pure.
 */
import type { DatasetMetadata } from '../metadata/types.js';

/** Dataset name → current snapshot id, for the datasets that have one. */
export function currentSnapshotIds(datasets: ReadonlyMap<string, DatasetMetadata>): Map<string, number> {
  const ids = new Map<string, number>();
  for (const [name, dataset] of datasets) {
    if (dataset.currentSnapshotId !== undefined) ids.set(name, dataset.currentSnapshotId);
  }
  return ids;
}

/**
 * Names of the datasets whose current snapshot id differs between `previous` (as last seen, from
 * {@link currentSnapshotIds}) and `datasets`: moved ids, datasets that gained a current snapshot,
 * and datasets that lost theirs (entry gone or no current id). Metadata order first, then the
 * vanished ones in `previous` order.
 */
export function diffCurrentIds(
  previous: ReadonlyMap<string, number>,
  datasets: ReadonlyMap<string, DatasetMetadata>,
): string[] {
  const current = currentSnapshotIds(datasets);
  const changed: string[] = [];
  for (const name of datasets.keys()) {
    if (previous.get(name) !== current.get(name)) changed.push(name);
  }
  for (const name of previous.keys()) {
    if (!datasets.has(name)) changed.push(name);
  }
  return changed;
}
