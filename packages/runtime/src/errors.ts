/**
 * Errors of the runtime: what a caller of the embed API (and the HTTP server, which maps codes to
 * status codes) sees. Each has a stable code and a one-sentence message naming the dataset and the fix.
 * The errors of the layers below that a caller meets through the runtime (a refused or failed query,
 * a store or metadata failure in `snapshots()`, a bad spicepod) are exported from here too, so an
 * embedder can `instanceof` them without depending on the inner packages; an error thrown in a worker
 * thread arrives as an instance of its own class (see `serializeError` in `@ferry/core`).
 */
import { FerryError, formatStaleness, registerErrors } from '@ferry/core/base';

export {
  ConfigError,
  FerryError,
  type FerryErrorOptions,
  IncompatibleSchemaError,
  MetadataError,
  OutsideLocationError,
  SchemaNotFoundError,
  SnapshotRejectedError,
  SnapshotRejectionCode,
  UnsupportedFormatVersionError,
} from '@ferry/core/base';
export {
  CrossEngineLimitError,
  EngineClosedError,
  EngineOpenError,
  InvalidParameterError,
  NamespaceTableError,
  QueryFailedError,
  QueryResourceError,
  SqliteBindingError,
  SqlSyntaxError,
  StatementRejectedError,
  TableNotFoundError,
  UnmappedArrowTypeError,
  UnsupportedColumnTypeError,
  type WriteOperation,
  WriteRejectedError,
} from '@ferry/engines/sql';
export {
  DiskFullError,
  InsufficientDiskSpaceError,
  PreparedSnapshotGoneError,
  TruncatedDownloadError,
} from '@ferry/snapshots/errors';
export {
  ObjectNotFoundError,
  ObjectTooLargeError,
  PreconditionFailedError,
  StoreConfigError,
  StoreError,
  type StoreOperation,
} from '@ferry/store/objects';
// The errors a dataset thread may raise live apart: that thread loads none of the packages below.
export { ChannelClosedError, StaleBuildError, ThreadFileMissingError } from './common/thread-errors.js';

function list(names: readonly string[]): string {
  return names.length === 0 ? '(none)' : names.join(', ');
}

export class UnknownDatasetError extends FerryError {
  readonly table: string;
  constructor(table: string, datasets: readonly string[]) {
    super(
      'ERR_UNKNOWN_DATASET',
      `Table '${table}' is not a dataset of this runtime; the datasets are: ${list(datasets)}.`,
    );
    this.name = 'UnknownDatasetError';
    this.table = table;
  }
}

export class DatasetNotReadyError extends FerryError {
  readonly dataset: string;
  constructor(dataset: string, state: string) {
    super(
      'ERR_DATASET_NOT_READY',
      `Dataset '${dataset}' is not ready (${state}): it has no snapshot loaded yet; retry later or wait with ready('${dataset}').`,
    );
    this.name = 'DatasetNotReadyError';
    this.dataset = dataset;
  }
}

export class DatasetFailedError extends FerryError {
  constructor(dataset: string, reason: string) {
    super('ERR_DATASET_FAILED', `Dataset '${dataset}' cannot run: ${reason}`);
    this.name = 'DatasetFailedError';
  }
}

export class ReadyTimeoutError extends FerryError {
  constructor(names: readonly string[], timeoutMs: number) {
    super(
      'ERR_READY_TIMEOUT',
      `Dataset(s) ${list(names)} did not start serving within ${timeoutMs} ms; check the logs for why (waiting for a first snapshot, store unreachable) or raise timeoutMs.`,
    );
    this.name = 'ReadyTimeoutError';
  }
}

/** `The query on dataset 'orders'`, `… on datasets 'orders', 'customers'`, or `The query`. */
function theQuery(datasets: readonly string[]): string {
  if (datasets.length === 0) return 'The query';
  const quoted = datasets.map((name) => `'${name}'`).join(', ');
  return `The query on ${datasets.length === 1 ? 'dataset' : 'datasets'} ${quoted}`;
}

export class QueryTimeoutError extends FerryError {
  constructor(datasets: readonly string[], timeoutMs: number) {
    super(
      'ERR_QUERY_TIMEOUT',
      `${theQuery(datasets)} ran longer than ${timeoutMs} ms and was cancelled; narrow it or raise the query timeout (runtime.query.ferry_timeout, ferry serve --query-timeout, or queryTimeoutMs when embedded).`,
    );
    this.name = 'QueryTimeoutError';
  }
}

export class ResultTooLargeError extends FerryError {
  constructor(datasets: readonly string[] | string, max: number, limit: 'rows' | 'bytes', setting: string) {
    const what = theQuery([datasets].flat());
    super(
      'ERR_RESULT_TOO_LARGE',
      limit === 'rows'
        ? `${what} returned more than ${max} rows; add a LIMIT or raise ${setting}.`
        : `${what} returned more than ${max} bytes; select fewer columns or rows, stream it (queryStream), or raise ${setting}.`,
    );
    this.name = 'ResultTooLargeError';
  }
}

/** The caller cancelled the query (its `AbortSignal` fired, or its HTTP client went away). */
export class QueryCancelledError extends FerryError {
  constructor(reason?: unknown) {
    super(
      'ERR_QUERY_CANCELLED',
      'The query was cancelled by its caller before it finished; nothing more is read.',
      {
        cause: reason,
      },
    );
    this.name = 'QueryCancelledError';
  }
}

/**
 * The runtime already runs (or queues) as many queries as it admits at once: refused at once,
 * never queued without bound. `retryAfterSeconds` is when one is likely to be admitted (HTTP's
 * `Retry-After`).
 */
export class QueryRejectedError extends FerryError {
  readonly limit: number;
  readonly retryAfterSeconds: number;

