/**
 * Arrow result batches built from plain values round-trip through IPC with the types of the
 * snapshot-store type table: integers (64-bit exact), floats, text, booleans, dates, timestamps
 * (with and without zone), decimals (negative too), intervals, lists, structs, maps, binary and
 * nulls; a value that does not fit its column is refused by name.
 */

import {
  Dictionary,
  Int32,
  type RecordBatch,
  RecordBatchStreamWriter,
  type Schema,
  Table,
  tableFromIPC,
  Utf8,
  vectorFromArray,
} from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import {
  type ArrowValue,
  arrowSchemaOf,
  batchesFromIpc,
  batchToIpc,
  RecordBatchBuilder,
} from '../src/arrow-results.js';

const COLUMNS = [
  { name: 'i', type: 'Int64' },
  { name: 'n', type: 'Int32' },
  { name: 'f', type: 'Float64' },
  { name: 's', type: 'Utf8' },
  { name: 'b', type: 'Boolean' },
  { name: 'd', type: 'Date32' },
  { name: 'ts', type: { Timestamp: ['Microsecond', null] } },
  { name: 'tz', type: { Timestamp: ['Microsecond', 'UTC'] } },
  { name: 'dec', type: { Decimal128: [18, 2] } },
  { name: 'l', type: { List: { name: 'item', data_type: 'Int64', nullable: true } } },
  {
    name: 'st',
    type: {
      Struct: [
        { name: 'a', data_type: 'Int32', nullable: true },
        { name: 'b', data_type: 'Utf8', nullable: true },
      ],
    },
  },
  {
    name: 'm',
    type: {
      Map: [
        {
          name: 'entries',
          data_type: {
            Struct: [
              { name: 'keys', data_type: 'Utf8', nullable: false },
              { name: 'values', data_type: 'Int64', nullable: true },
            ],
          },
          nullable: false,
        },
        false,
      ],
    },
  },
  { name: 'iv', type: { Interval: 'MonthDayNano' } },
  { name: 'bin', type: 'Binary' },
  { name: 'x', type: 'HUGEINT-like' },
] as const;

/** A row with a value in every column of {@link COLUMNS}. */
const FULL_ROW: ArrowValue[] = [
  2n ** 62n,
  -7,
  1.5,
  'héllo',
  true,
  19_000,
  1_700_000_000_123_456n,
  1_700_000_000_000_000n,
  -12_345n,
  [1n, null, 3n],
  { a: 1, b: 'x' },
  [['k', 5n]],
  { months: 1, days: 2, nanos: 3_000n },
  new Uint8Array([1, 2]),
  'text',
];

