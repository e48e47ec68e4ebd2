/**
 * Named parameters: `$name` markers become `$1`, `$2`, … (strings, quoted identifiers and comments
 * untouched), the values follow in that order, and the rewritten statement runs on both engines.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDuckDb } from '../src/duckdb-engine.js';
import { numberNamedParameters } from '../src/named-parameters.js';
import { openSqlite } from '../src/sqlite-engine.js';
import { makeDuckDbFile, makeSqliteFile, makeTempDir } from './files.js';

describe('numberNamedParameters', () => {
  it('numbers each distinct name once, in order of first appearance', () => {
    expect(
      numberNamedParameters('SELECT * FROM t WHERE a = $b OR c = $a OR d = $b', {
        a: 1,
        b: 'x',
        unused: true,
      }),
    ).toEqual({ sql: 'SELECT * FROM t WHERE a = $1 OR c = $2 OR d = $1', params: ['x', 1] });
    expect(numberNamedParameters('SELECT $id', { $id: 7 })).toEqual({ sql: 'SELECT $1', params: [7] });
    expect(numberNamedParameters('SELECT 1', {})).toEqual({ sql: 'SELECT 1', params: [] });
  });

  it('leaves markers inside strings, quoted identifiers and comments alone', () => {
    const sql = `SELECT '$a', "$a", $a /* $a */ -- $a\n, $$ $a $$`;
    expect(numberNamedParameters(sql, { a: 1 })).toEqual({
      sql: `SELECT '$a', "$a", $1 /* $a */ -- $a\n, $$ $a $$`,
      params: [1],
    });
    expect(numberNamedParameters('SELECT [$a], $a', { a: 1 }, 'sqlite').sql).toBe('SELECT [$a], $1');
  });

  it('refuses a marker without a value and positional markers next to named values', () => {
    expect(() => numberNamedParameters('SELECT $a, $b', { a: 1 })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_PARAMETER', message: expect.stringContaining('$b') }),
    );
    for (const sql of ['SELECT $a, ?', 'SELECT $a, $1', 'SELECT ?1']) {
      expect(() => numberNamedParameters(sql, { a: 1 }), sql).toThrow(
        expect.objectContaining({ code: 'ERR_INVALID_PARAMETER' }),
      );
    }
    expect(() => numberNamedParameters('SELECT :a', { a: 1 }, 'sqlite')).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_PARAMETER' }),
    );
  });
});

describe('named parameters on both engines', () => {
  let dir: string;
  let remove: () => Promise<void>;
  const statements = [
    'CREATE TABLE items (id INTEGER, name TEXT)',
    "INSERT INTO items VALUES (1, 'alpha'), (2, 'beta'), (3, 'gamma')",
  ];

  beforeAll(async () => {
    ({ dir, remove } = await makeTempDir());
    await makeDuckDbFile(join(dir, 'items.duckdb'), statements);
    await makeSqliteFile(join(dir, 'items.sqlite'), statements);
  });

  afterAll(async () => {
    await remove();
  });

  it('binds the numbered statement', async () => {
    const { sql, params } = numberNamedParameters(
      'SELECT name FROM items WHERE id >= $low AND name <> $skip ORDER BY id',
      { low: 2, skip: 'gamma' },
    );
    const duck = await openDuckDb(join(dir, 'items.duckdb'));
    const lite = await openSqlite(join(dir, 'items.sqlite'));
    try {
      expect((await duck.query(sql, params)).rows).toEqual([{ name: 'beta' }]);
      expect((await lite.query(sql, params)).rows).toEqual([{ name: 'beta' }]);
    } finally {
      await duck.close();
      await lite.close();
    }
  });
});
