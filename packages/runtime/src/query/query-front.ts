/**
 * What the embed API's queries pass through before the query service: the SQL results cache
 * (results-cache.ts) — a hit is answered here, without a pool, a miss runs and its result is offered
 * to the cache once it has been handed over (off the answer's path) — and the task history
 * (task-history.ts), which records every query (a schema lookup as its caller asks). With the
 * cache off and the history off, a query goes straight to the service. A large streamed answer is
 * followed by a full collection (memory-return.ts).
 */
import {
  errorCode,
  type JsonValue,
  type QueryParam,
  type ResultsCacheConfig,
  type TaskHistoryConfig,
} from '@ferry/core/base';
import { type RecordBatch, type Schema, Table } from 'apache-arrow';
import type {
  JsonOptions,
  QueryOptions,
  QueryProvenance,
  RuntimeArrowResult,
  RuntimeJsonAnswer,
  RuntimeJsonRows,
  RuntimeQueryResult,
  RuntimeQueryStream,
  StreamOptions,
} from '../api.js';
import type { Logger } from '../common/logging.js';
import { untilAborted } from '../common/within.js';
import { type MemoryReturn, memoryReturn } from './memory-return.js';
import type { QueryCatalog } from './query-catalog.js';
import { cancelled, type QueryService } from './query-service.js';
import { type CacheCounters, type CacheLookup, type CacheStatus, ResultsCache } from './results-cache.js';
import { TaskHistory } from './task-history.js';

/** What a cached Arrow answer keeps: the schema, the batches, and where they were read. */
interface CachedArrow extends QueryProvenance {
  readonly schema: Schema;
  readonly batches: readonly RecordBatch[];
}

/**
 * Lets the event loop turn once (`setImmediate`). A hit is answered without a thread hop; without
 * this, a caller answered from the cache in a loop (`while (…) await runtime.query(…)`) would never
 * let timers or I/O run — as a query sent to a pool always does.
 */
function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * The largest streamed result kept (queryStream: Flight, Arrow over HTTP). A stream is kept as it
 * is read; past this the batches it sent are let go, so a stream the client reads slowly, or a
 * result larger than memory, holds no more than this beside what is in flight.
 */
export const STREAM_ENTRY_MAX_BYTES = 4 * 2 ** 20;

/** `queryJson`'s default `inlineBytes`: a result whose rows' JSON text is within this comes back as it. */
export const INLINE_JSON_BYTES = 64 * 1024;

/** The memory the buffers of `batches` keep (each distinct ArrayBuffer once: views share them). */
function retainedBytes(batches: readonly RecordBatch[]): number {
  const buffers = new Set<ArrayBufferLike>();
  let loose = 0;
  const visit = (data: RecordBatch['data']): void => {
    for (const view of [data.values, data.valueOffsets, data.nullBitmap, data.typeIds] as (
      | ArrayBufferView
      | undefined
    )[]) {
      if (view === undefined) continue;
      if (view.buffer === undefined) loose += view.byteLength;
      else buffers.add(view.buffer);
    }
    for (const child of data.children) visit(child as RecordBatch['data']);
  };
  for (const batch of batches) visit(batch.data);
  let bytes = loose;
  for (const buffer of buffers) bytes += buffer.byteLength;
  return bytes;
}

/** Bytes the rows of a JSON result take, roughly (strings by length, every value at least 8). */
function rowsBytes(rows: readonly Record<string, JsonValue>[]): number {
  let bytes = 0;
  const visit = (value: JsonValue): void => {
    if (typeof value === 'string') bytes += value.length * 2 + 16;
    else if (value === null || typeof value !== 'object') bytes += 8;
    else if (Array.isArray(value)) for (const item of value) visit(item);
    else for (const item of Object.values(value)) visit(item);
  };
  for (const row of rows) {
    bytes += 16;
    for (const value of Object.values(row)) visit(value);
  }
  return bytes;
}

export class QueryFront {
  readonly #queries: QueryService;
  readonly #cache: ResultsCache;
  readonly #history: TaskHistory;
  readonly #logger: Logger;
  /** What the cache keeps of a stream at most: a few MiB, so its memory stays what is in flight. */
  readonly #streamEntryBytes: number;
  /** Numbers each query, for the line a limit logs. */
  #queryIds = 0;

  constructor(
    queries: QueryService,
    catalog: QueryCatalog,
    cache: ResultsCacheConfig,
    history: TaskHistoryConfig,
    logger: Logger,
  ) {
    this.#logger = logger;
    this.#queries = queries;
    this.#cache = new ResultsCache(cache, (name) => catalog.snapshotOf(name));
    this.#history = new TaskHistory(history);
    this.#streamEntryBytes = Math.min(cache.maxSizeBytes, STREAM_ENTRY_MAX_BYTES);
  }