  constructor(limit: number, retryAfterSeconds: number) {
    super(
      'ERR_QUERY_REJECTED',
      `The runtime already has ${limit} queries in flight, the most it admits at once (maxQueriesInFlight); retry in ${retryAfterSeconds} s, or raise maxQueriesInFlight.`,
    );
    this.name = 'QueryRejectedError';
    this.limit = limit;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * A query read a dataset staler than the bound its client set (`maxStalenessMs`; HTTP
 * `X-Ferry-Max-Staleness`, Flight `x-ferry-max-staleness`): its answer is withheld. HTTP 503 with
 * `Retry-After` (`retryAfterSeconds`: about one check interval away), Flight `UNAVAILABLE`.
 */
export class StaleReadError extends FerryError {
  readonly dataset: string;
  readonly stalenessMs: number | null;
  readonly maxStalenessMs: number;
  readonly retryAfterSeconds: number;

  constructor(
    dataset: string,
    stalenessMs: number | null,
    maxStalenessMs: number,
    retryAfterSeconds: number,
    /** The snapshot the answer read, when it was replaced more than once while the query ran (its staleness unknown). */
    replacedTwice?: number,
  ) {
    const figure =
      replacedTwice !== undefined
        ? `was read at snapshot ${replacedTwice}, replaced more than once while the query ran (how stale is unknown)`
        : stalenessMs === null
          ? 'serves no snapshot'
          : `is ${formatStaleness(stalenessMs)} stale`;
    super(
      'ERR_STALE',
      `Dataset '${dataset}' ${figure}, past the ${formatStaleness(maxStalenessMs)} this query allows (X-Ferry-Max-Staleness); retry in ${retryAfterSeconds} s, or allow more staleness.`,
    );
    this.name = 'StaleReadError';
    this.dataset = dataset;
    this.stalenessMs = stalenessMs;
    this.maxStalenessMs = maxStalenessMs;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** A freshness header (`X-Ferry-Max-Staleness`, `X-Ferry-Snapshot`) whose value cannot be read. */
export class FreshnessHeaderError extends FerryError {
  constructor(header: string, problem: string) {
    super('ERR_INVALID_FRESHNESS_HEADER', `The ${header} header is not usable: ${problem}.`);
    this.name = 'FreshnessHeaderError';
  }
}

/** A stream whose consumer read nothing for too long was cancelled, freeing its engine. */
export class StreamIdleError extends FerryError {
  constructor(idleMs: number) {
    super(
      'ERR_STREAM_IDLE',
      `The result stream was not read for ${idleMs} ms and was cancelled; read its batches as they come or raise the idle limit (runtime.query.ferry_stream_idle_timeout, or streamIdleTimeoutMs when embedded).`,
    );
    this.name = 'StreamIdleError';
  }
}

/** A statement in SQLite's dialect names a DuckDB dataset, which only DuckDB reads. */
export class CrossDialectError extends FerryError {
  constructor(dataset: string) {
    super(
      'ERR_QUERY_FAILED',
      `Dataset '${dataset}' is a DuckDB dataset, but this statement runs in SQLite (it reads SQLite datasets in SQLite's own syntax); write it in DuckDB's SQL to join them, or query '${dataset}' in a statement of its own.`,
    );
    this.name = 'CrossDialectError';
  }
}

export class RuntimeClosedError extends FerryError {
  constructor() {
    super('ERR_RUNTIME_CLOSED', 'The runtime is closed; create a new one with createRuntime().');
    this.name = 'RuntimeClosedError';
  }
}

/**
 * A query pinned a dataset (`snapshots`; HTTP / Flight `X-Ferry-Snapshot`) to a snapshot this reader
 * served once but no longer holds (its generation was pruned): HTTP 410, Flight FAILED_PRECONDITION.
 * `held`: the snapshot ids it can still read, newest first.
 */
export class SnapshotGoneError extends FerryError {
  readonly dataset: string;
  readonly snapshotId: number;
  readonly held: readonly number[];

  constructor(dataset: string, snapshotId: number, held: readonly number[]) {
    super(
      'ERR_SNAPSHOT_GONE',
      `Snapshot ${snapshotId} of dataset '${dataset}' is no longer held by this reader (it holds ${held.length === 0 ? 'none' : held.join(', ')}); pin one of those, or drop the pin to read the current snapshot (more are kept with ferry_retain_snapshots).`,
    );
    this.name = 'SnapshotGoneError';
    this.dataset = dataset;
    this.snapshotId = snapshotId;
    this.held = held;
  }
}

/**
 * A query pinned a dataset to a snapshot this reader has never served and the store has not
 * published as far as it knows (an id past the newest): HTTP 404, Flight NOT_FOUND.
 */
export class PinnedSnapshotUnknownError extends FerryError {
  constructor(dataset: string, snapshotId: number, newest: number | null) {
    super(
      'ERR_SNAPSHOT_NOT_FOUND',
      `Snapshot ${snapshotId} of dataset '${dataset}' was never published to this reader's knowledge (the newest it knows is ${newest ?? 'none'}); pin a snapshot id an answer's X-Ferry-Snapshot header gave, or list them with GET /v1/datasets/${dataset}/acceleration/snapshots.`,
    );
    this.name = 'PinnedSnapshotUnknownError';
  }
}

registerErrors({
  UnknownDatasetError,
  DatasetNotReadyError,
  DatasetFailedError,
  ReadyTimeoutError,
  QueryTimeoutError,
  ResultTooLargeError,
  QueryCancelledError,
  QueryRejectedError,
  StaleReadError,
  FreshnessHeaderError,
  StreamIdleError,
  CrossDialectError,
  RuntimeClosedError,
  SnapshotGoneError,
  PinnedSnapshotUnknownError,
});
