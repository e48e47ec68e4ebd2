/**
 * The engines' statement checks on connections set up as the query pools set them up (see
 * check-connections.ts). DuckDB: reads pass and come back as reusable prepared statements; EXPLAIN
 * only of a read (EXPLAIN ANALYZE of a write would run it); `query('…')` strings, file readers,
 * replacement scans and whatever shows paths or changes state are refused, while DuckDB itself
 * would have run them (the controls); `IMPORT DATABASE` is refused before DuckDB's PRAGMA rewrite
 * reads the files. SQLite: its quoting, EXPLAIN, pragma_database_list. Both: a refused statement
 * leaves nothing on the connection, and no refusal names a local path.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { FerryError } from '@ferry/core';
import type Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DUCKDB_REFUSED_FUNCTIONS, DUCKDB_TABLE_FUNCTIONS } from '../src/duckdb-functions.js';
import {
  checkDuckDbStatement,
  checkSqliteStatement,
  DUCKDB_EXPLAIN,
  DUCKDB_SELECT,
} from '../src/statement-check.js';
import { CANARY, type CheckConnections, openCheckConnections } from './check-connections.js';
import { makeTempDir } from './files.js';

const tail =
  "are not permitted when refresh_mode is 'snapshot'; the accelerator is driven exclusively from the snapshot store";

let dir: string;
let remove: () => Promise<void>;
let connections: CheckConnections;
let duckdb: DuckDBConnection;
let sqlite: Database.Database;
let fill: (sql: string) => string;

beforeAll(async () => {
  ({ dir, remove } = await makeTempDir());
  connections = await openCheckConnections(dir);
  ({ duckdb, sqlite, fill } = connections);
});

afterAll(async () => {
  connections.close();
  await remove();
});

async function rows(connection: DuckDBConnection, sql: string): Promise<unknown[][]> {
  return (await connection.runAndReadAll(sql)).getRows();
}

/** The names of DuckDB's functions of these types (`duckdb_functions()`). */
async function functionNames(...types: string[]): Promise<string[]> {
  const list = types.map((type) => `'${type}'`).join(', ');
  const found = await rows(
    duckdb,
    `SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_type IN (${list}) ORDER BY 1`,
  );
  return found.map((row) => String(row[0]));
}

/** Run through the check; the prepared statement's rows, bound to `params`. */
async function duckRead(sql: string, params: readonly (string | number)[] = []): Promise<unknown[][]> {
  const prepared = await checkDuckDbStatement(duckdb, fill(sql));
  try {
    for (const [index, value] of params.entries()) {
      if (typeof value === 'string') prepared.bindVarchar(index + 1, value);
      else prepared.bindInteger(index + 1, value);
    }
    return (await prepared.runAndReadAll()).getRows();
  } finally {
    prepared.destroySync();
  }
}