  /**
   * A statement that reads `spice.runtime.task_history` sees every query recorded before it: the
   * workers are handed the rows first (undefined when there is nothing to wait for).
   */
  #syncHistory(sql: string): Promise<void> | undefined {
    if (!/task_history/i.test(sql)) return undefined;
    const history = this.#history.changed();
    if (history === undefined) return undefined;
    return this.#queries.setTaskHistory(history).then(() => this.#history.sent(history));
  }

  /**
   * Runs a query (`answer`), numbered for the line a limit logs, and hands its result to `finish`
   * with what records it in the task history (undefined with the history off), to record once its
   * rows are known (a stream's when it ends). A failure is recorded, and logged when a limit stopped
   * it. `answer` and `finish` are methods or functions passed whole: no closure per query.
   */
  async #recorded<O extends StreamOptions, T extends QueryProvenance, R>(
    sql: string,
    params: readonly QueryParam[],
    options: O,
    answer: (this: QueryFront, sql: string, params: readonly QueryParam[], options: O) => Promise<T>,
    finish: (this: QueryFront, result: T, record: TaskRecorder<T> | undefined, id: number) => R,
  ): Promise<R> {
    const id = ++this.#queryIds;
    const record = this.#history.enabled ? this.#recorder<T>(sql, options.protocol ?? 'embed') : undefined;
    try {
      const syncing = record === undefined ? undefined : this.#syncHistory(sql);
      if (syncing !== undefined) await syncing;
      // A schema lookup is recorded only when it fails, as Spice records one (stopping it once it
      // has its schema is no cancellation), or not at all.
      const recordAnswer = options.taskHistory === undefined ? record : undefined;
      return finish.call(this, await answer.call(this, sql, params, options), recordAnswer, id);
    } catch (error) {
      if (options.taskHistory !== 'none') record?.(undefined, 0, error);
      this.#limitReached(id, error);
      throw error;
    }
  }

  /** What records a query that starts now in the task history, once it settles. */
  #recorder<T extends QueryProvenance>(sql: string, protocol: string): TaskRecorder<T> {
    const startMs = Date.now();
    const started = performance.now();
    return (result, rows, error, captured) => {
      const labels: { [label: string]: string } =
        result === undefined
          ? { protocol }
          : {
              protocol,
              datasets: result.datasets.map((read) => read.name).join(','),
              engine: result.engine,
              rows: String(rows),
            };
      if (result?.cache !== undefined) labels.cache = result.cache;
      this.#history.record({
        sql,
        startMs,
        durationMs: performance.now() - started,
        labels,
        error,
        rows: captured,
      });
    };
  }

  close(): void {
    this.#history.close();
    this.#cache.close();
  }

  /**
   * What the cache looks a statement up by: its datasets at the snapshots it will read — the pinned
   * ones (`snapshots`) for a pinned query, so it is never answered from another snapshot's entry.
   */
  #lookup(sql: string, params: readonly QueryParam[], options: Pick<QueryOptions, 'snapshots'>): CacheLookup {
    const pins = options.snapshots;
    return {
      sql,
      params,
      // What the statement (or its shape) read when it last ran: the query service's one record of it.
      datasets: this.#queries.datasetsOf(sql),
      pins:
        pins === undefined
          ? undefined
          : new Map(Object.entries(pins).map(([name, snapshotId]) => [name.toLowerCase(), snapshotId])),
    };
  }

  /** The status a query answered from its engine gets, or undefined when the cache does not apply. */
  #ran(sql: string, options: QueryOptions, read: QueryProvenance['datasets']): CacheStatus | undefined {
    if (!this.#cache.enabled || read.length === 0 || !this.#cache.cacheable(sql)) return undefined;
    return options.noCache === true ? 'bypass' : 'miss';
  }

  /**
   * A request's answer when the cache may give one: a cached answer (a hit); else the answer of an
   * identical request running now, waited for (a hit too; the requests a dashboard's clients send
   * at once run once); else `run()` started, which identical requests arriving while it runs share
   * (`shared`: what of it they get; undefined, or a failure, and they run their own; no `shared`:
   * a request that only streams, neither waiting nor waited for). A caller that bypasses the cache
   * (counted) neither waits nor is waited for. A miss gets its run at once (no promise in between:
   * it costs what a query without the cache costs, measured in B11).
   */
  #cachedOr<A, V>(
    kind: string,
    sql: string,
    params: readonly QueryParam[],
    options: QueryOptions,
    run: () => Promise<A>,
    shared: ((answer: A) => V | undefined) | undefined,
  ): Ran<A> | Promise<Ran<A> | { readonly hit: V }> {
    if (!this.#cache.enabled) return { ran: run() };
    if (options.noCache === true) {
      if (this.#cache.cacheable(sql)) this.#cache.countBypass();
      return { ran: run() };
    }
    const found = this.#cache.find<V>(kind, this.#lookup(sql, params, options));
    const { value, running, key } = found ?? {};
    if (value !== undefined) return turn().then(() => ({ hit: value }));
    if (shared === undefined) return { ran: run() };
    if (running === undefined) return this.#shared(key, run, shared);
    return untilAborted(running, options.signal, cancelled).then((answer) => {
      this.#cache.countJoined(answer !== undefined);
      return answer !== undefined ? { hit: answer } : this.#shared(key, run, shared);
    });
  }

  /** Starts `run`, waited for by the identical requests that come while it runs (under `key`, if any). */
  #shared<A>(key: string | undefined, run: () => Promise<A>, shared: (answer: A) => unknown): Ran<A> {
    const ran = run();
    if (key !== undefined) {
      const landed = this.#cache.share(key, ran, shared);
      ran.then(landed, landed);
    }
    return { ran };
  }

  /**
   * Offers a result to the cache after the current turn: never on the answer's path. Called only
   * once {@link #ran} gave the result a status (the cache applies to it).
   */
  #offer(
    kind: string,
    sql: string,
    params: readonly QueryParam[],
    provenance: QueryProvenance,
    value: unknown,
    bytes: () => number,
  ): void {
    setImmediate(() => {
      this.#cache.set(kind, sql, params, provenance.datasets, value, bytes());
    });
  }

  /** The version the statement's result has now and the datasets that decide it; undefined when not told without running it. */
  resultVersion(
    sql: string,
    params: readonly QueryParam[],
    options: Pick<QueryOptions, 'snapshots'>,
  ): { readonly version: string; readonly datasets: readonly string[] } | undefined {
    const lookup = this.#lookup(sql, params, options);
    const version = this.#cache.versionNow(lookup);
    return version === undefined ? undefined : { version, datasets: lookup.datasets ?? [] };
  }

  /** `dataset` now serves `snapshotId` (null: nothing). */
  retire(dataset: string, snapshotId: number | null): void {
    this.#cache.retire(dataset, snapshotId);
  }

  cacheCounters(): CacheCounters {
    return this.#cache.counters();
  }

  query(sql: string, params: readonly QueryParam[], options: QueryOptions): Promise<RuntimeQueryResult> {
    return this.#recorded(sql, params, options, this.#query, recordRows);
  }

  queryArrow(sql: string, params: readonly QueryParam[], options: QueryOptions): Promise<RuntimeArrowResult> {
    return this.#recorded(sql, params, options, this.#queryArrow, recordTable);
  }

  /** `inlineBytes: 0` asks for a stream (the runtime's `queryStream`). */
  queryJson(sql: string, params: readonly QueryParam[], options: JsonOptions): Promise<RuntimeJsonAnswer> {
    return this.#recorded(sql, params, options, this.#queryJson, this.#handOn);
  }

  /**
   * A JSON answer as the caller gets it. Rows as JSON text are recorded at once; a stream's batches
   * are watched as they are read, and it is recorded when it ends (every batch read, left early, or
   * failed); its limits are logged.
   */
  #handOn(
    answer: RuntimeJsonRows | FrontStream,
    record: TaskRecorder<RuntimeJsonRows | FrontStream> | undefined,
    id: number,
  ): RuntimeJsonAnswer {
    if ('json' in answer) {
      record?.(answer, answer.rows);
      return answer;
    }
    // A limit after the start stops the stream whether or not anyone reads it (an HTTP client
    // that stopped reading): its line is logged then, not when (or if) the error is read. An
    // answer from the cache never stops.
    if (answer.cache !== 'hit') {
      answer.stopped.addEventListener('abort', () => this.#limitReached(id, answer.stopped.reason), {
        once: true,
      });
    }
    const { keep, ...stream } = answer;
    // Recorded once. A stream stopped by a limit while its reader was blocked (then left it)
    // failed by that limit.
    let recorded = false;
    const recordStream =
      record === undefined
        ? undefined
        : (rows: number, error?: unknown) => {
            if (recorded) return;
            recorded = true;
            record(answer, rows, answer.stopped.aborted ? answer.stopped.reason : error);
          };
    const batches = watched(stream.batches, keep, recordStream);
    // A stream stopped before anyone began to read it (cancel(), its idle limit) is recorded then:
    // a generator never started never ends. (An answer from the cache never stops.)
    if (recordStream === undefined || answer.cache === 'hit') return { ...stream, batches };
    let begun = false;
    answer.stopped.addEventListener('abort', () => begun || recordStream(0), { once: true });
    return {
      ...stream,
      batches: {
        [Symbol.asyncIterator]: () => {
          begun = true;
          return batches;
        },
      },
    };
  }

  /**
   * Logs one warn line when `error` is a limit that stopped query `id` (time, an idle reader, a
   * result's size): it did its job, no stack.
   */
  #limitReached(id: number, error: unknown): void {
    const code = errorCode(error);
    if (code === undefined || !LIMIT_CODES.has(code)) return;
    this.#logger.warn(
      { component: 'query', queryId: id, code },
      `Query ${id} stopped by a limit: ${error instanceof Error ? error.message : String(error)}`,
    );
  }

  async #query(
    sql: string,
    params: readonly QueryParam[],
    options: QueryOptions,
  ): Promise<RuntimeQueryResult> {
    const found = this.#cachedOr(
      'rows',
      sql,
      params,
      options,
      () => this.#queries.query(sql, params, options),
      (result) => result,
    );
    const got = 'ran' in found ? found : await found;
    if ('hit' in got) return { ...got.hit, cache: 'hit' };
    const result = await got.ran;
    const status = this.#ran(sql, options, result.datasets);
    if (status === undefined) return result;
    // The service made this object for this call: it is the answer, and the entry (a hit is a copy).
    const answered = Object.assign(result, { cache: status });
    this.#offer('rows', sql, params, result, answered, () => rowsBytes(result.rows));
    return answered;
  }

  async #queryArrow(
    sql: string,
    params: readonly QueryParam[],
    options: QueryOptions,
  ): Promise<RuntimeArrowResult> {
    const found = this.#cachedOr(
      'table',
      sql,
      params,
      options,
      () => this.#queries.queryArrow(sql, params, options),
      cachedArrow,
    );
    const got = 'ran' in found ? found : await found;
    if ('hit' in got) {
      const { schema, batches, ...provenance } = got.hit;
      return { ...provenance, table: new Table(schema, [...batches]), cache: 'hit' };
    }
    const result = await got.ran;
    const status = this.#ran(sql, options, result.datasets);
    if (status === undefined) return result;
    const cached = cachedArrow(result);
    this.#offer('table', sql, params, result, cached, () => retainedBytes(cached.batches));
    return Object.assign(result, { cache: status });
  }

  async #queryJson(
    sql: string,
    params: readonly QueryParam[],
    options: JsonOptions,
  ): Promise<RuntimeJsonRows | FrontStream> {
    const inline = options.inlineBytes ?? INLINE_JSON_BYTES;
    // One entry per statement and stream shape: the rows' text, or the batches of a larger result
    // (`queryStream` asks with no inline answer: its entries are batches only).
    // (A stream whose schema names its parameters' types is kept apart from the plain one.)
    const kind = `json/${inline}/${options.batchRows ?? ''}/${options.maxBytes ?? ''}${options.parameterTypes === true ? '/p' : ''}`;
    const found = this.#cachedOr<RuntimeJsonRows | FrontStream, RuntimeJsonRows | CachedArrow>(
      kind,
      sql,
      params,
      options,
      () => this.#queries.queryJson(sql, params, options, inline),
      // A stream is read once, by its caller: only an answer in one piece is shared (`queryStream`,
      // asking for no inline answer, neither waits nor is waited for).
      inline === 0 ? undefined : (answer) => ('json' in answer ? answer : undefined),
    );
    const got = 'ran' in found ? found : await found;
    if ('hit' in got) return 'json' in got.hit ? { ...got.hit, cache: 'hit' } : cachedStream(got.hit);
    const answer = await got.ran;
    if (!('json' in answer)) return this.#kept(kind, sql, params, options, answer);
    const status = this.#ran(sql, options, answer.datasets);
    if (status === undefined) return answer;
    this.#offer(kind, sql, params, answer, answer, () => 2 * answer.json.length + 256);
    return { ...answer, cache: status };
  }

  /** A stream from its engine, kept by the cache (under `kind`) as it is read. */
  #kept(
    kind: string,
    sql: string,
    params: readonly QueryParam[],
    options: QueryOptions,
    stream: RuntimeQueryStream,
  ): FrontStream {
    const status = this.#ran(sql, options, stream.datasets);
    if (status === undefined) return stream;
    const { schema, batches, cancel, stopped, ...provenance } = stream;
    const offer = (kept: readonly RecordBatch[]): void =>
      this.#offer(kind, sql, params, provenance, { ...provenance, schema, batches: kept }, () =>
        retainedBytes(kept),
      );
    return {
      ...provenance,
      schema,
      cancel,
      stopped,
      cache: status,
      batches,
      keep: { limit: this.#streamEntryBytes, offer },
    };
  }
}

