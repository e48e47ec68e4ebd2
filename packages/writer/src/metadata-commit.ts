/**
 * Step 2 of publishing: make the uploaded snapshot current by rewriting metadata.json with
 * optimistic concurrency. Read it (remember the ETag), append with core's `appendSnapshot`, write
 * it back with `If-Match: <etag>` (or `If-None-Match: *` when absent); when another writer won
 * (`ERR_PRECONDITION_FAILED`), back off briefly, read again and redo the step, a bounded number of
 * times. Also the checks made before uploading, against the same document.
 */
import { setTimeout as delay } from 'node:timers/promises';
import {
  type AppendSnapshotInput,
  type ArrowSchema,
  appendSnapshot,
  backoffDelayMs,
  currentSnapshot,
  type DatasetMetadata,
  FerryError,
  getDataset,
  IncompatibleSchemaError,
  maxMetadataBytes,
  type ObjectStore,
  parseMetadata,
} from '@ferry/core/base';
import {
  EngineMismatchError,
  IncrementalBaseError,
  MetadataConflictError,
  MetadataTooLargeError,
  SchemaRefusedError,
} from './errors.js';

export const METADATA_KEY = 'metadata.json';

/** metadata.json as read: its text and ETag, or nothing when it does not exist yet. */
export interface MetadataRead {
  readonly text?: string;
  readonly etag?: string;
}

export async function readMetadata(store: ObjectStore): Promise<MetadataRead> {
  const got = await store.get(METADATA_KEY, { maxBytes: maxMetadataBytes });
  if (got.status !== 'ok') return {};
  return { text: new TextDecoder().decode(got.body), etag: got.etag };
}

/** The dataset's entry in what was read, or `undefined` when it has none (or there is no document). */
export function datasetEntry(
  store: ObjectStore,
  read: MetadataRead,
  dataset: string,
): DatasetMetadata | undefined {
  if (read.text === undefined) return undefined;
  return getDataset(parseMetadata(read.text, store.location), dataset);
}

/** Refuse a file of another engine than the dataset's, before anything is uploaded. */
export function assertEngineMatches(
  store: ObjectStore,
  dataset: string,
  entry: DatasetMetadata | undefined,
  engine: string,
): void {
  const recorded =
    entry?.engine ?? entry?.snapshots.find((s) => s.snapshotId === entry.currentSnapshotId)?.engine;
  if (recorded !== undefined && recorded.toLowerCase() !== engine) {
    throw new EngineMismatchError(dataset, store.location, recorded, engine);
  }
}

/** Names of the recorded schema's NOT NULL fields (none when nothing is recorded). */
export function recordedNotNull(entry: DatasetMetadata | undefined): string[] {
  const schema = entry?.schemas.find((s) => s.schemaId === entry.currentSchemaId)?.schema;
  return (schema?.fields ?? []).filter((field) => !field.nullable).map((field) => field.name);
}

/** `appendSnapshot`, with an incompatible schema reported with the location. */
function append(store: ObjectStore, read: MetadataRead, input: AppendSnapshotInput): Record<string, unknown> {
  try {
    return appendSnapshot(read.text, input);
  } catch (error) {
    if (error instanceof IncompatibleSchemaError) {
      throw new SchemaRefusedError(
        input.dataset,
        store.location,
        `its table does not match recorded schema ${error.schemaId} (${error.difference})`,
        { cause: error },
      );
    }
    throw error;
  }
}

/**
 * The bytes of `document` as metadata.json is written (pretty-printed, like Spice's writer).
 * @throws MetadataTooLargeError when readers would refuse a document that large.
 */
function serializeMetadata(
  store: ObjectStore,
  dataset: string,
  document: Record<string, unknown>,
): Uint8Array {
  const body = new TextEncoder().encode(`${JSON.stringify(document, null, 2)}\n`);
  if (body.byteLength > maxMetadataBytes) {
    throw new MetadataTooLargeError(dataset, store.location, body.byteLength, maxMetadataBytes);
  }
  return body;
}

/**
 * Throws what the commit would throw for a file of this schema (incompatible schema, invalid
 * document or entry, location mismatch, a document too large for readers), without writing anything.
 */
export function checkAppendable(
  store: ObjectStore,
  read: MetadataRead,
  input: {
    dataset: string;
    engine: string;
    schema: ArrowSchema;
    key: string;
    size: number;
    rowCount: number;
  },
): void {
  const document = append(store, read, {
    location: store.location,
    dataset: input.dataset,
    engine: input.engine,
    schema: input.schema,
    uri: `${store.location}${input.key}`,
    checksum: '0'.repeat(64),
    size: input.size,
    rowCount: input.rowCount,
    timestampMs: Date.now(),
  });
  serializeMetadata(store, input.dataset, document);
}

