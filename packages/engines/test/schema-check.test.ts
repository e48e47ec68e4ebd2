/**
 * The after-download schema check on real files: names and order exact, types by what the engine
 * column can store (the spec's mapping table), nullability ignored; and the rejection codes and
 * messages for a missing table, a mismatch, an unknown Arrow type and a file of the wrong engine.
 */
import { join } from 'node:path';
import { type ArrowDataType, type ArrowField, type ArrowSchema, formatDataType } from '@ferry/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { arrowField, arrowList, arrowMap, arrowStruct, canonicalArrowType } from '../src/arrow-types.js';
import { openDuckDb } from '../src/duckdb-engine.js';
import type { SnapshotEngine } from '../src/engine.js';
import { checkSnapshotFile, openEngine } from '../src/open-engine.js';
import { checkTableSchema } from '../src/schema-check.js';
import { openSqlite } from '../src/sqlite-engine.js';
import { sqliteAffinity, sqliteStores } from '../src/sqlite-types.js';
import { copyFixtureFiles, type FixtureFile, makeDuckDbFile, makeSqliteFile, makeTempDir } from './files.js';

const schema = (...fields: ArrowField[]): ArrowSchema => ({ fields, metadata: {} });
const f = (name: string, type: ArrowDataType, nullable = true): ArrowField =>
  arrowField(name, type, nullable);

let dir: string;
let remove: () => Promise<void>;
let fixtures: FixtureFile[];
let duck: SnapshotEngine;
let lite: SnapshotEngine;

beforeAll(async () => {
  ({ dir, remove } = await makeTempDir());
  fixtures = await copyFixtureFiles(dir);
  await makeDuckDbFile(join(dir, 'm.duckdb'), [
    'CREATE TABLE m (a VARCHAR, b TIMESTAMPTZ, c FLOAT, d DATE, e BLOB, l INTEGER[], s STRUCT(x BIGINT), p MAP(VARCHAR, DOUBLE), n DECIMAL(18,2))',
  ]);
  await makeSqliteFile(join(dir, 'm.sqlite'), [
    'CREATE TABLE m (i INTEGER NOT NULL, t TEXT, r REAL, b BLOB, flag BOOLEAN, n NUMERIC)',
  ]);
  duck = await openDuckDb(join(dir, 'm.duckdb'));
  lite = await openSqlite(join(dir, 'm.sqlite'));
});

afterAll(async () => {
  await duck.close();
  await lite.close();
  await remove();
});

describe('fixture snapshots', () => {
  it('pass the check for both engines, through openEngine and checkSnapshotFile', async () => {
    expect(fixtures.map((x) => x.engine).sort()).toEqual(['duckdb', 'duckdb', 'sqlite']);
    for (const fixture of fixtures) {
      const engine = await openEngine(fixture.engine, fixture.path, { table: fixture.dataset });
      try {
        await checkTableSchema(engine, fixture.dataset, fixture.recorded);
      } finally {
        await engine.close();
      }
      await checkSnapshotFile(fixture.engine, fixture.path, fixture.dataset, fixture.recorded);
    }
  });

  it('ignores nullability after download', async () => {
    const orders = fixtures.find((x) => x.dataset === 'orders') as FixtureFile;
    const relaxed = schema(
      ...orders.recorded.fields.map((field) => ({ ...field, nullable: !field.nullable })),
    );
    await checkSnapshotFile('duckdb', orders.path, 'orders', relaxed);
  });

  it('rejects a file of the other engine as not a database', async () => {
    const users = fixtures.find((x) => x.dataset === 'users') as FixtureFile;
    const orders = fixtures.find((x) => x.dataset === 'orders') as FixtureFile;
    await expect(checkSnapshotFile('duckdb', users.path, 'users', users.recorded)).rejects.toMatchObject({
      name: 'SnapshotRejectedError',
      code: 'ERR_SNAPSHOT_NOT_A_DATABASE',
    });
    await expect(checkSnapshotFile('turso', orders.path, 'orders', orders.recorded)).rejects.toMatchObject({
      code: 'ERR_SNAPSHOT_NOT_A_DATABASE',
    });
  });

  it('rejects a snapshot without the dataset table', async () => {
    const users = fixtures.find((x) => x.dataset === 'users') as FixtureFile;
    await expect(checkSnapshotFile('sqlite', users.path, 'accounts', users.recorded)).rejects.toMatchObject({
      code: 'ERR_SNAPSHOT_MISSING_TABLE',
      message: expect.stringContaining("no table 'accounts'"),
    });
    const engine = await openSqlite(users.path);
    try {
      await expect(checkTableSchema(engine, 'accounts', users.recorded)).rejects.toMatchObject({
        code: 'ERR_SNAPSHOT_MISSING_TABLE',
      });
    } finally {
      await engine.close();
    }
  });
});

