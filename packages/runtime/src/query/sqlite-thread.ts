/**
 * A piscina worker of the SQLite read pool: one {@link SqliteNamespace} (every SQLite dataset
 * attached to a read-only main, at the generation the catalog names) running batches of queries,
 * or one query streamed as Arrow batches. Each query runs at the newest catalog version the host
 * wrote on the pool's board (catalog-board.ts), or the one its task carries when the board could not
 * hold it; the worker re-attaches only when the version moved. The host batches queries
 * (`sqlite-read-pool.ts`); this worker records which query of the batch it is running and since
 * when in its batch's slot of the pool's progress buffer, so the host can time each query out on
 * its own. A query past its timeout (or cancelled) is stopped inside SQLite through the pool's stop
 * buffer (sqlite-stops.ts): it fails with `SQLITE_INTERRUPT` and the batch goes on. A query
 * pinned to generations (`X-Ferry-Snapshot`) runs on a connection kept for its set of pins, at the
 * current catalog with those datasets attached at their pinned generations.
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { isMainThread, type MessagePort, workerData } from 'node:worker_threads';
import {
  type BatchOutcome,
  type DatasetRead,
  type InterruptRegion,
  type NamespaceCatalog,
  pinnedCatalog,
  pinsKey,
  pinsOf,
  type SqliteCursor,
  SqliteNamespace,
  type SyncBatchSink,
} from '@ferry/engines/namespaces';
import { readCatalogBoard, readSharedCatalog, type SharedCatalog } from './catalog-board.js';
import { memoryReturn } from './memory-return.js';
import {
  answerOf,
  InlineResult,
  type QueriesText,
  type QueryAnswer,
  type QueryRequest,
  queriesOf,
  SchemaWithFirstBatch,
} from './query-protocol.js';
import { isStopped, markRunning, regionOf } from './sqlite-stops.js';
import { takeCredit } from './stream-credits.js';
import { lowerThreadPriority } from './thread-priority.js';

if (isMainThread) {
  throw new Error('query/sqlite-thread.js runs only as a worker of the SQLite read pool.');
}

export interface SqliteWorkerData {
  /** The empty file the namespace opens read-only as its main database. */
  readonly mainPath: string;
  /** Replaced by `<data dir>` in messages. */
  readonly privateRoots: readonly string[];
  /** SQLite's temporary files (inside the data directory). */
  readonly tempDirectory: string;
  /** Nice value added to each read thread's (thread-priority.ts). */
  readonly niceness?: number;
  /** How long a spare connection (a stream's, a pinned query's) stays open unused; 10 s by default. */
  readonly spareIdleMs?: number;
}

/** What the pool adds to a worker's {@link SqliteWorkerData}: the buffers it shares with every worker. */
export interface SqlitePoolBuffers {
  /** The pool's progress buffer: `[index, startedAtMs]` per batch slot (BigInt64). */
  readonly progress: SharedArrayBuffer;
  /** The pool's catalog board (catalog-board.ts): the newest catalog version, unless a task carries it. */
  readonly board: SharedArrayBuffer;
  /** The pool's stop buffer (sqlite-stops.ts): a region per batch slot. */
  readonly stops: SharedArrayBuffer;
}

/** A batch of queries a worker runs: their JSON text and `bigint` parameters ({@link QueriesText}). */
export interface SqliteReadBatch extends QueriesText {
  /** The catalog, when the board cannot hold it. */
  readonly catalog?: SharedCatalog | undefined;
  /**
   * The batch's slot of the progress buffer, where the worker writes `[index, startedAtMs]` of the
   * query it runs now (`Date.now()` clock; the host set the index to -1 before sending it).
   */
  readonly slot: number;
}

/** A query whose result streams as Arrow batches over `port`. */
export interface SqliteStreamTask {
  /** The catalog, when the board cannot hold it. */
  readonly catalog?: SharedCatalog | undefined;
  readonly request: QueryRequest;
  readonly batchRows?: number | undefined;
  readonly port: MessagePort;
  /** The stream's credits (stream-credits.ts). */
  readonly control: Int32Array;
  /** The stream's stop buffer (sqlite-stops.ts, one slot). */
  readonly stops: Int32Array;
}

