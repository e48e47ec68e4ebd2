/**
 * DuckDB-specific behaviour: the fixture snapshots map exactly to their recorded schemas, every
 * type of the type table maps and encodes as documented, and the instance settings stop what the
 * guard might miss (tested directly against the configured instance, bypassing the guard).
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { arrowField } from '../src/arrow-types.js';
import { createReadOnlyInstance, openDuckDb } from '../src/duckdb-engine.js';
import { DUCKDB_READ_ONLY_SETTINGS } from '../src/duckdb-lockdown.js';
import { checkTableSchema } from '../src/schema-check.js';
import { copyFixtureFiles, type FixtureFile, listDir, makeDuckDbFile, makeTempDir } from './files.js';

let dir: string;
let remove: () => Promise<void>;
let fixtures: FixtureFile[];
let typesPath: string;

beforeAll(async () => {
  ({ dir, remove } = await makeTempDir());
  fixtures = (await copyFixtureFiles(dir)).filter((f) => f.engine === 'duckdb');
  typesPath = join(dir, 'types.duckdb');
  await makeDuckDbFile(typesPath, [
    `CREATE TABLE t (
      i8 TINYINT, i16 SMALLINT, i32 INTEGER, i64 BIGINT, u8 UTINYINT, u16 USMALLINT, u32 UINTEGER, u64 UBIGINT,
      f32 FLOAT, f64 DOUBLE, dec DECIMAL(38,10), s VARCHAR, b BLOB, d DATE, tm TIME,
      ts_s TIMESTAMP_S, ts_ms TIMESTAMP_MS, ts TIMESTAMP, ts_ns TIMESTAMP_NS, tstz TIMESTAMPTZ, iv INTERVAL,
      l VARCHAR[], st STRUCT("x y" INTEGER, z VARCHAR[]), m MAP(VARCHAR, INTEGER), flag BOOLEAN NOT NULL)`,
    `INSERT INTO t VALUES (
      -8, -16, -32, -9007199254740993, 8, 16, 32, 18446744073709551615,
      1.5, 'NaN'::DOUBLE, 12345678901234567890.0123456789, 'héllo', '\\x01\\x02', DATE '1969-07-20', TIME '08:00:00.25',
      TIMESTAMP_S '2026-11-29 08:00:00', TIMESTAMP_MS '2026-11-29 08:00:00.123', TIMESTAMP '1960-01-01 00:00:00.000001',
      TIMESTAMP_NS '2026-11-29 08:00:00.123456789', TIMESTAMPTZ '2026-11-29 08:00:00.5+00', INTERVAL 3 DAY,
      ['a', NULL], {'x y': 1, 'z': ['q']}, MAP {'k': 1}, true)`,
    'CREATE TABLE odd (h HUGEINT, u UUID)',
  ]);
});

afterAll(async () => {
  await remove();
});

describe('DuckDB fixture snapshots', () => {
  it('map exactly to the schema recorded in metadata.json and pass the after-download check', async () => {
    expect(fixtures.length).toBe(2);
    for (const fixture of fixtures) {
      const engine = await openDuckDb(fixture.path, { table: fixture.dataset });
      try {
        expect(await engine.schema(fixture.dataset)).toEqual(fixture.recorded);
        await checkTableSchema(engine, fixture.dataset, fixture.recorded);
        const count = await engine.query(`SELECT count(*) AS n FROM ${fixture.dataset}`);
        expect(count.rows).toEqual([{ n: fixture.rowCount }]);
      } finally {
        await engine.close();
      }
    }
  });

  it('answers the README queries with exact decimals and ISO timestamps', async () => {
    const current = fixtures.find((f) => f.rowCount === 8) as FixtureFile;
    const engine = await openDuckDb(current.path);
    try {
      const sum = await engine.query('SELECT sum(amount) AS total FROM orders');
      expect(sum).toEqual({
        columns: [{ name: 'total', type: 'DECIMAL(38,2)' }],
        rows: [{ total: '350.00' }],
      });
      const first = await engine.query('SELECT * FROM orders WHERE id = $1', [2]);
      expect(first.rows).toEqual([
        {
          id: 2,
          customer: 'customer-2',
          amount: '12.50',
          placed_at: '2026-11-21T10:00:01.000000',
          shipped: false,
          day: '2026-11-21',
        },
      ]);
      expect(first.columns.map((c) => c.type)).toEqual([
        'BIGINT',
        'VARCHAR',
        'DECIMAL(18,2)',
        'TIMESTAMP',
        'BOOLEAN',
        'DATE',
      ]);
    } finally {
      await engine.close();
    }
  });
});

describe('DuckDB type mapping and encoding', () => {
  it('maps every column type of the type table to its Arrow form', async () => {
    const engine = await openDuckDb(typesPath);
    try {
      const schema = await engine.schema('t');
      const list = (item: string) => ({ List: arrowField('item', item, true) });
      expect(schema.fields.map((f) => [f.name, f.data_type, f.nullable])).toEqual([
        ['i8', 'Int8', true],
        ['i16', 'Int16', true],
        ['i32', 'Int32', true],
        ['i64', 'Int64', true],
        ['u8', 'UInt8', true],
        ['u16', 'UInt16', true],
        ['u32', 'UInt32', true],
        ['u64', 'UInt64', true],
        ['f32', 'Float32', true],
        ['f64', 'Float64', true],
        ['dec', { Decimal128: [38, 10] }, true],
        ['s', 'Utf8', true],
        ['b', 'Binary', true],
        ['d', 'Date32', true],
        ['tm', { Time64: 'Microsecond' }, true],
        ['ts_s', { Timestamp: ['Second', null] }, true],
        ['ts_ms', { Timestamp: ['Millisecond', null] }, true],
        ['ts', { Timestamp: ['Microsecond', null] }, true],
        ['ts_ns', { Timestamp: ['Nanosecond', null] }, true],
        ['tstz', { Timestamp: ['Microsecond', 'UTC'] }, true],
        ['iv', { Interval: 'MonthDayNano' }, true],
        ['l', list('Utf8'), true],
        ['st', { Struct: [arrowField('x y', 'Int32', true), arrowField('z', list('Utf8'), true)] }, true],
        [
          'm',
          {
            Map: [
              arrowField(
                'entries',
                { Struct: [arrowField('keys', 'Utf8', false), arrowField('values', 'Int32', true)] },
                false,
              ),
              false,
            ],
          },
          true,
        ],
        ['flag', 'Boolean', false],
      ]);
      await checkTableSchema(engine, 't', schema);
    } finally {
      await engine.close();
    }
  });

  it('encodes every type JSON-safely', async () => {
    const engine = await openDuckDb(typesPath);
    try {
      const { rows } = await engine.query('SELECT * FROM t');
      expect(rows).toEqual([
        {
          i8: -8,
          i16: -16,
          i32: -32,
          i64: '-9007199254740993',
          u8: 8,
          u16: 16,
          u32: 32,
          u64: '18446744073709551615',
          f32: 1.5,
          f64: 'NaN',
          dec: '12345678901234567890.0123456789',
          s: 'héllo',
          b: 'AQI=',
          d: '1969-07-20',
          tm: '08:00:00.250000',
          ts_s: '2026-11-29T08:00:00.000000',
          ts_ms: '2026-11-29T08:00:00.123000',
          ts: '1960-01-01T00:00:00.000001',
          ts_ns: '2026-11-29T08:00:00.123456789',
          tstz: '2026-11-29T08:00:00.500000Z',
          iv: { months: 0, days: 3, micros: 0 },
          l: ['a', null],
          st: { 'x y': 1, z: ['q'] },
          m: [{ key: 'k', value: 1 }],
          flag: true,
        },
      ]);
      const more = await engine.query(
        "SELECT 9007199254740991::BIGINT AS safe, 170141183460469231731687303715884105727::HUGEINT AS huge, 'infinity'::TIMESTAMP AS inf, ?::DOUBLE AS half",
        [0.5],
      );
      expect(more.rows).toEqual([
        {
          safe: 9007199254740991,
          huge: '170141183460469231731687303715884105727',
          inf: 'infinity',
          half: 0.5,
        },
      ]);
    } finally {
      await engine.close();
    }
  });

  it('reports a type outside the type table by name instead of guessing', async () => {
    const engine = await openDuckDb(typesPath);
    try {
      await expect(engine.schema('odd')).rejects.toMatchObject({
        code: 'ERR_UNSUPPORTED_COLUMN_TYPE',
        column: 'h',
        type: 'HUGEINT',
      });
      const columns = await engine.columns('odd');
      expect(columns?.map((c) => [c.type, c.arrow])).toEqual([
        ['HUGEINT', undefined],
        ['UUID', undefined],
      ]);
    } finally {
      await engine.close();
    }
  });
});

describe('DuckDB instance settings (bypassing the guard)', () => {
  let instance: DuckDBInstance;
  let connection: DuckDBConnection;
  const extensionDir = join(homedir(), '.duckdb', 'extensions');
  const hadExtensionDir = existsSync(extensionDir);

  let filesBefore: string[];

  beforeAll(async () => {
    filesBefore = await listDir(dir);
    instance = await createReadOnlyInstance(typesPath);
    connection = await instance.connect();
  });

  afterAll(() => {
    connection.closeSync();
    instance.closeSync();
  });

  it('runs with the documented settings, locked', async () => {
    const names = Object.keys(DUCKDB_READ_ONLY_SETTINGS);
    const reader = await connection.runAndReadAll(
      `SELECT name, value FROM duckdb_settings() WHERE name IN (${names.map((n) => `'${n}'`).join(', ')}) ORDER BY name`,
    );
    expect(
      Object.fromEntries(reader.getRows().map(([name, value]) => [name, String(value).toUpperCase()])),
    ).toEqual(
      Object.fromEntries(Object.entries(DUCKDB_READ_ONLY_SETTINGS).map(([k, v]) => [k, v.toUpperCase()])),
    );
  });

  it.each([
    ["SELECT * FROM read_csv('/etc/passwd')", /disabled by configuration/],
    ["SELECT * FROM read_text('/etc/passwd')", /disabled by configuration/],
    ["SELECT * FROM '/etc/passwd'", /disabled by configuration|does not exist|not found/i],
    ["SELECT * FROM glob('/etc/*')", /disabled by configuration/],
    ["SELECT * FROM read_parquet('https://example.com/x.parquet')", /disabled by configuration/],
    ["COPY t TO '%DIR%/escape.csv'", /disabled by configuration/],
    ["EXPORT DATABASE '%DIR%/export'", /disabled by configuration/],
    ["ATTACH '%DIR%/attached.duckdb' AS other", /disabled by configuration/],
    ['INSTALL httpfs', /disabled by configuration/],
    ['LOAD httpfs', /disabled through configuration/],
    ["SET enable_external_access = 'true'", /configuration has been locked/],
    ['SET threads = 1', /configuration has been locked/],
    ['RESET lock_configuration', /locked/],
    ['INSERT INTO odd VALUES (1, NULL)', /read-only mode/],
    ['CREATE TABLE x (a INTEGER)', /read-only mode/],
  ])('refuses %j', async (sql, message) => {
    await expect(connection.run(sql.replace('%DIR%', dir))).rejects.toThrow(message);
  });

  it('never downloads an extension nor writes a file', async () => {
    expect(existsSync(extensionDir)).toBe(hadExtensionDir);
    expect(await listDir(dir)).toEqual(filesBefore);
  });
});

describe('DuckDB query path', () => {
  it('runs every query through checkDuckDbStatement: query(…) strings and EXPLAIN ANALYZE of a write are refused', async () => {
    const engine = await openDuckDb(typesPath);
    try {
      // Harmless here, but the tokenizer reads it as a plain SELECT and DuckDB would run it.
      await expect(engine.query("SELECT * FROM query('SELECT 1')")).rejects.toMatchObject({
        code: 'ERR_STATEMENT_REJECTED',
        statement: 'query()',
      });
      await expect(engine.query('EXPLAIN ANALYZE DELETE FROM t')).rejects.toMatchObject({
        code: 'ERR_WRITE_REJECTED',
      });
      expect((await engine.query('EXPLAIN ANALYZE SELECT count(*) FROM t')).rows).toHaveLength(1);
      // DuckDB's own parse error, wrapped with the file as before.
      await expect(engine.query('SELECT * FROM [t]')).rejects.toMatchObject({
        code: 'ERR_QUERY_FAILED',
        message: expect.stringContaining('Parser Error'),
      });
    } finally {
      await engine.close();
    }
  });
});

describe('DuckDB files', () => {
  it('leaves no .wal or other side file behind after queries and close', async () => {
    const { dir: own, remove: cleanup } = await makeTempDir();
    try {
      const path = join(own, 'only.duckdb');
      await makeDuckDbFile(path, ['CREATE TABLE a AS SELECT range AS n FROM range(1000)']);
      const engine = await openDuckDb(path, { table: 'a' });
      await engine.query('SELECT sum(n) AS s FROM a');
      await engine.close();
      expect(await listDir(own)).toEqual(['only.duckdb']);
    } finally {
      await cleanup();
    }
  });

  it('refuses an SQLite file as not a DuckDB database', async () => {
    const { dir: own, remove: cleanup } = await makeTempDir();
    try {
      const sqlite = (await copyFixtureFiles(own)).find((f) => f.engine === 'sqlite') as FixtureFile;
      await expect(openDuckDb(sqlite.path)).rejects.toMatchObject({
        code: 'ERR_SNAPSHOT_NOT_A_DATABASE',
        message: expect.stringContaining('is a SQLite file, not a DuckDB database'),
      });
    } finally {
      await cleanup();
    }
  });
});
