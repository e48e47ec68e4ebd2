/**
 * The questions a reader asks of a parsed dataset entry: what is current, which schema is
 * recorded for it, whether a snapshot was written by the dataset's engine, what to fall back to
 * when the current snapshot cannot be served, and whether a candidate is newer than what is
 * loaded. The dataset machine, the swap layer and the writer all ask them here: one rule each.
 */
import { sameEngine } from '../engines.js';
import { SchemaNotFoundError } from './errors.js';
import type { DatasetMetadata, SchemaEntry, SnapshotEntry } from './types.js';

/** The entry whose id is `current-snapshot-id`, or `undefined` (nothing current, or no such entry). */
export function currentSnapshot(dataset: DatasetMetadata): SnapshotEntry | undefined {
  const id = dataset.currentSnapshotId;
  if (id === undefined) return undefined;
  return dataset.snapshots.find((entry) => entry.snapshotId === id);
}

/** The schema entry of `current-schema-id`, or `undefined` when `schemas` has none. */
export function findRecordedSchema(dataset: DatasetMetadata): SchemaEntry | undefined {
  return dataset.schemas.find((schema) => schema.schemaId === dataset.currentSchemaId);
}

/**
 * The schema entry of `current-schema-id`: the schema every snapshot of the dataset is checked against.
 * @throws SchemaNotFoundError naming the dataset when `schemas` has no such entry.
 */
export function recordedSchema(dataset: DatasetMetadata): SchemaEntry {
  const entry = findRecordedSchema(dataset);
  if (entry === undefined) throw new SchemaNotFoundError(dataset.name, dataset.currentSchemaId);
  return entry;
}

/**
 * True when `entry` may be loaded by a dataset of `engine`: its `snapshot-engine` is that engine
 * (case-insensitively), or one of the two is unknown (nothing to compare).
 */
export function writtenByEngine(entry: SnapshotEntry, engine: string | undefined): boolean {
  return entry.engine === undefined || engine === undefined || sameEngine(entry.engine, engine);
}

/**
 * The snapshots `bootstrap_on_failure_behavior: fallback` tries, in order: the current one first,
 * then the older ones by snapshot id descending. Entries whose `snapshot-engine` names another
 * engine than `engine` are skipped ({@link writtenByEngine}); entries without one are kept.
 * Entries with an id above `current-snapshot-id` are left out (a writer that moved the pointer back
 * has withdrawn them), and so are those not above `loadedId` (never load an older one than is
 * served). Empty when nothing is current.
 */
export function fallbackCandidates(
  dataset: DatasetMetadata,
  engine: string | undefined,
  loadedId?: number,
): readonly SnapshotEntry[] {
  const currentId = dataset.currentSnapshotId;
  if (currentId === undefined) return [];
  return dataset.snapshots
    .filter((entry) => entry.snapshotId <= currentId && isNewer(entry.snapshotId, loadedId))
    .filter((entry) => writtenByEngine(entry, engine))
    .sort((a, b) => b.snapshotId - a.snapshotId);
}

/** True when `candidateId` is strictly greater than `loadedId`, or nothing is loaded yet. */
export function isNewer(candidateId: number | undefined, loadedId: number | undefined): boolean {
  if (candidateId === undefined) return false;
  return loadedId === undefined || candidateId > loadedId;
}
