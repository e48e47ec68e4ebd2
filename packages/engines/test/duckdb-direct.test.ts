/**
 * A statement's DuckDB datasets named by their generations (duckdb-direct.ts), on DuckDB's own
 * parser and engine: which references are rewritten and to what, by text and by shape; what stays
 * as written; and that an error of a rewritten text reads, word for word, as the same text's error
 * through the dataset's view.
 */
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asWritten, directText, excerptAt, nameAt, writtenMessage } from '../src/duckdb-direct.js';
import { QueryFailedError } from '../src/errors.js';
import type { NamespaceCatalog } from '../src/namespace-types.js';
import { offsetInShape, offsetInText, statementShape } from '../src/sql-shape.js';
import { checkDuckDbSql, knownDuckDbStatement, parserOn } from '../src/statement-check.js';

const CATALOG: NamespaceCatalog = {
  version: 1,
  datasets: [
    { name: 'orders', engine: 'duckdb', generation: { id: 7, path: '/gen/orders', snapshotId: 3 } },
    { name: 'users', engine: 'sqlite', generation: { id: 8, path: '/gen/users', snapshotId: 1 } },
    { name: 'late', engine: 'duckdb', generation: null },
  ],
  views: [{ name: 'big_orders', sql: 'SELECT * FROM orders WHERE amount > 10' }],
};

let connection: DuckDBConnection;

beforeAll(async () => {
  connection = await (await DuckDBInstance.create(':memory:')).connect();
  // The generation's table and the dataset's view over it, as a namespace's instance has them.
  await connection.run("ATTACH ':memory:' AS ferry_g7");
  await connection.run(
    "CREATE TABLE ferry_g7.main.orders AS SELECT i AS id, 'c' || (i % 3)::VARCHAR AS category, i * 1.5 AS amount FROM range(10) t(i)",
  );
  await connection.run('CREATE VIEW orders AS SELECT * FROM ferry_g7.main.orders');
});

afterAll(() => {
  connection.closeSync();
});

/** The text `sql` prepares as, checked by DuckDB's parser (and remembered by text and shape). */
async function direct(sql: string, catalog: NamespaceCatalog = CATALOG): Promise<string | undefined> {
  const statement = await checkDuckDbSql(parserOn(connection), sql);
  return directText(sql, statement, catalog)?.sql;
}

describe('directText', () => {
  it('names a DuckDB dataset by its generation, keeping the name written as its alias', async () => {
    expect(await direct('SELECT * FROM orders WHERE id = 5')).toBe(
      'SELECT * FROM ferry_g7.main."orders" AS "orders" WHERE id = 5',
    );
    expect(await direct('SELECT orders.id FROM spice.public.orders WHERE orders.id < 3')).toBe(
      'SELECT orders.id FROM ferry_g7.main."orders" AS "orders" WHERE orders.id < 3',
    );
    expect(await direct('SELECT "Orders".id FROM public . "Orders"')).toBe(
      'SELECT "Orders".id FROM ferry_g7.main."orders" AS "Orders"',
    );
  });

  it('keeps an alias of its own, and rewrites every reference of a join or subquery', async () => {
    expect(
      await direct(
        'SELECT o.id FROM orders o JOIN orders AS p ON o.id = p.id WHERE o.id IN (SELECT id FROM orders)',
      ),
    ).toBe(
      'SELECT o.id FROM ferry_g7.main."orders" o JOIN ferry_g7.main."orders" AS p ON o.id = p.id WHERE o.id IN (SELECT id FROM ferry_g7.main."orders" AS "orders")',
    );
  });

  it('finds the references of a new text of a known shape, whatever its literals', async () => {
    const first = "SELECT 'x' AS tag, id FROM orders WHERE id = 5 AND category <> 'c1'";
    await direct(first);
    const next = "SELECT 'a much longer tag' AS tag, id FROM orders WHERE id = 123456 AND category <> ''";
    const statement = knownDuckDbStatement(next);
    expect(statement).toBeDefined();
    expect(directText(next, statement as never, CATALOG)?.sql).toBe(
      'SELECT \'a much longer tag\' AS tag, id FROM ferry_g7.main."orders" AS "orders" WHERE id = 123456 AND category <> \'\'',
    );
  });

  it('leaves as written what the view must answer: a CTE, a spicepod view, SQLite, a dataset not serving, other names', async () => {
    expect(await direct('WITH orders AS (SELECT 1 AS id) SELECT * FROM orders')).toBeUndefined();
    expect(await direct('SELECT * FROM big_orders')).toBeUndefined();
    expect(await direct('SELECT * FROM users')).toBeUndefined();
    expect(await direct('SELECT * FROM late')).toBeUndefined();
    expect(await direct('SELECT * FROM main.orders')).toBeUndefined();
    expect(await direct('SELECT * FROM orders JOIN users ON true')).toBe(
      'SELECT * FROM ferry_g7.main."orders" AS "orders" JOIN users ON true',
    );
  });

  it('says whether the text binds no view at all: every table it reads named by its generation', async () => {
    const whole = async (sql: string) =>
      directText(sql, await checkDuckDbSql(parserOn(connection), sql), CATALOG)?.whole;
    expect(await whole('SELECT o.id FROM orders o WHERE o.id IN (SELECT id FROM spice.public.orders)')).toBe(
      true,
    );
    expect(await whole('SELECT * FROM orders, range(3) r')).toBe(true);
    // The SQLite dataset and the spicepod view stay views.
    expect(await whole('SELECT * FROM orders JOIN users ON true')).toBe(false);
    expect(await whole('SELECT * FROM orders WHERE id IN (SELECT id FROM big_orders)')).toBe(false);
  });

  it('rewrites nothing in a text that shows itself, or whose name is written over a comment', async () => {
    expect(await direct('SELECT current_query() AS q FROM orders LIMIT 1')).toBeUndefined();
    expect(await direct('EXPLAIN SELECT * FROM orders')).toBeUndefined();
    expect(await direct('SELECT * FROM spice /* here */ .public.orders')).toBeUndefined();
  });
});

