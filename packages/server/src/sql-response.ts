/**
 * The answer of `POST /v1/sql` in the format the `Accept` header picks, as Spice offers them:
 * `application/json` (the default: an array of row objects), `application/vnd.spiceai.sql.v1+json`
 * (`{ row_count, schema: { fields }, data }`, the schema being the result's Arrow schema in the
 * JSON shape metadata.json uses), `text/csv` and `text/plain` (a table for people); and, Ferry's
 * own, `application/vnd.apache.arrow.stream` (an Arrow IPC stream, streamed from the engine with
 * back-pressure: see `arrowBody`). An `Accept` naming none of them gets JSON, as Spice answers it.
 */
import { pipeline, Readable } from 'node:stream';
import type { ArrowField } from '@ferry/core';
import { arrowField, resultColumnArrowType } from '@ferry/engines';
import { RecordBatchBuilder } from '@ferry/engines/namespaces';
import type { RuntimeQueryResult, RuntimeQueryStream } from '@ferry/runtime';
import { type RecordBatch, RecordBatchStreamWriter } from 'apache-arrow';
import { toCsv, toTextTable } from './formats.js';

/** Ferry's Arrow answer: an IPC stream. */
export const ARROW_STREAM_TYPE = 'application/vnd.apache.arrow.stream';

export const SQL_MEDIA_TYPES = [
  'application/json',
  'application/vnd.spiceai.sql.v1+json',
  'text/csv',
  'text/plain',
  ARROW_STREAM_TYPE,
] as const;

export type SqlMediaType = (typeof SQL_MEDIA_TYPES)[number];

/**
 * The result's Arrow schema. Result columns carry no nullability, so every field is nullable; a
 * type outside the snapshot-store type table (HUGEINT, UUID, ENUM, …) is reported as `Utf8`.
 */
export function resultSchema(result: RuntimeQueryResult): { fields: ArrowField[] } {
  return {
    fields: result.columns.map((column) =>
      arrowField(column.name, resultColumnArrowType(result.engine, column.type) ?? 'Utf8', true),
    ),
  };
}

export interface RenderedResult {
  readonly contentType: string;
  readonly body: string;
}

export function renderResult(result: RuntimeQueryResult, type: SqlMediaType): RenderedResult {
  const columns = result.columns.map((column) => column.name);
  switch (type) {
    case 'application/vnd.spiceai.sql.v1+json':
      return {
        contentType: type,
        body: JSON.stringify({
          row_count: result.rows.length,
          schema: resultSchema(result),
          data: result.rows,
        }),
      };
    case 'text/csv':
      return { contentType: 'text/csv; charset=utf-8', body: toCsv(columns, result.rows) };
    case 'text/plain':
      return { contentType: 'text/plain; charset=utf-8', body: toTextTable(columns, result.rows) };
    default:
      return { contentType: 'application/json; charset=utf-8', body: JSON.stringify(result.rows) };
  }
}

/** The stream's batches, or one empty batch (so an empty result still carries its schema). */
async function* batchesOrEmpty(stream: RuntimeQueryStream): AsyncGenerator<RecordBatch> {
  let any = false;
  for await (const batch of stream.batches) {
    any = true;
    yield batch;
  }
  if (!any) yield new RecordBatchBuilder(stream.schema).flush();
}

/**
 * A streamed result as an Arrow IPC stream body. Node streams carry the back-pressure: a client
 * that reads slowly fills the socket, then this body, then stops pulling batches, which stops the
 * engine; a client that goes away destroys the body, which cancels the query.
 */
export function arrowBody(stream: RuntimeQueryStream): Readable {
  // pipeline, not pipe: destroying the body (the client left) also ends the source, and an error
  // of either side ends both instead of going unhandled.
  return pipeline(
    Readable.from(batchesOrEmpty(stream)),
    RecordBatchStreamWriter.throughNode(),
    () => undefined,
  );
}
