/**
 * The one table from an error's stable code to what a front end answers with: the HTTP status
 * (`@ferry/server`) and the gRPC status (`@ferry/flight`). Every code Ferry raises has a row (the
 * error registry test fails on a code without one), so adding an error means deciding here how a
 * client sees it. A row of {@link INTERNAL} says the error is not the client's: an HTTP 500 and a
 * gRPC INTERNAL, whose message Flight keeps for its log. An error without a code, or with a code no
 * row names (another library's), is answered the same way.
 */

/** gRPC status codes by the names `@grpc/grpc-js`'s `status` enum gives them. */
export type GrpcStatusName =
  | 'CANCELLED'
  | 'UNKNOWN'
  | 'INVALID_ARGUMENT'
  | 'DEADLINE_EXCEEDED'
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'PERMISSION_DENIED'
  | 'RESOURCE_EXHAUSTED'
  | 'FAILED_PRECONDITION'
  | 'ABORTED'
  | 'OUT_OF_RANGE'
  | 'UNIMPLEMENTED'
  | 'INTERNAL'
  | 'UNAVAILABLE'
  | 'DATA_LOSS'
  | 'UNAUTHENTICATED';

export interface ErrorStatus {
  readonly http: number;
  readonly grpc: GrpcStatusName;
}

/** Not the client's error: the server failed (or the error never reaches a client). */
export const INTERNAL: ErrorStatus = { http: 500, grpc: 'INTERNAL' };

const BAD_REQUEST: ErrorStatus = { http: 400, grpc: 'INVALID_ARGUMENT' };
/** The query asked for more than it may have. HTTP says 400, as Spice does for its limits. */
const TOO_MUCH: ErrorStatus = { http: 400, grpc: 'RESOURCE_EXHAUSTED' };
const NOT_FOUND: ErrorStatus = { http: 404, grpc: 'NOT_FOUND' };
const CANCELLED: ErrorStatus = { http: 499, grpc: 'CANCELLED' };
/** Not serving (yet, or any more): retry later. */
const UNAVAILABLE: ErrorStatus = { http: 503, grpc: 'UNAVAILABLE' };
/** The object store or what it holds failed: HTTP's bad gateway, gRPC's UNAVAILABLE. */
const UPSTREAM: ErrorStatus = { http: 502, grpc: 'UNAVAILABLE' };

