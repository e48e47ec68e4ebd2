/**
 * The embed API's types: what `createRuntime()` returns and takes. An app embeds Ferry through
 * these; the CLI's HTTP server, the Flight server and the inspector are built on exactly the same
 * surface.
 *
 * Queries (see docs/queries.md): every dataset is a table of one SQL namespace. A statement may
 * read any number of datasets, join them (within DuckDB, within SQLite, or across the two) or
 * read none (`SELECT 1`). Three ways to get a result:
 *
 *   - `query(sql, params?, options?)` → {@link RuntimeQueryResult}: JSON-safe rows, capped by
 *     `maxResultRows` and `maxResultBytes`.
 *   - `queryArrow(sql, params?, options?)` → {@link RuntimeArrowResult}: an apache-arrow `Table`,
 *     capped the same way.
 *   - `queryStream(sql, params?, options?)` → {@link RuntimeQueryStream}: the schema at once and
 *     the result as `RecordBatch`es (`for await (const batch of stream.batches)`), not capped in
 *     rows; bounded by `maxStreamBytes`, by `queryTimeoutMs` per batch of engine time and by
 *     `streamIdleTimeoutMs` of consumer silence. At most two batches wait between the engine and
 *     the consumer: a consumer that stops reading stops the engine; leaving the loop early (or
 *     `cancel()`) cancels the query.
 *   - `queryJson(sql, params?, options?)` → {@link RuntimeJsonAnswer}: for a caller that writes
 *     JSON, a small result as its rows' JSON text (made where the query ran), a larger one as the
 *     stream above.
 *
 * Every result says which datasets it read and at which snapshot (`datasets`); a query reads each
 * dataset at one snapshot from start to end, even across a swap. `options.signal` cancels a
 * query in its engine (it rejects with `ERR_QUERY_CANCELLED`).
 */

import type { ResourceLimits } from 'node:worker_threads';
import type {
  ConfigIssue,
  DatasetStatus,
  FileFormat,
  JsonValue,
  PollResult,
  QueryParam,
  QueryResult,
  SnapshotEntry,
  SpicepodConfig,
} from '@ferry/core/base';
import type { RecordBatch, Schema, Table } from 'apache-arrow';
import type { Logger, LogLevel } from './common/logging.js';
import type { DatasetCommand, InspectionEvent } from './common/protocol.js';
import type { CacheCounters, CacheStatus } from './query/results-cache.js';
import type { RuntimeTls } from './tls.js';

// The types of @ferry/core these signatures use, so that an application names them from here (an
// application installed with pnpm cannot import @ferry/core, not one of its own dependencies).
export type {
  CacheCounters,
  CacheStatus,
  ConfigIssue,
  DatasetCommand,
  DatasetStatus,
  FileFormat,
  InspectionEvent,
  JsonValue,
  PollResult,
  QueryParam,
  QueryResult,
  SnapshotEntry,
  SpicepodConfig,
};

export interface InspectOptions {
  /** Only this dataset's machine. */
  readonly dataset?: string;
}

/** Where live files go without `dataDir`, relative to the spicepod's folder. */
export const DEFAULT_DATA_DIR = '.ferry/data';

