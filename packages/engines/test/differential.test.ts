/**
 * The differential test: every statement the guard and the hostile-SQL suite are tested with goes
 * through both engines' checks (`checkDuckDbStatement` on a locked-down in-memory DuckDB,
 * `checkSqliteStatement` on a read-only SQLite connection, the same tables in both). Where both
 * dialects take the statement the verdicts must agree; the statements only one dialect takes, or
 * that mean something else in the other, are listed with each engine's verdict and why. The
 * tokenizer's old verdict (read, or not) is compared too: every difference is listed, and in each
 * the engine is right (it refuses or cannot run what the tokenizer took for a read).
 */
import { FerryError } from '@ferry/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyStatement } from '../src/sql-guard.js';
import { checkDuckDbStatement, checkSqliteStatement } from '../src/statement-check.js';
import { type CheckConnections, openCheckConnections } from './check-connections.js';
import { makeTempDir } from './files.js';
import {
  ENGINE_STATEMENTS,
  GUARD_READS,
  GUARD_REFUSALS,
  GUARD_WRITES,
  HOSTILE_STATEMENTS,
  SQL_IN_STRINGS,
  WRAPPED_STATEMENTS,
} from './guard-corpus.js';

/** `invalid`: the engine cannot prepare it (its own parse, catalog or binder error); nothing ran. */
type Verdict = 'read' | 'refused' | 'invalid';

const QUOTING = [
  'SELECT * FROM [users]',
  'SELECT * FROM `users`',
  'SELECT * FROM data.users',
  'SELECT * FROM "users"',
];

const CORPUS: readonly string[] = [
  ...new Set([
    ...GUARD_READS.map(([sql]) => sql),
    ...GUARD_WRITES.map(([sql]) => sql),
    ...GUARD_REFUSALS.map(([sql]) => sql),
    ...ENGINE_STATEMENTS,
    ...HOSTILE_STATEMENTS,
    ...WRAPPED_STATEMENTS,
    ...QUOTING,
  ]),
];

const DUCKDB_PARSES_NOT =
  'DuckDB cannot parse it (its error is the caller’s cue to try SQLite); SQLite words a non-read it cannot prepare as the refusal';
const DUCKDB_FUNCTION =
  'a DuckDB table function or file read: refused by DuckDB’s check, no such table in SQLite';

/** Statements one dialect does not take, or reads differently: each engine's verdict and why. */
type Listed = readonly [duckdb: Verdict, sqlite: Verdict, why: string];

const DIALECT_ONLY: ReadonlyMap<string, Listed> = new Map<string, Listed>([
  ['  (SELECT 1) UNION ALL (SELECT 2)', ['read', 'invalid', 'SQLite has no parenthesised SELECT']],
  ['FROM orders LIMIT 1', ['read', 'invalid', 'FROM-first is DuckDB’s']],
  ['EXPLAIN ANALYZE SELECT 1', ['read', 'invalid', 'SQLite has no EXPLAIN ANALYZE']],
  ['EXPLAIN ANALYZE SELECT count(*) FROM orders', ['read', 'invalid', 'SQLite has no EXPLAIN ANALYZE']],
  [
    "EXPLAIN ANALYZE SELECT * FROM read_csv('<canary>')",
    ['refused', 'invalid', 'SQLite has no EXPLAIN ANALYZE'],
  ],
  ['EXPLAIN QUERY PLAN SELECT 1', ['invalid', 'read', 'EXPLAIN QUERY PLAN is SQLite’s']],
  ["PRAGMA main.table_info('orders')", ['invalid', 'read', 'a schema-qualified PRAGMA is SQLite’s']],
  ['DESCRIBE orders', ['read', 'invalid', 'DESCRIBE is DuckDB’s']],
  ['SUMMARIZE orders', ['read', 'invalid', 'SUMMARIZE is DuckDB’s']],
  [
    "SELECT E'it\\'s; DROP TABLE x' AS s",
    ['read', 'refused', 'SQLite has no E-strings: to it this is two statements'],
  ],
  [
    '/* outer /* nested */ still comment; DROP TABLE x */ SELECT 1',
    ['read', 'refused', 'SQLite comments do not nest: to it this is two statements'],
  ],
  ['SELECT [1, 2] AS l', ['read', 'invalid', 'SQLite reads [1, 2] as a column name']],
  [
    'SELECT [a--] FROM t; DELETE FROM t',
    ['invalid', 'refused', 'SQLite reads [a--] as a column name; two statements'],
  ],
  [
    "SELECT load_extension('/tmp/ferry-ext.so')",
    ['invalid', 'read', 'SQLite prepares it; running it fails: not authorized'],
  ],
  [
    "SELECT load_extension('<out>') FROM users",
    ['invalid', 'read', 'SQLite prepares it; running it fails: not authorized'],
  ],
  ...[
    'REPLACE INTO orders VALUES (1)',
    'UPDATE OR IGNORE orders SET x = 1',
    'DELETE orders',
    'truncate `orders`',
    'WITH x AS (DELETE FROM orders RETURNING *) SELECT * FROM x',
    '(INSERT INTO orders VALUES (1))',
    "VACUUM INTO '/tmp/copy.db'",
    'SAVEPOINT a',
    'WITH x AS (SELECT 1) CREATE TABLE t AS SELECT 1',
    'WITH broken SELECT 1',
    "'SELECT 1'",
    '{ SELECT 1 }',
    "VACUUM INTO '/tmp/ferry-copy.sqlite'",
    'CREATE TEMP TABLE scratch (x)',
    'REINDEX',
    'PRAGMA users.writable_schema = ON',
    "VACUUM INTO '<out>'",
    'EXPLAIN QUERY PLAN DELETE FROM users',
  ].map((sql): [string, Listed] => [sql, ['invalid', 'refused', DUCKDB_PARSES_NOT]]),
  ...[
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM glob('/etc/*')",
    "SELECT * FROM read_parquet('https://example.com/x.parquet')",
    "SELECT * FROM orders, read_csv('<canary>')",
    "SELECT * FROM orders, read_csv('/etc/passwd')",
    "SELECT content FROM orders, read_text('<canary>')",
    "SELECT * FROM orders, glob('<canary>')",
    "SELECT * FROM orders WHERE name IN (SELECT * FROM '<canary>')",
    ...SQL_IN_STRINGS,
  ].map((sql): [string, Listed] => [sql, ['refused', 'invalid', DUCKDB_FUNCTION]]),
  ['SELECT * FROM [users]', ['invalid', 'read', 'SQLite quoting']],
  ['SELECT * FROM `users`', ['invalid', 'read', 'SQLite quoting']],
  [
    'SELECT * FROM data.users',
    ['invalid', 'read', 'in SQLite `data` is the attached file; DuckDB has no such schema'],
  ],
]);

