/**
 * The wire protocol of the query pools: what a query asks and what it answers, and the messages
 * between the host and a DuckDB query worker. Answers are data, not thrown errors, because the
 * host acts on several of them: it re-routes a statement to SQLite, waits for a dataset that is
 * not serving yet, or names the datasets in a "too large" error. Arrow batches travel as IPC bytes
 * (transferred, not copied), at most `window` of them ahead of what the host's consumer took.
 */
import { type QueryParam, type SerializedError, serializeError } from '@ferry/core/base';
import {
  type BatchOutcome,
  batchObjects,
  batchToIpc,
  type DatasetRead,
  jsonObjects,
  type NamespaceCatalog,
  NamespaceTableError,
  type NamespaceTaskHistory,
  type PinnedGeneration,
  type RowsOutcome,
} from '@ferry/engines/namespaces';
import type { RecordBatch, Schema } from 'apache-arrow';
import type { LogRecord } from '../common/logging.js';

/** One query as a pool runs it. */
export interface QueryRequest {
  readonly sql: string;
  readonly params: readonly QueryParam[];
  /** Caps: 0 = none. Rows apply to JSON and Arrow tables, not to streams. */
  readonly maxRows: number;
  readonly maxBytes: number;
  /** The statement's shape key (`statementShape`), when the host computed it: the workers reuse it. */
  readonly shape?: string | undefined;
  /** Datasets read at pinned generations (a client's `X-Ferry-Snapshot`), resolved by the host. */
  readonly pins?: readonly PinnedGeneration[] | undefined;
  /**
   * Not streamed: answer the result as its rows' JSON text when it is one batch within this many
   * bytes, else `larger` ({@link InlineResult}); 0 or absent: rows (DuckDB) or a stream.
   */
  readonly inline?: number;
  /** A stream's schema names its parameters' types (`BatchControl.parameterTypes`). */
  readonly parameterTypes?: boolean;
}

/**
 * Queries as the JSON text a batch crosses threads in (a string crosses cheaper than objects),
 * with their `bigint` parameters beside it (JSON has no such value; a structured clone carries
 * them): each as its query's and parameter's index and the value, null in the text.
 */
export interface QueriesText {
  readonly queries: string;
  readonly bigints?: readonly (readonly [query: number, param: number, value: bigint])[] | undefined;
}

/** `queries` as {@link QueriesText}. */
export function queriesText(queries: readonly QueryRequest[]): QueriesText {
  const bigints: [number, number, bigint][] = [];
  for (const [query, { params }] of queries.entries()) {
    // Parameters that are no list (a JavaScript caller's mistake) are refused where they bind.
    if (!Array.isArray(params)) continue;
    for (const [param, value] of params.entries()) {
      if (typeof value === 'bigint') bigints.push([query, param, value]);
    }
  }
  if (bigints.length === 0) return { queries: JSON.stringify(queries) };
  return {
    queries: JSON.stringify(queries, (_key, value: unknown) => (typeof value === 'bigint' ? null : value)),
    bigints,
  };
}

/** The queries {@link queriesText} wrote. */
export function queriesOf(text: QueriesText): QueryRequest[] {
  const queries = JSON.parse(text.queries) as { params: QueryParam[] }[];
  for (const [query, param, value] of text.bigints ?? [])
    (queries[query] as { params: QueryParam[] }).params[param] = value;
  return queries as unknown as QueryRequest[];
}

/**
 * What a query answered. `shared`: what the answer says about its statement (where it runs, what
 * it read) holds for every text of the statement's shape, so the host may remember it by shape
 * (else left undefined, which the answer's JSON text leaves out).
 */
export type QueryAnswer = (
  | RowsOutcome
  /** A batch stream ended (`done`: every batch was sent), or a cap was exceeded. */
  | BatchOutcome
  /** Asked `inline`: the result was one small batch, answered as its rows' JSON text ({@link InlineResult}). */
  | ({ readonly kind: 'inline'; readonly read: readonly DatasetRead[] } & InlineJson)
  /** Asked `inline`: the result was larger; stream it. */
  | { readonly kind: 'larger'; readonly read: readonly DatasetRead[] }
  /** Run it in SQLite (it reads only SQLite datasets, or it is SQLite's dialect). */
  | {
      readonly kind: 'reroute';
      readonly datasets: readonly string[] | undefined;
      /** DuckDB could not parse it: its message (see `QueryRoute`). */
      readonly duckdbError?: string;
    }
  | { readonly kind: 'table'; readonly table: string; readonly reason: NamespaceTableError['reason'] }
  /** `detail`: the engine's message before local paths were taken out (for the log). */
  | { readonly kind: 'error'; readonly error: SerializedError; readonly detail?: string }
) & { readonly shared?: boolean | undefined };