export interface RuntimeOptions {
  /** Where logs go (a pino instance works); default: pino JSON lines on stderr at `logLevel`. */
  readonly logger?: Logger;
  /**
   * The default logger's level (default `info`). With a logger of your own: the lowest level the
   * threads send it, when the logger has no pino-style `isLevelEnabled` to ask (default: every level).
   */
  readonly logLevel?: LogLevel;
  /**
   * Directory for live files of datasets without a `duckdb_file` / `sqlite_file` param.
   * Default: {@link DEFAULT_DATA_DIR} beside the spicepod (or in the working directory for an inline config).
   */
  readonly dataDir?: string;
  /** Environment for secret references and endpoint overrides; default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Per-query time limit (a stream: per batch of engine time); default 30 000 ms; 0 disables it. */
  readonly queryTimeoutMs?: number;
  /**
   * Queries admitted at once, running or waiting in the query pools' queues (a stream counts until
   * its engine and its reader are done); past it a query is refused at once with
   * `ERR_QUERY_REJECTED` (`QueryRejectedError`: HTTP 429 with `Retry-After`, Flight
   * `RESOURCE_EXHAUSTED`). Default: the spicepod's `runtime.query.ferry_max_in_flight`, else 64
   * per core; 0 disables it.
   */
  readonly maxQueriesInFlight?: number;
  /**
   * Nice value the query threads (DuckDB workers and DuckDB's threads, SQLite read threads, and
   * libuv's threadpool, where DuckDB's statements run: shared by the whole process, so its file
   * system calls too) add to their own on Linux, so the host thread — probes, new connections,
   * refusals, answers — is scheduled first when cores are short. Default 2; 0 keeps the process's
   * priority. A nice value also yields the engines to every other process on the machine: at 10,
   * B9's cheap load served 0.82–0.87× a plain server beside its clients, at 2 1.07–1.11×; B15's probes
   * 30 ms and 56–67 ms (docs/reliability.md).
   */
  readonly queryThreadNiceness?: number;
  /** Largest number of rows `query` / `queryArrow` may return; default 100 000; 0 disables it. */
  readonly maxResultRows?: number;
  /**
   * Largest result `query` / `queryArrow` may return, in bytes (of the values; of the Arrow IPC
   * for `queryArrow`); default 64 MiB; 0 disables it.
   */
  readonly maxResultBytes?: number;
  /** Largest `queryStream` result, in Arrow IPC bytes; default 16 GiB; 0 disables it. */
  readonly maxStreamBytes?: number;
  /** A stream whose batches are not read for this long is cancelled; default 60 000 ms; 0 disables it. */
  readonly streamIdleTimeoutMs?: number;
  /**
   * Memory of each DuckDB query instance of the default class (`'4GB'`, `'512MiB'` or bytes); a
   * dataset's `duckdb_memory_limit` lowers it for the queries that read it. Default: half of the
   * machine's memory, shared by the DuckDB query workers.
   */
  readonly queryMemoryLimit?: string | number;
  /** DuckDB threads of each query instance (a dataset's `duckdb_threads` lowers it); default: the cores, shared by the workers. */
  readonly queryThreads?: number;
  /** Most each DuckDB query instance may spill to its temporary directory (inside the data directory); default 4 GiB. */
  readonly queryTempDirectorySize?: string | number;
  /** DuckDB query workers (each runs many queries at once); default 1. */
  readonly duckdbQueryThreads?: number;
  /** Most rows of an SQLite dataset read into DuckDB to join it with DuckDB datasets; default 1 000 000. */
  readonly crossEngineMaxRows?: number;
  /** Most bytes of an SQLite dataset read into DuckDB to join it with DuckDB datasets; default 256 MiB. */
  readonly crossEngineMaxBytes?: number;
  /** JavaScript memory limits of each query worker (both pools); default: 2 GiB old generation. */
  readonly queryWorkerResourceLimits?: ResourceLimits;
  /** Threads of the SQLite read pool; default: the number of cores. */
  readonly sqliteReadThreads?: number;
  /** Polls of one location within this many ms share one metadata.json read; default 2 000. */
  readonly metadataWindowMs?: number;
  /** Delays before restarting a dead dataset thread, by consecutive failure; default 1 s … 30 s. */
  readonly restartBackoffMs?: readonly number[];
  /**
   * Memory limits of each dataset thread (an exceeded limit ends the thread, which is restarted);
   * default `{ maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 6 }`. A thread holds one
   * machine and the metadata it last read; any stated old-generation limit settles a thread ~0.7 MiB
   * smaller than the unbounded default, and the small young generation keeps V8 from growing its
   * new space to 32 MiB under steady swaps (thread-limits.ts). Limits given replace the default.
   */
  readonly datasetResourceLimits?: ResourceLimits;
  /**
   * Workers of the snapshot pool, which downloads, verifies and swaps in the snapshots of every
   * dataset (see docs/threads.md); default 2. An idle worker ends after `snapshotIdleTimeoutMs`
   * (default 30 s) and is started again by the next task.
   */
  readonly snapshotThreads?: number;
  readonly snapshotIdleTimeoutMs?: number;
  /**
   * Datasets bootstrapping at once, at most (as Spice's `runtime.dataset_load_parallelism`): the
   * others wait in `starting`, and each reports ready on its own. Default: 4 per core (8 on two).
   */
  readonly datasetLoadParallelism?: number;
  /** SQS consumer tuning (visibility timeout default 300 s, long poll default 20 s). */
  readonly notifications?: {
    readonly visibilityTimeoutSeconds?: number;
    readonly waitTimeSeconds?: number;
    /** Scales the outage retry backoff (1 s … 30 s); tests shrink it. */
    readonly backoffScale?: number;
    /** How long a commit seen by a read may wait for its notification before it counts as missed; default 5 min. */
    readonly missedCommitGraceMs?: number;
  };
}