/** The refusal of `sql` by the check; it never names the test directory or the canary's content. */
async function duckRefusal(sql: string): Promise<FerryError> {
  const error = await checkDuckDbStatement(duckdb, fill(sql)).then(
    (prepared) => {
      prepared.destroySync();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(error, sql).toBeInstanceOf(FerryError);
  const refusal = error as FerryError;
  expect(['ERR_STATEMENT_REJECTED', 'ERR_WRITE_REJECTED'], sql).toContain(refusal.code);
  expect(refusal.message, sql).not.toContain(dir);
  expect(refusal.message, sql).not.toContain(CANARY);
  return refusal;
}

function sqliteRefusal(sql: string): FerryError {
  let error: unknown;
  try {
    checkSqliteStatement(sqlite, fill(sql));
  } catch (e) {
    error = e;
  }
  expect(error, sql).toBeInstanceOf(FerryError);
  const refusal = error as FerryError;
  expect(['ERR_STATEMENT_REJECTED', 'ERR_WRITE_REJECTED'], sql).toContain(refusal.code);
  expect(refusal.message, sql).not.toContain(dir);
  return refusal;
}

/** Counts the parses (`json_serialize_sql` queries) `connection` runs, until `restore()`. */
function countParses(connection: DuckDBConnection): { counted: { n: number }; restore: () => void } {
  const counted = { n: 0 };
  const original = connection.run.bind(connection);
  connection.run = ((sql: string, ...rest: never[]) => {
    if (sql.includes('json_serialize_sql')) counted.n++;
    return original(sql, ...rest);
  }) as typeof connection.run;
  return { counted, restore: () => Object.assign(connection, { run: original }) };
}

describe('checkDuckDbStatement: reads', () => {
  it('returns a prepared statement that can be bound and run again', async () => {
    const prepared = await checkDuckDbStatement(duckdb, 'SELECT name FROM orders WHERE id = ?');
    try {
      for (const [id, name] of [
        [1, 'one'],
        [2, 'two'],
        [1, 'one'],
      ] as const) {
        prepared.bindInteger(1, id);
        expect((await prepared.runAndReadAll()).getRows()).toEqual([[name]]);
      }
    } finally {
      prepared.destroySync();
    }
  });

  it('parses a text once: prepared again (on any connection, at any catalog version) it is not parsed anew; a new text is', async () => {
    const spy = countParses(duckdb);
    try {
      const text = `SELECT name FROM orders WHERE id = ? -- ${Math.random()}`;
      for (let n = 0; n < 3; n++) (await checkDuckDbStatement(duckdb, text)).destroySync();
      expect(spy.counted.n).toBe(1);
      (await checkDuckDbStatement(duckdb, `${text} `)).destroySync();
      expect(spy.counted.n).toBe(2);
      // A refused SELECT is remembered with its refusal (a router still reads its tables):
      // refused every time, parsed once.
      const refused = `SELECT * FROM read_csv('${CANARY}') -- ${Math.random()}`;
      for (let n = 0; n < 2; n++)
        await expect(checkDuckDbStatement(duckdb, refused)).rejects.toThrow(/read_csv/);
      expect(spy.counted.n).toBe(3);
    } finally {
      spy.restore();
    }
  });

  it.each([
    ['WITH o AS (SELECT * FROM orders) SELECT count(*) FROM o', [[2n]]],
    ['FROM orders SELECT name ORDER BY id', [['one'], ['two']]],
    ['VALUES (1)', [[1]]],
    ['SELECT count(*) FROM range(3)', [[3n]]],
    ['SELECT sum(generate_series) FROM generate_series(1, 3)', [[6n]]],
    ['SELECT * FROM unnest([1, 2])', [[1], [2]]],
    ["SELECT count(*) FROM json_each('[1, 2]')", [[2n]]],
    ["SELECT table_name FROM duckdb_tables() WHERE table_name = 'orders'", [['orders']]],
    ["SELECT table_name FROM information_schema.tables WHERE table_name = 'orders'", [['orders']]],
    ["SELECT column_name FROM duckdb_columns() WHERE table_name = 't'", [['x']]],
    [
      "PIVOT orders ON name IN ('one') USING sum(id)",
      [
        [10, 100, 1n],
        [20, 200, null],
      ],
    ],
    ["SELECT name FROM pragma_table_info('t')", [['x']]],
    ['PRAGMA table_info(t)', [[0, 'x', 'INTEGER', false, null, false]]],
  ])('%j', async (sql, expected) => {
    expect(await duckRead(sql)).toEqual(expected);
  });

  it('DESCRIBE, SHOW and SUMMARIZE', async () => {
    expect((await duckRead('DESCRIBE t')).map((row) => row[0])).toEqual(['x']);
    expect((await duckRead('SHOW TABLES')).map((row) => row[0])).toEqual(['items', 'orders', 't', 'users']);
    expect((await duckRead('SUMMARIZE t')).map((row) => row[0])).toEqual(['x']);
  });

  it('EXPLAIN and EXPLAIN ANALYZE of a read (which runs the read, and only that)', async () => {
    expect((await duckRead('EXPLAIN SELECT * FROM orders'))[0]?.[0]).toBe('physical_plan');
    expect((await duckRead('EXPLAIN ANALYZE SELECT count(*) FROM orders'))[0]?.[0]).toBe('analyzed_plan');
    expect((await duckRead("EXPLAIN (FORMAT json) SELECT * FROM orders WHERE name = 'x'"))[0]?.[0]).toBe(
      'physical_plan',
    );
  });
});

describe('checkDuckDbStatement: what reaches DuckDB', () => {
  /** The check's own queries (the parser's, the function catalog's): constant texts, the statement a bound value. */
  const own = (text: string) => /^SELECT (json_serialize_sql|count\(\*\) FROM duckdb_functions)/.test(text);

  /**
   * What the check hands DuckDB to prepare or to split into statements (which runs PRAGMA
   * rewrites), besides its own queries.
   */
  async function prepared(sql: string): Promise<{ texts: string[]; outcome: unknown }> {
    const texts: string[] = [];
    const prepare = duckdb.prepare.bind(duckdb);
    const extract = duckdb.extractStatements.bind(duckdb);
    duckdb.prepare = ((text: string) => {
      if (!own(text)) texts.push(text);
      return prepare(text);
    }) as typeof duckdb.prepare;
    duckdb.extractStatements = ((text: string) => {
      if (!own(text)) texts.push(`extract: ${text}`);
      return extract(text);
    }) as typeof duckdb.extractStatements;
    try {
      const outcome = await checkDuckDbStatement(duckdb, fill(sql)).then(
        (statement) => {
          statement.destroySync();
          return 'prepared';
        },
        (error: unknown) => error,
      );
      return { texts, outcome };
    } finally {
      Object.assign(duckdb, { prepare, extractStatements: extract });
    }
  }

  it.each([
    "IMPORT DATABASE '<out>'",
    "PRAGMA import_database('<out>')",
    'PRAGMA enable_profiling',
    'SELECT FROM WHERE',
    'SELECT * FROM [users]',
    "SELECT 1; PRAGMA import_database('<out>')",
    'PRAGMA table_info(orders); SELECT 1',
    "EXPLAIN SELECT 1; PRAGMA import_database('<out>')",
  ])('%j reaches neither prepare nor the statement extraction', async (sql) => {
    const { texts, outcome } = await prepared(sql);
    expect(outcome).toBeInstanceOf(Error);
    expect(texts).toEqual([]);
  });

  it.each([
    ['PRAGMA table_info(t)', "SELECT * FROM pragma_table_info('t')"],
    ["PRAGMA table_info('t')", "SELECT * FROM pragma_table_info('t')"],
    ['PRAGMA table_info(main."t")', `SELECT * FROM pragma_table_info('main."t"')`],
  ])('%j is prepared as the SELECT it stands for, %j', async (sql, select) => {
    expect(await prepared(sql)).toEqual({ texts: [select], outcome: 'prepared' });
  });

  it('prepares a read and an EXPLAIN as written, once they passed', async () => {
    expect(await prepared('SELECT id FROM orders')).toEqual({
      texts: ['SELECT id FROM orders'],
      outcome: 'prepared',
    });
    expect(await prepared('EXPLAIN ANALYZE SELECT id FROM orders')).toEqual({
      texts: ['EXPLAIN ANALYZE SELECT id FROM orders'],
      outcome: 'prepared',
    });
  });

  it('parses a statement once per shape: new literals reuse what its first text taught', async () => {
    const { counted, restore } = countParses(duckdb);
    try {
      const tag = Math.random();
      for (const [id, name] of [
        [1, "'one'"],
        [2, "'two'"],
        [1.5, "'it is'"],
      ] as const) {
        expect(
          await duckRead(`SELECT count(*) FROM orders WHERE id < ${id} OR name = ${name} -- ${tag}`),
        ).toHaveLength(1);
      }
      expect(counted.n).toBe(1);
      // A literal the engine reads as a table (a replacement scan), not a constant: known by its text only.
      expect(await duckRead(`SELECT count(*) FROM 'orders' -- ${tag}`)).toEqual([[2n]]);
      expect(await duckRefusal(`SELECT count(*) FROM '<canary>' -- ${tag}`)).toMatchObject({
        statement: 'FILE',
      });
      expect(counted.n).toBe(3);
    } finally {
      restore();
    }
  });
});

describe('checkDuckDbStatement: EXPLAIN wrappers', () => {
  it.each([
    ["EXPLAIN INSERT INTO orders VALUES (3, 'x', 0, 0)", `writes to accelerated table orders ${tail}`],
    [
      "EXPLAIN ANALYZE INSERT INTO orders VALUES (3, 'x', 0, 0)",
      `writes to accelerated table orders ${tail}`,
    ],
    ['EXPLAIN ANALYZE DELETE FROM orders', `deletes on accelerated table orders ${tail}`],
    ["EXPLAIN (ANALYZE) UPDATE orders SET name = 'x'", `updates on accelerated table orders ${tail}`],
    ['EXPLAIN ANALYZE TRUNCATE orders', `truncate on accelerated table orders ${tail}`],
  ])('%j is refused with Spice’s wording and writes nothing', async (sql, message) => {
    expect(await duckRefusal(sql)).toMatchObject({ code: 'ERR_WRITE_REJECTED', message });
    expect(await rows(duckdb, 'SELECT id, name FROM orders ORDER BY id')).toEqual([
      [1, 'one'],
      [2, 'two'],
    ]);
  });

  it.each([
    ["EXPLAIN ANALYZE COPY orders TO '<out>'", /^COPY statements are not permitted/],
    ['EXPLAIN ANALYZE CREATE TABLE made AS SELECT 1', /^CREATE statements are not permitted/],
    ["EXPLAIN ANALYZE SELECT * FROM read_csv('<canary>')", /^read_csv\(\) is not permitted.*it reads files/],
    [
      "EXPLAIN ANALYZE SELECT * FROM query('SELECT 1')",
      /^query\(\) is not permitted.*runs SQL given as a string/,
    ],
    ["EXPLAIN SELECT current_setting('temp_directory')", /^current_setting\(\) is not permitted/],
  ])('%j is refused', async (sql, message) => {
    expect((await duckRefusal(sql)).message).toMatch(message);
    expect(existsSync(join(dir, 'out'))).toBe(false);
  });

  it('control: without the check, EXPLAIN ANALYZE runs the write it explains', async () => {
    await duckdb.run('CREATE TABLE control (x INTEGER)');
    await duckdb.run('EXPLAIN ANALYZE INSERT INTO control VALUES (1)');
    expect(await rows(duckdb, 'SELECT count(*) FROM control')).toEqual([[1n]]);
    await duckdb.run('DROP TABLE control');
  });
});

describe('checkDuckDbStatement: SQL and files in strings, file readers, replacement scans', () => {
  it('control: DuckDB itself reads the canary, directly and through query(…)', async () => {
    expect(await rows(duckdb, fill("SELECT * FROM read_csv('<canary>')"))).toEqual([[CANARY]]);
    expect(await rows(duckdb, fill("FROM query('FROM read_csv(''<canary>'')')"))).toEqual([[CANARY]]);
    expect(await rows(duckdb, fill("FROM '<canary>'"))).toEqual([[CANARY]]);
  });

  it.each([
    "SELECT * FROM query('SELECT * FROM read_csv(''<canary>'')')",
    "SELECT * FROM query($$SELECT * FROM read_text('<canary>')$$)",
    "SELECT * FROM query('INSERT INTO orders VALUES (3, ''x'', 0, 0)')",
    "SELECT * FROM orders WHERE id IN (SELECT 1 FROM query('SELECT 1'))",
    "SELECT * FROM orders, LATERAL (SELECT * FROM query('SELECT ' || orders.id))",
    "SELECT * FROM query_table('orders')",
    "SELECT * FROM query_table('<canary>')",
    "SELECT * FROM query_table(['orders', 'users'])",
    "SELECT * FROM main.QUERY('SELECT 1')",
    "SELECT * FROM histogram_values('<canary>', secret)",
    "SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT * FROM read_csv(''<canary>'')'))",
  ])('%j is refused: the string is SQL no check of the outer statement sees', async (sql) => {
    expect((await duckRefusal(sql)).message).toMatch(
      /^[a-z_]+\(\) is not permitted .*: it runs SQL given as a string;/,
    );
  });

  it.each([
    "SELECT * FROM read_csv('<canary>')",
    "SELECT * FROM READ_CSV_AUTO('<canary>')",
    "SELECT * FROM system.main.read_csv('<canary>')",
    "SELECT * FROM read_text('<canary>')",
    "SELECT * FROM read_blob('<canary>')",
    "SELECT * FROM read_json('<canary>')",
    "SELECT * FROM read_ndjson_objects('<canary>')",
    "SELECT * FROM read_parquet('<canary>')",
    "SELECT * FROM parquet_metadata('<canary>')",
    "SELECT * FROM read_duckdb('<canary>')",
    "SELECT * FROM sniff_csv('<canary>')",
    "SELECT * FROM glob('<canary>')",
    "SELECT * FROM orders WHERE name IN (SELECT * FROM read_csv('<canary>'))",
    // Inside a table function's call, beyond its arguments: the tree keeps these under the call.
    "SELECT * FROM range(3 ORDER BY (SELECT 1 FROM read_csv('<canary>')))",
    "SELECT * FROM range(3 ORDER BY (SELECT content FROM read_text('<canary>')))",
  ])('%j is refused: it reads files', async (sql) => {
    expect((await duckRefusal(sql)).message).toMatch(/^[a-z_]+\(\) is not permitted .*: it reads files;/);
  });

  it.each([
    "SELECT * FROM '<canary>'",
    'SELECT * FROM "<canary>"',
    'SELECT * FROM canary.csv',
    'SELECT * FROM data.parquet',
    'SELECT * FROM generation.duckdb',
    "DESCRIBE '<canary>'",
    'SUMMARIZE canary.csv',
    "SELECT * FROM orders WHERE name IN (FROM 's3://bucket/x.parquet')",
  ])('%j is refused: the table name is a file (a replacement scan)', async (sql) => {
    expect(await duckRefusal(sql)).toMatchObject({
      statement: 'FILE',
      message: expect.stringMatching(/^The query names a file where a table belongs/),
    });
  });

  it.each([
    ["SELECT current_setting('allowed_directories')", 'current_setting()'],
    ['SELECT setseed(0.5)', 'setseed()'],
    ["SELECT nextval('s')", 'nextval()'],
    ["SELECT write_log('x')", 'write_log()'],
    ["SELECT json_serialize_plan('SELECT * FROM orders')", 'json_serialize_plan()'],
    ['SELECT * FROM duckdb_databases()', 'duckdb_databases()'],
    ['SELECT * FROM duckdb_settings()', 'duckdb_settings()'],
    ['SELECT * FROM duckdb_extensions()', 'duckdb_extensions()'],
    ['SELECT * FROM duckdb_temporary_files()', 'duckdb_temporary_files()'],
    ['SELECT * FROM enable_profiling()', 'enable_profiling()'],
    ['SELECT * FROM checkpoint()', 'checkpoint()'],
    ['SELECT * FROM duckdb_databases', 'duckdb_databases'],
    ['SELECT path FROM system.main.duckdb_databases', 'duckdb_databases'],
    ['SELECT * FROM pragma_database_list', 'pragma_database_list'],
    ['SELECT * FROM pg_catalog.pg_settings', 'pg_settings'],
  ])('%j is refused: it shows paths or settings, or changes state', async (sql, statement) => {
    expect(await duckRefusal(sql)).toMatchObject({ code: 'ERR_STATEMENT_REJECTED', statement });
  });

  it('refuses a CTE marked NOT MATERIALIZED: DuckDB copies it into each reference while it prepares, where no interrupt reaches (each link doubles the plan: a chain of 20 takes 7 s to prepare, of 30 minutes, its memory growing long after the timeout)', async () => {
    const chain = ['a0 AS NOT MATERIALIZED (SELECT 1 AS x)'];
    for (let k = 1; k < 16; k++)
      chain.push(`a${k} as not   materialized (SELECT * FROM a${k - 1} UNION ALL SELECT * FROM a${k - 1})`);
    const sql = `WITH ${chain.join(', ')} SELECT count(*) FROM a15`;
    expect(await duckRefusal(sql)).toMatchObject({
      code: 'ERR_STATEMENT_REJECTED',
      statement: 'NOT MATERIALIZED',
      message:
        'A common table expression marked NOT MATERIALIZED is not permitted on a read-only snapshot replica: DuckDB copies it into every reference while it plans the query, which no query timeout can stop; leave the hint out.',
    });
    // The words elsewhere, and the other hints, are no such CTE.
    expect(
      await duckRead(
        "WITH a AS MATERIALIZED (SELECT 'as not materialized (' AS x) SELECT x, NOT true AS materialized FROM a",
      ),
    ).toEqual([['as not materialized (', false]]);
  });

  it('allows exactly the listed table functions of DuckDB 1.5 and refuses every other one by name', async () => {
    const names = await functionNames('table', 'table_macro');
    for (const allowed of DUCKDB_TABLE_FUNCTIONS) expect(names).toContain(allowed);
    const refused = names.filter((name) => !DUCKDB_TABLE_FUNCTIONS.has(name));
    expect(refused.length).toBeGreaterThan(60);
    for (const name of refused) {
      expect(await duckRefusal(`SELECT * FROM ${name}()`)).toMatchObject({ statement: `${name}()` });
    }
  });

  it('refuses functions DuckDB 1.5 has by those names', async () => {
    const scalars = await functionNames('scalar', 'macro', 'aggregate');
    for (const name of DUCKDB_REFUSED_FUNCTIONS.keys()) expect(scalars).toContain(name);
  });

  it('refuses IMPORT DATABASE before DuckDB’s PRAGMA rewrite reads the files it names', async () => {
    const imported = join(dir, 'import');
    await mkdir(imported);
    await writeFile(join(imported, 'schema.sql'), `${CANARY} is not SQL;\n`);
    const sql = `IMPORT DATABASE '${imported}'`;
    // Control: counting the statements already reads schema.sql (and trips over it).
    await expect(duckdb.extractStatements(sql)).rejects.toThrow();
    expect(await duckRefusal(sql)).toMatchObject({ statement: 'IMPORT' });
    expect(await duckRefusal(`PRAGMA import_database('${imported}')`)).toMatchObject({ statement: 'PRAGMA' });
  });

  it('leaves what DuckDB cannot parse to DuckDB’s own error (SQLite quoting is the caller’s cue)', async () => {
    for (const sql of ['SELECT * FROM [users]', 'SELECT * FROM `users`', 'SELECT FROM WHERE']) {
      const error = await checkDuckDbStatement(duckdb, sql).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, sql).toBeInstanceOf(Error);
      expect(error, sql).not.toBeInstanceOf(FerryError);
      expect((error as Error).message, sql).toMatch(/Parser Error/);
    }
  });

  it('counts statements with DuckDB, and words empty and multiple queries', async () => {
    expect(await duckRefusal('SELECT 1; SELECT 2; SELECT 3')).toMatchObject({
      statement: 'MULTIPLE',
      message: expect.stringMatching(/holds 3;/),
    });
    expect(await duckRefusal(' ; -- nothing')).toMatchObject({ statement: 'EMPTY' });
    expect(await duckRefusal("SELECT 1; DELETE FROM orders WHERE name = 'a;b'")).toMatchObject({
      code: 'ERR_WRITE_REJECTED',
    });
  });
});

describe('a refused statement leaves no state on the connection', () => {
  it('DuckDB', async () => {
    const before = await duckRead('SELECT id, name FROM orders ORDER BY id');
    const databases = await rows(duckdb, 'SELECT count(*) FROM duckdb_databases()');
    const searchPath = await rows(duckdb, "SELECT current_setting('search_path')");
    for (const sql of [
      "SET search_path = 'other'",
      'RESET search_path',
      'SET VARIABLE v = 1',
      'USE memory',
      'BEGIN TRANSACTION',
      'PREPARE p AS SELECT 1',
      'CREATE TEMP TABLE scratch (x INTEGER)',
      'CREATE TEMP MACRO m() AS 1',
      "CREATE SECRET s (TYPE s3, KEY_ID 'k', SECRET 's')",
      "ATTACH ':memory:' AS side",
      'DETACH memory',
      'SELECT setseed(0.5)',
      'PRAGMA enable_profiling',
      'CALL enable_logging()',
      'SELECT * FROM enable_profiling()',
      'LOAD json',
    ]) {
      await duckRefusal(sql);
    }
    await expect(duckdb.run('COMMIT')).rejects.toThrow(/no transaction is active/);
    await expect(duckdb.run('EXECUTE p')).rejects.toThrow(/p/);
    await expect(duckdb.run('SELECT * FROM temp.scratch')).rejects.toThrow(/scratch/);
    expect(await rows(duckdb, "SELECT getvariable('v')")).toEqual([[null]]);
    expect(await rows(duckdb, 'SELECT count(*) FROM duckdb_databases()')).toEqual(databases);
    expect(await rows(duckdb, "SELECT current_setting('search_path')")).toEqual(searchPath);
    // Two queries after the refusals see what the first one saw.
    expect(await duckRead('SELECT id, name FROM orders ORDER BY id')).toEqual(before);
    expect(await duckRead('SELECT id, name FROM orders ORDER BY id')).toEqual(before);
  });

  it('SQLite', () => {
    const read = () => checkSqliteStatement(sqlite, 'SELECT id, name FROM users ORDER BY id').all();
    const before = read();
    // Preparing CREATE TEMP opens SQLite's (empty) temp schema; what counts is that nothing is in it.
    const attached = () =>
      (sqlite.pragma('database_list') as { name: string; file: string }[]).filter((db) => db.name !== 'temp');
    const databases = attached();
    const settings = () =>
      ['trusted_schema', 'query_only', 'cache_size', 'temp_store', 'busy_timeout'].map((name) =>
        sqlite.pragma(name, { simple: true }),
      );
    const settled = settings();
    for (const sql of [
      "ATTACH ':memory:' AS side",
      'DETACH data',
      'BEGIN',
      'SAVEPOINT a',
      'PRAGMA case_sensitive_like = 1',
      'PRAGMA cache_size = 5',
      'PRAGMA query_only = 1',
      'PRAGMA temp_store = 2',
      'PRAGMA trusted_schema = ON',
      'PRAGMA busy_timeout = 7',
      'EXPLAIN PRAGMA writable_schema = 1',
      'PRAGMA case_sensitive_like = 1; SELECT 1',
      'CREATE TEMP TABLE scratch (x)',
      'CREATE TEMP VIEW v AS SELECT 1',
    ]) {
      sqliteRefusal(sql);
    }
    expect(sqlite.inTransaction).toBe(false);
    expect(attached()).toEqual(databases);
    expect(sqlite.prepare('SELECT count(*) AS n FROM temp.sqlite_schema').get()).toEqual({ n: 0 });
    expect(sqlite.prepare("SELECT 'a' LIKE 'A' AS folded").get()).toEqual({ folded: 1 });
    // SQLite applies these PRAGMAs when it compiles them: refused before it does.
    expect(settings()).toEqual(settled);
    expect(read()).toEqual(before);
    expect(read()).toEqual(before);
  });
});

describe('checkSqliteStatement', () => {
  it.each([
    'SELECT * FROM users',
    'SELECT * FROM [users]',
    'SELECT * FROM `users`',
    'SELECT * FROM "users"',
    'SELECT * FROM data.users',
    'SELECT * FROM data.[users]',
  ])('%j reads through SQLite’s own quoting', (sql) => {
    expect(checkSqliteStatement(sqlite, sql).all()).toEqual([
      { id: 1, name: 'ann' },
      { id: 2, name: 'bob' },
    ]);
  });

  it('returns a statement that can be run again with other parameters', () => {
    const statement = checkSqliteStatement(sqlite, 'SELECT name FROM users WHERE id = ?');
    expect(statement.get(1)).toEqual({ name: 'ann' });
    expect(statement.get(2)).toEqual({ name: 'bob' });
  });

  it('EXPLAIN of a read passes; of a write it is refused with Spice’s wording', () => {
    expect(checkSqliteStatement(sqlite, 'EXPLAIN SELECT * FROM users').all().length).toBeGreaterThan(0);
    expect(checkSqliteStatement(sqlite, 'EXPLAIN QUERY PLAN SELECT * FROM users').all().length).toBe(1);
    for (const [sql, message] of [
      ["EXPLAIN INSERT INTO users VALUES (3, 'c')", `writes to accelerated table users ${tail}`],
      ['EXPLAIN QUERY PLAN DELETE FROM users', `deletes on accelerated table users ${tail}`],
      ["EXPLAIN UPDATE [users] SET name = 'x'", `updates on accelerated table users ${tail}`],
    ] as const) {
      expect(sqliteRefusal(sql)).toMatchObject({ code: 'ERR_WRITE_REJECTED', message });
    }
  });

  it('words writes SQLite cannot prepare (no such syntax, no such table) as Spice does', () => {
    expect(sqliteRefusal('TRUNCATE users')).toMatchObject({
      message: `truncate on accelerated table users ${tail}`,
    });
    expect(sqliteRefusal('DELETE FROM elsewhere')).toMatchObject({
      message: `deletes on accelerated table elsewhere ${tail}`,
    });
  });

  it('answers a typo in the first word as a syntax error with SQLite’s words, not as a refused statement', () => {
    expect(() => checkSqliteStatement(sqlite, 'SELEC 1')).toThrow(
      expect.objectContaining({
        code: 'ERR_SQL_SYNTAX',
        message: `Syntax error: 'SELEC' does not begin any SQL statement (near "SELEC": syntax error); did you mean SELECT?`,
      }),
    );
  });

  it('leaves a read of a missing table to SQLite’s own error (attaching on demand is driven by it)', () => {
    expect(() => checkSqliteStatement(sqlite, 'SELECT * FROM elsewhere')).toThrow(
      expect.objectContaining({ code: 'SQLITE_ERROR', message: 'no such table: elsewhere' }),
    );
  });

  it('has no query(…) to smuggle SQL in: an unknown table-valued function, and nothing runs', () => {
    expect(() => checkSqliteStatement(sqlite, "SELECT * FROM query('DELETE FROM users')")).toThrow(
      /no such table: query/,
    );
    expect(checkSqliteStatement(sqlite, 'SELECT count(*) AS n FROM users').get()).toEqual({ n: 2 });
  });

  it.each([
    'SELECT * FROM pragma_database_list',
    'SELECT file FROM "PRAGMA_DATABASE_LIST"',
    "SELECT * FROM 'pragma_database_list'",
    'PRAGMA database_list',
  ])('%j is refused: it shows the attached files’ paths', (sql) => {
    sqliteRefusal(sql);
  });

  it('control: SQLite itself shows the attached file’s path', () => {
    const files = sqlite.prepare('SELECT file FROM pragma_database_list').all() as { file: string }[];
    expect(files.some((row) => row.file.startsWith(dir))).toBe(true);
  });

  it('words empty and multiple queries', () => {
    expect(sqliteRefusal('  -- nothing')).toMatchObject({ statement: 'EMPTY' });
    expect(sqliteRefusal('SELECT 1; SELECT 2')).toMatchObject({
      statement: 'MULTIPLE',
      message: expect.stringMatching(/holds 2;/),
    });
    expect(sqliteRefusal('SELECT 1; DELETE FROM users')).toMatchObject({ code: 'ERR_WRITE_REJECTED' });
  });
});

describe('DuckDB statement types by value', () => {
  it('are the enum values of @duckdb/node-api (the SQLite workers check statements without loading it)', async () => {
    const { StatementType } = await import('@duckdb/node-api');
    expect(DUCKDB_SELECT).toBe(StatementType.SELECT);
    expect(DUCKDB_EXPLAIN).toBe(StatementType.EXPLAIN);
  });
});
