/**
 * The parts of the DuckDB namespace, each on its own: routing from a checked statement's table
 * references (pure), resource classes (pure), the errors and redaction a caller sees (pure), and
 * reading an SQLite dataset into DuckDB for a join (real files, its bounds).
 */
import { join } from 'node:path';
import { DuckDBInstance, StatementType } from '@duckdb/node-api';
import type { ArrowDataType } from '@ferry/core/base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSpiceCatalog } from '../src/duckdb-catalog.js';
import { duckDbQueryError, missingDuckDbTable, redactDuckDbMessage } from '../src/duckdb-errors.js';
import { importSqliteDataset } from '../src/duckdb-import.js';
import { resourceClassFor, resourceKey } from '../src/duckdb-resources.js';
import { duckDbRoute, unparsedRoute } from '../src/duckdb-routing.js';
import type { NamespaceCatalog } from '../src/namespace-types.js';
import type { DuckDbStatement, TableReference } from '../src/statement-check.js';
import { makeSqliteFile, makeTempDir } from './files.js';

const catalog: NamespaceCatalog = {
  version: 3,
  datasets: [
    {
      name: 'orders',
      engine: 'duckdb',
      generation: { id: 7, path: '/data/.generations/orders/7.duckdb', snapshotId: 70 },
    },
    {
      name: 'Users',
      engine: 'sqlite',
      generation: { id: 8, path: '/data/.generations/users/8.sqlite', snapshotId: 80 },
      memoryLimitBytes: 1 << 28,
    },
    { name: 'slow', engine: 'duckdb', generation: null, threads: 1 },
  ],
};

const ref = (table: string, schema = '', catalogName = ''): TableReference => ({
  catalog: catalogName,
  schema,
  table,
});
const statement = (tables: TableReference[] | undefined, ctes: string[] = []): DuckDbStatement => ({
  type: StatementType.SELECT,
  rewrite: undefined,
  tables,
  ctes: new Set(ctes),
  shared: true,
});
const where = (s: DuckDbStatement) => {
  const { engine, datasets } = duckDbRoute(s, catalog);
  return { engine, datasets };
};

describe('routing', () => {
  it('runs in DuckDB what reads DuckDB datasets, both engines or none', () => {
    expect(where(statement([]))).toEqual({ engine: 'duckdb', datasets: [] });
    expect(where(statement([ref('orders'), ref('orders', 'main')]))).toEqual({
      engine: 'duckdb',
      datasets: ['orders'],
    });
    expect(where(statement([ref('ORDERS'), ref('users')]))).toEqual({
      engine: 'duckdb',
      datasets: ['orders', 'Users'],
    });
    expect(where(statement(undefined))).toEqual({ engine: 'duckdb', datasets: undefined });
  });

  it('runs in SQLite what reads only SQLite datasets (its `dataset.table` too), not `main.<sqlite>`', () => {
    expect(where(statement([ref('users')]))).toEqual({ engine: 'sqlite', datasets: ['Users'] });
    expect(where(statement([ref('users', 'users')]))).toEqual({ engine: 'sqlite', datasets: ['Users'] });
    expect(where(statement([ref('users', 'main')]))).toEqual({ engine: 'duckdb', datasets: ['Users'] });
  });

  it('counts a common table expression of that name as no dataset', () => {
    expect(where(statement([ref('orders'), ref('x')], ['orders']))).toEqual({
      engine: 'duckdb',
      datasets: [],
    });
    expect(where(statement([ref('elsewhere', 'other', 'db')]))).toEqual({ engine: 'duckdb', datasets: [] });
  });

  it('sends what DuckDB cannot parse to SQLite when there are SQLite datasets (with its refusal), else says why', () => {
    expect(unparsedRoute(new Error('Parser Error: at "["'), catalog, 'SELECT [1')).toEqual({
      engine: 'sqlite',
      datasets: undefined,
      duckdbError: 'Parser Error: at "["',
    });
    expect(() =>
      unparsedRoute(new Error('Parser Error: at "["'), { version: 1, datasets: [] }, 'SELECT [1'),
    ).toThrow(
      expect.objectContaining({ code: 'ERR_QUERY_FAILED', message: 'Query failed: Parser Error: at "["' }),
    );
    const typo = new Error('Parser Error: syntax error at or near "SELEC"');
    expect(() => unparsedRoute(typo, { version: 1, datasets: [] }, 'SELEC 1')).toThrow(
      expect.objectContaining({
        code: 'ERR_SQL_SYNTAX',
        message: `Syntax error: 'SELEC' does not begin any SQL statement (${typo.message}); did you mean SELECT?`,
      }),
    );
  });
});