export interface QueryOptions {
  /** Wait for a dataset that is not serving yet instead of failing fast; default false. */
  readonly waitForReady?: boolean;
  /**
   * Do not answer from the results cache (Spice's `Cache-Control: no-cache`): the query runs, and
   * its result is offered to the cache for the next ones. The result's `cache` is `bypass`.
   */
  readonly noCache?: boolean;
  /** With `waitForReady`, how long to wait; default 30 000 ms. */
  readonly readyTimeoutMs?: number;
  /**
   * Cancels the query: it stops in its engine and rejects with `ERR_QUERY_CANCELLED`. One signal
   * may serve many queries (an application's shutdown signal, a connection's): a query takes its
   * listener off when it ends.
   */
  readonly signal?: AbortSignal;
  /**
   * The most staleness (ms) this query accepts: when a dataset it read is staler (see
   * `DatasetInfo.stalenessMs`), it rejects with `ERR_STALE` (`StaleReadError`, HTTP 503 with
   * `Retry-After`) instead of answering. Absent: no check. Not a number of milliseconds, 0 or more
   * (NaN, `'30s'`, a negative one): a `RangeError`, before the query runs.
   */
  readonly maxStalenessMs?: number;
  /**
   * Pins (dataset → snapshot id; HTTP / Flight `X-Ferry-Snapshot: orders=17`): each named dataset
   * the query reads is read at that snapshot, the current one or an earlier one this reader still
   * holds (see `ferry_retain_snapshots`), however many swaps happened since; datasets not named are
   * read at their current snapshot. A snapshot no longer held rejects with `ERR_SNAPSHOT_GONE`
   * (`SnapshotGoneError`, naming the ids held), one never published to this reader's knowledge with
   * `ERR_SNAPSHOT_NOT_FOUND`. A pinned answer is cached under its pinned snapshots only.
   */
  readonly snapshots?: Readonly<Record<string, number>>;
  /** How the query came, the task history's `protocol` label: `http` and `flight` from Ferry's servers; default `embed`. */
  readonly protocol?: string;
}

export interface StreamOptions extends QueryOptions {
  /** Largest stream in Arrow IPC bytes; default: the runtime's `maxStreamBytes`. */
  readonly maxBytes?: number;
  /** Cancel the stream when its batches are not read for this long; default: `streamIdleTimeoutMs`. */
  readonly idleTimeoutMs?: number;
  /** Rows per batch at most; default 65 536 (batches are also cut at about 4 MiB). */
  readonly batchRows?: number;
  /**
   * The stream's schema names the statement's parameters' types in its metadata, under
   * `ferry:parameter_types` (a JSON array, one Arrow type per `$n`, `null` where the engine could
   * not type it). DuckDB types them as it binds the statement; SQLite, which has no parameter
   * types, by the columns the statement's program compares them with (`WHERE id = ?` takes `id`'s
   * declared type; `LIMIT ?` is Int64). The results cache keeps such a stream apart from the
   * statement's plain ones. Flight's CreatePreparedStatement asks it for its parameter schema.
   */
  readonly parameterTypes?: boolean;
  /**
   * The statement is a schema lookup, its stream stopped once its schema is known (Flight's
   * GetSchema, CreatePreparedStatement, GetTables' schemas): `'failure'`, the task history records
   * it only when it fails before its schema, with its error, as Spice records a schema lookup —
   * never as a query its caller cancelled; `'none'`, not at all (a lookup of the server's own, such
   * as a table's schema GetTables lists). Absent: recorded as every query is.
   */
  readonly taskHistory?: 'failure' | 'none';
}

export interface JsonOptions extends StreamOptions {
  /**
   * A result whose JSON text is at most this many bytes (and which ends within one batch) is
   * answered as that text ({@link RuntimeJsonRows}); default 64 KiB; 0: always a stream.
   */
  readonly inlineBytes?: number;
}

/**
 * A small result as JSON text, made where the query ran: from its rows, each value in the JSON form
 * a stream's batch gives it, or (where the batch's types would convert values) from that batch by
 * the code that writes a stream's batches. Either way the text is the one a stream's batches give.
 */
export interface RuntimeJsonRows extends QueryProvenance {
  /** Its rows as JSON object texts joined by commas: `[${json}]` is the JSON array of the rows. */
  readonly json: string;
  readonly rows: number;
  /**
   * Its size: its Arrow batch's buffers when it was built as one, else its text's length. A byte cap
   * that must count Arrow bytes asks `inlineBytes: 0` (a stream's batches are counted as IPC bytes).
   */
  readonly bytes: number;
}

