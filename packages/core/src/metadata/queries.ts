/**
 * The questions a reader asks of a parsed dataset entry: what is current, which schema is
 * recorded for it, what to fall back to when the current snapshot cannot be served, and whether
 * a candidate is newer than what is loaded.
 */
import { SchemaNotFoundError } from './errors.js';
import type { DatasetMetadata, SchemaEntry, SnapshotEntry } from './types.js';

/** The entry whose id is `current-snapshot-id`, or `undefined` (nothing current, or no such entry). */
export function currentSnapshot(dataset: DatasetMetadata): SnapshotEntry | undefined {
  const id = dataset.currentSnapshotId;
  if (id === undefined) return undefined;
  return dataset.snapshots.find((entry) => entry.snapshotId === id);
}

/**
 * The schema entry of `current-schema-id`: the schema every snapshot of the dataset is checked against.
 * @throws SchemaNotFoundError naming the dataset when `schemas` has no such entry.
 */
export function recordedSchema(dataset: DatasetMetadata): SchemaEntry {
  const entry = dataset.schemas.find((schema) => schema.schemaId === dataset.currentSchemaId);
  if (entry === undefined) throw new SchemaNotFoundError(dataset.name, dataset.currentSchemaId);
  return entry;
}

function sameEngine(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/**
 * The snapshots to try, in order: the current one first, then the older ones by snapshot id
 * descending. Entries whose `snapshot-engine` names another engine than `engine` (compared
 * case-insensitively) are skipped; entries without one are kept. Entries with an id above
 * `current-snapshot-id` are left out: a writer that moved the pointer back has withdrawn them.
 * Empty when nothing is current.
 */
export function fallbackCandidates(dataset: DatasetMetadata, engine: string): readonly SnapshotEntry[] {
  const currentId = dataset.currentSnapshotId;
  if (currentId === undefined) return [];
  return dataset.snapshots
    .filter((entry) => entry.snapshotId <= currentId)
    .filter((entry) => entry.engine === undefined || sameEngine(entry.engine, engine))
    .sort((a, b) => b.snapshotId - a.snapshotId);
}

/** True when `candidateId` is strictly greater than `loadedId`, or nothing is loaded yet. */
export function isNewer(candidateId: number | undefined, loadedId: number | undefined): boolean {
  if (candidateId === undefined) return false;
  return loadedId === undefined || candidateId > loadedId;
}
