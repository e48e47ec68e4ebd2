/**
 * SQLite-specific behaviour: the fixture snapshot, no side files ever (checked while open), WAL
 * files refused, declared-type mapping, encoding, parameter forms, and the engine-level refusals
 * tested directly on a read-only connection with `checkSqliteStatement`.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { arrowField } from '../src/arrow-types.js';
import { checkTableSchema } from '../src/schema-check.js';
import { openSqlite, openSqliteSync } from '../src/sqlite-engine.js';
import { checkSqliteStatement } from '../src/statement-check.js';
import { copyFixtureFiles, type FixtureFile, listDir, makeSqliteFile, makeTempDir } from './files.js';

let dir: string;
let remove: () => Promise<void>;
let users: FixtureFile;
let typesPath: string;

beforeAll(async () => {
  ({ dir, remove } = await makeTempDir());
  users = (await copyFixtureFiles(dir)).find((f) => f.engine === 'sqlite') as FixtureFile;
  typesPath = join(dir, 'types.sqlite');
  await makeSqliteFile(typesPath, [
    `CREATE TABLE t (i INTEGER, big BIGINT, r REAL, f FLOAT, s TEXT, v VARCHAR(20), b BLOB, flag BOOLEAN,
      amount DECIMAL(18,2), d DATE, ts DATETIME, n NUMERIC, untyped)`,
    `INSERT INTO t VALUES (1, 9223372036854775807, 1e999, -1.5, 'x', 'y', x'0102', 1, '12.50', '2026-11-29',
      '2026-11-29T08:00:00.000000', 3, NULL)`,
  ]);
});

afterAll(async () => {
  await remove();
});

describe('SQLite fixture snapshot', () => {
  it('maps to the recorded schema and passes the after-download check', async () => {
    const engine = await openSqlite(users.path, { table: 'users' });
    try {
      expect(await engine.schema('users')).toEqual(users.recorded);
      await checkTableSchema(engine, 'users', users.recorded);
      expect((await engine.query('SELECT count(*) AS n FROM users')).rows).toEqual([{ n: 3 }]);
    } finally {
      await engine.close();
    }
  });
});

describe('SQLite query path', () => {
  it('runs every query through checkSqliteStatement: SQLite quoting reads, the attached paths stay hidden', async () => {
    const engine = openSqliteSync(users.path, { table: 'users' });
    try {
      expect(engine.querySync('SELECT count(*) AS n FROM [users]').rows).toEqual([{ n: 3 }]);
      expect(engine.querySync('SELECT count(*) AS n FROM `users`').rows).toEqual([{ n: 3 }]);
      // The tokenizer reads it as a plain SELECT and SQLite would answer with the file's path.
      expect(() => engine.querySync('SELECT file FROM pragma_database_list')).toThrow(
        expect.objectContaining({ code: 'ERR_STATEMENT_REJECTED', statement: 'pragma_database_list()' }),
      );
      expect(() => engine.querySync('EXPLAIN DELETE FROM users')).toThrow(
        expect.objectContaining({ code: 'ERR_WRITE_REJECTED' }),
      );
    } finally {
      await engine.close();
    }
  });
});

describe('SQLite side files', () => {
  it('creates no -journal, -wal or -shm file while open, querying, or after close', async () => {
    const { dir: own, remove: cleanup } = await makeTempDir();
    try {
      const path = join(own, 'snap.sqlite');
      await makeSqliteFile(path, ['CREATE TABLE a (n INTEGER)', 'INSERT INTO a VALUES (1), (2)']);
      expect(await listDir(own)).toEqual(['snap.sqlite']);
      const engine = openSqliteSync(path, { table: 'a' });
      expect(engine.querySync('SELECT sum(n) AS s FROM a').rows).toEqual([{ s: 3 }]);
      await expect(engine.query('DELETE FROM a')).rejects.toMatchObject({ code: 'ERR_WRITE_REJECTED' });
      expect(await listDir(own)).toEqual(['snap.sqlite']);
      await engine.close();
      expect(await listDir(own)).toEqual(['snap.sqlite']);
    } finally {
      await cleanup();
    }
  });

  it('refuses a WAL-mode file before SQLite could create -wal/-shm next to it', async () => {
    const { dir: own, remove: cleanup } = await makeTempDir();
    try {
      const path = join(own, 'wal.sqlite');
      const db = new Database(path);
      db.pragma('journal_mode = WAL');
      db.exec('CREATE TABLE a (n INTEGER)');
      db.close();
      expect(await listDir(own)).toEqual(['wal.sqlite']);
      await expect(openSqlite(path)).rejects.toMatchObject({
        code: 'ERR_SNAPSHOT_NOT_A_DATABASE',
        message: expect.stringContaining('journal_mode=DELETE'),
      });
      expect(await listDir(own)).toEqual(['wal.sqlite']);
    } finally {
      await cleanup();
    }
  });

  it('refuses a DuckDB file and a file with a damaged body as not SQLite databases', async () => {
    const { dir: own, remove: cleanup } = await makeTempDir();
    try {
      const duck = (await copyFixtureFiles(own)).find((f) => f.engine === 'duckdb') as FixtureFile;
      await expect(openSqlite(duck.path)).rejects.toMatchObject({ code: 'ERR_SNAPSHOT_NOT_A_DATABASE' });
      const damaged = join(own, 'damaged.sqlite');
      const header = Buffer.alloc(4096, 0xee);
      Buffer.from('SQLite format 3\0', 'latin1').copy(header);
      header[18] = 1;
      header[19] = 1;
      await writeFile(damaged, header);
      await expect(openSqlite(damaged)).rejects.toMatchObject({ code: 'ERR_SNAPSHOT_NOT_A_DATABASE' });
    } finally {
      await cleanup();
    }
  });
});

describe('SQLite types and encoding', () => {
  it('maps declared types by affinity and reports untyped or unknown columns by name', async () => {
    const engine = await openSqlite(typesPath);
    try {
      const columns = await engine.columns('t');
      expect(columns?.map((c) => [c.name, c.type, c.arrow])).toEqual([
        ['i', 'INTEGER', 'Int64'],
        ['big', 'BIGINT', 'Int64'],
        ['r', 'REAL', 'Float64'],
        ['f', 'FLOAT', 'Float64'],
        ['s', 'TEXT', 'Utf8'],
        ['v', 'VARCHAR(20)', 'Utf8'],
        ['b', 'BLOB', 'Binary'],
        ['flag', 'BOOLEAN', 'Boolean'],
        ['amount', 'DECIMAL(18,2)', { Decimal128: [18, 2] }],
        ['d', 'DATE', 'Date32'],
        ['ts', 'DATETIME', { Timestamp: ['Microsecond', null] }],
        ['n', 'NUMERIC', undefined],
        ['untyped', '', undefined],
      ]);
      await expect(engine.schema('t')).rejects.toMatchObject({
        code: 'ERR_UNSUPPORTED_COLUMN_TYPE',
        column: 'n',
        type: 'NUMERIC',
      });
      const mapped = (columns ?? []).slice(0, 11).map((c) => arrowField(c.name, c.arrow ?? 'Utf8', true));
      await expect(checkTableSchema(engine, 't', { fields: mapped, metadata: {} })).rejects.toMatchObject({
        code: 'ERR_SNAPSHOT_SCHEMA_MISMATCH',
        message: expect.stringContaining("column 11 'n' (NUMERIC) is not in the recorded schema"),
      });
    } finally {
      await engine.close();
    }
  });

  it('encodes values JSON-safely and reports expression types by storage class', async () => {
    const engine = openSqliteSync(typesPath);
    try {
      const result = engine.querySync('SELECT *, 1 + 1 AS two, NULL AS nil FROM t');
      expect(result.rows).toEqual([
        {
          i: 1,
          big: '9223372036854775807',
          r: 'Infinity',
          f: -1.5,
          s: 'x',
          v: 'y',
          b: 'AQI=',
          flag: 1,
          amount: 12.5,
          d: '2026-11-29',
          ts: '2026-11-29T08:00:00.000000',
          n: 3,
          untyped: null,
          two: 2,
          nil: null,
        },
      ]);
      expect(result.columns.slice(-4)).toEqual([
        { name: 'n', type: 'NUMERIC' },
        { name: 'untyped', type: 'NULL' },
        { name: 'two', type: 'INTEGER' },
        { name: 'nil', type: 'NULL' },
      ]);
    } finally {
      await engine.close();
    }
  });

  it('binds ?, ?n and $n; integers as INTEGER, booleans as 1/0; refuses named parameters', async () => {
    const engine = openSqliteSync(typesPath);
    try {
      expect(engine.querySync('SELECT typeof(?) AS a, typeof(?) AS b, ? AS c', [2, 2.5, true]).rows).toEqual([
        { a: 'integer', b: 'real', c: 1 },
      ]);
      expect(engine.querySync('SELECT ?2 AS a, ?1 AS b', ['x', 'y']).rows).toEqual([{ a: 'y', b: 'x' }]);
      expect(engine.querySync('SELECT $1 AS a, $1 || $2 AS b', ['x', 'y']).rows).toEqual([
        { a: 'x', b: 'xy' },
      ]);
      expect(() => engine.querySync('SELECT :name AS a', ['x'])).toThrow(
        expect.objectContaining({ code: 'ERR_INVALID_PARAMETER' }),
      );
    } finally {
      await engine.close();
    }
  });
});

describe('SQLite engine-level refusals (checkSqliteStatement on a bare connection)', () => {
  let db: Database.Database;

  beforeAll(() => {
    db = new Database(users.path, { readonly: true, fileMustExist: true });
  });

  afterAll(() => {
    db.close();
  });

  it.each([
    ["ATTACH '/tmp/ferry-attached.sqlite' AS other", 'ATTACH'],
    ['DETACH other', 'DETACH'],
    ['BEGIN', 'BEGIN'],
    ['SAVEPOINT a', 'SAVEPOINT'],
    ['PRAGMA writable_schema = 1', 'PRAGMA'],
    ['PRAGMA query_only = 0', 'PRAGMA'],
    ['PRAGMA journal_mode = WAL', 'PRAGMA'],
    ['PRAGMA journal_mode', 'PRAGMA'],
    ['PRAGMA user_version = 3', 'PRAGMA'],
    ["VACUUM INTO '/tmp/ferry-copy.sqlite'", 'VACUUM'],
    ['CREATE TEMP TABLE scratch (x)', 'CREATE'],
    ['REINDEX', 'REINDEX'],
  ])('refuses %j', (sql, statement) => {
    expect(() => checkSqliteStatement(db, sql)).toThrow(
      expect.objectContaining({ code: 'ERR_STATEMENT_REJECTED', statement }),
    );
  });

  it('refuses a write with Spice’s wording (the tokenizer names it; SQLite found it not read-only)', () => {
    expect(() => checkSqliteStatement(db, 'INSERT INTO users (id) VALUES (99)')).toThrow(
      expect.objectContaining({
        code: 'ERR_WRITE_REJECTED',
        message: expect.stringMatching(/^writes to accelerated table users are not permitted/),
      }),
    );
  });

  it('refuses more than one statement and leaves load_extension unauthorised', () => {
    expect(() => checkSqliteStatement(db, 'SELECT 1; SELECT 2')).toThrow(
      expect.objectContaining({ code: 'ERR_STATEMENT_REJECTED', statement: 'MULTIPLE' }),
    );
    const loader = checkSqliteStatement(db, "SELECT load_extension('/tmp/ferry-ext.so')");
    expect(() => loader.get()).toThrow(/not authorized/);
  });

  it('lets reads and PRAGMA table_info through', () => {
    expect(checkSqliteStatement(db, 'SELECT count(*) AS n FROM users').get()).toEqual({ n: 3 });
    expect(checkSqliteStatement(db, 'PRAGMA table_info(users)').all()).toHaveLength(3);
  });
});