/** `queryJson`'s answer: the rows as JSON text when the result is small, else the stream. */
export type RuntimeJsonAnswer = RuntimeJsonRows | RuntimeQueryStream;

/** A dataset a query read, and the snapshot it read it at. */
export interface DatasetRead {
  readonly name: string;
  readonly snapshotId: number;
}

/** Which datasets a result was read from, and by which engine. */
export interface QueryProvenance {
  /** Every dataset the query read (in the order the statement names them), each at one snapshot. */
  readonly datasets: readonly DatasetRead[];
  /** The one dataset it read; `null` when it read none or several (see `datasets`). */
  readonly dataset: string | null;
  /** That dataset's snapshot; `null` when `dataset` is. */
  readonly snapshotId: number | null;
  /** The engine that ran it (`sqlite` for Turso files too): what `columns[].type` names are names of. */
  readonly engine: FileFormat;
  /**
   * The results cache's part (Spice's `Results-Cache-Status`): `hit` (answered from the cache),
   * `miss` (ran; offered to the cache), `bypass` (`noCache`). Absent when the cache does not apply:
   * it is off, or the statement reads no dataset or has a clock, a random source or a listing in it.
   */
  readonly cache?: CacheStatus;
}

export interface RuntimeQueryResult extends QueryResult, QueryProvenance {}

/** A result as an apache-arrow `Table`. */
export interface RuntimeArrowResult extends QueryProvenance {
  readonly table: Table;
}

/**
 * A result as Arrow record batches, read as they are produced. `batches` may be iterated once;
 * leaving the loop early cancels the query, and so does `cancel()`. An error (a limit, the engine)
 * is thrown by the iteration.
 */
export interface RuntimeQueryStream extends QueryProvenance {
  readonly schema: Schema;
  readonly batches: AsyncIterable<RecordBatch>;
  /** Stops the query in its engine; the iteration ends with `ERR_QUERY_CANCELLED`. */
  cancel(): void;
  /**
   * Aborted, with the reason, when the stream ends early on its own — a limit (`ERR_QUERY_TIMEOUT`,
   * `ERR_STREAM_IDLE`, a size cap), its engine failing, or `cancel()` — even while nobody reads
   * it: a server whose client stopped reading learns here that the answer is over.
   */
  readonly stopped: AbortSignal;
}

export interface DatasetInfo {
  readonly name: string;
  /** Configured engine, or the one metadata.json names once read. */
  readonly engine: string | undefined;
  /** `failed` when the dataset's config was refused; `starting` before its thread reports. */
  readonly state: DatasetStatus['state'] | 'failed' | 'starting' | 'restarting';
  readonly status: DatasetStatus | undefined;
  /** Why the dataset cannot run (config error) or its thread died. */
  readonly error: string | undefined;
  /** The dataset's `from` as written in the spicepod; absent when its configuration was refused. */
  readonly from?: string;
  /**
   * How long this reader may have been behind the store, in ms, when this info was taken: the time
   * since it last knew it served the store's current snapshot (see `datasetStaleness` in
   * @ferry/core). Null while it serves nothing.
   */
  readonly stalenessMs: number | null;
  /** The newest snapshot id this reader knows the store has beyond the served one; null when none. */
  readonly newerSnapshotId: number | null;
  /** `ferry_max_staleness` in ms (past it the dataset is not ready); null when it has no bound. */
  readonly maxStalenessMs: number | null;
  /**
   * The snapshot served before the current one, and its staleness now: the time since it was last
   * known to be the store's current snapshot (its last check before the swap). An answer read at it
   * while the swap happened is judged by this (`maxStalenessMs`). Absent before the first swap.
   */
  readonly replaced?: { readonly snapshotId: number; readonly stalenessMs: number };
}

export interface SwapEvent {
  readonly dataset: string;
  readonly from: number | null;
  readonly to: number;
}

/**
 * One check a dataset made itself. While anyone listens for `poll` events no dataset parks (each
 * check then runs in its thread, so each is heard); `status()` and `metrics()` count every check.
 */
export interface PollEvent {
  readonly dataset: string;
  readonly result: PollResult;
  readonly currentSnapshotId: number | null;
}

export interface ErrorEvent {
  readonly dataset: string;
  readonly code: string;
  readonly message: string;
  readonly snapshotId: number | null;
}