/**
 * Records a query in the task history: its result (undefined when it failed before one), the rows
 * it answered, its error, and the rows captured for `captured_output`.
 */
type TaskRecorder<T> = (
  result: T | undefined,
  rows: number,
  error?: unknown,
  captured?: readonly unknown[],
) => void;

/** Records a `query` result in the task history, its rows captured for `captured_output`. */
function recordRows(
  result: RuntimeQueryResult,
  record: TaskRecorder<RuntimeQueryResult> | undefined,
): RuntimeQueryResult {
  record?.(result, result.rows.length, undefined, result.rows);
  return result;
}

/** Records a `queryArrow` result in the task history. */
function recordTable(
  result: RuntimeArrowResult,
  record: TaskRecorder<RuntimeArrowResult> | undefined,
): RuntimeArrowResult {
  record?.(result, result.table.numRows);
  return result;
}

/** A query started: its engine's answer to come. */
interface Ran<A> {
  readonly ran: Promise<A>;
}

/** What the cache keeps of a table answer: its schema and batches, and where they were read. */
function cachedArrow(result: RuntimeArrowResult): CachedArrow {
  const { table, cache: _cache, ...provenance } = result;
  return { ...provenance, schema: table.schema, batches: table.batches };
}

/** A cached stream's answer, read again. */
function cachedStream(hit: CachedArrow): FrontStream {
  const { schema, batches, ...provenance } = hit;
  return {
    ...provenance,
    schema,
    batches: (async function* () {
      yield* batches;
    })(),
    cancel: () => undefined,
    // Never stops on its own; a signal of its own, so what a consumer adds to it goes with it.
    stopped: new AbortController().signal,
    cache: 'hit',
  };
}