describe('DuckDB columns against recorded types', () => {
  const accepted = schema(
    f('a', 'LargeUtf8'),
    f('b', { Timestamp: ['Nanosecond', 'Europe/Paris'] }),
    f('c', 'Float16'),
    f('d', 'Date64'),
    f('e', { FixedSizeBinary: 16 }),
    f('l', { LargeList: f('element', 'Int32', false) }),
    f('s', { Struct: [f('x', 'Int64', false)] }),
    f('p', {
      Map: [f('entries', { Struct: [f('key', 'Utf8', false), f('value', 'Float64')] }, false), true],
    }),
    f('n', { Decimal128: [18, 2] }),
  );

  it('accepts every type the column stores alike', async () => {
    await checkTableSchema(duck, 'm', accepted);
  });

  it.each([
    [
      8,
      f('n', { Decimal128: [18, 3] }),
      'field \'n\' is DECIMAL(18,2) in the file, which cannot store the recorded type {"Decimal128":[18,3]}',
    ],
    [
      8,
      f('n', 'Float64'),
      "field 'n' is DECIMAL(18,2) in the file, which cannot store the recorded type Float64",
    ],
    [1, f('b', { Timestamp: ['Microsecond', null] }), "field 'b' is TIMESTAMP WITH TIME ZONE in the file"],
    [5, f('l', { List: f('item', 'Int64') }), "field 'l' is INTEGER[] in the file"],
    [
      0,
      f('a', 'Float8'),
      "field 'a' is recorded as Float8, and Float8 is not in the snapshot-store type table (the duckdb column is VARCHAR)",
    ],
    [
      5,
      f('l', { List: f('item', { Dictionary: ['Int32', 'Utf8'] }) }),
      'is not in the snapshot-store type table',
    ],
  ])('rejects field %i recorded as %j', async (index, field, detail) => {
    const fields = [...accepted.fields];
    fields[index] = field;
    await expect(checkTableSchema(duck, 'm', schema(...fields))).rejects.toMatchObject({
      code: 'ERR_SNAPSHOT_SCHEMA_MISMATCH',
      message: expect.stringMatching(/^Table 'm' in '.*m\.duckdb' does not match the recorded schema: .*/),
    });
    await expect(checkTableSchema(duck, 'm', schema(...fields))).rejects.toThrow(detail);
  });

  it('rejects renamed, reordered, extra and missing fields', async () => {
    const [a, b, ...rest] = accepted.fields as [ArrowField, ArrowField, ...ArrowField[]];
    await expect(checkTableSchema(duck, 'm', schema({ ...a, name: 'A' }, b, ...rest))).rejects.toThrow(
      "column 0 is 'a' where the recorded field is 'A'",
    );
    await expect(checkTableSchema(duck, 'm', schema(b, a, ...rest))).rejects.toThrow(
      "column 0 is 'a' where the recorded field is 'b'",
    );
    await expect(checkTableSchema(duck, 'm', schema(a, b, ...rest, f('z', 'Int64')))).rejects.toThrow(
      "recorded field 9 'z' (Int64) is missing from the table",
    );
    await expect(checkTableSchema(duck, 'm', schema(a, b))).rejects.toThrow(
      "column 2 'c' (FLOAT) is not in the recorded schema",
    );
  });
});