describe('Arrow results', () => {
  it('round-trip through IPC with their types and values', () => {
    const schema = arrowSchemaOf(COLUMNS);
    const builder = new RecordBatchBuilder(schema);
    builder.appendRow(FULL_ROW);
    builder.appendRow(COLUMNS.map((column) => (column.name === 'b' ? false : null)));
    for (let row = 0; row < 100; row++) builder.appendRow([BigInt(row), row, row, `s${row}`, row % 2 === 0]);
    expect([builder.rows, builder.bytes > 0]).toEqual([102, true]);
    const { schema: read, batches } = batchesFromIpc(batchToIpc(schema, builder.flush()));
    expect(read.fields.map((field) => String(field.type))).toEqual([
      'Int64',
      'Int32',
      'Float64',
      'Utf8',
      'Bool',
      'Date32<DAY>',
      'Timestamp<MICROSECOND>',
      'Timestamp<MICROSECOND, UTC>',
      'Decimal[18e+2]',
      'List<Int64>',
      'Struct<{a:Int32, b:Utf8}>',
      'Map<{key:Utf8, value:Int64}>',
      'Interval<MONTH_DAY_NANO>',
      'Binary',
      'Utf8',
    ]);
    const batch = batches[0];
    expect(batch?.numRows).toBe(102);
    const first = batch?.get(0)?.toJSON() as Record<string, unknown>;
    expect(first.i).toBe(2n ** 62n);
    expect([first.n, first.f, first.s, first.b]).toEqual([-7, 1.5, 'héllo', true]);
    expect(first.d).toBe(19_000 * 86_400_000);
    expect(String(batch?.getChild('dec')?.get(0))).toBe('-12345');
    expect([...(batch?.getChild('l')?.get(0) ?? [])]).toEqual([1n, null, 3n]);
    expect(batch?.getChild('st')?.get(0)?.toJSON()).toEqual({ a: 1, b: 'x' });
    expect(batch?.getChild('m')?.get(0)?.toJSON()).toEqual({ k: 5n });
    expect([...(batch?.getChild('bin')?.get(0) ?? [])]).toEqual([1, 2]);
    expect(batch?.getChild('x')?.get(0)).toBe('text');
    const second = batch?.get(1)?.toJSON() as Record<string, unknown>;
    expect(Object.entries(second).filter(([, value]) => value !== null)).toEqual([['b', false]]);
    expect(batch?.get(101)?.toJSON()).toMatchObject({ i: 99n, s: 's99', b: false, d: null });
  });

  it('text is stored as its UTF-8 bytes: ASCII, accents, CJK, emoji, a lone surrogate, long and empty strings', () => {
    const texts = [
      'plain ascii',
      'é at the end é',
      '日本語のテキスト',
      'a 😀 b 🚀',
      'lone \ud800 surrogate',
      '',
      `${'x'.repeat(3_000)}ü${'y'.repeat(500)}`,
      'ascii then 😀',
    ];
    const schema = arrowSchemaOf([
      { name: 't', type: 'Utf8' },
      { name: 'b', type: 'Binary' },
    ]);
    const builder = new RecordBatchBuilder(schema);
    for (let round = 0; round < 40; round++) for (const text of texts) builder.appendRow([text, text]);
    const batch = batchesFromIpc(batchToIpc(schema, builder.flush())).batches[0];
    const encoder = new TextEncoder();
    const decoder = new TextDecoder();
    const expected = Array.from({ length: 40 }, () => texts).flat();
    expect(batch?.numRows).toBe(expected.length);
    expect(expected.map((_, row) => batch?.getChild('t')?.get(row))).toEqual(
      expected.map((text) => decoder.decode(encoder.encode(text))),
    );
    expect(
      expected.map((_, row) => Buffer.from(batch?.getChild('b')?.get(row) ?? []).toString('hex')),
    ).toEqual(expected.map((text) => Buffer.from(encoder.encode(text)).toString('hex')));
  });

  it('a builder starts empty again after each flush', () => {
    const schema = arrowSchemaOf([
      { name: 'i', type: 'Int64' },
      { name: 's', type: 'Utf8' },
    ]);
    const builder = new RecordBatchBuilder(schema);
    builder.appendRow([1, 'one']);
    builder.appendRow([2, 'two']);
    const first = builder.flush();
    expect([builder.rows, builder.bytes]).toEqual([0, 0]);
    builder.appendRow([3, 'three']);
    const second = builder.flush();
    expect([first.numRows, second.numRows]).toEqual([2, 1]);
    expect(second.get(0)?.toJSON()).toEqual({ i: 3n, s: 'three' });
    expect(first.get(1)?.toJSON()).toEqual({ i: 2n, s: 'two' });
  });

  it("IPC bytes are exactly apache-arrow's stream writer's: every type, nulls, an empty batch, the schema alone", () => {
    const writer = (schema: Schema, batch?: RecordBatch): string => {
      const stream = new RecordBatchStreamWriter();
      stream.reset(undefined, schema);
      if (batch !== undefined) stream.write(batch);
      stream.finish();
      return Buffer.from(stream.toUint8Array(true)).toString('hex');
    };
    const schema = arrowSchemaOf(COLUMNS);
    const builder = new RecordBatchBuilder(schema);
    const cases: (RecordBatch | undefined)[] = [undefined, builder.flush()];
    builder.appendRow(FULL_ROW);
    builder.appendRow(COLUMNS.map(() => null));
    for (let row = 0; row < 70; row++)
      builder.appendRow([BigInt(row), row, row / 3, `s${row}`.repeat(row % 5)]);
    cases.push(builder.flush());
    for (const batch of cases) {
      const ours = Buffer.from(batchToIpc(schema, batch)).toString('hex');
      expect(ours).toBe(writer(schema, batch));
      // And a second time from the same schema (its message is encoded once).
      expect(Buffer.from(batchToIpc(schema, batch)).toString('hex')).toBe(ours);
    }
  });

  it("batches decoded from IPC are apache-arrow's reader's: every type, nulls, an empty batch; dictionaries through the reader", () => {
    // Rows as JSON text, nested vectors included (their objects differ in views, not in values).
    const rowsOf = (batch: RecordBatch | undefined) =>
      JSON.stringify(batch?.toArray(), (_key, value) => (typeof value === 'bigint' ? `${value}n` : value));
    const sameAsReader = (bytes: Uint8Array): void => {
      const ours = batchesFromIpc(bytes);
      const reader = tableFromIPC(bytes);
      expect(ours.schema.fields.map(String)).toEqual(reader.schema.fields.map(String));
      expect(ours.schema.fields.map((field) => [...field.metadata])).toEqual(
        reader.schema.fields.map((field) => [...field.metadata]),
      );
      expect(ours.batches.map((batch) => batch.numRows)).toEqual(
        reader.batches.map((batch) => batch.numRows),
      );
      for (const [index, batch] of ours.batches.entries()) {
        expect(rowsOf(batch)).toEqual(rowsOf(reader.batches[index]));
        expect(batch.data.children.map((child) => child.nullCount)).toEqual(
          reader.batches[index]?.data.children.map((child) => child.nullCount),
        );
      }
    };
    const schema = arrowSchemaOf(COLUMNS);
    const builder = new RecordBatchBuilder(schema);
    const cases: RecordBatch[] = [builder.flush()];
    builder.appendRow(FULL_ROW);
    builder.appendRow(COLUMNS.map(() => null));
    for (let row = 0; row < 70; row++)
      builder.appendRow([BigInt(row), row, row / 3, `s${row}`.repeat(row % 5), row % 3 === 0]);
    cases.push(builder.flush());
    for (const batch of cases) sameAsReader(batchToIpc(schema, batch));
    // The schema alone: no batch (the reader's placeholder for it is none either).
    expect(batchesFromIpc(batchToIpc(schema)).batches).toEqual([]);
    expect(batchesFromIpc(batchToIpc(schema)).schema.fields.map(String)).toEqual(schema.fields.map(String));
    // A dictionary column (never written by Ferry) is read by apache-arrow's reader.
    const words = vectorFromArray(['a', 'b', 'a', null], new Dictionary(new Utf8(), new Int32()));
    const dictionary = RecordBatchStreamWriter.writeAll(new Table({ word: words })).toUint8Array(true);
    sameAsReader(dictionary);
    expect(rowsOf(batchesFromIpc(dictionary).batches[0])).toBe(
      '[{"word":"a"},{"word":"b"},{"word":"a"},{"word":null}]',
    );
  });

  it('one schema object per distinct set of columns: equal columns share it, any difference does not', () => {
    const columns = [
      { name: 'id', type: 'Int64', typeName: 'INTEGER' },
      { name: 'note', type: 'Utf8' },
    ] as const;
    const first = arrowSchemaOf(columns);
    expect(arrowSchemaOf(columns.map((column) => ({ ...column })))).toBe(first);
    const others = [
      arrowSchemaOf([{ ...columns[0], typeName: 'BIGINT' }, columns[1]]),
      arrowSchemaOf([{ ...columns[0], name: 'ID' }, columns[1]]),
      arrowSchemaOf([columns[0], { ...columns[1], type: 'Binary' }]),
      arrowSchemaOf([columns[0], { ...columns[1], jsonForm: 'json' }]),
      arrowSchemaOf([columns[0]]),
    ];
    for (const other of others) expect(other).not.toBe(first);
    expect(others[0]?.fields[0]?.metadata.get('ARROW:FLIGHT:SQL:TYPE_NAME')).toBe('BIGINT');
    expect(String(others[2]?.fields[1]?.type)).toBe('Binary');
  });

  it('an empty builder is an empty batch with the schema; a misfit value is refused', () => {
    const schema = arrowSchemaOf([{ name: 'flag', type: 'Boolean' }]);
    const empty = batchesFromIpc(batchToIpc(schema, new RecordBatchBuilder(schema).flush()));
    expect([empty.schema.fields.map((field) => field.name), empty.batches[0]?.numRows ?? 0]).toEqual([
      ['flag'],
      0,
    ]);
    expect(() => new RecordBatchBuilder(schema).appendRow(['yes'])).toThrow(
      'A string value (yes) cannot be stored in an Arrow Bool column',
    );
  });
});