/**
 * Where the tokenizer called a statement a read and an engine does not run it. In every case the
 * engine is right: the file readers and `query(…)` strings were reads to the tokenizer only
 * because it sees no further than the statement's head (DuckDB's settings refused them later, at
 * run time); the rest do not parse or bind.
 */
const TOKENIZER_READ_ENGINE_NOT: ReadonlySet<string> = new Set([
  ...[...DIALECT_ONLY].filter(([, [, , why]]) => why === DUCKDB_FUNCTION).map(([sql]) => sql),
  "EXPLAIN ANALYZE SELECT * FROM read_csv('<canary>')",
  "SELECT 'open; DROP TABLE t",
  'SELECT no_such_column FROM items',
]);

let dir: string;
let remove: () => Promise<void>;
let connections: CheckConnections;
const verdicts = new Map<string, { duckdb: Verdict; sqlite: Verdict }>();

const verdictOf = (error: unknown): Verdict =>
  error instanceof FerryError && ['ERR_WRITE_REJECTED', 'ERR_STATEMENT_REJECTED'].includes(error.code)
    ? 'refused'
    : 'invalid';

beforeAll(async () => {
  ({ dir, remove } = await makeTempDir());
  connections = await openCheckConnections(dir);
  for (const written of CORPUS) {
    const sql = connections.fill(written);
    let duckdb: Verdict = 'read';
    let sqlite: Verdict = 'read';
    try {
      (await checkDuckDbStatement(connections.duckdb, sql)).destroySync();
    } catch (error) {
      duckdb = verdictOf(error);
    }
    try {
      checkSqliteStatement(connections.sqlite, sql);
    } catch (error) {
      sqlite = verdictOf(error);
    }
    verdicts.set(written, { duckdb, sqlite });
  }
});

afterAll(async () => {
  connections.close();
  await remove();
});

describe('differential: both engines’ checks over the whole guard corpus', () => {
  it('feeds every statement (the corpus is not empty and the exceptions are all in it)', () => {
    expect(CORPUS.length).toBeGreaterThan(150);
    for (const sql of [...DIALECT_ONLY.keys(), ...TOKENIZER_READ_ENGINE_NOT]) expect(CORPUS).toContain(sql);
  });

  it.each(CORPUS.filter((sql) => !DIALECT_ONLY.has(sql)))('%j: the same verdict in both', (sql) => {
    const { duckdb, sqlite } = verdicts.get(sql) ?? {};
    expect(duckdb, sql).toBe(sqlite);
  });

  it.each([...DIALECT_ONLY])('%j (one dialect’s): the listed verdicts', (sql, [duckdb, sqlite]) => {
    expect(verdicts.get(sql)).toEqual({ duckdb, sqlite });
  });

  it('the tokenizer differs from the engines only where listed, and never by refusing what an engine reads', () => {
    const differing: string[] = [];
    for (const [sql, verdict] of verdicts) {
      const filled = connections.fill(sql);
      for (const [dialect, engine] of [
        ['duckdb', verdict.duckdb],
        ['sqlite', verdict.sqlite],
      ] as const) {
        // A statement only one dialect takes is compared in that dialect only.
        if (DIALECT_ONLY.has(sql) && engine === 'invalid') continue;
        const tokenizer = classifyStatement(filled, dialect).kind === 'read' ? 'read' : 'refused';
        if (tokenizer === 'read' && engine !== 'read') differing.push(sql);
        expect(tokenizer === 'refused' && engine === 'read', `${dialect}: ${sql}`).toBe(false);
      }
    }
    expect(new Set(differing)).toEqual(TOKENIZER_READ_ENGINE_NOT);
  });
});