export interface CommitResult {
  readonly snapshotId: number;
  readonly schemaId: number;
  /** Conditional writes tried (1 when nobody else wrote metadata.json meanwhile). */
  readonly attempts: number;
}

export interface CommitInput {
  readonly store: ObjectStore;
  /** The document read before uploading; the first attempt writes against its ETag. */
  readonly firstRead: MetadataRead;
  readonly entry: AppendSnapshotInput;
  readonly maxAttempts: number;
  /** Runs on each attempt's document before it is written (the signature goes out first: `sign.ts`). */
  readonly beforeWrite?: (document: Record<string, unknown>) => Promise<void>;
  /**
   * The snapshot the file was made from (an incremental publish): when a re-read finds another one
   * current, the file lacks that one's changes, so it is refused instead of appended after it.
   */
  readonly base?: CommitBase;
}

/** The current snapshot an incremental publish applied its statements to. */
export interface CommitBase {
  readonly snapshotId: number;
  readonly checksum: string;
}

/** @throws IncrementalBaseError when `read` no longer has `base` as the dataset's current snapshot. */
function assertBaseCurrent(store: ObjectStore, read: MetadataRead, dataset: string, base: CommitBase): void {
  const entry = datasetEntry(store, read, dataset);
  const current = entry === undefined ? undefined : currentSnapshot(entry);
  if (
    current?.snapshotId === base.snapshotId &&
    current.checksum.toLowerCase() === base.checksum.toLowerCase()
  ) {
    return;
  }
  const now = current === undefined ? 'none is' : `snapshot ${current.snapshotId} is`;
  throw new IncrementalBaseError(
    dataset,
    `its base, snapshot ${base.snapshotId}, stopped being current in '${store.location}metadata.json' while it ran (${now}, from another writer), and its statements were applied to the base alone, so publishing would drop that writer's changes; publish again to apply them to what is current`,
  );
}

function isPreconditionFailed(error: unknown): boolean {
  return error instanceof FerryError && error.code === 'ERR_PRECONDITION_FAILED';
}

/** Between attempts of a lost conditional write: ~25 ms, 50 ms, … capped at 1 s, spread so racing writers part. */
const COMMIT_BACKOFF = { kind: 'exponential', baseMs: 25, maxMs: 1_000, jitter: 0.5 } as const;

function backoff(attempt: number): Promise<void> {
  return delay(backoffDelayMs(COMMIT_BACKOFF, attempt, Math.random));
}

function ids(
  store: ObjectStore,
  document: unknown,
  dataset: string,
): { snapshotId: number; schemaId: number } {
  const entry = getDataset(parseMetadata(document, store.location), dataset);
  return { snapshotId: entry?.currentSnapshotId ?? 0, schemaId: entry?.currentSchemaId ?? 0 };
}

/** An entry for exactly this upload already recorded (our earlier write landed, its reply was lost). */
function alreadyRecorded(store: ObjectStore, read: MetadataRead, input: AppendSnapshotInput) {
  const entry = datasetEntry(store, read, input.dataset);
  const found = entry?.snapshots.find(
    (s) => s.uri === input.uri && s.checksum.toLowerCase() === input.checksum.toLowerCase(),
  );
  return found === undefined || entry === undefined
    ? undefined
    : { snapshotId: found.snapshotId, schemaId: entry.currentSchemaId };
}

/**
 * Append `entry` to metadata.json conditionally, re-reading and retrying on a lost race.
 * @throws MetadataConflictError after `maxAttempts` lost races.
 * @throws SchemaRefusedError when a concurrent writer changed the schema incompatibly.
 * @throws IncrementalBaseError when `base` is given and a concurrent writer made another snapshot current.
 */
export async function commitSnapshot(input: CommitInput): Promise<CommitResult> {
  const { store, entry, maxAttempts } = input;
  let read = input.firstRead;
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1) {
      read = await readMetadata(store);
      const recorded = alreadyRecorded(store, read, entry);
      if (recorded !== undefined) return { ...recorded, attempts: attempt - 1 };
      if (input.base !== undefined) assertBaseCurrent(store, read, entry.dataset, input.base);
    }
    const next = append(store, read, { ...entry, writtenAtMs: Date.now() });
    const body = serializeMetadata(store, entry.dataset, next);
    await input.beforeWrite?.(next);
    try {
      await store.put(METADATA_KEY, body, {
        ...(read.etag === undefined ? { ifNoneMatch: '*' as const } : { ifMatch: read.etag }),
        contentType: 'application/json',
      });
      return { ...ids(store, next, entry.dataset), attempts: attempt };
    } catch (error) {
      if (!isPreconditionFailed(error)) throw error;
      if (attempt >= maxAttempts) {
        throw new MetadataConflictError(entry.dataset, store.location, attempt, { cause: error });
      }
      await backoff(attempt);
    }
  }
}
