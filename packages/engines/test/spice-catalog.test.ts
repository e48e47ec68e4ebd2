/**
 * Spice's names and listings in the namespaces, on real files: `<name>`, `public.<name>` and
 * `spice.public.<name>` resolve in DuckDB and in SQLite (and across the two); `SHOW TABLES`,
 * `information_schema.tables` / `columns`, `DESCRIBE` and DuckDB's catalog functions show every
 * dataset and view of both engines once, under catalog `spice` and schema `public`, never an
 * internal attachment; the spicepod's views are tables of the namespace, checked like a query,
 * and a view that fails names itself and the reason.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDbNamespace } from '../src/duckdb-namespace.js';
import type {
  DuckDbNamespaceOptions,
  NamespaceCatalog,
  NamespaceDataset,
  NamespaceView,
} from '../src/index.js';
import {
  type DatasetEngine,
  firstEngine as engineFirst,
  withoutSpiceQualifiers,
} from '../src/spice-names.js';
import { SqliteNamespace } from '../src/sqlite-namespace.js';
import { makeDuckDbFile, makeSqliteFile, makeTempDir } from './files.js';

let dir: string;
let remove: () => Promise<void>;
let generations: string;
let nextId = 0;

function dataset(
  name: string,
  engine: 'duckdb' | 'sqlite',
  path: string | null,
  snapshotId = 1,
): NamespaceDataset {
  return { name, engine, generation: path === null ? null : { id: ++nextId, path, snapshotId } };
}

function catalog(
  datasets: readonly NamespaceDataset[],
  views: readonly NamespaceView[] = [],
): NamespaceCatalog {
  return { version: ++nextId, datasets, views };
}

function options(): DuckDbNamespaceOptions {
  return {
    allowedDirectories: [`${generations}/`],
    tempDirectory: join(dir, 'tmp'),
    maxTempBytes: 256 * 1024 * 1024,
    memoryLimitBytes: 1024 * 1024 * 1024,
    threads: 2,
    settings: { memory: 'queryMemoryLimit', threads: 'queryThreads', temp: 'queryTempDirectorySize' },
    crossEngine: { maxRows: 10_000, maxBytes: 16 * 1024 * 1024 },
    privateRoots: [dir],
  };
}

let orders: string;
let users: string;
let pending: NamespaceDataset;

beforeAll(async () => {
  ({ dir, remove } = await makeTempDir());
  generations = join(dir, 'generations');
  await mkdir(generations);
  await mkdir(join(dir, 'tmp'));
  orders = join(generations, 'orders.duckdb');
  await makeDuckDbFile(orders, [
    "CREATE TABLE orders AS SELECT i::BIGINT AS id, (i * 10)::BIGINT AS amount, 'u' || (i % 3) AS customer FROM range(6) t(i)",
  ]);
  users = join(generations, 'users.sqlite');
  await makeSqliteFile(users, [
    'CREATE TABLE users (id INTEGER NOT NULL, handle TEXT, score REAL)',
    "INSERT INTO users VALUES (0, 'u0', 1.5), (1, 'u1', 2.5), (2, 'u2', 3.5)",
  ]);
  pending = dataset('late', 'duckdb', null);
});

afterAll(async () => {
  await remove();
});

const VIEWS: NamespaceView[] = [
  { name: 'big_orders', sql: 'SELECT id, amount FROM orders WHERE amount >= 30' },
  { name: 'big_total', sql: 'SELECT sum(amount) AS total FROM big_orders' },
  {
    name: 'user_orders',
    sql: 'SELECT u.handle, count(*) AS n FROM spice.public.orders o JOIN users u ON o.customer = u.handle GROUP BY u.handle',
  },
  { name: 'reads_files', sql: "SELECT * FROM read_csv('/etc/passwd')" },
  { name: 'no_table', sql: 'SELECT * FROM nowhere' },
  { name: 'on_bad', sql: 'SELECT * FROM no_table' },
  { name: 'waits', sql: 'SELECT * FROM late' },
];

describe('DuckDbNamespace: Spice names, listings and views', () => {
  let namespace: DuckDbNamespace;

  beforeAll(async () => {
    namespace = await DuckDbNamespace.create(options());
    await namespace.setCatalog(
      catalog(
        [dataset('orders', 'duckdb', orders, 11), dataset('users', 'sqlite', users, 21), pending],
        VIEWS,
      ),
    );
  });

  afterAll(async () => {
    await namespace?.close();
  });

  async function rows(sql: string) {
    const route = await namespace.route(sql);
    if (route.engine !== 'duckdb') return { route };
    const outcome = await namespace.rows(sql, [], route);
    if (outcome.kind !== 'rows') throw new Error(outcome.kind);
    return { route, rows: outcome.rows, read: outcome.read };
  }

  it('answers a column qualified by the full Spice name, which only the view binds (the text is prepared as written)', async () => {
    // Prepared naming the generation, the reference is aliased `orders`: `spice.public.orders.id`
    // binds only through the view, so the namespace prepares the text as written.
    const { rows: found } = await rows(
      'SELECT spice.public.orders.id AS id, o.id AS same FROM spice.public.orders JOIN orders o USING (id) ORDER BY id LIMIT 2',
    );
    expect(found).toEqual([
      { id: 0, same: 0 },
      { id: 1, same: 1 },
    ]);
  });

  it('resolves <name>, public.<name>, spice.public.<name> and spice.<name>', async () => {
    for (const name of [
      'orders',
      'public.orders',
      'spice.public.orders',
      '"spice"."public"."orders"',
      'spice.orders',
    ]) {
      const { rows: found, read } = await rows(`SELECT count(*) AS n FROM ${name}`);
      expect(found, name).toEqual([{ n: 6 }]);
      expect(read, name).toEqual([{ name: 'orders', snapshotId: 11 }]);
    }
  });

  it('routes an SQLite dataset named in any form to SQLite, and joins across engines by Spice names', async () => {
    expect((await namespace.route('SELECT * FROM spice.public.users')).engine).toBe('sqlite');
    expect((await namespace.route('SELECT * FROM public.users')).engine).toBe('sqlite');
    const joined = await rows(
      'SELECT u.handle, sum(o.amount) AS total FROM spice.public.orders o JOIN public.users u ON o.customer = u.handle GROUP BY 1 ORDER BY 1',
    );
    expect(joined.route).toMatchObject({ engine: 'duckdb', datasets: ['orders', 'users'] });
    expect(joined.rows).toEqual([
      { handle: 'u0', total: 30 },
      { handle: 'u1', total: 50 },
      { handle: 'u2', total: 70 },
    ]);
  });

  it('SHOW TABLES lists every dataset and view of both engines once, under spice.public', async () => {
    const { rows: shown } = await rows('SHOW TABLES');
    expect(shown).toEqual([
      { table_catalog: 'spice', table_schema: 'public', table_name: 'big_orders', table_type: 'VIEW' },
      { table_catalog: 'spice', table_schema: 'public', table_name: 'big_total', table_type: 'VIEW' },
      { table_catalog: 'spice', table_schema: 'public', table_name: 'orders', table_type: 'BASE TABLE' },
      { table_catalog: 'spice', table_schema: 'public', table_name: 'user_orders', table_type: 'VIEW' },
      { table_catalog: 'spice', table_schema: 'public', table_name: 'users', table_type: 'BASE TABLE' },
      // The runtime's own table, as Spice lists it.
      {
        table_catalog: 'spice',
        table_schema: 'runtime',
        table_name: 'task_history',
        table_type: 'BASE TABLE',
      },
    ]);
    const { rows: all } = await rows('SHOW ALL TABLES');
    expect(all).toEqual(shown);
  });

  it('information_schema and DuckDB catalog functions show no internal attachment', async () => {
    const { rows: tables = [] } = await rows(
      'SELECT table_catalog, table_schema, table_name, table_type FROM information_schema.tables ORDER BY table_name',
    );
    expect(tables.map((row) => row.table_name)).toEqual([
      'big_orders',
      'big_total',
      'orders',
      'task_history',
      'user_orders',
      'users',
    ]);
    expect(new Set(tables.map((row) => `${row.table_catalog}.${row.table_schema}`))).toEqual(
      new Set(['spice.public', 'spice.runtime']),
    );
    const { rows: columns } = await rows(
      "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_name IN ('orders', 'users') ORDER BY table_name, ordinal_position",
    );
    expect(columns).toEqual([
      { table_name: 'orders', column_name: 'id', data_type: 'BIGINT' },
      { table_name: 'orders', column_name: 'amount', data_type: 'BIGINT' },
      { table_name: 'orders', column_name: 'customer', data_type: 'VARCHAR' },
      { table_name: 'users', column_name: 'id', data_type: 'BIGINT' },
      { table_name: 'users', column_name: 'handle', data_type: 'VARCHAR' },
      { table_name: 'users', column_name: 'score', data_type: 'DOUBLE' },
    ]);
    const { rows: qualified } = await rows(
      "SELECT count(*) AS n FROM information_schema.tables t WHERE t.table_schema = 'public'",
    );
    expect(qualified).toEqual([{ n: 5 }]);
    const { rows: schemata } = await rows(
      'SELECT catalog_name, schema_name FROM information_schema.schemata ORDER BY 2',
    );
    expect(schemata).toEqual([
      { catalog_name: 'spice', schema_name: 'public' },
      { catalog_name: 'spice', schema_name: 'runtime' },
    ]);
    for (const sql of [
      'SELECT * FROM information_schema.tables',
      'SELECT * FROM information_schema.columns',
      'SELECT * FROM duckdb_tables()',
      'SELECT * FROM duckdb_views()',
      'SELECT * FROM duckdb_columns()',
      'SELECT * FROM duckdb_schemas()',
    ]) {
      const { rows: listed } = await rows(sql);
      expect(JSON.stringify(listed), sql).not.toMatch(/ferry_|"memory"/);
    }
  });

  it('DESCRIBE describes a dataset of either engine, and a view', async () => {
    const describe = async (name: string) =>
      (await rows(`DESCRIBE ${name}`)).rows?.map((row) => `${row.column_name}:${row.column_type}`);
    expect(await describe('orders')).toEqual(['id:BIGINT', 'amount:BIGINT', 'customer:VARCHAR']);
    expect(await describe('spice.public.users')).toEqual(['id:BIGINT', 'handle:VARCHAR', 'score:DOUBLE']);
    expect(await describe('big_orders')).toEqual(['id:BIGINT', 'amount:BIGINT']);
  });

  it('answers a view as a table, read as the datasets under it (views of views, across engines)', async () => {
    const big = await rows('SELECT * FROM big_orders ORDER BY id');
    expect(big.route).toMatchObject({ engine: 'duckdb', datasets: ['orders'] });
    expect(big.rows).toEqual([
      { id: 3, amount: 30 },
      { id: 4, amount: 40 },
      { id: 5, amount: 50 },
    ]);
    expect(big.read).toEqual([{ name: 'orders', snapshotId: 11 }]);
    expect((await rows('SELECT total FROM spice.public.big_total')).rows).toEqual([{ total: 120 }]);
    const across = await rows('SELECT * FROM user_orders ORDER BY handle');
    expect(across.route).toMatchObject({ engine: 'duckdb', datasets: ['orders', 'users'] });
    expect(across.rows).toEqual([
      { handle: 'u0', n: 2 },
      { handle: 'u1', n: 2 },
      { handle: 'u2', n: 2 },
    ]);
  });

  it('a view that fails is answered with its name and the reason; one waiting for a dataset reads it', async () => {
    await expect(namespace.route('SELECT * FROM reads_files')).rejects.toThrow(
      /^Query on view 'reads_files' failed: .*read_csv\(\)/,
    );
    await expect(namespace.route('SELECT * FROM no_table')).rejects.toThrow(
      "Query on view 'no_table' failed: it reads 'nowhere', which is no dataset or view of this spicepod",
    );
    await expect(namespace.route('SELECT * FROM on_bad')).rejects.toThrow(
      "Query on view 'on_bad' failed: it reads view 'no_table', which cannot be created",
    );
    expect(await namespace.route('SELECT * FROM waits')).toMatchObject({
      engine: 'duckdb',
      datasets: ['late'],
    });
  });

  it('a swap is seen through the views (and a new dataset serving creates the views waiting for it)', async () => {
    const orders2 = join(generations, 'orders-2.duckdb');
    await makeDuckDbFile(orders2, [
      "CREATE TABLE orders AS SELECT i::BIGINT AS id, (i * 100)::BIGINT AS amount, 'u0' AS customer FROM range(2) t(i)",
    ]);
    const late = join(generations, 'late.duckdb');
    await makeDuckDbFile(late, ['CREATE TABLE late AS SELECT 7 AS seven']);
    await namespace.setCatalog(
      catalog(
        [
          dataset('orders', 'duckdb', orders2, 12),
          dataset('users', 'sqlite', users, 21),
          dataset('late', 'duckdb', late, 1),
        ],
        VIEWS,
      ),
    );
    const big = await rows('SELECT * FROM big_orders ORDER BY id');
    expect(big.rows).toEqual([{ id: 1, amount: 100 }]);
    expect(big.read).toEqual([{ name: 'orders', snapshotId: 12 }]);
    expect((await rows('SELECT * FROM waits')).rows).toEqual([{ seven: 7 }]);
  });
});

describe('SqliteNamespace: Spice names', () => {
  it('reads spice.public.<name> and public.<name> as the dataset', async () => {
    const main = join(dir, 'main.sqlite');
    await makeSqliteFile(main, []);
    const namespace = new SqliteNamespace({ mainPath: main });
    try {
      namespace.setCatalog(catalog([dataset('users', 'sqlite', users, 21)]));
      for (const name of [
        'users',
        'public.users',
        'spice.public.users',
        '"spice"."public"."users"',
        'spice.users',
      ]) {
        const outcome = namespace.rows(
          `SELECT count(*) AS n FROM ${name} WHERE handle <> 'spice.public.x'`,
          [],
        );
        expect(outcome, name).toMatchObject({
          kind: 'rows',
          rows: [{ n: 3 }],
          read: [{ name: 'users', snapshotId: 21 }],
        });
      }
    } finally {
      namespace.close();
    }
  });
});

describe('spice-names', () => {
  it('takes Spice qualifiers off dataset names only, never inside literals or comments', () => {
    const isDataset = (name: string) => ['users', 'orders'].includes(name);
    expect(
      withoutSpiceQualifiers('SELECT * FROM spice.public.users u JOIN public.orders o ON true', isDataset),
    ).toBe('SELECT * FROM users u JOIN orders o ON true');
    expect(
      withoutSpiceQualifiers("SELECT 'spice.public.users' -- public.users\n FROM x.public.users", isDataset),
    ).toBe("SELECT 'spice.public.users' -- public.users\n FROM x.public.users");
    expect(withoutSpiceQualifiers('SELECT * FROM public.other', isDataset)).toBe(
      'SELECT * FROM public.other',
    );
  });

  it('sends listings, views and the runtime tables to DuckDB', () => {
    const sqliteOnly = [{ name: 'users', engine: 'sqlite' as const }];
    const firstEngine = (sql: string, pod: readonly DatasetEngine[], views: readonly string[]) =>
      engineFirst(sql, pod, views).engine;
    expect(firstEngine('SHOW TABLES', sqliteOnly, [])).toBe('duckdb');
    expect(firstEngine('describe users', sqliteOnly, [])).toBe('duckdb');
    expect(firstEngine('SELECT * FROM information_schema.tables', sqliteOnly, [])).toBe('duckdb');
    expect(firstEngine('SELECT * FROM spice.runtime.task_history', sqliteOnly, [])).toBe('duckdb');
    expect(firstEngine('SELECT * FROM Big_Orders', sqliteOnly, ['big_orders'])).toBe('duckdb');
    expect(firstEngine("SELECT 'SHOW TABLES' FROM users", sqliteOnly, ['big_orders'])).toBe('sqlite');
    // A pod of SQLite datasets only runs what reads no table in SQLite too.
    expect(firstEngine('SELECT 1', sqliteOnly, [])).toBe('sqlite');
    expect(firstEngine('SELECT 1', [{ name: 'orders', engine: 'duckdb' }], [])).toBe('duckdb');
    expect(firstEngine('SELECT 1', [], [])).toBe('duckdb');
  });

  it('sends what reads only SQLite datasets beside DuckDB ones to SQLite, the rest to DuckDB', () => {
    const pod = [
      { name: 'orders', engine: 'duckdb' as const },
      { name: 'users', engine: 'sqlite' as const },
      { name: 'accounts', engine: 'sqlite' as const },
      { name: 'later', engine: undefined },
    ];
    const first = (sql: string) => engineFirst(sql, pod, ['big_orders']).engine;
    for (const sql of [
      'SELECT name FROM users WHERE id = 3',
      'select * from [Users] u join "accounts" a on u.id = a.id',
      'SELECT * FROM spice.public.users',
      'SELECT * FROM public.users, accounts',
      'SELECT * FROM users.users',
      "SELECT 'orders' AS label FROM users -- orders\n",
      'WITH recent AS (SELECT * FROM users) SELECT * FROM recent',
    ]) {
      expect(first(sql), sql).toBe('sqlite');
    }
    for (const sql of [
      'SELECT * FROM orders',
      'SELECT * FROM users JOIN orders USING (id)',
      // a word shared with a DuckDB dataset, or one whose engine is not known yet
      'SELECT orders FROM users',
      'SELECT * FROM users JOIN later USING (id)',
      // DuckDB's own names: `main.users` is its placeholder view
      'SELECT * FROM main.users',
      'SELECT * FROM users WHERE id IN (SELECT id FROM memory.main.users)',
      // no SQLite table read: a name as a column or a table function
      'SELECT 1 AS users',
      'SELECT * FROM users(3)',
      'SELECT 1',
      'SELECT * FROM big_orders',
      'SHOW TABLES',
    ]) {
      expect(first(sql), sql).toBe('duckdb');
    }
    // The datasets named as tables, as configured (what a timeout names before SQLite said what it read).
    expect(engineFirst('select * from [Users] u join "accounts" a on u.id = a.id', pod, [])).toEqual({
      engine: 'sqlite',
      tables: ['users', 'accounts'],
    });
    expect(engineFirst('SELECT 1', [{ name: 'Users', engine: 'sqlite' }], [])).toEqual({
      engine: 'sqlite',
      tables: [],
    });
  });
});

describe('DuckDbNamespace: the task history table', () => {
  it('is filled by setTaskHistory, and is no table when the task history is off', async () => {
    const namespace = await DuckDbNamespace.create(options());
    try {
      await namespace.setCatalog(catalog([dataset('orders', 'duckdb', orders, 11)]));
      await namespace.setTaskHistory({
        version: 1,
        rows: [
          {
            trace_id: 't',
            span_id: 's',
            parent_span_id: null,
            task: 'sql_query',
            input: 'SELECT 1',
            captured_output: null,
            start_us: 1_700_000_000_000_000,
            end_us: 1_700_000_000_002_500,
            execution_duration_ms: 2.5,
            error_message: null,
            labels: { datasets: 'orders' },
          },
        ],
      });
      const sql =
        "SELECT input, execution_duration_ms, labels['datasets'] AS datasets FROM spice.runtime.task_history";
      const route = await namespace.route(sql);
      expect(await namespace.rows(sql, [], route)).toMatchObject({
        kind: 'rows',
        rows: [{ input: 'SELECT 1', execution_duration_ms: 2.5, datasets: 'orders' }],
      });
      await namespace.setCatalog({
        ...catalog([dataset('orders', 'duckdb', orders, 11)]),
        taskHistory: false,
      });
      const shown = await namespace.rows('SHOW TABLES', [], await namespace.route('SHOW TABLES'));
      expect(JSON.stringify(shown)).not.toContain('task_history');
    } finally {
      await namespace.close();
    }
  });
});
