import { describe, expect, it } from 'vitest';
import { referencedTables, routeQuery } from '../src/query-router.js';

const DATASETS = ['orders', 'users'];

describe('query routing: which dataset a query reads', () => {
  it.each([
    ['SELECT count(*) FROM orders', 'orders'],
    ['select * from "Orders" where id = 1', 'orders'],
    ['SELECT * FROM main.orders o WHERE o.id > 1', 'orders'],
    ['SELECT u.name FROM users AS u JOIN users v ON u.id = v.id', 'users'],
    ['WITH big AS (SELECT * FROM orders WHERE amount > 10) SELECT count(*) FROM big', 'orders'],
    ['SELECT * FROM (SELECT id FROM users) t', 'users'],
    ['FROM orders SELECT id', 'orders'],
    ['DESCRIBE orders', 'orders'],
    ["PRAGMA table_info('users')", 'users'],
    ["SELECT 'from users' AS s FROM orders -- from users", 'orders'],
  ])('%s → %s', (sql, dataset) => {
    expect(routeQuery(sql, DATASETS)).toBe(dataset);
  });

  it('names the unknown table and lists the datasets', () => {
    expect(() => routeQuery('SELECT * FROM customers', DATASETS)).toThrow(
      "Table 'customers' is not a dataset of this runtime; the datasets are: orders, users.",
    );
  });

  it('refuses a query that reads no dataset, listing them', () => {
    expect(() => routeQuery('SELECT 1', DATASETS)).toThrow(
      'The query reads no dataset; name one of the datasets as a table in FROM: orders, users.',
    );
    // A table function is not a table: the engine refuses it, and the router finds no dataset.
    expect(() => routeQuery("SELECT * FROM read_csv('/etc/passwd')", DATASETS)).toThrow(/reads no dataset/);
  });

  it('refuses a query across two datasets (each is its own snapshot file)', () => {
    expect(() => routeQuery('SELECT * FROM orders JOIN users ON orders.id = users.id', DATASETS)).toThrow(
      /reads orders, users/,
    );
    expect(() => routeQuery('SELECT * FROM orders, users', DATASETS)).toThrow(/reads orders, users/);
  });

  it('skips CTE names', () => {
    expect(referencedTables('WITH a AS (SELECT 1), b AS (SELECT * FROM a) SELECT * FROM b, orders')).toEqual([
      'orders',
    ]);
  });
});