const data = workerData as SqliteWorkerData & SqlitePoolBuffers;
lowerThreadPriority(data.niceness ?? 0);
const progress = new BigInt64Array(data.progress);
const stops = new Int32Array(data.stops);
let namespace: SqliteNamespace | undefined;
/**
 * Connections for pinned queries, one per set of pins (the least recently used closed past
 * {@link PINNED_SPACES}): a pinned query reads its datasets at their pinned generations there, so
 * the queries beside it keep the current ones attached (and their prepared statements) on the
 * first, and readers of different pins do not re-attach each other's.
 */
const pinnedSpaces = new Map<
  string,
  { readonly space: SqliteNamespace; base: number | undefined; version: number }
>();
const PINNED_SPACES = 4;

/** The newest catalog this worker applied (the base a pinned query's catalog is made from). */
let current: NamespaceCatalog | undefined;
/** Pinned catalogs so far: their versions are -2, -3, … (never the host's, nor a namespace's first, -1). */
let pinnedVersions = 0;

function newNamespace(): SqliteNamespace {
  return new SqliteNamespace({
    mainPath: data.mainPath,
    privateRoots: data.privateRoots,
    tempDirectory: data.tempDirectory,
  });
}

/** The newest catalog (the task's, else the board's, else the one applied last). */
function currentCatalog(catalog: SharedCatalog | undefined): NamespaceCatalog | undefined {
  if (catalog !== undefined) {
    if (current?.version !== catalog.version) current = readSharedCatalog(catalog);
  } else current = readCatalogBoard(data.board, current?.version ?? -1) ?? current;
  return current;
}

/** The pins `query` carries, sorted (pinsOf); undefined when it has none. */
function pinsOfQuery(query: QueryRequest): ReturnType<typeof pinsOf> | undefined {
  // Every pin the query carries applies (each names its own dataset).
  const asked = query.pins;
  return asked === undefined
    ? undefined
    : pinsOf(
        asked,
        asked.map((pin) => pin.name),
      );
}

function namespaceAt(catalog: SharedCatalog | undefined, query: QueryRequest): SqliteNamespace {
  namespace ??= newNamespace();
  const current = currentCatalog(catalog);
  if (current === undefined) return namespace;
  const pins = pinsOfQuery(query);
  if (pins === undefined) {
    if (namespace.catalog.version !== current.version) namespace.setCatalog(current);
    return namespace;
  }
  const key = pinsKey(pins);
  let pinned = pinnedSpaces.get(key);
  if (pinned === undefined) {
    pinned = { space: newNamespace(), base: undefined, version: 0 };
    for (const [oldest, entry] of pinnedSpaces) {
      if (pinnedSpaces.size < PINNED_SPACES) break;
      pinnedSpaces.delete(oldest);
      entry.space.close();
    }
  } else pinnedSpaces.delete(key);
  pinnedSpaces.set(key, pinned);
  closeSparesWhenIdle();
  // The catalog moved (another dataset swapped): the datasets not pinned follow it.
  if (pinned.base !== current.version) {
    pinned.base = current.version;
    pinned.version = -1 - ++pinnedVersions;
    pinned.space.setCatalog({ ...pinnedCatalog(current, pins), version: pinned.version });
  }
  return pinned.space;
}

/**
 * Connections for streams, idle ones kept up to {@link IDLE_STREAM_SPACES}. A stream keeps its
 * connection busy with its statement until it ends, and waits for its consumer between batches
 * while this thread runs other tasks: so it never runs on a connection other queries use.
 */
const idleStreamSpaces: SqliteNamespace[] = [];
const IDLE_STREAM_SPACES = 2;

