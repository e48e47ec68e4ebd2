/**
 * The answer of `POST /v1/sql` in the format the `Accept` header picks, as Spice offers them:
 * `application/json` (the default: an array of row objects), `application/vnd.spiceai.sql.v1+json`
 * (`{ schema: { fields }, data, row_count }`, the schema being the result's Arrow schema in the
 * JSON shape metadata.json uses), `text/csv` and `text/plain` (a table for people); and, Ferry's
 * own, `application/x-ndjson` (JSON Lines: one row object a line) and
 * `application/vnd.apache.arrow.stream` (an Arrow IPC stream). An `Accept` naming none of them
 * gets JSON, as Spice answers it.
 *
 * Every format but the table is streamed from the runtime's Arrow batches (`queryStream`), one
 * batch's text at a time and only as the client reads: a client that reads slowly fills the
 * socket, then this body, then the query stops; one that goes away cancels it. So a result of any
 * size is answered without being held, bounded only by {@link SqlLimits} (checked per batch, off
 * the per-value path). Nothing is sent before the first batch: the answer waits for its first
 * chunk, so a query that fails before it (a time limit: 504 `ERR_QUERY_TIMEOUT`) gets its error
 * status; an answer that ends within {@link WHOLE_ANSWER_BYTES} goes out whole, in one write with
 * its Content-Length (a small answer costs no stream); one that fails later ends the connection
 * without the body's end (`cut`: no chunked terminator, so the client sees an incomplete answer,
 * never a complete-looking one). The table
 * for people needs every row to size its columns, so it is answered from `query()`, within the
 * runtime's `maxResultRows`. Each batch is encoded in a turn of the host's time (host-turns.ts), so
 * many answers at once never hold the event loop from probes, new connections and refusals.
 */
import { Readable } from 'node:stream';
import type { QueryParam } from '@ferry/core/base';
import {
  arrowJsonSchema,
  batchIpcMessages,
  batchObjects,
  batchText,
  type ColumnText,
  IPC_END_OF_STREAM,
  RecordBatchBuilder,
  schemaIpcMessage,
} from '@ferry/engines/namespaces';
import {
  type QueryOptions,
  type QueryProvenance,
  ResultTooLargeError,
  type Runtime,
  type RuntimeQueryStream,
} from '@ferry/runtime';
import type { RecordBatch, Schema } from 'apache-arrow';
import { errorCode, TableTooLargeError } from './errors.js';
import { csvLine, toTextTable } from './formats.js';
import { hostTurn } from './host-turns.js';

/** Ferry's Arrow answer: an IPC stream. */
export const ARROW_STREAM_TYPE = 'application/vnd.apache.arrow.stream';
/** Ferry's JSON Lines answer. */
export const JSON_LINES_TYPE = 'application/x-ndjson';

export const SQL_MEDIA_TYPES = [
  'application/json',
  'application/vnd.spiceai.sql.v1+json',
  'text/csv',
  'text/plain',
  JSON_LINES_TYPE,
  ARROW_STREAM_TYPE,
] as const;

export type SqlMediaType = (typeof SQL_MEDIA_TYPES)[number];

/**
 * The media type of a `/v1/sql` answer for a request's `Accept` header: the first of
 * {@link SQL_MEDIA_TYPES} it accepts, as `negotiate` (the content negotiation) finds it, or JSON
 * when it accepts none. The headers nearly every client sends (none; any type, as curl and `fetch`
 * send it; `application/json`) name JSON, and are answered without the negotiation, which parses
 * the header anew on every request (~5 µs for any type, against ~0.1 µs).
 */
export function sqlMediaType(accept: string | undefined, negotiate: () => unknown): SqlMediaType {
  if (accept === undefined || accept === '*/*' || accept === 'application/json') return 'application/json';
  const found = negotiate();
  return typeof found === 'string' ? (found as SqlMediaType) : 'application/json';
}

const CONTENT_TYPES: Readonly<Record<SqlMediaType, string>> = {
  'application/json': 'application/json; charset=utf-8',
  'application/vnd.spiceai.sql.v1+json': 'application/vnd.spiceai.sql.v1+json',
  'text/csv': 'text/csv; charset=utf-8',
  'text/plain': 'text/plain; charset=utf-8',
  [JSON_LINES_TYPE]: `${JSON_LINES_TYPE}; charset=utf-8`,
  [ARROW_STREAM_TYPE]: ARROW_STREAM_TYPE,
};

/**
 * Rows per batch the text formats ask the runtime for: a batch's text is built whole before it is
 * written, so this bounds what an answer holds at once (about 1 MiB of JSON for narrow rows).
 */
export const TEXT_BATCH_ROWS = 16_384;

/**
 * An answer whose chunks end within this many bytes is sent whole (one write, with a
 * Content-Length); a longer one is streamed from its first chunks on.
 */
export const WHOLE_ANSWER_BYTES = 64 * 1024;