/** The codes of the limits a query can reach (each logged once, at warn). */
const LIMIT_CODES: ReadonlySet<string> = new Set([
  'ERR_QUERY_TIMEOUT',
  'ERR_STREAM_IDLE',
  'ERR_RESULT_TOO_LARGE',
  'ERR_CROSS_ENGINE_TOO_LARGE',
]);

/** What the cache keeps of a stream as it is read: its batches while under `limit` bytes, offered once all were read. */
interface Keep {
  readonly limit: number;
  offer(kept: readonly RecordBatch[]): void;
}

/** A stream as the front hands it on, with what the cache keeps of it as it is read. */
interface FrontStream extends RuntimeQueryStream {
  readonly keep?: Keep;
}

/**
 * `batches` as read, one generator for everything that watches a stream: the cache keeps them
 * (references, no copy) while they stay under `keep.limit` bytes and is offered them once every
 * batch was read (a stream left early or failing offers nothing); when they end — read through,
 * left early, or failed — the task history is told the rows read (`record`; left early, it was
 * cancelled) and this thread's
 * memory return the bytes they carried (memory-return.ts).
 */
export async function* watched(
  batches: AsyncIterable<RecordBatch>,
  keep: Keep | undefined,
  record: ((rows: number, error?: unknown) => void) | undefined,
  memory: Pick<MemoryReturn, 'ended'> = memoryReturn,
): AsyncGenerator<RecordBatch> {
  let kept: RecordBatch[] | undefined = keep === undefined ? undefined : [];
  const limit = keep?.limit ?? 0;
  let rows = 0;
  let bytes = 0;
  let failure: unknown;
  let ended = false;
  try {
    for await (const batch of batches) {
      rows += batch.numRows;
      bytes += batch.data.byteLength;
      if (kept !== undefined) {
        if (bytes > limit) kept = undefined;
        else kept.push(batch);
      }
      yield batch;
    }
    ended = true;
    if (kept !== undefined) keep?.offer(kept);
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    // Left before its end (its reader broke off; an HTTP client went away): cancelled, as its
    // engine was told, not a success.
    record?.(rows, failure ?? (ended ? undefined : cancelled('the consumer stopped reading')));
    memory.ended(bytes);
  }
}