describe('resource classes', () => {
  const defaults = { memoryLimitBytes: 1 << 30, threads: 4, memorySource: "the runtime's queryMemoryLimit" };

  it('are the strictest of the datasets read and the defaults, naming where the memory limit comes from', () => {
    expect(resourceClassFor(defaults, catalog, ['orders'])).toBe(defaults);
    expect(resourceClassFor(defaults, catalog, ['orders', 'users', 'slow'])).toEqual({
      memoryLimitBytes: 1 << 28,
      threads: 1,
      memorySource: "duckdb_memory_limit of dataset 'Users'",
    });
    expect(resourceClassFor(defaults, catalog, ['slow'])).toEqual({ ...defaults, threads: 1 });
  });

  it('share an instance when their limits are the same', () => {
    expect(resourceKey({ memoryLimitBytes: 5, threads: 2 })).toBe(
      resourceKey({ memoryLimitBytes: 5, threads: 2 }),
    );
    expect(resourceKey({ memoryLimitBytes: 5, threads: 2 })).not.toBe(
      resourceKey({ memoryLimitBytes: 5, threads: 1 }),
    );
  });
});

describe('errors a caller sees', () => {
  const redaction = { roots: ['/data/', '/tmp/ferry'], tablePrefixes: ['ferry_sqlite_'] };
  const options = {
    subject: "dataset 'orders'",
    resources: {
      memoryLimitBytes: 1 << 20,
      threads: 1,
      memorySource: "duckdb_memory_limit of dataset 'orders'",
    },
    catalog,
    redaction,
    temp: { bytes: 1 << 30, setting: 'queryTempDirectorySize' },
  };

  it('hide local paths and internal names, naming generations by their dataset', () => {
    expect(
      redactDuckDbMessage(
        "IO Error: '/data/.generations/orders/7.duckdb' in ferry_g7 and ferry_sqlite_8; also /tmp/ferry/x/y and /data/other.csv",
        catalog,
        redaction,
      ),
    ).toBe("IO Error: '<dataset orders>' in orders and Users; also <data dir> and <data dir>");
  });

  it('name a missing table as the dataset it is, or as none of this runtime', () => {
    expect(missingDuckDbTable(new Error('Catalog Error: Table with name users does not exist!'))).toBe(
      'users',
    );
    expect(
      duckDbQueryError(new Error('Catalog Error: Table with name users does not exist!'), options),
    ).toMatchObject({
      code: 'ERR_NAMESPACE_TABLE',
      table: 'Users',
      reason: 'sqlite',
    });
    expect(
      duckDbQueryError(new Error('Catalog Error: Table with name nope does not exist!'), options),
    ).toMatchObject({
      reason: 'unknown',
    });
  });

  it('name the limit and the setting behind it when DuckDB runs out of memory or temporary space', () => {
    expect(duckDbQueryError(new Error('Out of Memory Error: failed to allocate'), options)).toMatchObject({
      code: 'ERR_QUERY_MEMORY',
      message: expect.stringContaining(
        "1 MiB of memory it may use (duckdb_memory_limit of dataset 'orders')",
      ),
    });
    expect(
      duckDbQueryError(new Error('Out of Memory Error: max_temp_directory_size reached'), options),
    ).toMatchObject({
      code: 'ERR_QUERY_TEMP_SPACE',
      message: expect.stringContaining('queryTempDirectorySize'),
    });
  });

  it('keep DuckDB’s other words, without paths, with the cause', () => {
    const cause = new Error('Binder Error: column x not found in /data/.generations/orders/7.duckdb');
    const error = duckDbQueryError(cause, options) as Error;
    expect(error).toMatchObject({
      code: 'ERR_QUERY_FAILED',
      message: "Query on dataset 'orders' failed: Binder Error: column x not found in <dataset orders>",
    });
    expect(error.cause).toBe(cause);
  });
});

