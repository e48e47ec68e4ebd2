/**
 * The incremental writer: instead of building each snapshot from scratch, start from the dataset's
 * current snapshot, apply INSERT / UPDATE / DELETE statements to a copy of it, checkpoint, and
 * publish that. Engines change a database file in place (DuckDB writes new row groups into free
 * blocks and rewrites a few metadata blocks; SQLite rewrites the pages it touches), so consecutive
 * snapshots share most of their blocks and a reader holding the previous one fetches only the rest
 * (the block manifest, `block-sidecar.ts`). The published file passes the same checks as any other
 * (engine, schema, size, SHA-256).
 *
 * The base is the copy this writer kept after its last publish (`<stateDir>/<dataset>.<ext>`, with
 * a state file naming the snapshot it holds), or, when that is missing or not the current snapshot,
 * the current snapshot downloaded from the store and checked against its recorded SHA-256.
 */
import { createHash, randomBytes } from 'node:crypto';
import { copyFile, mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { StatementType } from '@duckdb/node-api';
import {
  currentSnapshot,
  type FileFormat,
  type ObjectStore,
  parseMetadata,
  resolveSnapshotKey,
  type SnapshotEntry,
} from '@ferry/core/base';
import { checkSqliteBinding, readDatabaseHeader } from '@ferry/engines';
import { createObjectStore, isProcessAlive, readParallelParts } from '@ferry/store';
import Database from 'better-sqlite3';
import { assertDatasetName, assertNoSideFiles, type BuiltSnapshot, inspect } from './build.js';
import { openBuildConnection } from './build-duckdb.js';
import { IncrementalBaseError, IncrementalStatementError, WriterOptionsError } from './errors.js';
import { datasetEntry, readMetadata } from './metadata-commit.js';
import {
  maxAttemptsOf,
  type PublishResult,
  type PublishSnapshotOptions,
  publishBuilt,
  signingOf,
} from './publish.js';

export interface PublishIncrementalOptions
  extends Pick<
    PublishSnapshotOptions,
    | 'dataset'
    | 'location'
    | 'storeParams'
    | 'lastUpdatedAtMs'
    | 'maxAttempts'
    | 'onProgress'
    | 'blockManifest'
    | 'signingKey'
    | 'heartbeatValidForMs'
  > {
  /**
   * Applied in order, in the dataset engine's SQL: INSERT, UPDATE and DELETE only (DuckDB: a string
   * may hold several, `;`-separated; SQLite: one per string).
   */
  readonly statements: readonly string[];
  /** Where the writer keeps its copy of the dataset's current snapshot between publishes. */
  readonly stateDir: string;
}

export interface IncrementalPublishResult extends PublishResult {
  /** The snapshot the statements were applied to, and whether it was the kept copy or downloaded. */
  readonly base: { readonly snapshotId: number; readonly source: 'kept' | 'downloaded' };
}

/** What the kept copy holds, beside it as `<copy>.ferry-writer.json`. */
interface KeptState {
  readonly format: 1;
  readonly snapshotId: number;
  readonly checksum: string;
  readonly size: number;
  readonly inode: number;
  readonly mtimeNs: string;
}

const ALLOWED_DUCKDB: ReadonlySet<StatementType> = new Set([
  StatementType.INSERT,
  StatementType.UPDATE,
  StatementType.DELETE,
]);
/** SQLite: the statement's first keyword (a `WITH` may lead an INSERT, UPDATE or DELETE). */
const ALLOWED_SQLITE = /^(?:\s|--[^\n]*\n|\/\*[\s\S]*?\*\/)*(insert|replace|update|delete|with)\b/i;

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function statePath(copy: string): string {
  return `${copy}.ferry-writer.json`;
}

/**
 * A scratch file beside the kept copy (`work`: the copy the statements run on; `tmp`: a download),
 * named after its host and process so a later run can tell one abandoned by a killed run.
 */
function scratchPath(copy: string, kind: 'work' | 'tmp'): string {
  return `${copy}.ferry-${kind}-${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
}

/**
 * Removes the scratch files (and their engines' side files) that runs of this host killed before
 * their own cleanup left beside `copy`: each holds a whole copy of the database, and nothing else
 * would ever remove them. Those of a live process, or of another host, are left alone.
 */
async function removeAbandonedScratch(copy: string): Promise<void> {
  const dir = dirname(copy);
  const prefix = `${basename(copy)}.ferry-`;
  const host = hostname();
  for (const name of await readdir(dir)) {
    if (!name.startsWith(prefix)) continue;
    const match = /^(?:work|tmp)-(.+)-(\d+)-[0-9a-f]{8}/.exec(name.slice(prefix.length));
    if (match === null || match[1] !== host || isProcessAlive(Number(match[2]))) continue;
    await rm(join(dir, name), { force: true });
  }
}

async function identity(path: string): Promise<{ inode: number; mtimeNs: string; size: number } | undefined> {
  const info = await stat(path, { bigint: true }).catch(() => undefined);
  if (info === undefined) return undefined;
  return { inode: Number(info.ino), mtimeNs: String(info.mtimeNs), size: Number(info.size) };
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  const handle = await open(path, 'r');
  const buffer = Buffer.allocUnsafe(8 * 1024 * 1024);
  try {
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.byteLength, null);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
    }
  } finally {
    await handle.close();
  }
  return hash.digest('hex');
}

async function writeState(copy: string, snapshotId: number, checksum: string): Promise<void> {
  const id = await identity(copy);
  if (id === undefined) return;
  const state: KeptState = { format: 1, snapshotId, checksum, ...id };
  await writeFile(statePath(copy), JSON.stringify(state));
}

/** Whether the kept copy holds `current` (its identity as recorded, else its content proves it). */
async function keptHolds(copy: string, current: SnapshotEntry): Promise<boolean> {
  const id = await identity(copy);
  if (id === undefined || id.size !== current.size) return false;
  let state: Partial<KeptState> | undefined;
  try {
    state = JSON.parse(await readFile(statePath(copy), 'utf8')) as Partial<KeptState>;
  } catch {
    state = undefined;
  }
  const checksum = current.checksum.toLowerCase();
  if (state?.checksum === checksum && state.inode === id.inode && state.mtimeNs === id.mtimeNs) return true;
  return (await sha256Of(copy)) === checksum;
}

/** Downloads `current` to `copy` (through a temporary sibling), checked against its size and SHA-256. */
async function downloadBase(
  store: ObjectStore,
  dataset: string,
  recordedLocation: string,
  current: SnapshotEntry,
  copy: string,
): Promise<void> {
  const key = resolveSnapshotKey(recordedLocation, current.uri);
  const temp = scratchPath(copy, 'tmp');
  const handle = await open(temp, 'wx');
  const hash = createHash('sha256');
  let bytes = 0;
  try {
    for await (const chunks of readParallelParts(store, key, { size: current.size })) {
      for (const chunk of chunks) {
        hash.update(chunk);
        bytes += chunk.byteLength;
      }
      await handle.writev(chunks as Uint8Array[]);
    }
    await handle.sync();
  } catch (error) {
    await handle.close().catch(() => undefined);
    await rm(temp, { force: true });
    throw new IncrementalBaseError(
      dataset,
      `downloading its current snapshot '${current.uri}' failed (${messageOf(error)}); check the store and publish again`,
      { cause: error },
    );
  }
  await handle.close();
  const digest = hash.digest('hex');
  if (bytes !== current.size || digest !== current.checksum.toLowerCase()) {
    await rm(temp, { force: true });
    throw new IncrementalBaseError(
      dataset,
      `its current snapshot '${current.uri}' downloaded as ${bytes} bytes with SHA-256 ${digest}, not the recorded ${current.size} bytes and ${current.checksum}; publish a full snapshot`,
    );
  }
  await rename(temp, copy);
}

async function applyDuckDb(dataset: string, path: string, statements: readonly string[]): Promise<void> {
  const { instance, connection } = await openBuildConnection(path);
  try {
    for (const sql of statements) {
      let extracted: Awaited<ReturnType<typeof connection.extractStatements>>;
      try {
        extracted = await connection.extractStatements(sql);
      } catch (error) {
        throw new IncrementalStatementError(dataset, sql, messageOf(error), { cause: error });
      }
      if (extracted.count === 0) throw new IncrementalStatementError(dataset, sql, 'it holds no statement');
      for (let index = 0; index < extracted.count; index++) {
        try {
          const prepared = await extracted.prepare(index);
          try {
            if (!ALLOWED_DUCKDB.has(prepared.statementType)) {
              const kind = StatementType[prepared.statementType] ?? String(prepared.statementType);
              throw new IncrementalStatementError(dataset, sql, `it holds a ${kind} statement`);
            }
            await prepared.run();
          } finally {
            prepared.destroySync();
          }
        } catch (error) {
          if (error instanceof IncrementalStatementError) throw error;
          throw new IncrementalStatementError(dataset, sql, messageOf(error), { cause: error });
        }
      }
    }
    await connection.run('CHECKPOINT');
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

function applySqlite(dataset: string, path: string, statements: readonly string[]): void {
  checkSqliteBinding();
  const db = new Database(path, { fileMustExist: true });
  try {
    db.pragma('journal_mode = DELETE');
    const prepared = statements.map((sql) => {
      if (!ALLOWED_SQLITE.test(sql)) {
        throw new IncrementalStatementError(dataset, sql, 'it is not an INSERT, UPDATE or DELETE');
      }
      try {
        const statement = db.prepare(sql);
        if (statement.reader) throw new Error('it returns rows');
        return statement;
      } catch (error) {
        throw new IncrementalStatementError(dataset, sql, messageOf(error), { cause: error });
      }
    });
    db.transaction(() => {
      prepared.forEach((statement, i) => {
        try {
          statement.run();
        } catch (error) {
          throw new IncrementalStatementError(dataset, statements[i] ?? '', messageOf(error), {
            cause: error,
          });
        }
      });
    })();
  } finally {
    db.close();
  }
}

/**
 * Publish a new snapshot of `dataset` made by applying `statements` to its current one. The
 * result is published like any other (`publishBuilt`: schema refusal, upload with block manifest,
 * conditional metadata.json rewrite); the file becomes the kept copy for the next call.
 * @throws IncrementalBaseError when the location records no snapshot of the dataset or its current
 * one cannot be fetched intact; IncrementalStatementError; every error `publishSnapshot` throws.
 */
export async function publishIncremental(
  options: PublishIncrementalOptions,
): Promise<IncrementalPublishResult> {
  const { dataset, statements } = options;
  assertDatasetName(dataset);
  const maxAttempts = maxAttemptsOf(options);
  if (statements.length === 0 || statements.some((sql) => sql.trim() === '')) {
    throw new WriterOptionsError(
      'statements',
      `The incremental publish of dataset '${dataset}' needs at least one non-empty statement.`,
    );
  }
  const owned = typeof options.location === 'string';
  const store =
    typeof options.location === 'string'
      ? createObjectStore(options.location, options.storeParams ?? {})
      : options.location;
  let work: string | undefined;
  try {
    const firstRead = await readMetadata(store);
    const entry = datasetEntry(store, firstRead, dataset);
    const current = entry === undefined ? undefined : currentSnapshot(entry);
    if (entry === undefined || current === undefined) {
      throw new IncrementalBaseError(
        dataset,
        `'${store.location}metadata.json' records no current snapshot of it; publish a full snapshot first`,
      );
    }
    await mkdir(options.stateDir, { recursive: true });
    const copy = join(options.stateDir, `${dataset}.snapshot`);
    await removeAbandonedScratch(copy);
    let source: 'kept' | 'downloaded' = 'kept';
    if (!(await keptHolds(copy, current))) {
      source = 'downloaded';
      await rm(statePath(copy), { force: true });
      const recorded = parseMetadata(firstRead.text ?? '{}', store.location).location;
      await downloadBase(store, dataset, recorded, current, copy);
    }
    const header = readDatabaseHeader(copy).format;
    if (header !== 'duckdb' && header !== 'sqlite') {
      throw new IncrementalBaseError(
        dataset,
        `its current snapshot '${current.uri}' is neither a DuckDB nor an SQLite file`,
      );
    }
    const engine: FileFormat = header;
    work = scratchPath(copy, 'work');
    await copyFile(copy, work);
    if (engine === 'duckdb') await applyDuckDb(dataset, work, statements);
    else applySqlite(dataset, work, statements);
    assertNoSideFiles(work, engine);
    const { schema, rowCount } = await inspect(work, dataset, engine, undefined);
    const { size } = await stat(work);
    const built: BuiltSnapshot = { path: work, dataset, engine, schema, rowCount, size };
    const published = await publishBuilt(
      store,
      firstRead,
      built,
      { ...options, base: { snapshotId: current.snapshotId, checksum: current.checksum } },
      maxAttempts,
      signingOf(options),
    );
    await rename(work, copy);
    work = undefined;
    await writeState(copy, published.snapshotId, published.checksum);
    return { ...published, base: { snapshotId: current.snapshotId, source } };
  } finally {
    if (work !== undefined) {
      await Promise.all(
        ['', '.wal', '-wal', '-shm', '-journal'].map((s) => rm(`${work}${s}`, { force: true })),
      );
    }
    if (owned) await store.close();
  }
}