export const ERROR_STATUS: Readonly<Record<string, ErrorStatus>> = {
  // The request itself (HTTP server, Flight server).
  ERR_BAD_REQUEST: BAD_REQUEST,
  ERR_FLIGHT_BAD_REQUEST: BAD_REQUEST,
  ERR_INVALID_COMMAND: BAD_REQUEST,
  ERR_UNAUTHORIZED: { http: 401, grpc: 'UNAUTHENTICATED' },
  ERR_NOT_FOUND: NOT_FOUND,
  ERR_METHOD_NOT_ALLOWED: { http: 405, grpc: 'UNIMPLEMENTED' },
  ERR_BODY_TOO_LARGE: { http: 413, grpc: 'RESOURCE_EXHAUSTED' },
  ERR_UNSUPPORTED_CONTENT_ENCODING: { http: 415, grpc: 'INVALID_ARGUMENT' },
  ERR_FLIGHT_HANDLE_NOT_FOUND: NOT_FOUND,
  ERR_FLIGHT_CAPACITY: { http: 429, grpc: 'RESOURCE_EXHAUSTED' },
  ERR_FLIGHT_UNSUPPORTED: { http: 501, grpc: 'UNIMPLEMENTED' },

  // The statement and its parameters (engines, runtime).
  ERR_WRITE_REJECTED: BAD_REQUEST,
  ERR_STATEMENT_REJECTED: BAD_REQUEST,
  ERR_SQL_SYNTAX: BAD_REQUEST,
  ERR_QUERY_FAILED: BAD_REQUEST,
  ERR_INVALID_PARAMETER: BAD_REQUEST,
  ERR_INVALID_FRESHNESS_HEADER: BAD_REQUEST,
  ERR_ARROW_CONVERSION: BAD_REQUEST,
  ERR_UNKNOWN_DATASET: NOT_FOUND,
  ERR_SNAPSHOT_NOT_FOUND: NOT_FOUND,
  ERR_SNAPSHOTS_READ_ONLY: BAD_REQUEST,
  ERR_TABLE_NOT_FOUND: NOT_FOUND,
  ERR_RESULT_TOO_LARGE: TOO_MUCH,
  ERR_QUERY_MEMORY: TOO_MUCH,
  ERR_QUERY_TEMP_SPACE: TOO_MUCH,
  ERR_CROSS_ENGINE_TOO_LARGE: TOO_MUCH,
  ERR_QUERY_CANCELLED: CANCELLED,
  ERR_QUERY_TIMEOUT: { http: 504, grpc: 'DEADLINE_EXCEEDED' },
  // More queries than the runtime admits at once: refused at once, retry later (HTTP `Retry-After`).
  ERR_QUERY_REJECTED: { http: 429, grpc: 'RESOURCE_EXHAUSTED' },
  ERR_STREAM_IDLE: { http: 408, grpc: 'DEADLINE_EXCEEDED' },
  // Handed from a query worker to the runtime, which answers with its own error instead.
  ERR_NAMESPACE_TABLE: INTERNAL,
  ERR_ENGINE_OPEN: INTERNAL,
  // Raised at start (createRuntime, the writer), before any query: a row for completeness.
  ERR_SQLITE_BINDING: INTERNAL,
  ERR_UNSUPPORTED_COLUMN_TYPE: INTERNAL,

  // The runtime's state.
  ERR_DATASET_NOT_READY: UNAVAILABLE,
  // A query read a dataset staler than the client's bound (X-Ferry-Max-Staleness): retry later.
  ERR_STALE: UNAVAILABLE,
  // A pinned snapshot (X-Ferry-Snapshot) this reader no longer holds: pin another, or none.
  ERR_SNAPSHOT_GONE: { http: 410, grpc: 'FAILED_PRECONDITION' },
  ERR_DATASET_FAILED: UNAVAILABLE,
  ERR_THREAD_EXITED: UNAVAILABLE,
  ERR_RUNTIME_CLOSED: UNAVAILABLE,
  ERR_READY_TIMEOUT: UNAVAILABLE,
  ERR_ENGINE_CLOSED: UNAVAILABLE,
  ERR_THREAD_FILE_MISSING: INTERNAL,
  ERR_STALE_BUILD: INTERNAL,

  // The object store and metadata.json (`snapshots()`, the status routes).
  ERR_METADATA_INVALID: UPSTREAM,
  ERR_BLOCK_MANIFEST_INVALID: UPSTREAM,
  ERR_UNSUPPORTED_FORMAT_VERSION: UPSTREAM,
  ERR_OBJECT_TOO_LARGE: UPSTREAM,
  ERR_OBJECT_NOT_FOUND: UPSTREAM,
  ERR_STORE: UPSTREAM,

  // Raised while loading snapshots in the background: logged and reported as events, never a
  // request's answer.
  ERR_SNAPSHOT_ENGINE_MISMATCH: INTERNAL,
  ERR_SNAPSHOT_SCHEMA_MISMATCH: INTERNAL,
  ERR_SNAPSHOT_SIZE_MISMATCH: INTERNAL,
  ERR_SNAPSHOT_CHECKSUM_MISMATCH: INTERNAL,
  ERR_SNAPSHOT_CHECKSUM_ALGORITHM: INTERNAL,
  ERR_SNAPSHOT_NOT_A_DATABASE: INTERNAL,
  ERR_SNAPSHOT_MISSING_TABLE: INTERNAL,
  ERR_SNAPSHOT_OBJECT_MISSING: INTERNAL,
  ERR_SNAPSHOT_UNSIGNED: INTERNAL,
  ERR_SNAPSHOT_SIGNATURE_INVALID: INTERNAL,
  ERR_SNAPSHOT_SIGNER_UNTRUSTED: INTERNAL,
  ERR_SNAPSHOT_STATEMENT_MISMATCH: INTERNAL,
  ERR_OUTSIDE_LOCATION: INTERNAL,
  ERR_SCHEMA_NOT_FOUND: INTERNAL,
  ERR_ARROW_SCHEMA_INVALID: INTERNAL,
  ERR_CURRENT_SNAPSHOT_MISSING: INTERNAL,
  ERR_ACTOR_NOT_PROVIDED: INTERNAL,
  ERR_MACHINE_INVARIANT: INTERNAL,
  ERR_DISK_SPACE: INTERNAL,
  ERR_DOWNLOAD_TRUNCATED: INTERNAL,
  ERR_PREPARED_SNAPSHOT_GONE: INTERNAL,
  ERR_PRECONDITION_FAILED: INTERNAL,
  ERR_STORE_CONFIG: INTERNAL,
  ERR_SIGNING_KEY: INTERNAL,
  ERR_SQS_QUEUE_URL: INTERNAL,
  ERR_SQS_OPTION: INTERNAL,
  ERR_SQS_RECEIVE: INTERNAL,
  ERR_SQS_DELETE: INTERNAL,
  ERR_SQS_CLOSED: INTERNAL,
  ERR_READER_QUEUE_CREATE: INTERNAL,
  ERR_READER_QUEUE_SUBSCRIBE: INTERNAL,
  ERR_READER_QUEUE_HEARTBEAT: INTERNAL,
  ERR_READER_QUEUE_REMOVE: INTERNAL,
  ERR_READER_QUEUE_LIST: INTERNAL,

  // Raised before anything serves (configuration, start-up) or by tools that serve nothing.
  ERR_CONFIG: INTERNAL,
  ERR_INVALID_DURATION: INTERNAL,
  ERR_INSPECTOR_ASSETS_MISSING: INTERNAL,
  ERR_INVALID_INSPECTOR_URL: INTERNAL,
  ERR_USAGE: INTERNAL,
  ERR_API_KEY_ENV: INTERNAL,
  ERR_SPICEPOD_READ: INTERNAL,
  ERR_KEY_FILE: INTERNAL,
  ERR_LISTEN: INTERNAL,
  ERR_SERVER_REQUEST: INTERNAL,
  ERR_INCOMPATIBLE_SCHEMA: INTERNAL,
  ERR_WRITER_OPTIONS: INTERNAL,
  ERR_WRITER_QUERY: INTERNAL,
  ERR_WRITER_NOT_NULL: INTERNAL,
  ERR_WRITER_SOURCE_FILE: INTERNAL,
  ERR_WRITER_SNAPSHOT_FILE: INTERNAL,
  ERR_WRITER_ENGINE_MISMATCH: INTERNAL,
  ERR_WRITER_KEY_TAKEN: INTERNAL,
  ERR_WRITER_METADATA_CONFLICT: INTERNAL,
  ERR_WRITER_METADATA_TOO_LARGE: INTERNAL,
  ERR_WRITER_NOTHING_PUBLISHED: INTERNAL,
  ERR_WRITER_ROLLBACK: INTERNAL,
  ERR_WRITER_INCREMENTAL_BASE: INTERNAL,
  ERR_WRITER_STATEMENT: INTERNAL,

  // No code of its own: an error rebuilt from a class this thread does not know, or one without a
  // code (`ERR_INTERNAL` is how Flight's `ferry-error-code` trailer names the latter).
  ERR_UNEXPECTED: INTERNAL,
  ERR_INTERNAL: INTERNAL,
};

/** The error's stable code (`ERR_…`), or undefined for errors that carry none. */
export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('ERR_') ? code : undefined;
}

/** The row of the error's code; {@link INTERNAL} for an error without a code or a row. */
export function errorStatus(error: unknown): ErrorStatus {
  const code = errorCode(error);
  return (code === undefined ? undefined : ERROR_STATUS[code]) ?? INTERNAL;
}
