import { describe, expect, it } from 'vitest';
import { isCacheableStatement } from '../src/cacheable.js';

describe('isCacheableStatement', () => {
  it.each([
    ['SELECT count(*) AS n, sum(amount) AS s FROM orders WHERE amount > 17', true],
    ['SELECT id, name FROM users WHERE id BETWEEN 4 AND 24 ORDER BY id DESC', true],
    // Volatile words inside longer words, comments and literals decide nothing.
    ['SELECT brand, snowfall, known FROM t', true],
    ['SELECT * FROM t -- random()', true],
    ["SELECT 'known', 'random' FROM t", true],
    ['SELECT description FROM t', true],
    // A clock, a random source, the runtime's tables, SQLite's 'now'.
    ['SELECT now()', false],
    ['SELECT * FROM t WHERE at < CURRENT_TIMESTAMP', false],
    ['select RANDOM() from t', false],
    ['SELECT "uuid" FROM t', false],
    ["SELECT date(' NOW ')", false],
    ['SELECT * FROM spice.runtime.task_history', false],
    ['SELECT * FROM t USING SAMPLE 10%', false],
    // Listings, however they begin.
    ['DESCRIBE orders', false],
    ['  ((SHOW TABLES))', false],
    ['/* first */ SHOW TABLES', false],
    ['-- first\nsummarize orders', false],
    ['EXPLAIN SELECT 1 FROM t', false],
    ['PRAGMA table_info(t)', false],
    ['SELECT 1 FROM t;', true],
  ])('%s → %s', (sql, cacheable) => {
    expect(isCacheableStatement(sql)).toBe(cacheable);
  });
});