/** Caps on one `/v1/sql` answer; 0 or absent: none (the runtime's `maxStreamBytes` still applies). */
export interface SqlLimits {
  /** Rows at most (counted per batch). */
  readonly maxRows?: number;
  /** Bytes of the body at most (counted per batch's text, or per Arrow batch's buffers). */
  readonly maxBytes?: number;
}

export interface SqlAnswer {
  readonly contentType: string;
  /**
   * The table for people as text; every other format as a stream, or as its bytes when it ended
   * within {@link WHOLE_ANSWER_BYTES}.
   */
  readonly body: string | Uint8Array | Readable;
  readonly provenance: QueryProvenance;
  /** The bytes of the Arrow batches answered so far (0 for the table). */
  readonly bytes: () => number;
}

/** What `answerSql` passes on to the runtime's query: a signal, always (HTTP: the connection's). */
export type AnswerOptions = QueryOptions & { readonly signal: AbortSignal };

/** `[rows]` as UTF-8, written straight into one buffer (no joined string made first). */
function bracketed(rows: string): Buffer {
  const body = Buffer.allocUnsafe(Buffer.byteLength(rows) + 2);
  body[0] = 0x5b;
  body.write(rows, 1);
  body[body.length - 1] = 0x5d;
  return body;
}

/** What a streamed answer does when its query fails after the first chunk went out. */
export type CutAnswer = (error: unknown) => void;

/** A `/v1/sql` answer: the query started (or, for the table, answered) and its body ready to send. */
export async function answerSql(
  runtime: Runtime,
  sql: string,
  params: readonly QueryParam[],
  type: SqlMediaType,
  options: AnswerOptions,
  limits: SqlLimits = {},
  cut: CutAnswer = () => undefined,
): Promise<SqlAnswer> {
  if (type === 'text/plain') {
    const result = await runtime.query(sql, params, options).catch((error: unknown) => {
      throw errorCode(error) === 'ERR_RESULT_TOO_LARGE' && error instanceof Error
        ? new TableTooLargeError(error)
        : error;
    });
    const columns = result.columns.map((column) => column.name);
    return {
      contentType: CONTENT_TYPES[type],
      body: toTextTable(columns, result.rows),
      provenance: result,
      bytes: () => 0,
    };
  }
  // The server's byte cap counts Arrow bytes: with one, the answer is a stream's batches.
  const inlineBytes = (limits.maxBytes ?? 0) > 0 ? 0 : WHOLE_ANSWER_BYTES;
  const stream =
    type === 'application/json'
      ? await runtime.queryJson(sql, params, { ...options, batchRows: TEXT_BATCH_ROWS, inlineBytes })
      : await runtime.queryStream(
          sql,
          params,
          type === ARROW_STREAM_TYPE ? options : { ...options, batchRows: TEXT_BATCH_ROWS },
        );
  if ('json' in stream) {
    // Small: its text came whole from where it ran (the text its batches would have given).
    withinLimits(stream, limits, stream.rows, stream.bytes);
    const body = bracketed(stream.json);
    return { contentType: CONTENT_TYPES[type], body, provenance: stream, bytes: () => body.byteLength };
  }
  const read = { bytes: 0 };
  const batches = limited(stream, limits, read);
  const chunks: AsyncGenerator<Uint8Array> =
    type === ARROW_STREAM_TYPE
      ? arrowChunks(stream.schema, batches)
      : textChunks(stream.schema, batches, TEXT_FORMATS[type]);
  // The first chunks before the status: a query failing until then answers its own status. An
  // answer that ends within WHOLE_ANSWER_BYTES (every small one: its first batch was its last) goes
  // out whole, in one write with its length, without a stream between the chunks and the socket.
  const head: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const next = await chunks.next();
    if (next.done === true) {
      const only = head.length === 1 ? head[0] : undefined;
      const body = Buffer.isBuffer(only) ? only : Buffer.concat(head, size);
      return { contentType: CONTENT_TYPES[type], body, provenance: stream, bytes: () => read.bytes };
    }
    head.push(next.value);
    size += next.value.byteLength;
    if (size >= WHOLE_ANSWER_BYTES) break;
  }
  // Stopped on its own later (a limit, its engine failing) even while its client reads nothing:
  // the answer is cut at once, not when the blocked body would next be read.
  stream.stopped.addEventListener('abort', () => cut(stream.stopped.reason), { once: true });
  const body = Readable.from(
    startedAt(head, chunks, cut),
    type === ARROW_STREAM_TYPE ? { objectMode: false, highWaterMark: 1 } : { highWaterMark: 1 },
  );
  return { contentType: CONTENT_TYPES[type], body, provenance: stream, bytes: () => read.bytes };
}

/**
 * The body from its first chunks on; a failure after that is handed to `cut` (which ends the
 * connection) instead of ending the body, which would read as a complete answer.
 */
async function* startedAt<T>(head: readonly T[], rest: AsyncGenerator<T>, cut: CutAnswer): AsyncGenerator<T> {
  try {
    yield* head;
    yield* rest;
  } catch (error) {
    cut(error);
  }
}