describe('offsets by shape, and names as written', () => {
  it('maps an offset of a text to its shape and back to another text of that shape', () => {
    const a = "SELECT 1, 'ab' FROM t WHERE x = 22";
    const b = "SELECT 12345, '' FROM t WHERE x = 7";
    const inShape = offsetInShape(a.indexOf('t WHERE'), statementShape(a));
    expect(offsetInText(inShape, statementShape(b))).toBe(b.indexOf('t WHERE'));
    expect(offsetInShape(4, undefined)).toBe(4);
  });

  it('reads a dotted name with quotes and spaces, and nothing else', () => {
    expect(nameAt('x FROM spice . "pub""lic".t1 AS z', 7)).toEqual({
      parts: ['spice', 'pub"lic', 't1'],
      end: 28,
    });
    expect(nameAt('FROM "unclosed', 5)).toBeUndefined();
    expect(nameAt('FROM (orders)', 5)).toBeUndefined();
  });
});

describe('errors of a rewritten text', () => {
  /** DuckDB's message for `sql`, prepared and run. */
  async function messageOf(sql: string): Promise<string> {
    try {
      const prepared = await connection.prepare(sql);
      const result = await prepared.startStream().getResult();
      while (((await result.fetchChunk())?.rowCount ?? 0) > 0);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error(`${sql} did not fail`);
  }

  for (const [what, sql] of [
    ['its place before the rewritten name', 'SELECT category::INT AS n FROM orders WHERE id = 5'],
    ['its place after it', 'SELECT o.id FROM orders o WHERE o.category::INT > 1'],
    [
      'on a later line, after two rewritten names',
      'SELECT a.id\nFROM orders a, orders WHERE a.category::INT > orders.id\nLIMIT 3',
    ],
  ] as const) {
    it(`reads as the same error of the text as written, through the view: ${what}`, async () => {
      const statement = await checkDuckDbSql(parserOn(connection), sql);
      const rewritten = directText(sql, statement, CATALOG);
      expect(rewritten).toBeDefined();
      const throughView = await messageOf(sql);
      expect(throughView).toMatch(/\nLINE \d+: /);
      const prepared = await messageOf(rewritten?.sql as string);
      expect(prepared).not.toBe(throughView);
      expect(writtenMessage(prepared, rewritten as never)).toBe(throughView);
      expect((asWritten(new Error(prepared), rewritten as never) as Error).message).toBe(throughView);
    });
  }

  it('shows a long line as written, cut around the same place', async () => {
    const sql = `SELECT ${'id + 1 AS a, '.repeat(12)}category::INT FROM orders WHERE id = 5 AND ${'id > 0 AND '.repeat(12)}true`;
    const rewritten = directText(sql, await checkDuckDbSql(parserOn(connection), sql), CATALOG);
    const throughView = (await messageOf(sql)).split('\n');
    const shown = writtenMessage(await messageOf(rewritten?.sql as string), rewritten as never).split('\n');
    expect(shown.slice(0, -2)).toEqual(throughView.slice(0, -2));
    const [line = '', caret = ''] = shown.slice(-2);
    const [viewLine = '', viewCaret = ''] = throughView.slice(-2);
    expect(line).toMatch(/^LINE 1: \.\.\..*FROM orders WHERE.*\.\.\.$/);
    expect(line).not.toMatch(/ferry_g/);
    // The caret is under the same place of the text: what follows it is the same.
    expect(line.slice(caret.length - 1, caret.length + 19)).toBe(
      viewLine.slice(viewCaret.length - 1, viewCaret.length + 19),
    );
    expect(excerptAt('SELECT \u00e9t\u00e9 FROM t', 7)).toBeUndefined();
  });

  it("leaves DuckDB's excerpt of a line with no rewritten name as it is, however long", async () => {
    const sql = `SELECT id FROM orders\nWHERE ${'id > 0 AND '.repeat(12)}category::INT > 1 AND ${'id < 9 AND '.repeat(12)}true`;
    const rewritten = directText(sql, await checkDuckDbSql(parserOn(connection), sql), CATALOG);
    const throughView = await messageOf(sql);
    expect(throughView).toMatch(/\nLINE 2: \.\.\./);
    expect(writtenMessage(await messageOf(rewritten?.sql as string), rewritten as never)).toBe(throughView);
  });

  it('leaves out an excerpt whose place it cannot tell, and a message without one as it is', () => {
    const direct = {
      written: 'SELECT x FROM orders',
      sql: 'SELECT x FROM ferry_g7.main."orders" AS "orders"',
      swaps: [{ start: 14, end: 20, prepared: 'ferry_g7.main."orders" AS "orders"' }],
      whole: true,
    };
    expect(
      writtenMessage('Conversion Error: nope\n\nLINE 1: ...not in the text...\n                ^', direct),
    ).toBe('Conversion Error: nope\n');
    expect(writtenMessage('Other Error: no excerpt', direct)).toBe('Other Error: no excerpt');
    // Ferry's own errors keep their class and words.
    const own = new QueryFailedError(undefined, 'x\nLINE 1: ...not in the text...\n                ^');
    expect(asWritten(own, direct)).toBe(own);
  });
});