/** The answer a worker sends for a query that threw: a table the engine could not read, or an error. */
export function answerOf(error: unknown): QueryAnswer {
  if (error instanceof NamespaceTableError)
    return { kind: 'table', table: error.table, reason: error.reason };
  const cause = (error as { cause?: unknown }).cause;
  const original = cause instanceof Error ? cause.message : undefined;
  const message = error instanceof Error ? error.message : String(error);
  return {
    kind: 'error',
    error: serializeError(error),
    ...(original !== undefined && !message.includes(original) ? { detail: original } : {}),
  };
}

export type HostToQueryWorker =
  | { readonly type: 'catalog'; readonly catalog: NamespaceCatalog }
  /** `spice.runtime.task_history` as the host keeps it now (sent before a query that reads it). */
  | { readonly type: 'task-history'; readonly history: NamespaceTaskHistory }
  | {
      readonly type: 'query';
      readonly id: number;
      readonly request: QueryRequest;
      /** A stream: rows per batch at most. */
      readonly batchRows?: number | undefined;
      /** Send `routed` before it starts (the host does not know yet what it reads). */
      readonly announce?: boolean | undefined;
      /** A stream's credits (stream-credits.ts); absent: no stream, the answer holds the result. */
      readonly credits?: Int32Array | undefined;
    }
  | { readonly type: 'cancel'; readonly id: number }
  | { readonly type: 'close' };

export type QueryWorkerToHost =
  /** `answer`: the {@link QueryAnswer} as JSON text (a plain JSON value; parsed faster than a clone is rebuilt). */
  | { readonly type: 'answer'; readonly id: number; readonly answer: string }
  /** The statement runs here and reads these datasets (sent before it starts). */
  | { readonly type: 'routed'; readonly id: number; readonly datasets: readonly string[] | undefined }
  /** The schema; with the first batch in the same IPC bytes when `rows` is set ({@link SchemaWithFirstBatch}). */
  | {
      readonly type: 'schema';
      readonly id: number;
      readonly ipc: Uint8Array;
      readonly read: readonly DatasetRead[];
      readonly rows?: number;
    }
  | { readonly type: 'batch'; readonly id: number; readonly ipc: Uint8Array; readonly rows: number }
  | { readonly type: 'closed' }
  /** What the worker has to say for the log (a failed catalog change, an uncaught error). */
  | { readonly type: 'log'; readonly record: LogRecord };

/** Batches a producer may send ahead of the consumer (the bound on buffering between them). */
export const STREAM_WINDOW = 2;

/** `bytes` in a buffer of its own, so transferring it detaches nothing else. */
export function transferable(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
}

/** A small result answered whole, as JSON text, instead of as batches ({@link InlineResult}). */
export interface InlineJson {
  /** Its rows as JSON object texts joined by `,` (`batchObjects`); empty for no row. */
  readonly json: string;
  readonly rows: number;
  /** The bytes of its Arrow batch's buffers (what a cap on batch bytes counts), or of its text when it was written from its rows. */
  readonly bytes: number;
}

/**
 * The inline answer of a DuckDB query read as rows (its `rows` outcome, read with its byte cap cut
 * to `bound`), written by `jsonObjects`: the text `batchObjects` writes for the same result (the
 * values' JSON forms are the engine's one encoding; namespace-http.test.ts checks the two texts
 * byte for byte); `larger` past `bound`. A one-row answer costs the worker ~150 µs less CPU this
 * way than built as an Arrow batch first (docs/queries.md). Undefined when a column, or a field of
 * a STRUCT column, is named `__proto__`, which node-api's row and struct objects lose: build it as
 * a batch ({@link InlineResult}).
 */
export function inlineRows(
  outcome: RowsOutcome,
  bound: number,
  cap: number,
  shared: boolean,
): QueryAnswer | undefined {
  if (outcome.kind === 'too-large') {
    // Past `bound`, not past the query's own cap (the host asks inline only below any cap).
    return outcome.limit === 'bytes' && (cap === 0 || cap > bound)
      ? { kind: 'larger', read: outcome.read }
      : outcome;
  }
  const names = outcome.columns.map((column) => column.name);
  // node-api's STRUCT values are plain objects too: a field `__proto__` is lost in them.
  if (names.includes('__proto__') || outcome.columns.some((column) => column.type.includes('__proto__'))) {
    return undefined;
  }
  const { rows } = outcome;
  const json = jsonObjects(
    names,
    rows.length,
    (row, column) => rows[row]?.[names[column] as string] ?? null,
    bound,
  );
  if (json === undefined) return { kind: 'larger', read: outcome.read };
  return {
    kind: 'inline',
    read: outcome.read,
    json,
    rows: rows.length,
    bytes: json.length,
    shared: shared || outcome.shared === true || undefined,
  };
}

/** What an {@link InlineResult} throws at a batch it cannot answer inline: reading stops there. */
class LargerThanInline extends Error {}

