/**
 * The spicepod's `views` as Spice defines them (`name`, `description`, `sql` or `sql_ref`,
 * `dependsOn`): a view's problems fail only that view, named, and the pod still serves.
 */
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadSpicepod } from '../src/config/spicepod.js';
import { filesOf } from './config-files.js';

function load(views: unknown, files: Record<string, string> = {}) {
  const pod = {
    version: 'v1',
    kind: 'Spicepod',
    name: 'views',
    snapshots: { location: 's3://bucket/prefix/', params: { s3_region: 'us-east-1' } },
    datasets: [
      {
        from: 'postgres:public.orders',
        name: 'orders',
        acceleration: { engine: 'duckdb', mode: 'file', refresh_mode: 'snapshot', snapshots: 'enabled' },
      },
    ],
    views,
  };
  return loadSpicepod(stringify(pod), {
    file: 'spicepod.yaml',
    readFile: filesOf(files),
  });
}

describe('views', () => {
  it('reads sql, sql_ref (beside the spicepod), description and dependsOn', () => {
    const result = load(
      [
        {
          name: 'big_orders',
          description: 'Orders of 30 or more',
          sql: 'SELECT id, amount FROM orders WHERE amount >= 30;\n',
          dependsOn: ['orders'],
        },
        { name: 'totals', sql_ref: 'views/totals.sql', dependsOn: ['big_orders'] },
      ],
      { 'views/totals.sql': '-- the total\nSELECT sum(amount) AS total FROM big_orders\n' },
    );
    expect(result.errors).toStrictEqual([]);
    expect(result.config?.views).toStrictEqual([
      {
        name: 'big_orders',
        index: 0,
        description: 'Orders of 30 or more',
        sql: 'SELECT id, amount FROM orders WHERE amount >= 30',
        dependsOn: ['orders'],
      },
      {
        name: 'totals',
        index: 1,
        sql: '-- the total\nSELECT sum(amount) AS total FROM big_orders',
        dependsOn: ['big_orders'],
      },
    ]);
    expect(result.config?.ignoredKeys).toStrictEqual([]);
  });

  it.each([
    [
      { sql: 'SELECT 1' },
      'spicepod.yaml: views[0].name: missing; give the view a name (letters, digits and underscores)',
    ],
    [
      { name: 'a.b', sql: 'SELECT 1' },
      "spicepod.yaml: views[0].name: 'a.b' is not a safe view name; use up to 128 letters, digits and underscores",
    ],
    [
      { name: 'v' },
      'spicepod.yaml: views[0].sql: missing; give the view its SELECT statement as sql, or a file holding it as sql_ref',
    ],
    [
      { name: 'v', sql: 'SELECT 1', sql_ref: 'v.sql' },
      'spicepod.yaml: views[0]: sets both sql and sql_ref; keep one (the SQL, or the file holding it)',
    ],
    [
      { name: 'v', sql_ref: 'missing.sql' },
      "spicepod.yaml: views[0].sql_ref: 'missing.sql' cannot be read (ENOENT: no such file or directory); give the path (beside the spicepod) of a file holding the view's SELECT statement",
    ],
    [{ name: 'v', sql: ' ; ' }, "spicepod.yaml: views[0].sql: is empty; give the view's SELECT statement"],
    [
      { name: 'orders', sql: 'SELECT 1' },
      "spicepod.yaml: views[0].name: 'orders' is also the name of a dataset; give the view a name of its own",
    ],
    [
      { name: 'v', sql: 'SELECT 1', dependsOn: ['nothing'] },
      "spicepod.yaml: views[0].dependsOn[0]: 'nothing' names no dataset or view of this spicepod; name one, or remove it",
    ],
    [
      { name: 'v', sql: 'SELECT 1', depends_on: ['orders'] },
      "spicepod.yaml: views[0].depends_on: unknown key; did you mean 'dependsOn'?",
    ],
  ])('%j fails only that view, named', (view, message) => {
    const result = load([view, { name: 'fine', sql: 'SELECT 1' }]);
    expect(result.errors.map((issue) => issue.message)).toStrictEqual([message]);
    expect(result.fatal).toBe(false);
    expect(result.config?.views.map((v) => v.name)).toStrictEqual(['fine']);
    expect(result.datasets.map((d) => d.name)).toStrictEqual(['orders']);
    expect(result.errors[0]).not.toHaveProperty('dataset');
  });

  it('fails every view sharing a name', () => {
    const result = load([
      { name: 'v', sql: 'SELECT 1' },
      { name: 'V', sql: 'SELECT 2' },
    ]);
    expect(result.errors.map((issue) => issue.message)).toStrictEqual([
      "spicepod.yaml: views[0].name: 'v' names views[0] and views[1]; give each view a unique name",
      "spicepod.yaml: views[1].name: 'V' names views[0] and views[1]; give each view a unique name",
    ]);
    expect(result.errors.map((issue) => issue.view)).toStrictEqual(['v', 'V']);
    expect(result.config?.views).toStrictEqual([]);
  });

  it('a list is required', () => {
    const result = load({ name: 'v', sql: 'SELECT 1' });
    expect(result.fatal).toBe(true);
    expect(result.errors.map((issue) => issue.message)).toStrictEqual([
      'spicepod.yaml: views: must be a list of views, such as [{ name: big_orders, sql: SELECT … }]',
    ]);
  });
});

describe('top-level keys a query would notice', () => {
  it('warns that catalogs and functions are not served', () => {
    const result = loadSpicepod(
      stringify({
        version: 'v1',
        kind: 'Spicepod',
        name: 'p',
        catalogs: [{ from: 'unity_catalog:x', name: 'uc' }],
        functions: [{ name: 'f' }],
        models: [],
      }),
      { file: 'spicepod.yaml' },
    );
    expect(result.errors).toStrictEqual([]);
    expect(result.warnings.map((issue) => issue.message)).toStrictEqual([
      "spicepod.yaml: catalogs: is not served: this runtime serves the spicepod's snapshot datasets and views only, so a query naming a catalog's table fails as an unknown table",
      'spicepod.yaml: functions: is not served: this runtime defines no user functions, so a query calling one fails as an unknown function',
      'spicepod.yaml: datasets: no datasets are defined, so nothing will be served; add a dataset with refresh_mode: snapshot',
    ]);
    expect(result.config?.ignoredKeys).toStrictEqual(['catalogs', 'functions', 'models']);
  });
});