describe('SQLite columns against recorded types', () => {
  const base: Record<string, ArrowDataType> = {
    i: 'Int64',
    t: 'Utf8',
    r: 'Float64',
    b: 'Binary',
    flag: 'Boolean',
    n: { Decimal128: [10, 2] },
  };
  const recordedWith = (column: string, type: ArrowDataType): ArrowSchema =>
    schema(...Object.entries(base).map(([name, dataType]) => f(name, name === column ? type : dataType)));

  it.each<[string, ArrowDataType[]]>([
    ['i', ['Int64', 'Int8', 'UInt64', 'Boolean', 'Date32', 'Date64', { Timestamp: ['Second', null] }]],
    [
      't',
      [
        'Utf8',
        'LargeUtf8',
        { Decimal128: [38, 10] },
        'Date32',
        { Timestamp: ['Microsecond', 'UTC'] },
        { Time64: 'Microsecond' },
        { Interval: 'MonthDayNano' },
        arrowList('Int64'),
        arrowStruct([['a', 'Utf8']]),
        arrowMap('Utf8', 'Int64'),
      ],
    ],
    ['r', ['Float64', 'Float32', 'Float16']],
    ['b', ['Binary', 'LargeBinary', { FixedSizeBinary: 4 }]],
    ['flag', ['Boolean']],
    ['n', [{ Decimal128: [10, 2] }, { Decimal128: [38, 0] }]],
  ])('column %s stores %j', async (column, types) => {
    for (const type of types) await checkTableSchema(lite, 'm', recordedWith(column, type));
  });

  it.each<[string, ArrowDataType, string]>([
    ['i', 'Utf8', 'INTEGER'],
    ['i', 'Float64', 'INTEGER'],
    ['i', { Decimal128: [10, 2] }, 'INTEGER'],
    ['t', 'Int64', 'TEXT'],
    ['r', 'Int64', 'REAL'],
    ['b', 'Utf8', 'BLOB'],
    ['flag', 'Utf8', 'BOOLEAN'],
    ['n', 'Int64', 'NUMERIC'],
  ])('column %s rejects %j', async (column, type, declared) => {
    await expect(checkTableSchema(lite, 'm', recordedWith(column, type))).rejects.toMatchObject({
      code: 'ERR_SNAPSHOT_SCHEMA_MISMATCH',
      message: expect.stringContaining(
        `field '${column}' is ${declared} in the file, which cannot store the recorded type ${formatDataType(type)}`,
      ),
    });
  });
});

describe('type-table helpers', () => {
  it('computes SQLite affinity by the documented rules', () => {
    expect(
      [
        'INT',
        'BIGINT',
        'VARCHAR(5)',
        'CLOB',
        'TEXT',
        'BLOB',
        '',
        'DOUBLE PRECISION',
        'FLOATING POINT',
        'DECIMAL(3,1)',
        'BOOLEAN',
        'CHARINT',
      ].map(sqliteAffinity),
    ).toEqual([
      'INTEGER',
      'INTEGER',
      'TEXT',
      'TEXT',
      'TEXT',
      'BLOB',
      'BLOB',
      'REAL',
      'INTEGER',
      'NUMERIC',
      'NUMERIC',
      'INTEGER',
    ]);
    expect(sqliteStores('BOOLEAN', 'Boolean')).toBe(true);
    expect(sqliteStores('DATE', 'Date64')).toBe(true);
    expect(sqliteStores('DATETIME', { Timestamp: ['Millisecond', null] })).toBe(true);
    expect(sqliteStores('DATE', 'Int64')).toBe(false);
    expect(sqliteStores('NUMERIC', 'Date32')).toBe(false);
  });

  it('folds storage-equivalent Arrow types and refuses what the table does not list', () => {
    expect(canonicalArrowType({ Timestamp: ['Second', '+02:00'] })).toEqual({
      Timestamp: ['Microsecond', 'UTC'],
    });
    expect(canonicalArrowType({ LargeList: f('element', 'Utf8View', false) })).toEqual(arrowList('Utf8'));
    for (const bad of [
      'Float8',
      'Null',
      { Decimal128: [39, 0] },
      { Decimal256: [50, 2] },
      { Time64: 'Nanosecond' },
      { Time32: 'Second' },
      { Interval: 'YearMonth' },
      { Timestamp: ['Day', null] },
      { Dictionary: ['Int32', 'Utf8'] },
      { List: 'Int64' },
      { Map: [f('entries', 'Int64'), false] },
      { Struct: 'x' },
    ] as ArrowDataType[]) {
      expect(() => canonicalArrowType(bad), JSON.stringify(bad)).toThrow(
        /not in the snapshot-store type table/,
      );
    }
  });
});
