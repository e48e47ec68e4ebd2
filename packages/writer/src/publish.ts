/**
 * Publishing a snapshot, in the order the snapshot-store spec requires: build the file and read
 * its schema; read metadata.json and refuse (before uploading anything) an incompatible schema or
 * another engine; upload the file to its dated key; then make it current with the conditional
 * rewrite of metadata.json. A reader therefore never sees metadata.json name a file that is not
 * fully uploaded, and concurrent writers never lose each other's entries.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FileFormat, type ObjectStore, signatureKeyOf } from '@ferry/core/base';
import { createObjectStore, type ObjectStoreParams, type SigningKey } from '@ferry/store';
import { putBlockManifest } from './block-sidecar.js';
import {
  assertDatasetName,
  type BuiltSnapshot,
  buildSnapshotFile,
  resolveEngine,
  type SnapshotSource,
} from './build.js';
import { WriterOptionsError } from './errors.js';
import {
  assertEngineMatches,
  type CommitBase,
  type CommitResult,
  checkAppendable,
  commitSnapshot,
  datasetEntry,
  readMetadata,
  recordedNotNull,
} from './metadata-commit.js';
import {
  assertValidFor,
  type HeartbeatResult,
  heartbeatOfDocument,
  type SigningKeyInput,
  signingKeyOf,
  writeSnapshotSignature,
} from './sign.js';
import { snapshotKey } from './snapshot-key.js';
import { deleteUnreferenced, type ProgressCallback, uploadSnapshot } from './upload.js';

export interface PublishSnapshotOptions {
  readonly dataset: string;
  /** A location URI (`s3://bucket/prefix/`, `file:///dir/`), or an open store (left open). */
  readonly location: string | ObjectStore;
  /** Store parameters (region, endpoint, credentials, …) when `location` is a URI. */
  readonly storeParams?: ObjectStoreParams;
  readonly source: SnapshotSource;
  /** Default: `duckdb` for `sql`; for `file`, what its header says. */
  readonly engine?: FileFormat;
  /**
   * `sql` only: columns to declare NOT NULL. The recorded schema's NOT NULL columns are always
   * added, so a republished table keeps matching it.
   */
  readonly notNull?: readonly string[];
  /** When the source data last changed (`snapshot-last-updated-at-ms`). */
  readonly lastUpdatedAtMs?: number;
  /** Conditional metadata.json writes to try before giving up. Default 10. */
  readonly maxAttempts?: number;
  /** Directory for the temporary build (removed afterwards). Default: the OS temp directory. */
  readonly workDir?: string;
  readonly onProgress?: ProgressCallback;
  /**
   * Ferry's signed snapshots: the writer's Ed25519 private key (PEM, as `ferry keygen` writes it).
   * The snapshot's statement is signed beside it before metadata.json names it, then a heartbeat
   * statement valid for `heartbeatValidForMs` is signed.
   */
  readonly signingKey?: SigningKeyInput;
  /** How long the heartbeat a signed publish writes stays valid. Default 1 h. */
  readonly heartbeatValidForMs?: number;
  /**
   * Upload the block manifest sidecar (`<key>.ferry-blocks.json`) that lets readers fetch only the
   * blocks that changed. Default true.
   */
  readonly blockManifest?: boolean;
}

export interface PublishResult {
  readonly snapshotId: number;
  /** Absolute URI recorded in metadata.json. */
  readonly uri: string;
  /** Key under the location. */
  readonly key: string;
  readonly size: number;
  /** Lowercase hex SHA-256. */
  readonly checksum: string;
  readonly rowCount: number;
  readonly schemaId: number;
  /** Conditional metadata.json writes it took. */
  readonly attempts: number;
  /** With a signing key: the key id that signed, and the heartbeat written after the commit. */
  readonly signed?: { readonly keyId: string; readonly heartbeat: HeartbeatResult };
  /** Key of the block manifest sidecar, when one was uploaded. */
  readonly blockManifestKey?: string;
}

