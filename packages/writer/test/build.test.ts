/**
 * buildSnapshotFile: files built from queries over CSV / Parquet / JSON (DuckDB and SQLite
 * output), files taken from existing databases, and the refusals, all checked by opening the
 * result with @ferry/engines as a reader would.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { getDataset, parseMetadata, recordedSchema, schemaDifference } from '@ferry/core';
import { openEngine, readDatabaseHeader } from '@ferry/engines';
import { FIXTURE_LOCATION, fixtureMetadata } from '@ferry/test-support';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { buildSnapshotFile, DUCKDB_BUILD_SETTINGS } from '../src/index.js';
import { duckdb, ordersCsv, ordersSql, removeTempDirs, tempDir, writeCsv } from './helpers.js';

afterAll(removeTempDirs);

async function fixtureSchema(dataset: string) {
  const parsed = parseMetadata(await fixtureMetadata(), FIXTURE_LOCATION);
  const entry = getDataset(parsed, dataset);
  if (entry === undefined) throw new Error(`fixture has no ${dataset}`);
  return recordedSchema(entry).schema;
}

async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error('expected a rejection');
}

async function rowsOf(engine: 'duckdb' | 'sqlite', path: string, sql: string) {
  const opened = await openEngine(engine, path);
  try {
    return (await opened.query(sql)).rows;
  } finally {
    await opened.close();
  }
}

describe('buildSnapshotFile from a query, DuckDB output', () => {
  it('builds the fixture orders schema from a CSV, checkpointed with no .wal', async () => {
    const dir = await tempDir();
    const csv = await writeCsv(dir, 'orders.csv', ordersCsv(7));
    const output = join(dir, 'out', 'orders.duckdb');
    await mkdir(join(dir, 'out'));
    const built = await buildSnapshotFile({
      dataset: 'orders',
      source: { sql: ordersSql(csv) },
      output,
      notNull: ['id'],
    });
    expect(built).toMatchObject({ path: output, dataset: 'orders', engine: 'duckdb', rowCount: 7 });
    expect(schemaDifference(await fixtureSchema('orders'), built.schema)).toBeUndefined();
    expect(await readdir(join(dir, 'out'))).toEqual(['orders.duckdb']);
    expect(built.size).toBe((await readFile(output)).byteLength);
    const rows = await rowsOf('duckdb', output, 'SELECT sum(amount) AS s, min(placed_at) AS p FROM orders');
    expect(rows[0]).toEqual({ s: '281.75', p: '2026-11-29T08:00:01.000000' });
  });

  it('reads Parquet and JSON through the built-in readers', async () => {
    const dir = await tempDir();
    const parquet = join(dir, 'events.parquet');
    await duckdb(':memory:', [
      `COPY (SELECT range AS id, 'e' || range AS name FROM range(5)) TO '${parquet}' (FORMAT parquet)`,
    ]);
    const json = await writeCsv(dir, 'extra.json', '[{"id": 10, "name": "j1"}, {"id": 11, "name": "j2"}]');
    const built = await buildSnapshotFile({
      dataset: 'events',
      source: {
        sql: `SELECT id, name FROM read_parquet('${parquet}') UNION ALL SELECT id, name FROM read_json_auto('${json}')`,
      },
      output: join(dir, 'events.duckdb'),
    });
    expect(built.rowCount).toBe(7);
    expect(built.schema.fields.map((f) => [f.name, f.data_type, f.nullable])).toEqual([
      ['id', 'Int64', true],
      ['name', 'Utf8', true],
    ]);
  });

  it('never installs an extension: one the query would need fails instead of downloading', async () => {
    expect(DUCKDB_BUILD_SETTINGS).toMatchObject({
      autoinstall_known_extensions: 'false',
      autoload_known_extensions: 'false',
    });
    const dir = await tempDir();
    const output = join(dir, 'remote.duckdb');
    const error = await rejection(
      buildSnapshotFile({
        dataset: 'remote',
        source: { sql: "SELECT * FROM read_csv_auto('https://example.invalid/data.csv')" },
        output,
      }),
    );
    expect(error.code).toBe('ERR_WRITER_QUERY');
    expect(error.message).toContain('httpfs');
    expect(error.message).not.toMatch(/download/i);
    expect(await readdir(dir)).toEqual([]);
  });

  it('accepts exactly one SELECT', async () => {
    const dir = await tempDir();
    const output = join(dir, 'x.duckdb');
    const several = await rejection(
      buildSnapshotFile({ dataset: 'x', source: { sql: 'SELECT 1 AS a; INSTALL httpfs' }, output }),
    );
    expect(several.code).toBe('ERR_WRITER_QUERY');
    expect(several.message).toContain('holds 2 statements');
    const install = await rejection(
      buildSnapshotFile({ dataset: 'x', source: { sql: 'INSTALL httpfs' }, output }),
    );
    expect(install.code).toBe('ERR_WRITER_QUERY');
    expect(install.message).toMatch(/not a SELECT/);
    const trailing = await buildSnapshotFile({
      dataset: 'x',
      source: { sql: 'SELECT 1 AS a; -- done' },
      output,
    });
    expect(trailing.rowCount).toBe(1);
  });

  it('refuses NULLs in a NOT NULL column, naming it, and leaves nothing behind', async () => {
    const dir = await tempDir();
    const csv = await writeCsv(dir, 'orders.csv', ordersCsv(3, { nullIdAt: 2 }));
    const output = join(dir, 'orders.duckdb');
    const error = await rejection(
      buildSnapshotFile({ dataset: 'orders', source: { sql: ordersSql(csv) }, output, notNull: ['id'] }),
    );
    expect(error.code).toBe('ERR_WRITER_NOT_NULL');
    expect(error.message).toContain("Column 'id' of dataset 'orders'");
    expect(await readdir(dir)).toEqual(['orders.csv']);
  });

  it('refuses an existing output and an unsafe dataset name', async () => {
    const dir = await tempDir();
    const output = join(dir, 'taken.duckdb');
    await writeFile(output, 'x');
    expect(
      (await rejection(buildSnapshotFile({ dataset: 'taken', source: { sql: 'SELECT 1' }, output }))).code,
    ).toBe('ERR_WRITER_OPTIONS');
    expect(
      (
        await rejection(
          buildSnapshotFile({ dataset: '../up', source: { sql: 'SELECT 1' }, output: join(dir, 'u.duckdb') }),
        )
      ).code,
    ).toBe('ERR_WRITER_OPTIONS');
  });

  it("refuses a dataset name no spicepod can name ('.', '-') up front: no reader could serve the table", async () => {
    const dir = await tempDir();
    for (const [dataset, suggested] of [
      ['v1.orders', 'v1_orders'],
      ['my-orders', 'my_orders'],
    ] as const) {
      for (const engine of ['duckdb', 'sqlite'] as const) {
        const error = await rejection(
          buildSnapshotFile({
            dataset,
            engine,
            source: { sql: 'SELECT 1 AS id' },
            output: join(dir, `named.${engine}`),
          }),
        );
        expect(error.code).toBe('ERR_WRITER_OPTIONS');
        expect(error.message).toContain(`'${dataset}'`);
        expect(error.message).toContain(`such as '${suggested}'`);
        expect(existsSync(join(dir, `named.${engine}`))).toBe(false);
      }
    }
  });
});

describe('buildSnapshotFile from a query, SQLite output', () => {
  it('maps the types, keeps values exact, and leaves one journal_mode=DELETE file', async () => {
    const dir = await tempDir();
    const out = join(dir, 'out');
    await mkdir(out);
    const output = join(out, 'kinds.sqlite');
    const built = await buildSnapshotFile({
      dataset: 'kinds',
      engine: 'sqlite',
      notNull: ['id'],
      output,
      source: {
        sql: `SELECT 1::BIGINT AS id, 'a'::VARCHAR AS s, 2.5::DOUBLE AS f, true AS b,
          12345678901234567890.0123456789::DECIMAL(38,10) AS d, DATE '2026-11-29' AS day,
          TIMESTAMP '2026-11-29 08:00:00.25' AS ts, TIMESTAMPTZ '2026-11-29 10:00:00+02' AS tz,
          [1, 2] AS list, {'k': 'v'} AS st, '\\x01\\x02'::BLOB AS bin, 7::INTEGER AS i32`,
      },
    });
    expect(built.schema.fields.map((f) => [f.name, f.data_type, f.nullable])).toEqual([
      ['id', 'Int64', false],
      ['s', 'Utf8', true],
      ['f', 'Float64', true],
      ['b', 'Boolean', true],
      ['d', 'Utf8', true],
      ['day', 'Date32', true],
      ['ts', { Timestamp: ['Microsecond', null] }, true],
      ['tz', 'Utf8', true],
      ['list', 'Utf8', true],
      ['st', 'Utf8', true],
      ['bin', 'Binary', true],
      ['i32', 'Int64', true],
    ]);
    const rows = await rowsOf('sqlite', output, 'SELECT * FROM kinds');
    expect(rows).toEqual([
      {
        id: 1,
        s: 'a',
        f: 2.5,
        b: 1,
        d: '12345678901234567890.0123456789',
        day: '2026-11-29',
        ts: '2026-11-29T08:00:00.250000',
        tz: '2026-11-29T08:00:00.000000Z',
        list: '[1,2]',
        st: '{"k":"v"}',
        bin: Buffer.from([1, 2]).toString('base64'),
        i32: 7,
      },
    ]);
    expect(readDatabaseHeader(output)).toEqual({ format: 'sqlite', sqliteWal: false });
    expect(await readdir(out)).toEqual(['kinds.sqlite']);
  });

  it('builds the fixture users schema', async () => {
    const dir = await tempDir();
    const csv = await writeCsv(dir, 'users.csv', 'id,name,score\n1,ann,1.5\n2,,\n3,cy,3\n');
    const built = await buildSnapshotFile({
      dataset: 'users',
      engine: 'sqlite',
      notNull: ['id'],
      output: join(dir, 'users.sqlite'),
      source: {
        sql: `SELECT CAST(id AS BIGINT) AS id, CAST(name AS VARCHAR) AS name, CAST(score AS DOUBLE) AS score FROM read_csv_auto('${csv}')`,
      },
    });
    expect(built.rowCount).toBe(3);
    expect(schemaDifference(await fixtureSchema('users'), built.schema)).toBeUndefined();
  });
});

describe('buildSnapshotFile from an existing file', () => {
  it('takes a DuckDB file byte for byte', async () => {
    const dir = await tempDir();
    const source = join(dir, 'source.duckdb');
    await duckdb(source, [
      'CREATE TABLE items (id BIGINT NOT NULL, label VARCHAR)',
      "INSERT INTO items VALUES (1, 'a'), (2, 'b')",
    ]);
    const output = join(dir, 'items.duckdb');
    const built = await buildSnapshotFile({ dataset: 'items', source: { file: source }, output });
    expect(built.engine).toBe('duckdb');
    expect(built.rowCount).toBe(2);
    expect(built.schema.fields.map((f) => [f.name, f.nullable])).toEqual([
      ['id', false],
      ['label', true],
    ]);
    const hash = async (path: string) =>
      createHash('sha256')
        .update(await readFile(path))
        .digest('hex');
    expect(await hash(output)).toBe(await hash(source));
  });

  it('refuses a DuckDB file with a .wal beside it', async () => {
    const dir = await tempDir();
    const source = join(dir, 'live.duckdb');
    await duckdb(source, ['CREATE TABLE live (id BIGINT)']);
    await writeFile(`${source}.wal`, 'pending');
    const error = await rejection(
      buildSnapshotFile({ dataset: 'live', source: { file: source }, output: join(dir, 'out.duckdb') }),
    );
    expect(error.code).toBe('ERR_WRITER_SOURCE_FILE');
    expect(error.message).toContain('live.duckdb.wal');
    expect(await readdir(dir)).toEqual(['live.duckdb', 'live.duckdb.wal']);
  });

  it('copies a WAL-mode SQLite file with uncheckpointed rows into one journal_mode=DELETE file', async () => {
    const dir = await tempDir();
    const source = join(dir, 'users-live.db');
    const live = new Database(source);
    try {
      live.pragma('journal_mode = WAL');
      live.pragma('wal_autocheckpoint = 0');
      live.exec('CREATE TABLE users (id INTEGER NOT NULL, name TEXT, score REAL)');
      const insert = live.prepare('INSERT INTO users VALUES (?, ?, ?)');
      for (let id = 1; id <= 50; id++) insert.run(id, `user ${id}`, id / 2);
      expect((await readdir(dir)).sort()).toEqual([
        'users-live.db',
        'users-live.db-shm',
        'users-live.db-wal',
      ]);

      const out = join(dir, 'out');
      await mkdir(out);
      const output = join(out, 'users.sqlite');
      const built = await buildSnapshotFile({ dataset: 'users', source: { file: source }, output });
      expect(built).toMatchObject({ engine: 'sqlite', rowCount: 50 });
      expect(schemaDifference(await fixtureSchema('users'), built.schema)).toBeUndefined();
      expect(readDatabaseHeader(output)).toEqual({ format: 'sqlite', sqliteWal: false });
      expect(await readdir(out)).toEqual(['users.sqlite']);
    } finally {
      live.close();
    }
  });

  it('refuses a file of another engine, a non-database and a file without the table', async () => {
    const dir = await tempDir();
    const sqlite = join(dir, 'a.sqlite');
    const db = new Database(sqlite);
    db.exec('CREATE TABLE other (id INTEGER)');
    db.close();
    const text = await writeCsv(dir, 'notes.txt', 'hello');

    const wrongEngine = await rejection(
      buildSnapshotFile({
        dataset: 'other',
        engine: 'duckdb',
        source: { file: sqlite },
        output: join(dir, 'o1'),
      }),
    );
    expect(wrongEngine.code).toBe('ERR_WRITER_SOURCE_FILE');
    expect(wrongEngine.message).toContain("engine 'sqlite'");

    const notDb = await rejection(
      buildSnapshotFile({ dataset: 'other', source: { file: text }, output: join(dir, 'o2') }),
    );
    expect(notDb.code).toBe('ERR_WRITER_SOURCE_FILE');

    const noTable = await rejection(
      buildSnapshotFile({ dataset: 'users', source: { file: sqlite }, output: join(dir, 'o3') }),
    );
    expect(noTable.code).toBe('ERR_WRITER_SOURCE_FILE');
    expect(noTable.message).toContain("no table named 'users'");
    expect((await readdir(dir)).sort()).toEqual(['a.sqlite', 'notes.txt']);
  });
});
