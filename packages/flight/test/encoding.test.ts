/**
 * The pure pieces under the server, each against apache-arrow's own reading of what they build:
 * DuckDB type names to Arrow types, JSON-safe values to Arrow buffers (decimals, timestamps,
 * nested values), bound parameters back to the runtime's values, LIKE patterns, path scrubbing.
 */
import {
  Field,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  tableFromArrays,
  tableFromIPC,
  tableToIPC,
} from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { buildColumn, columnFits, timestampNanos, unscaledDecimal } from '../src/arrow-encode.js';
import { duckDbTypeNameToArrow, toDataType } from '../src/arrow-types.js';
import { likePattern } from '../src/catalog.js';
import { publicMessage } from '../src/errors.js';
import { batchMessages, readFlightData, schemaMessage } from '../src/ipc.js';
import { parametersOf, placeholderCount } from '../src/parameters.js';

describe('DuckDB type names', () => {
  it('map to the Arrow JSON of the type table, nested types included', () => {
    expect(duckDbTypeNameToArrow('BIGINT')).toBe('Int64');
    expect(duckDbTypeNameToArrow('DECIMAL(18,3)')).toEqual({ Decimal128: [18, 3] });
    expect(duckDbTypeNameToArrow('TIMESTAMP WITH TIME ZONE')).toEqual({ Timestamp: ['Microsecond', 'UTC'] });
    expect(String(toDataType(duckDbTypeNameToArrow('INTEGER[][]') ?? 'Utf8'))).toBe('List<List<Int32>>');
    expect(
      String(toDataType(duckDbTypeNameToArrow('STRUCT("a b" INTEGER[], "x""y" VARCHAR)') ?? 'Utf8')),
    ).toBe('Struct<{a b:List<Int32>, x"y:Utf8}>');
    expect(String(toDataType(duckDbTypeNameToArrow('MAP(VARCHAR, DECIMAL(4,1))') ?? 'Utf8'))).toMatch(
      /^Map<\{key:Utf8, value:Decimal\[4e\+1\]\}>$/,
    );
  });

  it('outside the table (HUGEINT, UUID, ENUM, UNION, TIMETZ, wide decimals) are undefined, so they travel as text', () => {
    for (const name of [
      'HUGEINT',
      'UUID',
      "ENUM('a', 'b')",
      'UNION("k" INTEGER)',
      'TIME WITH TIME ZONE',
      'DECIMAL(40,2)',
    ]) {
      expect(duckDbTypeNameToArrow(name)).toBeUndefined();
    }
  });
});

