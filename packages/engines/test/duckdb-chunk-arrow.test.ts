/**
 * The column-wise converter (`DuckDbBatchBuilder`) against the value-by-value path it replaced
 * (node-api's values through `duckDbArrowValue` into `RecordBatchBuilder`): for every type of the
 * type table and the types outside it, with nulls, short and out-of-line strings, constant and
 * shared lists, nested lists/structs/maps, odd chunk sizes (a filter) and chunks split across
 * batches, both give the same Arrow values after an IPC round trip.
 */
import {
  DuckDBArrayValue,
  DuckDBBlobValue,
  type DuckDBConnection,
  DuckDBDateValue,
  DuckDBDecimalValue,
  DuckDBIntervalValue,
  DuckDBListValue,
  DuckDBMapValue,
  type DuckDBResult,
  DuckDBStructValue,
  DuckDBTimeNSValue,
  DuckDBTimestampMillisecondsValue,
  DuckDBTimestampNanosecondsValue,
  DuckDBTimestampSecondsValue,
  DuckDBTimestampTZValue,
  DuckDBTimestampValue,
  DuckDBTimeValue,
  type DuckDBValue,
  DuckDBVariantValue,
} from '@duckdb/node-api';
import {
  type DataType,
  type Field,
  type List,
  type Map_,
  type RecordBatch,
  type Schema,
  type Struct,
  Type,
} from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ArrowValue, batchesFromIpc, batchToIpc, RecordBatchBuilder } from '../src/arrow-results.js';
import { DuckDbBatchBuilder, duckDbResultSchema } from '../src/duckdb-chunk-arrow.js';
import { encodeDuckDbValue } from '../src/duckdb-values.js';
import { openTypesTable, type TypesTable } from './types-table.js';

let types: TypesTable;
let connection: DuckDBConnection;

beforeAll(async () => {
  types = await openTypesTable();
  connection = types.connection;
});

afterAll(async () => {
  await types.close();
});

/** A value read back from Arrow as plain data (bigints and strings kept, nested values unwrapped). */
function plain(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'object') return value;
  if (value instanceof Uint8Array) return [...value];
  if (ArrayBuffer.isView(value)) return [...(value as unknown as Iterable<unknown>)].map(plain);
  const object = value as { toJSON?: () => unknown; [Symbol.iterator]?: unknown };
  if (typeof object[Symbol.iterator] === 'function' && typeof object.toJSON !== 'function') {
    return [...(value as Iterable<unknown>)].map(plain);
  }
  if (typeof object.toJSON === 'function') {
    const json = object.toJSON();
    if (Array.isArray(json)) return json.map(plain);
    if (json !== null && typeof json === 'object') {
      return Object.fromEntries(Object.entries(json).map(([key, entry]) => [key, plain(entry)]));
    }
    return json;
  }
  return String(value);
}

function rowsOf(batches: readonly RecordBatch[]): unknown[][] {
  const rows: unknown[][] = [];
  for (const batch of batches) {
    for (let row = 0; row < batch.numRows; row++) {
      rows.push(
        batch.schema.fields.map((_, index) => {
          const column = batch.getChildAt(index);
          // Timestamps and dates as their stored integers (Arrow JS's Date form cannot hold infinity).
          const typeId = column?.type.typeId;
          if (typeId === Type.Timestamp || typeId === Type.Date) {
            const data = column?.data[0];
            return column?.isValid(row) ? data?.values[(data?.offset ?? 0) + row] : null;
          }
          const value = column?.get(row);
          // Decimals read back as 128-bit words: compare their text.
          return String(column?.type) === 'Decimal' || String(column?.type).startsWith('Decimal[')
            ? value === null
              ? null
              : String(value)
            : plain(value);
        }),
      );
    }
  }
  return rows;
}

/** Both paths over one result: the batches of the column-wise builder and of the value-by-value one. */
const valuePath = new Map<string, Promise<unknown[][]>>();

async function both(sql: string, batchRows = 3000): Promise<{ columnar: unknown[][]; values: unknown[][] }> {
  const columnarBatches: RecordBatch[] = [];
  {
    const result: DuckDBResult = await connection.stream(sql);
    const builder = new DuckDbBatchBuilder(result.deduplicatedColumnNames(), result.columnTypes(), 1024);
    for (;;) {
      const chunk = await result.fetchChunk();
      if (chunk === null || chunk.rowCount === 0) break;
      // Split chunks across batches of `batchRows`.
      let at = 0;
      while (at < chunk.rowCount) {
        const take = Math.min(chunk.rowCount - at, batchRows - builder.rows);
        builder.append(chunk, at, at + take);
        at += take;
        if (builder.rows >= batchRows) columnarBatches.push(...round(builder.schema, builder.flush()));
      }
    }
    if (builder.rows > 0) columnarBatches.push(...round(builder.schema, builder.flush()));
  }
  if (!valuePath.has(sql)) valuePath.set(sql, valueRows(sql));
  return { columnar: rowsOf(columnarBatches), values: await (valuePath.get(sql) as Promise<unknown[][]>) };
}

async function valueRows(sql: string): Promise<unknown[][]> {
  const valueBatches: RecordBatch[] = [];
  {
    const result = await connection.stream(sql);
    const schema = duckDbResultSchema(result.deduplicatedColumnNames(), result.columnTypes());
    const types = schema.fields.map((field) => field.type);
    const builder = new RecordBatchBuilder(schema);
    for (;;) {
      const chunk = await result.fetchChunk();
      if (chunk === null || chunk.rowCount === 0) break;
      for (const values of chunk.getRows()) {
        builder.appendRow(values.map((value, index) => duckDbArrowValue(value, types[index] as never)));
      }
    }
    valueBatches.push(...round(schema, builder.flush()));
  }
  return rowsOf(valueBatches);
}