/** A connection of its own for a stream, at the newest catalog (with the query's pins, if any). */
function streamSpace(catalog: SharedCatalog | undefined, query: QueryRequest): SqliteNamespace {
  const space = idleStreamSpaces.pop() ?? newNamespace();
  const current = currentCatalog(catalog);
  if (current === undefined) return space;
  const pins = pinsOfQuery(query);
  space.setCatalog(
    pins === undefined ? current : { ...pinnedCatalog(current, pins), version: -1 - ++pinnedVersions },
  );
  return space;
}

function releaseStreamSpace(space: SqliteNamespace): void {
  space.interruptOn(undefined);
  if (idleStreamSpaces.length < IDLE_STREAM_SPACES) idleStreamSpaces.push(space);
  else space.close();
  closeSparesWhenIdle();
}

let spareTimer: NodeJS.Timeout | undefined;

/**
 * Closes the spare connections (the idle streams' and the pinned queries') once none has been used
 * for `spareIdleMs`. A spare one is set to the newest catalog only when used again, so until then
 * it keeps the generations it had attached, and a generation unlinked since (a swap prunes all but
 * the last three) keeps its disk space while any connection has it open. The main connection
 * follows the catalog with every batch.
 */
function closeSparesWhenIdle(): void {
  clearTimeout(spareTimer);
  spareTimer = setTimeout(() => {
    for (const space of idleStreamSpaces.splice(0)) space.close();
    for (const { space } of pinnedSpaces.values()) space.close();
    pinnedSpaces.clear();
  }, data.spareIdleMs ?? 10_000);
  // An idle worker ends on piscina's idle timeout, closing everything anyway.
  spareTimer.unref();
}

/**
 * The answer, or why not. Errors come back as data: an error thrown here would reach the host as
 * a plain `Error` without its `code` (the pool clones it), and one query's error must not fail its
 * batch.
 */
function runOne(
  catalog: SharedCatalog | undefined,
  query: QueryRequest,
  region: InterruptRegion,
): QueryAnswer {
  try {
    const ns = namespaceAt(catalog, query);
    ns.interruptOn(region);
    if (query.inline !== undefined && query.inline > 0) return inline(ns, query, query.inline);
    return ns.rows(
      query.sql,
      query.params,
      { maxRows: query.maxRows, maxBytes: query.maxBytes },
      query.shape,
    );
  } catch (error) {
    return answerOf(error);
  }
}

/** A query asked `inline`, in a batch of reads (no port to stream on): see `InlineResult`. */
function inline(ns: SqliteNamespace, query: QueryRequest, bound: number): QueryAnswer {
  const result = new InlineResult(bound);
  const { sql, params, maxRows, maxBytes, shape } = query;
  let outcome: BatchOutcome | { error: unknown };
  try {
    outcome = ns.batches(sql, params, result, { maxRows, maxBytes, batchBytes: bound }, shape);
  } catch (error) {
    outcome = { error };
  }
  return result.answer(outcome);
}

/** What a query stopped before it started answers (the host answers its caller with why). */
const STOPPED: QueryAnswer = answerOf(Object.assign(new Error('interrupted'), { code: 'SQLITE_INTERRUPT' }));

/**
 * A batch answers early once it has run this long: cheap queries still share one hop, while the
 * ones queued behind an expensive query go back to the host's queue (and to whichever worker is
 * free first) instead of waiting for it.
 */
const BATCH_BUDGET_MS = 4;

/** What a batch answers: the answers of the queries it ran (a prefix of the batch), and what each took (ms). */
export interface SqliteBatchAnswer {
  readonly answers: QueryAnswer[];
  readonly ms: number[];
}

/**
 * Runs the batch's queries in order; returns a {@link SqliteBatchAnswer} as JSON text: answers are
 * plain JSON values, and the host parses JSON several times faster than it rebuilds the same
 * objects from a structured clone.
 */