const DEFAULT_MAX_ATTEMPTS = 10;
const DEFAULT_HEARTBEAT_VALID_FOR_MS = 60 * 60 * 1000;

/** What a signed publish signs with (`signingKey` read and checked), or undefined when unsigned. */
export interface PublishSigning {
  readonly key: SigningKey;
  readonly heartbeatValidForMs: number;
}

/** The signing options of a publish, read and checked before anything is built or uploaded. */
export function signingOf(
  options: Pick<PublishSnapshotOptions, 'signingKey' | 'heartbeatValidForMs'>,
): PublishSigning | undefined {
  if (options.signingKey === undefined) return undefined;
  const heartbeatValidForMs = options.heartbeatValidForMs ?? DEFAULT_HEARTBEAT_VALID_FOR_MS;
  assertValidFor(heartbeatValidForMs);
  return { key: signingKeyOf(options.signingKey), heartbeatValidForMs };
}

/** The publish options that apply to a file already built (`publishBuilt`). */
export type PublishBuiltOptions = Pick<
  PublishSnapshotOptions,
  'lastUpdatedAtMs' | 'onProgress' | 'blockManifest'
> & {
  /** The snapshot `built` was made from (incremental): refused once another is current. */
  readonly base?: CommitBase;
};

/** `maxAttempts` checked (a positive integer; default 10). */
export function maxAttemptsOf(options: { readonly maxAttempts?: number }): number {
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  if (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1) {
    throw new WriterOptionsError(
      'maxAttempts',
      `maxAttempts must be a positive integer, got ${maxAttempts}.`,
    );
  }
  return maxAttempts;
}

/**
 * Steps 1–3 for a file already built and described (`built`): refuse an incompatible schema before
 * uploading, upload it and its block manifest, make it current. `firstRead` is the metadata.json
 * read the refusal checks were made on.
 */
export async function publishBuilt(
  store: ObjectStore,
  firstRead: Awaited<ReturnType<typeof readMetadata>>,
  built: BuiltSnapshot,
  options: PublishBuiltOptions,
  maxAttempts: number,
  signing?: PublishSigning,
): Promise<PublishResult> {
  const { dataset, engine } = built;
  checkAppendable(store, firstRead, {
    dataset,
    engine,
    schema: built.schema,
    key: snapshotKey(dataset, engine, Date.now()),
    size: built.size,
    rowCount: built.rowCount,
  });

  const uploaded = await uploadSnapshot({
    store,
    dataset,
    engine,
    path: built.path,
    size: built.size,
    ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
  });
  const sidecar =
    options.blockManifest === false ? undefined : await putBlockManifest(store, uploaded, engine);
  let committed: CommitResult;
  let signedDocument: Record<string, unknown> | undefined;
  try {
    committed = await commitSnapshot({
      store,
      firstRead,
      maxAttempts,
      ...(options.base === undefined ? {} : { base: options.base }),
      ...(signing === undefined
        ? {}
        : {
            // Signed beside the snapshot before metadata.json names it; the statement covers the
            // block manifest's bytes too, so a manifest cannot be swapped for another.
            beforeWrite: async (document: Record<string, unknown>) => {
              await writeSnapshotSignature(
                store,
                document,
                dataset,
                uploaded.key,
                signing.key,
                sidecar?.sha256,
              );
              signedDocument = document;
            },
          }),
      entry: {
        location: store.location,
        dataset,
        engine,
        schema: built.schema,
        uri: uploaded.uri,
        checksum: uploaded.checksum,
        size: uploaded.size,
        rowCount: built.rowCount,
        timestampMs: uploaded.timeMs,
        ...(options.lastUpdatedAtMs === undefined ? {} : { lastUpdatedAtMs: options.lastUpdatedAtMs }),
      },
    });
  } catch (error) {
    // Refused or lost every race: nothing references the object, so take it back. (Any other
    // error may hide a write that landed, so the object stays.)
    const code = (error as { code?: unknown }).code;
    if (
      code === 'ERR_WRITER_METADATA_CONFLICT' ||
      code === 'ERR_INCOMPATIBLE_SCHEMA' ||
      code === 'ERR_WRITER_METADATA_TOO_LARGE' ||
      code === 'ERR_WRITER_INCREMENTAL_BASE'
    ) {
      await deleteUnreferenced(store, uploaded.key);
      if (sidecar !== undefined) await deleteUnreferenced(store, sidecar.key);
      if (signing !== undefined) await deleteUnreferenced(store, signatureKeyOf(uploaded.key));
    }
    throw error;
  }
  const heartbeat =
    signing === undefined || signedDocument === undefined
      ? undefined
      : await heartbeatOfDocument(
          store,
          signedDocument,
          dataset,
          signing.key,
          signing.heartbeatValidForMs,
          Date.now(),
        );
  return {
    snapshotId: committed.snapshotId,
    uri: uploaded.uri,
    key: uploaded.key,
    size: uploaded.size,
    checksum: uploaded.checksum,
    rowCount: built.rowCount,
    schemaId: committed.schemaId,
    attempts: committed.attempts,
    ...(sidecar === undefined ? {} : { blockManifestKey: sidecar.key }),
    ...(heartbeat === undefined ? {} : { signed: { keyId: heartbeat.keyId, heartbeat } }),
  };
}