/**
 * The sink of a query asked `inline` on a path that answers in one message (a batch of SQLite
 * reads, a DuckDB query not streamed): it keeps the result's one batch, built as a stream's
 * would be, and answers it as its rows' JSON text (`batchObjects`, the code that writes a stream's
 * batches as JSON at the edge: the same text), or takes that text as the engine wrote it from the
 * rows when their values are their columns' types themselves (SQLite's `text`, which skips building
 * the batch). The batch is not encoded, so the caps count its
 * buffers (`BatchSink`); the host asks inline only when no byte cap can be reached within `bound`.
 * A second batch, or one whose buffers or text pass `bound` bytes, stops the query (the sink
 * throws) and the answer is `larger`: the host then streams it. The engine cuts batches at about
 * `bound` bytes (`batchBytes`), so little is read before that.
 */
export class InlineResult {
  readonly #bound: number;
  #read: readonly DatasetRead[] = [];
  #batch: RecordBatch | undefined;
  /** The batch as its rows' JSON text, when the engine wrote it so (SQLite's `text`). */
  #text: { readonly json: string; readonly rows: number } | undefined;

  constructor(bound: number) {
    this.#bound = bound;
  }

  schema(_schema: Schema, read: readonly DatasetRead[]): void {
    this.#read = read;
  }

  built(batch: RecordBatch): void {
    if (this.#batch !== undefined || this.#text !== undefined || batch.data.byteLength > this.#bound)
      throw new LargerThanInline();
    this.#batch = batch;
  }

  /** The batch as its rows' JSON text (`SyncBatchSink.text`). */
  text(json: string, rows: number): void {
    if (this.#batch !== undefined || this.#text !== undefined || json.length > this.#bound)
      throw new LargerThanInline();
    this.#text = { json, rows };
  }

  /**
   * The answer of a query that ended with `outcome`, or threw `error` (rethrown unless it is the
   * sink's); `shared` as the route said (else as the outcome says).
   */
  answer(outcome: BatchOutcome | { readonly error: unknown }, shared = false): QueryAnswer {
    const larger = { kind: 'larger', read: this.#read } as const;
    if ('error' in outcome) {
      const { error } = outcome;
      if (
        error instanceof LargerThanInline ||
        (error as { cause?: unknown }).cause instanceof LargerThanInline
      ) {
        return larger;
      }
      throw error;
    }
    if (outcome.kind !== 'done') return outcome;
    const batch = this.#batch;
    const text = this.#text;
    const json = text?.json ?? (batch === undefined ? '' : batchObjects(batch).join(','));
    if (json.length > this.#bound) return larger;
    const rows = text?.rows ?? batch?.numRows ?? 0;
    const bytes = text === undefined ? (batch?.data.byteLength ?? 0) : json.length;
    return {
      kind: 'inline',
      read: outcome.read,
      json,
      rows,
      bytes,
      shared: shared || outcome.shared === true || undefined,
    };
  }
}

/**
 * A producer's side of a result stream: the schema is held until the first batch, and the two go
 * to the host as one message (the batch's IPC bytes carry the schema too), so a result of one
 * batch — every small answer — costs one post and one IPC decode on the host instead of two. The
 * schema alone is encoded only for a result with no batch: `flush()` sends a schema still held (a
 * result with no batch, or one that failed before its first), call it before the stream's last
 * message. Each posted buffer is transferred.
 */
/**
 * Posts `ipc`: `first` set means a `schema` message (with `first.rows` when a batch is in the
 * bytes), unset a `batch` message of `rows`.
 */
type PostIpc = (
  ipc: Uint8Array,
  first: { read: readonly DatasetRead[]; rows?: number } | undefined,
  rows: number,
) => void;

export class SchemaWithFirstBatch {
  readonly #post: PostIpc;
  #held: readonly DatasetRead[] | undefined;
  #heldSchema: Schema | undefined;

  constructor(post: PostIpc) {
    this.#post = post;
  }

  schema(schema: Schema, read: readonly DatasetRead[]): void {
    this.#heldSchema = schema;
    this.#held = read;
  }

  /** Sends one batch (with the held schema, if it is the first); returns the bytes sent. */
  batch(ipc: Uint8Array, rows: number): number {
    const bytes = transferable(ipc);
    // Read before the post: a transferred buffer is detached (its length then reads 0).
    const length = bytes.byteLength;
    const read = this.#held;
    this.#held = undefined;
    this.#heldSchema = undefined;
    this.#post(bytes, read === undefined ? undefined : { read, rows }, rows);
    return length;
  }

  /** Sends the schema alone if no batch took it (encoded only then). */
  flush(): void {
    const read = this.#held;
    const schema = this.#heldSchema;
    this.#held = undefined;
    this.#heldSchema = undefined;
    if (read !== undefined && schema !== undefined) this.#post(transferable(batchToIpc(schema)), { read }, 0);
  }
}