describe('reading an SQLite dataset into DuckDB', () => {
  let dir: string;
  let remove: () => Promise<void>;
  let instance: DuckDBInstance;
  let admin: Awaited<ReturnType<DuckDBInstance['connect']>>;
  let path: string;

  beforeAll(async () => {
    ({ dir, remove } = await makeTempDir());
    path = join(dir, 'people.sqlite');
    await makeSqliteFile(path, [
      'CREATE TABLE people (id INTEGER NOT NULL, score REAL, name TEXT, photo BLOB, born DATE)',
      "INSERT INTO people VALUES (1, 1.5, 'ann', x'00ff', '2000-01-02'), (2, NULL, 'bob', NULL, NULL)",
    ]);
    instance = await DuckDBInstance.create(':memory:');
    admin = await instance.connect();
    // As in a namespace's instance: the view goes to Spice's `spice.public`, the tables stay internal.
    await createSpiceCatalog(admin);
  });

  afterAll(async () => {
    admin.closeSync();
    instance.closeSync();
    await remove();
  });

  const people = (id: number) => ({
    name: 'people',
    engine: 'sqlite' as const,
    generation: { id, path, snapshotId: 1 },
  });

  it('behind a view of its name, typed from its declared types, leaving no staging table', async () => {
    await importSqliteDataset(admin, people(41), { maxRows: 10, maxBytes: 1 << 20 });
    const reader = await admin.runAndReadAll(
      'SELECT id, score, name, photo, born, typeof(born) AS t FROM people ORDER BY id',
    );
    expect(reader.getRowsJson()).toEqual([
      ['1', 1.5, 'ann', '\\x00\\xFF', '2000-01-02', 'DATE'],
      ['2', null, 'bob', null, null, 'DATE'],
    ]);
    const tables = await admin.runAndReadAll(
      "SELECT database_name, table_name FROM duckdb_tables() WHERE table_name LIKE 'ferry_s%' ORDER BY 1",
    );
    expect(tables.getRows()).toEqual([['memory', 'ferry_sqlite_41']]);
    const views = await admin.runAndReadAll(
      "SELECT database_name, schema_name FROM duckdb_views() WHERE view_name = 'people'",
    );
    expect(views.getRows()).toEqual([['spice', 'public']]);
  });

  it('takes a column’s recorded type where every value casts to it, else the type a query of the dataset alone answers', async () => {
    const typed = join(dir, 'typed.sqlite');
    await makeSqliteFile(typed, [
      'CREATE TABLE typed (tiny INTEGER, small INTEGER, day TEXT, at TEXT, amount DECIMAL(6,2), total NUMERIC, odd NUMERIC)',
      "INSERT INTO typed VALUES (1, 1, '2026-01-02', '2026-01-02 03:04:05.5', '12.5', 12.5, 1)",
      "INSERT INTO typed VALUES (2, 3000000000, 'someday', NULL, -0.25, 3, 'abc'), (NULL, NULL, NULL, '2026-01-03T00:00:00', 7, NULL, NULL)",
    ]);
    const field = (name: string, data_type: ArrowDataType) => ({
      name,
      data_type,
      nullable: true,
      metadata: {},
    });
    await importSqliteDataset(
      admin,
      {
        name: 'typed',
        engine: 'sqlite',
        generation: {
          id: 44,
          path: typed,
          snapshotId: 1,
          schema: {
            fields: [
              field('tiny', 'Int16'),
              field('small', 'Int32'),
              field('day', 'Date32'),
              field('at', { Timestamp: ['Microsecond', null] }),
              field('amount', { Decimal128: [6, 2] }),
              field('total', { Decimal128: [8, 2] }),
              field('odd', { Decimal128: [8, 2] }),
            ],
            metadata: {},
          },
        },
      },
      { maxRows: 10, maxBytes: 1 << 20 },
    );
    const types = await admin.runAndReadAll('DESCRIBE typed');
    expect(types.getRows().map((row) => `${row[0]}:${row[1]}`)).toEqual([
      'tiny:SMALLINT',
      // 3,000,000,000 is no Int32, 'someday' no date: as SQLite answers them, BIGINT and text.
      'small:BIGINT',
      'day:VARCHAR',
      'at:TIMESTAMP',
      'amount:DECIMAL(6,2)',
      // NUMERIC declares no type: the recorded one, where every value casts to it.
      'total:DECIMAL(8,2)',
      'odd:VARCHAR',
    ]);
    const reader = await admin.runAndReadAll('SELECT * FROM typed');
    expect(reader.getRowsJson()).toEqual([
      [1, '1', '2026-01-02', '2026-01-02 03:04:05.5', '12.50', '12.50', '1'],
      [2, '3000000000', 'someday', null, '-0.25', '3.00', 'abc'],
      [null, null, null, '2026-01-03 00:00:00', '7.00', null, null],
    ]);
  });

  it('reads each value of a declared BOOLEAN, DATE, TIMESTAMP or DECIMAL column as a query of the dataset alone converts it', async () => {
    const kinds = join(dir, 'kinds.sqlite');
    await makeSqliteFile(kinds, [
      'CREATE TABLE kinds (id INTEGER, flag BOOLEAN, day DATE, at TIMESTAMP, amount DECIMAL(20,3))',
      "INSERT INTO kinds VALUES (1, 1, '2026-02-28', '2026-01-02T03:04:05.123456', '-0.005')",
      "INSERT INTO kinds VALUES (2, 0, '1969-07-20', '1969-12-31 23:59:59.5', 12345678901234567)",
      'INSERT INTO kinds VALUES (3, NULL, NULL, NULL, NULL)',
    ]);
    await importSqliteDataset(
      admin,
      { name: 'kinds', engine: 'sqlite', generation: { id: 45, path: kinds, snapshotId: 1 } },
      { maxRows: 10, maxBytes: 1 << 20 },
    );
    const types = await admin.runAndReadAll('DESCRIBE kinds');
    expect(types.getRows().map((row) => `${row[0]}:${row[1]}`)).toEqual([
      'id:BIGINT',
      'flag:BOOLEAN',
      'day:DATE',
      'at:TIMESTAMP',
      'amount:DECIMAL(20,3)',
    ]);
    const reader = await admin.runAndReadAll('SELECT * FROM kinds ORDER BY id');
    expect(reader.getRowsJson()).toEqual([
      ['1', true, '2026-02-28', '2026-01-02 03:04:05.123456', '-0.005'],
      ['2', false, '1969-07-20', '1969-12-31 23:59:59.5', '12345678901234567.000'],
      ['3', null, null, null, null],
    ]);
  });

  it('reads each listed column into its own column, a generated column (which no listing shows) in between', async () => {
    const generated = join(dir, 'generated.sqlite');
    await makeSqliteFile(generated, [
      'CREATE TABLE generated (a INTEGER, twice INTEGER GENERATED ALWAYS AS (a * 2) VIRTUAL, c TEXT)',
      "INSERT INTO generated (a, c) VALUES (1, 'x'), (2, 'y')",
    ]);
    await importSqliteDataset(
      admin,
      { name: 'generated', engine: 'sqlite', generation: { id: 46, path: generated, snapshotId: 1 } },
      { maxRows: 10, maxBytes: 1 << 20 },
    );
    const reader = await admin.runAndReadAll('SELECT * FROM generated ORDER BY a');
    expect([reader.columnNames(), reader.getRowsJson()]).toEqual([
      ['a', 'c'],
      [
        ['1', 'x'],
        ['2', 'y'],
      ],
    ]);
  });

  it('refuses a dataset over the row or byte bound, and leaves no staging table', async () => {
    await expect(
      importSqliteDataset(admin, people(42), { maxRows: 1, maxBytes: 1 << 20 }),
    ).rejects.toMatchObject({
      code: 'ERR_CROSS_ENGINE_TOO_LARGE',
      message: expect.stringContaining('more than 1 rows'),
    });
    await expect(importSqliteDataset(admin, people(43), { maxRows: 10, maxBytes: 4 })).rejects.toMatchObject({
      code: 'ERR_CROSS_ENGINE_TOO_LARGE',
    });
    const tables = await admin.runAndReadAll(
      "SELECT table_name FROM duckdb_tables() WHERE table_name LIKE 'ferry_stage_%'",
    );
    expect(tables.getRows()).toEqual([]);
  });
});
