/** The read-only guard as a pure function: classification, tokenizer edge cases, exact refusal messages. */
import { describe, expect, it } from 'vitest';
import { StatementRejectedError, WriteRejectedError } from '../src/errors.js';
import { assertReadOnlySql, classifyStatement, tokenizeSql } from '../src/sql-guard.js';

const tail =
  "are not permitted when refresh_mode is 'snapshot'; the accelerator is driven exclusively from the snapshot store";

describe('classifyStatement: reads', () => {
  it.each([
    ['SELECT * FROM orders', 'SELECT'],
    ['select 1;', 'SELECT'],
    ['  (SELECT 1) UNION ALL (SELECT 2)', 'SELECT'],
    ['FROM orders LIMIT 1', 'FROM'],
    ['VALUES (1), (2)', 'VALUES'],
    ['WITH a AS (SELECT 1), b(x) AS MATERIALIZED (SELECT 2) SELECT * FROM a, b', 'WITH'],
    ['WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3) SELECT * FROM t', 'WITH'],
    ['EXPLAIN SELECT 1', 'EXPLAIN'],
    ['EXPLAIN ANALYZE SELECT 1', 'EXPLAIN'],
    ['EXPLAIN QUERY PLAN SELECT 1', 'EXPLAIN'],
    ['PRAGMA table_info(orders)', 'PRAGMA'],
    ["PRAGMA main.table_info('orders')", 'PRAGMA'],
    ['DESCRIBE orders', 'DESCRIBE'],
    ['SUMMARIZE orders', 'SUMMARIZE'],
    [
      '/* INSERT INTO x */ SELECT \'DELETE FROM orders\' AS "UPDATE", $$TRUNCATE t$$ -- DROP TABLE orders',
      'SELECT',
    ],
    ["SELECT E'it\\'s; DROP TABLE x' AS s", 'SELECT'],
    ['/* outer /* nested */ still comment; DROP TABLE x */ SELECT 1', 'SELECT'],
  ])('%j is a read (%s)', (sql, statement) => {
    expect(classifyStatement(sql)).toEqual({ kind: 'read', statement });
  });
});

describe('classifyStatement: writes', () => {
  it.each([
    ['INSERT INTO orders VALUES (1)', 'insert', 'orders'],
    ['insert or replace into "Orders" select 1', 'insert', 'Orders'],
    ['REPLACE INTO orders VALUES (1)', 'insert', 'orders'],
    ['INSERT INTO main."my orders" BY NAME SELECT 1', 'insert', 'main.my orders'],
    ['MERGE INTO orders USING x ON true WHEN MATCHED THEN DELETE', 'insert', 'orders'],
    ['Update orders SET x = 1', 'update', 'orders'],
    ['UPDATE OR IGNORE orders SET x = 1', 'update', 'orders'],
    ['UPDATE extensions SET x = 1', 'update', 'extensions'],
    ['delete from orders where id = 1', 'delete', 'orders'],
    ['DELETE orders', 'delete', 'orders'],
    ['TRUNCATE TABLE orders', 'truncate', 'orders'],
    ['truncate `orders`', 'truncate', 'orders'],
    ['-- note\n/* more */ WITH x AS (SELECT 1) DELETE FROM orders', 'delete', 'orders'],
    ['WITH RECURSIVE x AS (SELECT 1) INSERT INTO orders SELECT * FROM x', 'insert', 'orders'],
    ['WITH x AS (DELETE FROM orders RETURNING *) SELECT * FROM x', 'delete', 'orders'],
    ['EXPLAIN ANALYZE UPDATE orders SET x = 1', 'update', 'orders'],
    ['(INSERT INTO orders VALUES (1))', 'insert', 'orders'],
    ['SELECT 1; DELETE FROM orders', 'delete', 'orders'],
  ])('%j is a write', (sql, operation, table) => {
    expect(classifyStatement(sql)).toEqual({ kind: 'write', operation, table });
  });
});