/**
 * The build skips NOT NULL names the table lacks (a recorded column dropped from the query is the
 * schema check's to refuse), so a misspelt or wrongly cased `notNull` would silently record the
 * column nullable, which later publishes could not tighten: refuse it instead, before uploading.
 */
function assertNotNullColumns(built: BuiltSnapshot, notNull: readonly string[]): void {
  const names = built.schema.fields.map((field) => field.name);
  const missing = notNull.filter((column) => !names.includes(column));
  if (missing.length === 0) return;
  throw new WriterOptionsError(
    'notNull',
    `NOT NULL column(s) ${missing.map((name) => `'${name}'`).join(', ')} of dataset '${built.dataset}' are not in its table, whose columns are ${names.map((name) => `'${name}'`).join(', ')}; name them exactly (case included).`,
  );
}

/**
 * Publish one snapshot of `dataset` to `location`.
 * @throws SchemaRefusedError (`ERR_INCOMPATIBLE_SCHEMA`) before uploading when the table neither
 * equals nor widens the recorded schema; EngineMismatchError before uploading; MetadataConflictError
 * when `maxAttempts` conditional writes lost (the uploaded object is then deleted again); build
 * errors (`ERR_WRITER_QUERY`, `ERR_WRITER_SOURCE_FILE`, `ERR_WRITER_NOT_NULL`); store errors.
 */
export async function publishSnapshot(options: PublishSnapshotOptions): Promise<PublishResult> {
  const { dataset, source } = options;
  assertDatasetName(dataset);
  const maxAttempts = maxAttemptsOf(options);
  const engine = resolveEngine(dataset, source, options.engine);
  const signing = signingOf(options);
  const owned = typeof options.location === 'string';
  const store =
    typeof options.location === 'string'
      ? createObjectStore(options.location, options.storeParams ?? {})
      : options.location;
  const workDir = await mkdtemp(join(options.workDir ?? tmpdir(), 'ferry-publish-'));
  try {
    const firstRead = await readMetadata(store);
    const entry = datasetEntry(store, firstRead, dataset);
    assertEngineMatches(store, dataset, entry, engine);

    const notNull = [...new Set([...(options.notNull ?? []), ...recordedNotNull(entry)])];
    const built = await buildSnapshotFile({
      dataset,
      source,
      engine,
      output: join(workDir, `${dataset}.${engine}`),
      ...('sql' in source ? { notNull } : {}),
    });
    if ('sql' in source) assertNotNullColumns(built, options.notNull ?? []);
    return await publishBuilt(store, firstRead, built, options, maxAttempts, signing);
  } finally {
    await rm(workDir, { recursive: true, force: true });
    if (owned) await store.close();
  }
}