export default function run(batch: SqliteReadBatch): string {
  const { slot } = batch;
  const queries = queriesOf(batch);
  const answers: QueryAnswer[] = [];
  const ms: number[] = [];
  const region = regionOf(stops, slot);
  const started = performance.now();
  let last = started;
  for (const [index, query] of queries.entries()) {
    if (index > 0 && last - started >= BATCH_BUDGET_MS) break;
    // Start time first, then the index (the host reads them in the other order).
    Atomics.store(progress, 2 * slot + 1, BigInt(Date.now()));
    Atomics.store(progress, 2 * slot, BigInt(index));
    markRunning(stops, region, index);
    // Stopped before it started (its caller went away): not run at all; the host answers it.
    if (isStopped(stops, region, index)) {
      answers.push(STOPPED);
      ms.push(0);
      continue;
    }
    answers.push(runOne(batch.catalog, query, region));
    const now = performance.now();
    ms.push(now - last);
    last = now;
  }
  markRunning(stops, region, -1);
  return JSON.stringify({ answers, ms } satisfies SqliteBatchAnswer);
}

/** What a streamed query sends over its port: the schema, each batch, then `end` (always last). */
export type SqliteStreamMessage =
  | {
      readonly type: 'schema';
      readonly ipc: Uint8Array;
      readonly read: readonly DatasetRead[];
      /** Set when the first batch is in the same bytes (query-protocol.ts, `SchemaWithFirstBatch`). */
      readonly rows?: number;
    }
  | { readonly type: 'batch'; readonly ipc: Uint8Array; readonly rows: number }
  | { readonly type: 'end' };

/**
 * Streams one query's result over `task.port`, one batch per credit. Between batches it awaits its
 * credit without blocking the thread, on a connection of its own: a consumer that reads slowly, or
 * not at all, holds a connection, never the thread, and the pool runs other tasks here meanwhile.
 */
export async function stream(task: SqliteStreamTask): Promise<QueryAnswer> {
  const { port, control } = task;
  const region = regionOf(task.stops, 0);
  let sent = 0;
  const out = new SchemaWithFirstBatch((ipc, first, rows) => {
    const message: SqliteStreamMessage =
      first === undefined ? { type: 'batch', ipc, rows } : { type: 'schema', ipc, ...first };
    port.postMessage(message, [ipc.buffer as ArrayBuffer]);
  });
  const sink: SyncBatchSink = {
    schema: (schema, read) => out.schema(schema, read),
    batch: (ipc, rows) => {
      sent += out.batch(ipc, rows);
    },
  };
  let space: SqliteNamespace | undefined;
  let cursor: SqliteCursor | undefined;
  try {
    const { sql, params, maxRows, maxBytes } = task.request;
    space = streamSpace(task.catalog, task.request);
    space.interruptOn(region);
    cursor = space.cursor(
      sql,
      params,
      sink,
      {
        maxRows,
        maxBytes,
        ...(task.batchRows === undefined ? {} : { batchRows: task.batchRows }),
        ...(task.request.parameterTypes === true ? { parameterTypes: true } : {}),
      },
      task.request.shape,
    );
    // The first step reads the first batch; each later one hands the one before over, for a credit.
    for (let step = 0; ; step++) {
      if (step > 0) {
        // A turn of the event loop between steps, so a task sent here meanwhile (a batch of point
        // lookups) runs between this stream's batches, not after all of them: a credit already
        // there resolves in a microtask, and streams read as fast as they come would take turns
        // only with each other.
        await yieldToLoop();
        await takeCredit(control);
      }
      // Running only while it steps (the host ends a worker only for a stop it does not answer there).
      markRunning(task.stops, region, 0);
      const outcome = cursor.next();
      markRunning(task.stops, region, -1);
      if (outcome !== undefined) return outcome;
    }
  } catch (error) {
    return answerOf(error);
  } finally {
    cursor?.close();
    if (space !== undefined) releaseStreamSpace(space);
    markRunning(task.stops, region, -1);
    out.flush();
    port.postMessage({ type: 'end' } satisfies SqliteStreamMessage);
    port.close();
    // The batches were built in this thread's heap: a large answer's garbage is this heap's too.
    memoryReturn.ended(sent);
  }
}

/**
 * Full collections this thread's memory return has run (a test hook): they run on timers after a
 * large answer, so they count only if the thread's event loop turns between tasks.
 */
export function memoryCollections(): number {
  return memoryReturn.collections;
}