function round(schema: Schema, batch: RecordBatch): RecordBatch[] {
  return batchesFromIpc(batchToIpc(schema, batch)).batches;
}

describe('DuckDB chunks to Arrow, column by column', () => {
  it('gives the values of the value-by-value path for every type, in batches that split chunks', async () => {
    const { columnar, values } = await both('SELECT * FROM t ORDER BY i');
    expect(columnar.length).toBe(5000);
    expect(columnar).toEqual(values);
  });

  it('reads odd chunk sizes (a filter) and batches of one chunk or less', async () => {
    for (const batchRows of [1, 777, 2048, 10_000]) {
      const { columnar, values } = await both('SELECT * FROM t WHERE i % 7 = 3', batchRows);
      expect(columnar.length).toBe(714);
      expect(columnar).toEqual(values);
    }
  });

  it('gathers lists whose entries share child rows (constant lists) or come out of order', async () => {
    const { columnar, values } = await both(
      "SELECT [1, 2, 3] AS c, ['x', 'a string past twelve bytes'] AS s, list_reverse(l) AS r, MAP {'k': [i]} AS m FROM t",
    );
    expect(columnar.length).toBe(5000);
    expect(columnar).toEqual(values);
    expect(columnar[4]?.slice(0, 2)).toEqual([
      [1, 2, 3],
      ['x', 'a string past twelve bytes'],
    ]);
  });

  it('reads nulls of every kind, empty results and expressions', async () => {
    for (const sql of [
      'SELECT NULL::INTEGER AS n, NULL::VARCHAR AS s, NULL::INTEGER[] AS l FROM range(3)',
      'SELECT * FROM t WHERE false',
      "SELECT i::VARCHAR || repeat('-', (i % 30)::INTEGER) AS s, i % 2 = 0 AS even FROM t",
      "SELECT 'infinity'::TIMESTAMP AS inf, '-infinity'::DATE AS ninf, 1.5::DECIMAL(2,1) AS one",
    ]) {
      const { columnar, values } = await both(sql);
      expect(columnar, sql).toEqual(values);
    }
  });

  it('refuses an INTERVAL beyond Arrow’s 64-bit nanoseconds, naming the column, instead of wrapping it', async () => {
    const result = await connection.stream("SELECT INTERVAL '10000000 hours' AS long_wait");
    const builder = new DuckDbBatchBuilder(result.deduplicatedColumnNames(), result.columnTypes());
    const chunk = await result.fetchChunk();
    expect(() => builder.append(chunk as NonNullable<typeof chunk>)).toThrow(
      expect.objectContaining({
        code: 'ERR_QUERY_FAILED',
        message: expect.stringContaining(
          "column 'long_wait' holds an INTERVAL of 36000000000000000 microseconds",
        ),
      }),
    );
  });
});

function text(value: DuckDBValue): string {
  const encoded = encodeDuckDbValue(value);
  return typeof encoded === 'string' ? encoded : JSON.stringify(encoded);
}

/**
 * The value-by-value path the column-wise converter replaced, kept as its oracle: `value` as the
 * plain value of an Arrow column of `type` (dates as days, timestamps and times as bigint in their
 * unit, decimals unscaled, intervals as `{ months, days, nanos }`, nested values recursively; a
 * type outside the type table as the engine's text, the same text the JSON answers carry).
 */
function duckDbArrowValue(value: DuckDBValue, type: DataType): ArrowValue {
  if (value === null) return null;
  if (value instanceof DuckDBVariantValue) return duckDbArrowValue(value.value, type);
  switch (type.typeId) {
    case Type.Utf8:
      return typeof value === 'string' ? value : text(value);
    case Type.Binary:
      return value instanceof DuckDBBlobValue ? value.bytes : text(value);
    case Type.Date:
      return value instanceof DuckDBDateValue ? value.days : null;
    case Type.Time:
      if (value instanceof DuckDBTimeValue) return value.micros;
      return value instanceof DuckDBTimeNSValue ? value.nanos : null;
    case Type.Timestamp:
      if (value instanceof DuckDBTimestampValue || value instanceof DuckDBTimestampTZValue)
        return value.micros;
      if (value instanceof DuckDBTimestampSecondsValue) return value.seconds;
      if (value instanceof DuckDBTimestampMillisecondsValue) return value.millis;
      return value instanceof DuckDBTimestampNanosecondsValue ? value.nanos : null;
    case Type.Decimal:
      return value instanceof DuckDBDecimalValue ? value.value : null;
    case Type.Interval:
      return value instanceof DuckDBIntervalValue
        ? { months: value.months, days: value.days, nanos: value.micros * 1000n }
        : null;
    case Type.List: {
      const item = (type as List).valueType;
      return value instanceof DuckDBListValue || value instanceof DuckDBArrayValue
        ? value.items.map((entry) => duckDbArrowValue(entry, item))
        : null;
    }
    case Type.Struct: {
      if (!(value instanceof DuckDBStructValue)) return null;
      const record: Record<string, ArrowValue> = {};
      for (const field of (type as Struct).children) {
        record[field.name] = duckDbArrowValue(value.entries[field.name] ?? null, field.type);
      }
      return record;
    }
    case Type.Map: {
      if (!(value instanceof DuckDBMapValue)) return null;
      const [keyField, valueField] = ((type as Map_).children[0] as Field<Struct>).type.children as [
        Field,
        Field,
      ];
      return value.entries.map(
        (entry) =>
          [
            duckDbArrowValue(entry.key, keyField.type),
            duckDbArrowValue(entry.value, valueField.type),
          ] as const,
      );
    }
    default:
      // Booleans, integers (64-bit ones are bigint already) and floats are the engine's own values.
      return typeof value === 'object' ? text(value) : value;
  }
}
