/**
 * The ports the pure core and the runtime talk through. Adapters live in other packages
 * (`@ferry/store`: S3, file, SQS; `@ferry/engines`: DuckDB, SQLite) and each port has one
 * contract suite run against every adapter. Types only: nothing here does I/O.
 */
import type { FileFormat } from './engines.js';
import type { ArrowSchema } from './metadata/types.js';

// ---------------------------------------------------------------------------------------------
// ObjectStore: a location (URI prefix) in S3 or on a local filesystem.
// Keys are relative to the location (`metadata.json`, `month=.../x.duckdb`).
// ---------------------------------------------------------------------------------------------

export interface ObjectInfo {
  readonly key: string;
  readonly size: number;
  readonly etag: string;
}

export type GetResult =
  | { readonly status: 'ok'; readonly body: Uint8Array; readonly etag: string }
  /** The object's ETag equals `ifNoneMatch`: nothing was transferred. */
  | { readonly status: 'unchanged'; readonly etag: string }
  | { readonly status: 'not-found' };

export interface GetOptions {
  readonly ifNoneMatch?: string;
  /** Refuse (error code `ERR_OBJECT_TOO_LARGE`) bodies larger than this many bytes. */
  readonly maxBytes?: number;
  readonly signal?: AbortSignal;
}

export interface ReadOptions {
  /** Inclusive start byte. */
  readonly start?: number;
  /** Exclusive end byte. */
  readonly end?: number;
  readonly signal?: AbortSignal;
}

export interface PutOptions {
  /** Only write when the current object has this ETag (412 → `ERR_PRECONDITION_FAILED`). */
  readonly ifMatch?: string;
  /** `'*'`: only write when the object does not exist (412 → `ERR_PRECONDITION_FAILED`). */
  readonly ifNoneMatch?: '*';
  readonly contentType?: string;
  /** A streamed body's expected size, when known: lets S3 pick a part size within its 10,000 parts. */
  readonly size?: number;
}

export interface ObjectStore {
  /** The normalised location URI, always ending in `/`. */
  readonly location: string;
  /** Small objects (metadata.json): read whole, conditionally. */
  get(key: string, options?: GetOptions): Promise<GetResult>;
  /** Stream an object or a byte range of it. A missing object rejects with `ERR_OBJECT_NOT_FOUND`. */
  read(key: string, options?: ReadOptions): AsyncIterable<Uint8Array>;
  head(key: string): Promise<ObjectInfo | undefined>;
  put(
    key: string,
    body: Uint8Array | AsyncIterable<Uint8Array>,
    options?: PutOptions,
  ): Promise<{ etag: string }>;
  list(prefix?: string): AsyncIterable<ObjectInfo>;
  delete(key: string): Promise<void>;
  /** Release sockets and handles. */
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// NotificationQueue: SQS (or a test double) carrying S3 event notifications.
// ---------------------------------------------------------------------------------------------

export interface QueueMessage {
  readonly id: string;
  readonly receiptHandle: string;
  readonly body: string;
  readonly receiveCount: number;
}

export interface NotificationQueue {
  receive(options?: {
    waitSeconds?: number;
    maxMessages?: number;
    signal?: AbortSignal;
  }): Promise<QueueMessage[]>;
  /** `signal` abandons the deletes in flight (the messages are delivered again): a shutdown never waits on them. */
  delete(messages: readonly QueueMessage[], options?: { signal?: AbortSignal }): Promise<void>;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Engine: one open, read-only database file.
// ---------------------------------------------------------------------------------------------

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * A query parameter: a JSON scalar, or a `bigint` for an integer a JSON number cannot carry exactly
 * (past ±(2^53−1)), bound as the integer it is (a string of digits binds as text).
 */
export type QueryParam = JsonValue | bigint;

export interface ColumnInfo {
  readonly name: string;
  /** The engine's type name (`BIGINT`, `DECIMAL(18,2)`, `TEXT`). */
  readonly type: string;
}

export interface QueryResult {
  readonly columns: readonly ColumnInfo[];
  /** JSON-safe rows (big integers and decimals as strings, dates ISO-8601, blobs base64). */
  readonly rows: readonly Record<string, JsonValue>[];
}

export interface Engine {
  readonly kind: FileFormat;
  readonly path: string;
  /** The table's real schema, mapped to the Arrow-JSON form a writer records. */
  schema(table: string): Promise<ArrowSchema>;
  query(sql: string, params?: readonly QueryParam[]): Promise<QueryResult>;
  close(): Promise<void>;
}