export interface StateEvent {
  readonly dataset: string;
  readonly state: DatasetInfo['state'];
  readonly status: DatasetStatus | undefined;
}

export interface NotificationEvent {
  /** `received`, `deleted`, `left` (kept on the queue) or `unparseable`. */
  readonly outcome: 'received' | 'deleted' | 'left' | 'unparseable';
  readonly count: number;
}

export interface RuntimeEvents {
  readonly swap: SwapEvent;
  readonly poll: PollEvent;
  readonly error: ErrorEvent;
  readonly state: StateEvent;
  readonly notification: NotificationEvent;
}

/**
 * A dataset's bootstraps: snapshots it downloaded (and validated) while it served nothing, i.e.
 * at the start of a dataset thread that had no usable live file.
 */
export interface BootstrapMetrics {
  /** Milliseconds spent downloading and validating bootstrap snapshots, summed over thread starts. */
  readonly durationMs: number;
  /** `snapshot-size` of the last bootstrap snapshot. */
  readonly bytes: number;
  /** `snapshot-checksum` (SHA-256, hex) of the last bootstrap snapshot. */
  readonly checksum: string;
  readonly snapshotId: number;
}

/** Counters kept by the host for `/metrics`. */
export interface RuntimeMetrics {
  readonly swaps: Readonly<Record<string, number>>;
  readonly polls: Readonly<Record<string, Readonly<Record<PollResult, number>>>>;
  /** Bytes fetched from stores for snapshots (a delta download counts only the ranges it fetched). */
  readonly downloadedBytes: number;
  /** Bytes of downloaded snapshots copied from the file held before instead (delta downloads). */
  readonly reusedBytes: number;
  readonly downloadSeconds: number;
  /** Per dataset: the bytes fetched and reused by its last download. */
  readonly lastDownloads: Readonly<
    Record<
      string,
      { readonly fetchedBytes: number; readonly reusedBytes: number; readonly snapshotId: number }
    >
  >;
  readonly sqsMessages: { readonly received: number; readonly deleted: number; readonly left: number };
  /** Per dataset, once it bootstrapped from the store. */
  readonly bootstraps: Readonly<Record<string, BootstrapMetrics>>;
  /** Per dataset: the snapshot failures its machine reported (each `error` event). */
  readonly failures: Readonly<Record<string, number>>;
  /** Per dataset, then per refusal code (`ERR_SNAPSHOT_UNSIGNED`, …): candidates refused by their signature. */
  readonly signatureRefusals: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /**
   * Per dataset with trusted keys, once its writer's heartbeat was first checked: whether it is
   * stale (no trustworthy, unexpired statement), and how many times it turned stale.
   */
  readonly freshness: Readonly<Record<string, { readonly stale: boolean; readonly staleTimes: number }>>;
  /** The SQL results cache: lookups answered and not, bypasses, evictions, what it holds. */
  readonly resultsCache: CacheCounters;
}

/** One `snapshots[]` entry of a dataset's metadata.json (as parsed), checked against the store. */
export interface SnapshotInfo extends SnapshotEntry {
  /** The entry `current-snapshot-id` names. */
  readonly isCurrent: boolean;
  /** The object's size as a HEAD found it; null when it is missing or its URI lies outside the location. */
  readonly storedSize: number | null;
  /** The object exists with the recorded `size` (a HEAD, not a download: the checksum is not recomputed). */
  readonly verified: boolean;
  /**
   * This reader holds it: it serves it now, or keeps it for pinned reads (`X-Ferry-Snapshot`; as
   * many as `ferry_retain_snapshots`, the current one included). Never served unasked.
   */
  readonly held: boolean;
}

/** What `runtime.snapshots()` answers: a dataset's snapshots as the store records them now. */
export interface SnapshotListing {
  readonly dataset: string;
  /** The location recorded in metadata.json (the configured one when there is no metadata.json). */
  readonly location: string;
  /** `last-updated-ms` of metadata.json; null when the location has no metadata.json yet. */
  readonly lastUpdatedMs: number | null;
  /** The dataset entry's `engine`, when recorded. */
  readonly engine?: string;
  readonly currentSnapshotId?: number;
  /** In recorded order (oldest first); only the last `limit` entries when a limit was given. */
  readonly snapshots: readonly SnapshotInfo[];
}

export interface SnapshotsOptions {
  /** Keep only the last `limit` entries (a positive integer); default: all. */
  readonly limit?: number;
}

