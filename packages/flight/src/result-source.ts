/**
 * Where Flight results come from: {@link ResultSource}, the one interface between the Flight
 * server and the runtime. `stream(sql, params, signal)` answers with the result's Arrow schema and
 * an async iterator of record batches, which the server pulls one batch at a time as the client
 * reads (gRPC back-pressure).
 *
 * {@link runtimeResultSource} is today's implementation on `runtime.query()`: the runtime returns
 * the whole result as JSON-safe rows (capped by the runtime's `maxResultRows`), and this converts
 * them to typed Arrow batches lazily, one batch per pull. When the runtime streams Arrow record
 * batches itself, a source over that API replaces this file and nothing else changes.
 */
import type { ArrowDataType, ColumnInfo, JsonValue } from '@ferry/core';
import type { Runtime } from '@ferry/runtime';
import { Field, makeData, RecordBatch, Schema, Struct } from 'apache-arrow';
import { buildColumn, columnFits } from './arrow-encode.js';
import { columnTypeToArrow, toDataType } from './arrow-types.js';

export interface ArrowResult {
  readonly schema: Schema;
  /** The one dataset the statement read; absent when it read none or several. */
  readonly dataset: string | undefined;
  /** Rows in the result when known before streaming; -1 when not. */
  readonly totalRows: number;
  /** The record batches, pulled one at a time; stops early when the signal aborts. */
  readonly batches: AsyncIterable<RecordBatch>;
}

export interface ResultSource {
  /** Runs one read-only statement; rejects with the runtime's errors (codes and messages). */
  stream(sql: string, params: readonly JsonValue[], signal: AbortSignal): Promise<ArrowResult>;
}

export interface RuntimeResultSourceOptions {
  /** Rows per record batch at most; default 8 192 (DataFusion's batch size, as Spice sends). */
  readonly maxBatchRows?: number;
  /**
   * Bytes of Arrow buffers per batch at most (fewer rows go in a batch of wide rows); default
   * 2 MiB, well under gRPC's default 4 MiB receive limit of every client.
   */
  readonly maxBatchBytes?: number;
}

/** Field metadata a Flight SQL client (JDBC, ADBC) reads as the column's database type name. */
const TYPE_NAME_KEY = 'ARROW:FLIGHT:SQL:TYPE_NAME';

/** SQLite values need not match a column's declared type: the widening order when they do not. */
const SQLITE_FALLBACKS: readonly ArrowDataType[] = ['Int64', 'Float64', 'Utf8'];

function columnField(
  engine: string | undefined,
  column: ColumnInfo,
  values: () => Iterable<JsonValue>,
): Field {
  const mapped = columnTypeToArrow(engine, column.type);
  let type = toDataType(mapped ?? 'Utf8');
  if (engine !== 'duckdb') {
    const candidates = [...(mapped === undefined ? [] : [mapped]), ...SQLITE_FALLBACKS];
    for (const candidate of candidates) {
      type = toDataType(candidate);
      if (columnFits(type, values())) break;
    }
  }
  return new Field(column.name, type, true, new Map([[TYPE_NAME_KEY, column.type]]));
}

function* columnValues(
  rows: readonly Readonly<Record<string, JsonValue>>[],
  name: string,
): Iterable<JsonValue> {
  for (const row of rows) yield row[name] ?? null;
}

function batchOf(schema: Schema, rows: readonly Readonly<Record<string, JsonValue>>[]): RecordBatch {
  const children = schema.fields.map((field) =>
    buildColumn(
      field.type,
      rows.map((row) => row[field.name] ?? null),
      field.name,
    ),
  );
  return new RecordBatch(
    schema,
    makeData({ type: new Struct(schema.fields), length: rows.length, nullCount: 0, children }),
  );
}

const batchBytes = (batch: RecordBatch): number => batch.data.byteLength;

async function* batchesOf(
  schema: Schema,
  rows: readonly Readonly<Record<string, JsonValue>>[],
  maxRows: number,
  maxBytes: number,
  signal: AbortSignal,
): AsyncGenerator<RecordBatch> {
  let size = maxRows;
  let at = 0;
  while (at < rows.length && !signal.aborted) {
    let batch = batchOf(schema, rows.slice(at, at + size));
    // Wide rows: shrink the batch (and every later one) until it fits the byte budget.
    while (batch.numRows > 1 && batchBytes(batch) > maxBytes) {
      size = Math.max(1, Math.floor((batch.numRows * maxBytes) / batchBytes(batch)));
      batch = batchOf(schema, rows.slice(at, at + size));
    }
    at += batch.numRows;
    yield batch;
  }
}

/** A {@link ResultSource} over `runtime.query()` (today's runtime: JSON-safe rows, converted here). */
export function runtimeResultSource(
  runtime: Runtime,
  options: RuntimeResultSourceOptions = {},
): ResultSource {
  const maxRows = options.maxBatchRows ?? 8_192;
  const maxBytes = options.maxBatchBytes ?? 2 * 1024 * 1024;
  return {
    async stream(sql, params, signal) {
      const result = await runtime.query(sql, params);
      signal.throwIfAborted();
      const engine = result.engine;
      const schema = new Schema(
        result.columns.map((column) =>
          columnField(engine, column, () => columnValues(result.rows, column.name)),
        ),
      );
      return {
        schema,
        dataset: result.dataset ?? undefined,
        totalRows: result.rows.length,
        batches: batchesOf(schema, result.rows, maxRows, maxBytes, signal),
      };
    },
  };
}