/** Throws `ERR_RESULT_TOO_LARGE` when `rows` rows of `bytes` Arrow bytes are past a cap. */
function withinLimits(answer: QueryProvenance, limits: SqlLimits, rows: number, bytes: number): void {
  const maxRows = limits.maxRows ?? 0;
  const maxBytes = limits.maxBytes ?? 0;
  const names = (): string[] => answer.datasets.map((dataset) => dataset.name);
  if (maxRows > 0 && rows > maxRows) {
    throw new ResultTooLargeError(names(), maxRows, 'rows', 'the HTTP server’s maxResultRows');
  }
  if (maxBytes > 0 && bytes > maxBytes) {
    throw new ResultTooLargeError(names(), maxBytes, 'bytes', 'the HTTP server’s maxResultBytes');
  }
}

/**
 * The stream's batches, ending it with `ERR_RESULT_TOO_LARGE` past a cap (and cancelling the
 * query); `read.bytes` counts their bytes.
 */
async function* limited(
  stream: RuntimeQueryStream,
  limits: SqlLimits,
  read: { bytes: number },
): AsyncGenerator<RecordBatch> {
  let rows = 0;
  for await (const batch of stream.batches) {
    rows += batch.numRows;
    read.bytes += batch.data.byteLength;
    try {
      withinLimits(stream, limits, rows, read.bytes);
    } catch (error) {
      stream.cancel();
      throw error;
    }
    yield batch;
  }
}

/** How a text format frames its rows. */
interface TextFormat {
  /** Text before the first row (given the schema). */
  head(schema: Schema): string;
  /** The text of rows `0 … numRows − 1`, `first` when no row came before. */
  rows(batch: RecordBatch, columns: readonly ColumnText[], first: boolean): string;
  /** Text after the last row, given how many there were. */
  tail(rows: number): string;
}

const JSON_ARRAY: TextFormat = {
  head: () => '[',
  rows: (batch, columns, first) => `${first ? '' : ','}${batchObjects(batch, columns).join(',')}`,
  tail: () => ']',
};

const TEXT_FORMATS: Readonly<
  Record<Exclude<SqlMediaType, 'text/plain' | typeof ARROW_STREAM_TYPE>, TextFormat>
> = {
  'application/json': JSON_ARRAY,
  'application/vnd.spiceai.sql.v1+json': {
    head: (schema) => `{"schema":${JSON.stringify(arrowJsonSchema(schema))},"data":[`,
    rows: JSON_ARRAY.rows,
    tail: (rows) => `],"row_count":${rows}}`,
  },
  [JSON_LINES_TYPE]: {
    head: () => '',
    rows: (batch, columns) => `${batchObjects(batch, columns).join('\n')}\n`,
    tail: () => '',
  },
  'text/csv': {
    head: (schema) => csvLine(schema.fields.map((field) => field.name)),
    rows: (batch, columns) => {
      // One string per line, joined once: a batch's text is then one flat string, not a rope of
      // every cell (which holds several times the text's size until it is written).
      const lines = new Array<string>(batch.numRows);
      const cells = new Array<string>(columns.length);
      for (let row = 0; row < batch.numRows; row++) {
        for (let index = 0; index < columns.length; index++) {
          cells[index] = (columns[index] as ColumnText).cell(row);
        }
        lines[row] = csvLine(cells);
      }
      return lines.join('');
    },
    tail: () => '',
  },
};

/**
 * A text format's body, one UTF-8 buffer per batch (encoded in its host turn, so the socket's write
 * copies no string); the head waits for the first batch.
 */
async function* textChunks(
  schema: Schema,
  batches: AsyncIterable<RecordBatch>,
  format: TextFormat,
): AsyncGenerator<Buffer> {
  let head: string | undefined = format.head(schema);
  let rows = 0;
  for await (const batch of batches) {
    if (batch.numRows === 0) continue;
    await hostTurn();
    const text = format.rows(batch, batchText(batch), rows === 0);
    rows += batch.numRows;
    yield Buffer.from(head === undefined ? text : head + text);
    head = undefined;
  }
  yield Buffer.from(`${head ?? ''}${format.tail(rows)}`);
}

/**
 * The Arrow IPC stream: the schema message with the first batch's, then each batch's message as it
 * came from the query worker (not encoded again), then the end-of-stream marker. An empty result
 * is its schema and one empty batch, so every reader finds the schema.
 */
async function* arrowChunks(schema: Schema, batches: AsyncIterable<RecordBatch>): AsyncGenerator<Uint8Array> {
  let head: Uint8Array | undefined = schemaIpcMessage(schema).framed;
  for await (const batch of batches) {
    if (head !== undefined) yield head;
    head = undefined;
    await hostTurn();
    for (const message of batchIpcMessages(batch)) yield message.framed;
  }
  if (head !== undefined) {
    yield head;
    for (const message of batchIpcMessages(new RecordBatchBuilder(schema).flush())) yield message.framed;
  }
  yield IPC_END_OF_STREAM;
}