describe('classifyStatement: refusals', () => {
  it.each([
    ['CREATE TABLE t (x INT)', 'CREATE'],
    ['create or replace view v as select 1', 'CREATE'],
    ['DROP TABLE orders', 'DROP'],
    ['ALTER TABLE orders ADD COLUMN x INT', 'ALTER'],
    ["COPY orders TO '/tmp/x.csv'", 'COPY'],
    ["EXPORT DATABASE '/tmp/x'", 'EXPORT'],
    ["IMPORT DATABASE '/tmp/x'", 'IMPORT'],
    ["ATTACH '/tmp/other.db' AS o", 'ATTACH'],
    ['DETACH o', 'DETACH'],
    ['INSTALL httpfs', 'INSTALL'],
    ['FORCE INSTALL httpfs', 'FORCE INSTALL'],
    ['LOAD httpfs', 'LOAD'],
    ['UPDATE EXTENSIONS', 'UPDATE EXTENSIONS'],
    ["SET enable_external_access = 'true'", 'SET'],
    ['RESET threads', 'RESET'],
    ['PRAGMA journal_mode = WAL', 'PRAGMA'],
    ['PRAGMA table_info = 1', 'PRAGMA'],
    ['PRAGMA writable_schema', 'PRAGMA'],
    ['CALL pragma_version()', 'CALL'],
    ['CHECKPOINT', 'CHECKPOINT'],
    ["VACUUM INTO '/tmp/copy.db'", 'VACUUM'],
    ['BEGIN TRANSACTION', 'BEGIN'],
    ['COMMIT', 'COMMIT'],
    ['ROLLBACK', 'ROLLBACK'],
    ['SAVEPOINT a', 'SAVEPOINT'],
    ['ANALYZE', 'ANALYZE'],
    ['EXPLAIN CREATE TABLE t (x INT)', 'CREATE'],
    ['WITH x AS (SELECT 1) CREATE TABLE t AS SELECT 1', 'CREATE'],
    ['WITH broken SELECT 1', 'WITH'],
    ["'SELECT 1'", 'UNKNOWN'],
    ['{ SELECT 1 }', '{'],
    ['SELECT 1; SELECT 2', 'MULTIPLE'],
    ['', 'EMPTY'],
    [' ; -- only a comment', 'EMPTY'],
  ])('%j is refused as %s', (sql, statement) => {
    expect(classifyStatement(sql)).toMatchObject({ kind: 'refused', statement });
  });

  it('counts the statements of a multi-statement string', () => {
    expect(classifyStatement('SELECT 1; SELECT 2; SELECT 3;')).toEqual({
      kind: 'refused',
      statement: 'MULTIPLE',
      count: 3,
    });
  });
});

describe('tokenizeSql', () => {
  it('skips comments and keeps literals whole', () => {
    expect(tokenizeSql('SELECT \'a\'\'b\' -- x\n, "c""d" /* y */ FROM t')).toEqual([
      { kind: 'word', text: 'SELECT' },
      { kind: 'string', text: "a'b" },
      { kind: 'symbol', text: ',' },
      { kind: 'identifier', text: 'c"d' },
      { kind: 'word', text: 'FROM' },
      { kind: 'word', text: 't' },
    ]);
  });

  it('reads parameters: ?, ?1, $1; and :a, @a only in SQLite', () => {
    const kinds = (sql: string, dialect: 'duckdb' | 'sqlite') =>
      tokenizeSql(sql, dialect)
        .filter((t) => t.kind === 'parameter')
        .map((t) => t.text);
    expect(kinds('SELECT ?, ?2, $1, x::INT', 'duckdb')).toEqual(['?', '?2', '$1']);
    expect(kinds('SELECT :a, @b, $c', 'sqlite')).toEqual([':a', '@b', '$c']);
  });

  it('reads [name] as an identifier in SQLite and as a list in DuckDB', () => {
    // In SQLite the `--` inside brackets is part of a name, not a comment.
    expect(classifyStatement('SELECT [a--] FROM t; DELETE FROM t', 'sqlite')).toMatchObject({
      kind: 'write',
      operation: 'delete',
    });
    expect(classifyStatement('SELECT [1, 2] AS l', 'duckdb')).toEqual({ kind: 'read', statement: 'SELECT' });
  });

  it('treats an unterminated literal as running to the end', () => {
    expect(classifyStatement("SELECT 'open; DROP TABLE t")).toEqual({ kind: 'read', statement: 'SELECT' });
  });
});

describe('assertReadOnlySql', () => {
  it('throws WriteRejectedError with Spice’s exact wording', () => {
    const cases: [string, string][] = [
      ['INSERT INTO orders VALUES (1)', `writes to accelerated table orders ${tail}`],
      ['UPDATE orders SET a = 1', `updates on accelerated table orders ${tail}`],
      ['DELETE FROM orders', `deletes on accelerated table orders ${tail}`],
      ['TRUNCATE orders', `truncate on accelerated table orders ${tail}`],
    ];
    for (const [sql, message] of cases) {
      let thrown: unknown;
      try {
        assertReadOnlySql(sql);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(WriteRejectedError);
      expect(thrown).toMatchObject({ code: 'ERR_WRITE_REJECTED', message });
    }
  });

  it('throws StatementRejectedError naming the statement kind', () => {
    expect(() => assertReadOnlySql("ATTACH 'x.db'")).toThrow(StatementRejectedError);
    expect(() => assertReadOnlySql("ATTACH 'x.db'")).toThrow(/^ATTACH statements are not permitted/);
    expect(() => assertReadOnlySql('SELECT 1; SELECT 2')).toThrow(
      /exactly one statement but this one holds 2/,
    );
  });

  it('lets a single read through', () => {
    expect(() => assertReadOnlySql('SELECT 1')).not.toThrow();
  });
});
