/**
 * Pure decisions over one dataset's metadata entry: which snapshot is current, which schema it was
 * recorded with, which snapshots to try in order, and whether a candidate must be refused before a
 * single byte of it is downloaded (engine, then schema, as the spec orders them).
 */
import { SnapshotRejectedError, SnapshotRejectionCode } from '../errors.js';
import { schemaDifference } from '../metadata/schema.js';
import type { ArrowSchema, DatasetMetadata, SchemaEntry, SnapshotEntry } from '../metadata/types.js';

export function currentSnapshotEntry(dataset: DatasetMetadata): SnapshotEntry | undefined {
  if (dataset.currentSnapshotId === undefined) return undefined;
  return dataset.snapshots.find((entry) => entry.snapshotId === dataset.currentSnapshotId);
}

/** The schema entry named by `current-schema-id`: the recorded schema of every candidate. */
export function recordedSchemaEntry(dataset: DatasetMetadata): SchemaEntry | undefined {
  return dataset.schemas.find((entry) => entry.schemaId === dataset.currentSchemaId);
}

/** The configured engine wins; without one, the engine the metadata records for the dataset. */
export function resolveEngine(configured: string | undefined, dataset: DatasetMetadata): string | undefined {
  return configured ?? dataset.engine;
}

function engineMatches(entry: SnapshotEntry, engine: string | undefined): boolean {
  return entry.engine === undefined || engine === undefined || entry.engine === engine;
}

export interface CandidateOptions {
  readonly engine: string | undefined;
  /** The snapshot being served, if any: only strictly newer ones are worth loading. */
  readonly loadedId: number | undefined;
  readonly fallback: boolean;
}

/**
 * The snapshots to try: the current one, then (fallback only) older ones by id descending, newer
 * than the loaded one and written by the dataset's engine. Empty when the current entry is missing.
 */
export function loadCandidates(dataset: DatasetMetadata, options: CandidateOptions): SnapshotEntry[] {
  const current = currentSnapshotEntry(dataset);
  if (current === undefined) return [];
  if (!options.fallback) return [current];
  const older = dataset.snapshots
    .filter(
      (entry) =>
        entry.snapshotId < current.snapshotId &&
        (options.loadedId === undefined || entry.snapshotId > options.loadedId) &&
        engineMatches(entry, options.engine),
    )
    .sort((a, b) => b.snapshotId - a.snapshotId);
  return [current, ...older];
}

export interface RefusalCheck {
  readonly name: string;
  readonly engine: string | undefined;
  readonly entry: SnapshotEntry;
  readonly recorded: SchemaEntry | undefined;
  readonly currentSchemaId: number;
  /** The schema being served; undefined while bootstrapping (nothing to stay compatible with). */
  readonly served: ArrowSchema | undefined;
}

/** The reason to refuse a candidate before downloading it, or `undefined` to go ahead. */
export function refusalBeforeDownload(check: RefusalCheck): SnapshotRejectedError | undefined {
  const { name, engine, entry } = check;
  const id = entry.snapshotId;
  if (!engineMatches(entry, engine)) {
    return new SnapshotRejectedError(
      SnapshotRejectionCode.engineMismatch,
      `Snapshot ${id} of dataset '${name}' was written by engine '${entry.engine}' but the dataset's engine is ` +
        `'${engine}'; publish a ${engine} snapshot or change the dataset's engine.`,
    );
  }
  if (check.recorded === undefined) {
    return new SnapshotRejectedError(
      SnapshotRejectionCode.schemaMismatch,
      `Snapshot ${id} of dataset '${name}' has no recorded schema (current-schema-id ${check.currentSchemaId} ` +
        'is not among its schemas); fix the writer that publishes the dataset.',
    );
  }
  if (check.served === undefined) return undefined;
  const difference = schemaDifference(check.served, check.recorded.schema);
  if (difference === undefined) return undefined;
  return new SnapshotRejectedError(
    SnapshotRejectionCode.schemaMismatch,
    `Snapshot ${id} of dataset '${name}' has a schema incompatible with the one being served: ${difference}; ` +
      'publish a snapshot with the served schema, or delete the local file and restart to adopt the new one.',
  );
}
