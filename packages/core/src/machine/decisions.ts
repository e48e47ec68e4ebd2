/**
 * The questions the dataset machine's guards ask, as pure functions of its context (and, for a few,
 * of the event): has the store anything published, is its current snapshot the loaded one, older,
 * newer; must a candidate be refused before download (engine, then schema, in the spec's order);
 * what kind of failure is being routed. The chart decides where each answer leads; nothing here
 * changes the context.
 */
import { SnapshotRejectedError, SnapshotRejectionCode } from '../errors.js';
import { currentSnapshot, fallbackCandidates, writtenByEngine } from '../metadata/queries.js';
import { schemaDifference } from '../metadata/schema.js';
import type { DatasetMetadata, SchemaEntry, SnapshotEntry } from '../metadata/types.js';
import type { DatasetContext, PollFailure, PollInProgress } from './types.js';

/** The configured engine wins; without one, the engine the metadata records for the dataset. */
export function resolveEngine(configured: string | undefined, dataset: DatasetMetadata): string | undefined {
  return configured ?? dataset.engine?.toLowerCase();
}

/**
 * The snapshots a poll tries, in order: the current one first, whatever its engine (a current
 * snapshot of another engine is refused, and says why, rather than silently skipped); then, with
 * `fallback`, the older candidates of {@link fallbackCandidates}. Without a current entry (its id
 * names none) only fallback's older candidates remain; empty otherwise.
 */
export function pollCandidates(
  dataset: DatasetMetadata,
  engine: string | undefined,
  loadedId: number | undefined,
  fallback: boolean,
): readonly SnapshotEntry[] {
  const current = currentSnapshot(dataset);
  const older = fallback
    ? fallbackCandidates(dataset, engine, loadedId).filter((entry) => entry !== current)
    : [];
  return current === undefined ? older : [current, ...older];
}

/** The store's current snapshot id as this poll read it. */
export function storeCurrentId(context: DatasetContext): number | undefined {
  return context.poll?.dataset?.currentSnapshotId;
}

/** No metadata.json, no entry for the dataset, or no `current-snapshot-id`. */
export function noSnapshotPublished(context: DatasetContext): boolean {
  return storeCurrentId(context) === undefined;
}

/** The store's current snapshot is the one being served. */
export function currentIsLoaded(context: DatasetContext): boolean {
  const id = storeCurrentId(context);
  return id !== undefined && id === context.serving?.snapshotId;
}

/** The store's current snapshot id is smaller than the served one (a rollback). */
export function currentIsOlder(context: DatasetContext): boolean {
  const id = storeCurrentId(context);
  const loaded = context.serving?.snapshotId;
  return id !== undefined && loaded !== undefined && id < loaded;
}

/** The poll found nothing to try: `current-snapshot-id` names no entry of `snapshots`. */
export function noCandidate(context: DatasetContext): boolean {
  return (context.poll?.candidates.length ?? 0) === 0;
}

/** The candidate the poll is on, with the metadata read it came from. */
export function currentCandidate(
  context: DatasetContext,
): { poll: PollInProgress; entry: SnapshotEntry; dataset: DatasetMetadata } | undefined {
  const poll = context.poll;
  const entry = poll?.candidates[poll.index];
  if (poll === null || entry === undefined || poll.dataset === undefined) return undefined;
  return { poll, entry, dataset: poll.dataset };
}

/** The candidate was written by another engine than the dataset's: refuse it before download. */
export function engineRefusal(context: DatasetContext): SnapshotRejectedError | undefined {
  const candidate = currentCandidate(context);
  if (candidate === undefined) return undefined;
  const { entry, poll } = candidate;
  if (writtenByEngine(entry, poll.engine)) return undefined;
  return new SnapshotRejectedError(
    SnapshotRejectionCode.engineMismatch,
    `Snapshot ${entry.snapshotId} of dataset '${context.name}' was written by engine '${entry.engine}' but the ` +
      `dataset's engine is '${poll.engine}'; publish a ${poll.engine} snapshot or change the dataset's engine.`,
  );
}

/**
 * The candidate's recorded schema is missing, or differs from the schema being served (strictly,
 * via `schemaDifference`; nothing to compare while bootstrapping): refuse it before download.
 */
export function schemaRefusal(context: DatasetContext): SnapshotRejectedError | undefined {
  const candidate = currentCandidate(context);
  if (candidate === undefined) return undefined;
  const id = candidate.entry.snapshotId;
  const recorded: SchemaEntry | undefined = candidate.poll.recorded;
  if (recorded === undefined) {
    return new SnapshotRejectedError(
      SnapshotRejectionCode.schemaMismatch,
      `Snapshot ${id} of dataset '${context.name}' has no recorded schema (current-schema-id ` +
        `${candidate.dataset.currentSchemaId} is not among its schemas); fix the writer that publishes the dataset.`,
    );
  }
  const served = context.serving?.schema;
  if (served === undefined) return undefined;
  const difference = schemaDifference(served, recorded.schema);
  if (difference === undefined) return undefined;
  return new SnapshotRejectedError(
    SnapshotRejectionCode.schemaMismatch,
    `Snapshot ${id} of dataset '${context.name}' has a schema incompatible with the one being served: ${difference}; ` +
      'publish a snapshot with the served schema, or delete the local file and restart to adopt the new one.',
  );
}

/** The refusal before download, engine first, then schema. */
export function refusalBeforeDownload(context: DatasetContext): SnapshotRejectedError | undefined {
  return engineRefusal(context) ?? schemaRefusal(context);
}

/** Fallback has another candidate after the current one. */
export function hasNextCandidate(context: DatasetContext): boolean {
  const poll = context.poll;
  return poll !== null && poll.index + 1 < poll.candidates.length;
}

export function failureOf(context: DatasetContext): PollFailure | undefined {
  return context.poll?.failure;
}

/** The failure being routed is a snapshot rejection (fallback moves on after one). */
export function failedOnRejection(context: DatasetContext): boolean {
  return failureOf(context)?.rejection === true;
}

/** The failure happened while downloading or verifying the candidate (not refused, not swapping). */
export function failedToDownload(context: DatasetContext): boolean {
  const stage = failureOf(context)?.stage;
  return stage === 'download' || stage === 'verification';
}

/** The candidate was refused before download (engine or schema): never retried with backoff. */
export function refusedBeforeDownload(context: DatasetContext): boolean {
  return failureOf(context)?.stage === 'validation';
}

/** An error marked `permanent: true` (e.g. an unsupported format version): retrying cannot fix it. */
export function isPermanent(error: unknown): boolean {
  return (error as { permanent?: unknown } | null)?.permanent === true;
}

/** An announcement is worth a poll when its id is above both the loaded and the last requested one. */
export function isNewAnnouncement(context: DatasetContext, snapshotId: number): boolean {
  const loaded = context.serving?.snapshotId ?? -1;
  const requested = context.lastRequestedId ?? -1;
  return snapshotId > loaded && snapshotId > requested;
}
