/** The read-only guard as a pure function: classification, tokenizer edge cases, exact refusal messages. */
import { describe, expect, it } from 'vitest';
import { SqlSyntaxError, StatementRejectedError, WriteRejectedError } from '../src/errors.js';
import { assertReadOnlySql, classifyStatement, explainedStatement, tokenizeSql } from '../src/sql-guard.js';
import { GUARD_READS, GUARD_REFUSALS, GUARD_WRITES } from './guard-corpus.js';

const tail =
  "are not permitted when refresh_mode is 'snapshot'; the accelerator is driven exclusively from the snapshot store";

describe('classifyStatement: reads', () => {
  it.each(GUARD_READS)('%j is a read (%s)', (sql, statement) => {
    expect(classifyStatement(sql)).toEqual({ kind: 'read', statement });
  });
});

describe('classifyStatement: writes', () => {
  it.each(GUARD_WRITES)('%j is a write', (sql, operation, table) => {
    expect(classifyStatement(sql)).toEqual({ kind: 'write', operation, table });
  });
});

describe('classifyStatement: refusals', () => {
  it.each(GUARD_REFUSALS)('%j is refused as %s', (sql, statement) => {
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

describe('explainedStatement', () => {
  it.each([
    ['EXPLAIN SELECT 1', 'SELECT 1'],
    ['explain analyze SELECT * FROM t;', 'SELECT * FROM t'],
    ['EXPLAIN ANALYSE VERBOSE SELECT 1', 'SELECT 1'],
    ['EXPLAIN (ANALYZE, FORMAT json) INSERT INTO t VALUES (1)', 'INSERT INTO t VALUES (1)'],
    ['EXPLAIN (SELECT 1) UNION SELECT 2', '(SELECT 1) UNION SELECT 2'],
    [
      'EXPLAIN QUERY PLAN /* c */ WITH x AS (SELECT 1) SELECT * FROM x',
      'WITH x AS (SELECT 1) SELECT * FROM x',
    ],
  ])('%j explains %j', (sql, inner) => {
    expect(explainedStatement(sql)).toBe(inner);
  });

  it.each(['SELECT 1', 'EXPLAIN', 'EXPLAIN ANALYZE', 'EXPLAIN SELECT 1; SELECT 2', '(EXPLAIN SELECT 1)'])(
    '%j is not one EXPLAIN of a statement',
    (sql) => {
      expect(explainedStatement(sql)).toBeUndefined();
    },
  );
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

  it('answers a first word that begins no statement as a syntax error, naming the keyword it is nearest to', () => {
    expect(classifyStatement('SELEC 1')).toEqual({ kind: 'syntax', word: 'SELEC' });
    expect(() => assertReadOnlySql('SELEC 1')).toThrow(SqlSyntaxError);
    expect(() => assertReadOnlySql('SELEC 1')).toThrow(
      expect.objectContaining({
        code: 'ERR_SQL_SYNTAX',
        message: "Syntax error: 'SELEC' does not begin any SQL statement; did you mean SELECT?",
      }),
    );
    expect(() => assertReadOnlySql('qwertyuiop 1')).toThrow(
      "Syntax error: 'qwertyuiop' does not begin any SQL statement; start the query with SELECT (or WITH … SELECT)",
    );
    // Real writes and refused kinds keep their refusal, typo or not.
    expect(() => assertReadOnlySql('INSERT INTO orders VALUES (1)')).toThrow(WriteRejectedError);
    expect(() => assertReadOnlySql('DROP TABLE orders')).toThrow(/^DROP statements are not permitted/);
  });
});