describe('values to Arrow buffers', () => {
  it('decimals keep every digit and refuse digits beyond the scale', () => {
    expect(unscaledDecimal('350.00', 2)).toBe(35000n);
    expect(unscaledDecimal('-0.5', 3)).toBe(-500n);
    expect(unscaledDecimal(1e-7, 7)).toBe(1n);
    expect(unscaledDecimal('12345678901234567890.12', 2)).toBe(1234567890123456789012n);
    expect(unscaledDecimal('1.005', 2)).toBeUndefined();
  });

  it('timestamps keep nanoseconds and honour offsets', () => {
    expect(timestampNanos('1970-01-01T00:00:01.000000001')).toBe(1_000_000_001n);
    expect(timestampNanos('1970-01-01 01:00:00+01:00')).toBe(0n);
    expect(timestampNanos('2026-02-30T00:00:00')).toBeUndefined();
  });

  it('a batch built from JSON-safe rows reads back through Arrow IPC as the same values', () => {
    const fields = [
      new Field('big', toDataType('Int64'), true),
      new Field('amount', toDataType({ Decimal128: [20, 2] }), true),
      new Field('at', toDataType({ Timestamp: ['Nanosecond', null] }), true),
      new Field('day', toDataType('Date32'), true),
      new Field('blob', toDataType('Binary'), true),
      new Field('tags', toDataType(duckDbTypeNameToArrow('VARCHAR[]') ?? 'Utf8'), true),
      new Field('point', toDataType(duckDbTypeNameToArrow('STRUCT(x INTEGER, y DOUBLE)') ?? 'Utf8'), true),
    ];
    const rows = [
      [
        '9007199254740993',
        '-12.50',
        '2026-11-29T08:00:00.123456789',
        '2026-11-29',
        'AAEC',
        ['a', null],
        { x: 1, y: 2.5 },
      ],
      [null, null, null, null, null, null, null],
    ];
    const schema = new Schema(fields);
    const children = fields.map((field, index) =>
      buildColumn(
        field.type,
        rows.map((row) => row[index] ?? null),
        field.name,
      ),
    );
    const batch = new RecordBatch(
      schema,
      makeData({ type: new Struct(fields), length: 2, nullCount: 0, children }),
    );
    const table = tableFromIPC(tableToIPC(new Table(batch)));
    const first = table.get(0)?.toJSON() as Record<string, unknown>;
    expect(first.big).toBe(9007199254740993n);
    expect(String(first.amount)).toBe('-1250');
    expect(table.getChild('at')?.data[0]?.values[0]).toBe(1795939200123456789n);
    expect(new Date(first.day as number).toISOString()).toBe('2026-11-29T00:00:00.000Z');
    expect([...(first.blob as Uint8Array)]).toEqual([0, 1, 2]);
    expect([...(first.tags as { toArray(): unknown[] }).toArray()]).toEqual(['a', null]);
    expect((first.point as { toJSON(): unknown }).toJSON()).toEqual({ x: 1, y: 2.5 });
    expect(Object.values(table.get(1)?.toJSON() ?? {})).toEqual(Array(7).fill(null));
  });

  it('columnFits tells a SQLite column whose values do not match its declared type', () => {
    expect(columnFits(toDataType('Int64'), [1, '9007199254740993', null])).toBe(true);
    expect(columnFits(toDataType('Int64'), [1, 2.5])).toBe(false);
    expect(columnFits(toDataType('Date32'), ['2026-01-01', 'soon'])).toBe(false);
  });
});

describe('parameters bound with DoPut', () => {
  it('become the runtime’s JSON-safe values, $n columns by number', () => {
    const values = tableFromArrays({ $2: ['text'], $1: [1.5] });
    const batches = readFlightData(
      [values.schema, ...values.batches].flatMap((part, index) =>
        index === 0 ? [schemaMessage(part as Schema)] : batchMessages(part as RecordBatch),
      ),
    );
    expect(parametersOf(batches)).toEqual([1.5, 'text']);
    expect(placeholderCount('SELECT * FROM t WHERE a = $2 AND b = $1')).toBe(2);
    expect(placeholderCount("SELECT '?' FROM t WHERE a = ? AND b = ?")).toBe(2);
  });
});

describe('helpers', () => {
  it('LIKE patterns: % any run, _ one character, backslash escapes', () => {
    expect(['orders', 'order_lines', 'users'].filter(likePattern('order%'))).toEqual([
      'orders',
      'order_lines',
    ]);
    expect(['order_lines', 'orderXlines'].filter(likePattern('order\\_lines'))).toEqual(['order_lines']);
    expect(['ab', 'abc'].filter(likePattern('a_'))).toEqual(['ab']);
  });

  it('publicMessage never lets a local path through', () => {
    expect(publicMessage("Query on '/var/lib/ferry/data/orders/7.duckdb' failed: Binder Error: x")).toBe(
      "Query on '<snapshot file>' failed: Binder Error: x",
    );
    expect(publicMessage('IO Error: Cannot open file /tmp/ferry-x/data/a.sqlite: denied')).toBe(
      'IO Error: Cannot open file <snapshot file>: denied',
    );
    expect(publicMessage('SELECT a / b FROM t')).toBe('SELECT a / b FROM t');
  });
});
