/**
 * Statement shapes: texts that differ only in plain literals share one; anything whose split the
 * two engines could read differently has none (known by its exact text only).
 */
import { describe, expect, it } from 'vitest';
import { NUMBER_MARK, SHAPE_MAX_SQL, STRING_MARK, statementShape } from '../src/sql-shape.js';

const key = (sql: string) => statementShape(sql)?.key;

describe('statementShape', () => {
  it('gives texts that differ only in numbers and plain strings one shape', () => {
    const a = "SELECT category, sum(amount) FROM t WHERE qty < 5 AND day = '2026-12-01' GROUP BY 1";
    const b = "SELECT category, sum(amount) FROM t WHERE qty < 12.5 AND day = '1999-01-31' GROUP BY 2";
    expect(key(a)).toBe(key(b));
    expect(key(a)).toBe(
      `SELECT category, sum(amount) FROM t WHERE qty < ${NUMBER_MARK} AND day = ${STRING_MARK} GROUP BY ${NUMBER_MARK}`,
    );
    const at = (text: string) => a.indexOf(text);
    expect(statementShape(a)?.literals).toEqual([
      { start: at('5 AND'), end: at('5 AND') + 1, kind: 'number' },
      { start: at("'2026"), end: at("'2026") + 12, kind: 'string' },
      { start: a.lastIndexOf('1'), end: a.lastIndexOf('1') + 1, kind: 'number' },
    ]);
  });

  it('keeps everything but such literals as written: names, parameters, comments, case, spacing', () => {
    expect(key('SELECT * FROM t1 WHERE id = ?')).toBe('SELECT * FROM t1 WHERE id = ?');
    expect(key('SELECT * FROM t WHERE id = $1')).toBe('SELECT * FROM t WHERE id = $1');
    expect(key('SELECT * FROM t WHERE id = ?2')).toBe('SELECT * FROM t WHERE id = ?2');
    expect(key('SELECT #1 FROM t')).toBe('SELECT #1 FROM t');
    expect(key('SELECT 1e5, 0x10, 1.2.3, x.5, a1')).toBe('SELECT 1e5, 0x10, 1.2.3, x.5, a1');
    expect(key('SELECT "5", [5], `5` -- 5\n/* 5 */')).toBe('SELECT "5", [5], `5` -- 5\n/* 5 */');
    expect(key('SELECT 5')).not.toBe(key('select 5'));
    expect(key('SELECT 5')).not.toBe(key('SELECT  5'));
    expect(key("SELECT 'a' FROM t")).not.toBe(key('SELECT "a" FROM t'));
  });

  it('replaces no string that something prefixes or that holds an escape', () => {
    expect(key("SELECT E'x', X'ff', U&'y', 'it''s', 'a\\b'")).toBe(
      "SELECT E'x', X'ff', U&'y', 'it''s', 'a\\b'",
    );
  });

  it('has no shape where DuckDB and SQLite could split the text differently', () => {
    for (const sql of [
      'SELECT $$x$$',
      'SELECT $tag$ 5 $tag$',
      "SELECT E'a\\'; PRAGMA x; --'",
      '/* /* nested */ SELECT 5 */ SELECT 6',
      "SELECT [a -- x] FROM t WHERE y = 'z'",
      "SELECT ['a]', 5]",
      'SELECT `a"b`',
      "SELECT 'unterminated",
      'SELECT "unterminated',
      '/* unterminated',
      `SELECT ${'\u0001'}`,
    ]) {
      expect(statementShape(sql), sql).toBeUndefined();
    }
  });

  it('has no shape for a text too long to be worth one', () => {
    expect(statementShape(`SELECT '${'x'.repeat(SHAPE_MAX_SQL)}'`)).toBeUndefined();
  });

  it('is the text itself when no literal is replaced', () => {
    expect(statementShape('SELECT a FROM t')).toEqual({ key: 'SELECT a FROM t', literals: [] });
  });
});
