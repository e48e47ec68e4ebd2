/**
 * JSON and CSV text from Arrow batches (`batchText`) against the rows `query()` answers: every
 * type of the types table (and the types outside the type table), read as Arrow through the
 * column-wise converter and an IPC round trip, encodes to the same JSON values as node-api's
 * values through `encodeDuckDbValue`, and to the same CSV cells (a string as it is, anything else
 * as its JSON text).
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { JsonValue } from '@ferry/core';
import type { RecordBatch } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchText } from '../src/arrow-json.js';
import { batchesFromIpc, batchToIpc } from '../src/arrow-results.js';
import { DuckDbBatchBuilder } from '../src/duckdb-chunk-arrow.js';
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

async function arrowBatches(sql: string): Promise<RecordBatch[]> {
  const result = await connection.stream(sql);
  const builder = new DuckDbBatchBuilder(result.deduplicatedColumnNames(), result.columnTypes());
  const batches: RecordBatch[] = [];
  for (;;) {
    const chunk = await result.fetchChunk();
    if (chunk === null || chunk.rowCount === 0) break;
    builder.append(chunk);
    if (builder.rows >= 3000)
      batches.push(...batchesFromIpc(batchToIpc(builder.schema, builder.flush())).batches);
  }
  batches.push(...batchesFromIpc(batchToIpc(builder.schema, builder.flush())).batches);
  return batches;
}

async function expected(sql: string): Promise<JsonValue[][]> {
  const reader = await connection.runAndReadAll(sql);
  const types = reader.columnTypes();
  return reader.getRows().map((row) => row.map((value, index) => encodeDuckDbValue(value, types[index])));
}

const cellOf = (value: JsonValue): string =>
  value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value);

describe('Arrow batches as JSON and CSV text', () => {
  it.each([
    'SELECT * FROM t ORDER BY i',
    'SELECT * FROM t WHERE i % 7 = 3 ORDER BY i',
    "SELECT 'infinity'::TIMESTAMP AS a, '-infinity'::TIMESTAMPTZ AS b, 'infinity'::DATE AS c, 9007199254740991::BIGINT AS safe, -9007199254740992::BIGINT AS unsafe, 'Infinity'::DOUBLE AS inf, '-Infinity'::FLOAT AS ninf, 'quote \" back \\ slash' AS s, NULL AS nothing",
  ])('%s: the JSON values and CSV cells of query()', async (sql) => {
    const batches = await arrowBatches(sql);
    const rows: JsonValue[][] = [];
    const cells: string[][] = [];
    for (const batch of batches) {
      const columns = batchText(batch);
      for (let row = 0; row < batch.numRows; row++) {
        rows.push(columns.map((column) => JSON.parse(column.json(row)) as JsonValue));
        cells.push(columns.map((column) => column.cell(row)));
      }
    }
    const want = await expected(sql);
    expect(rows.length).toBe(want.length);
    expect(rows).toEqual(want);
    expect(cells).toEqual(want.map((row) => row.map(cellOf)));
  });
});

describe('values a JSON encoding could get wrong', () => {
  /** Row 0 of `sql` as `query()` encodes it and as a batch's JSON, CSV cells too. */
  async function bothWays(sql: string): Promise<{ rows: JsonValue[]; batch: JsonValue[]; cells: string[] }> {
    const [row] = await expected(sql);
    const [batch] = await arrowBatches(sql);
    const columns = batchText(batch as RecordBatch);
    return {
      rows: row as JsonValue[],
      batch: columns.map((column) => JSON.parse(column.json(0)) as JsonValue),
      cells: columns.map((column) => column.cell(0)),
    };
  }

  it("DATE 'infinity' and '-infinity' read as DuckDB prints them, not as the day they are stored as", async () => {
    const sql =
      "SELECT 'infinity'::DATE AS a, '-infinity'::DATE AS b, DATE '2026-12-07' AS c, ['infinity'::DATE] AS l";
    const got = await bothWays(sql);
    const printed = await connection.runAndReadAll(`SELECT a::VARCHAR, b::VARCHAR FROM (${sql})`);
    expect(printed.getRows()[0]).toEqual(['infinity', '-infinity']);
    const want = ['infinity', '-infinity', '2026-12-07', ['infinity']];
    expect(got.rows).toEqual(want);
    expect(got.batch).toEqual(want);
    expect(got.cells).toEqual(['infinity', '-infinity', '2026-12-07', '["infinity"]']);
  });

  it('FLOAT values read as the shortest text of their 32-bit value, as DuckDB and Spice print them', async () => {
    const sql = `SELECT 0.1::FLOAT AS f, 19.99::FLOAT AS price, 123456789.123::FLOAT AS big, 'NaN'::FLOAT AS nan,
      [0.1::FLOAT, NULL] AS l, {'x': 19.99::FLOAT} AS s, MAP {1.5::FLOAT: 0.3::FLOAT} AS m, 0.1::DOUBLE AS d`;
    const got = await bothWays(sql);
    const printed = await connection.runAndReadAll(`SELECT f::VARCHAR, price::VARCHAR FROM (${sql})`);
    expect(printed.getRows()[0]).toEqual(['0.1', '19.99']);
    const want = [0.1, 19.99, 123456790, 'NaN', [0.1, null], { x: 19.99 }, [{ key: 1.5, value: 0.3 }], 0.1];
    expect(got.rows).toEqual(want);
    expect(got.batch).toEqual(want);
    expect(got.cells).toEqual([
      '0.1',
      '19.99',
      '123456790',
      'NaN',
      '[0.1,null]',
      '{"x":19.99}',
      '[{"key":1.5,"value":0.3}]',
      '0.1',
    ]);
  });

  it('a BIGNUM (VARINT) reads as an integer either way: a number within 2^53, else its digits', async () => {
    const sql = `SELECT '-5'::VARINT AS small, '123456789012345678901234567890'::VARINT AS big, ['7'::VARINT] AS l`;
    const got = await bothWays(sql);
    const want = [-5, '123456789012345678901234567890', [7]];
    expect(got.rows).toEqual(want);
    expect(got.batch).toEqual(want);
    expect(got.cells).toEqual(['-5', '123456789012345678901234567890', '[7]']);
  });

  it('a TIMESTAMP beyond the range of a JavaScript Date reads as ISO text too, as nearer ones do', async () => {
    const sql = `SELECT '294247-01-10 04:00:54.775806'::TIMESTAMP AS max, '290308-12-22 (BC) 00:00:00'::TIMESTAMP AS min,
      '275760-09-13 00:00:00'::TIMESTAMP AS edge, '275760-09-14 00:00:00.5'::TIMESTAMP AS past,
      '12345-06-07 08:09:10'::TIMESTAMP AS near, ['294247-01-10 04:00:54'::TIMESTAMP] AS l`;
    const got = await bothWays(sql);
    const want = [
      '+294247-01-10T04:00:54.775806',
      '-290307-12-22T00:00:00.000000',
      '+275760-09-13T00:00:00.000000',
      '+275760-09-14T00:00:00.500000',
      '+012345-06-07T08:09:10.000000',
      ['+294247-01-10T04:00:54.000000'],
    ];
    expect(got.rows).toEqual(want);
    expect(got.batch).toEqual(want);
  });
});