export interface Runtime {
  /** The loaded configuration (secrets included: never log it whole). */
  readonly config: SpicepodConfig;
  /**
   * The spicepod's `runtime.tls` certificate and key (PEM), checked to work together: the HTTP and
   * Flight servers started on this runtime serve TLS with them unless given their own, never
   * plaintext. Undefined when the spicepod asks for no TLS.
   */
  readonly tls: RuntimeTls | undefined;
  /** Config errors of datasets that were refused (others run) and warnings. */
  readonly configErrors: readonly ConfigIssue[];
  readonly configWarnings: readonly ConfigIssue[];
  /** Runs one read-only statement over the namespace of every dataset; JSON-safe rows. */
  query(sql: string, params?: readonly QueryParam[], options?: QueryOptions): Promise<RuntimeQueryResult>;
  /** The same, answered as an apache-arrow `Table` (capped like `query`). */
  queryArrow(
    sql: string,
    params?: readonly QueryParam[],
    options?: QueryOptions,
  ): Promise<RuntimeArrowResult>;
  /**
   * The same, streamed: resolves once the schema is known; the batches follow as the consumer reads
   * them (not capped by `maxResultRows`; see {@link StreamOptions}).
   */
  queryStream(
    sql: string,
    params?: readonly QueryParam[],
    options?: StreamOptions,
  ): Promise<RuntimeQueryStream>;
  /**
   * The same, for a caller that writes JSON: a small result comes back whole as its rows' JSON text
   * (no batch crosses a thread; see {@link JsonOptions}), a larger one as the stream `queryStream`
   * answers. What `POST /v1/sql` answers `application/json` from.
   */
  queryJson(sql: string, params?: readonly QueryParam[], options?: JsonOptions): Promise<RuntimeJsonAnswer>;
  datasets(): DatasetInfo[];
  /** The dataset's machine status; throws `ERR_UNKNOWN_DATASET` for a name not configured. */
  status(name: string): DatasetInfo;
  /** Resolves when the dataset (or every dataset) serves; rejects after `timeoutMs`. */
  ready(name?: string, options?: { readonly timeoutMs?: number }): Promise<void>;
  on<K extends keyof RuntimeEvents>(event: K, listener: (payload: RuntimeEvents[K]) => void): () => void;
  /**
   * Calls `listener` with the inspection events of every dataset's machine, or with `{ dataset }`
   * of that one machine only: a dataset thread builds inspection events only while someone
   * inspects it, so following one machine costs the others nothing. Throws `ERR_UNKNOWN_DATASET`
   * for a name not configured. Returns the unsubscribe function.
   */
  inspect(listener: (event: InspectionEvent) => void, options?: InspectOptions): () => void;
  /**
   * Sends a command to the dataset's machine. Throws `ERR_UNKNOWN_DATASET` for a name not
   * configured, `ERR_DATASET_FAILED` (with the reason) for one that cannot run, and
   * `ERR_DATASET_NOT_READY` while its thread is starting or restarting.
   */
  send(name: string, command: DatasetCommand): Promise<void>;
  metrics(): RuntimeMetrics;
  /**
   * The version the statement's result has now — what decides its rows (the statement, its
   * parameters, the snapshot of every dataset it reads), hashed, as `resultVersion(sql, params,
   * result.datasets)` gives it for a result — when it can be told without running it (the cache
   * applies to the statement, it ran before, and every dataset it reads serves): a `/v1/sql`
   * request whose `If-None-Match` holds it is answered 304. Undefined otherwise. With `snapshots`
   * (a pinned query's), the version of the answer at those snapshots. With `maxStalenessMs`, throws
   * `StaleReadError` when a dataset it reads is staler, as the query would (a 304 is an answer too).
   */
  resultVersion(
    sql: string,
    params?: readonly QueryParam[],
    options?: Pick<QueryOptions, 'snapshots' | 'maxStalenessMs'>,
  ): string | undefined;
  /**
   * The dataset's snapshots: a fresh (conditional) read of its location's metadata.json by the
   * coordinator's shared reader, then one HEAD per listed entry through the coordinator's store for
   * that location. Throws `ERR_UNKNOWN_DATASET` for a name not configured, `ERR_DATASET_FAILED`
   * for a dataset whose configuration was refused, and the store's or the metadata's error when
   * the read fails.
   */
  snapshots(name: string, options?: SnapshotsOptions): Promise<SnapshotListing>;
  /**
   * Stops polling, closes engines and ends every thread; harmless to call twice. A query still
   * running when the engines close fails with `ERR_RUNTIME_CLOSED`, as one asked after close() does.
   */
  close(): Promise<void>;
}
