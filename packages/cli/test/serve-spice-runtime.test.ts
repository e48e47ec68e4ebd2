/**
 * `ferry serve` on a spicepod with Spice's views, results cache and task history, used as a Spice
 * user would over HTTP (plain fetch) and Flight (Spice's JS SDK): Spice's names
 * (`spice.public.<name>`, `public.<name>`) on both engines and in joins across them; `SHOW TABLES` and
 * `information_schema` listing every dataset and view once; a view queried like a table; the
 * cache's `X-Cache` / `Results-Cache-Status` headers, `Cache-Control: no-cache`, an `ETag` that
 * answers `If-None-Match` with 304 until a swap; `spice.runtime.task_history`; the cache's
 * counters in `/metrics`; `ferry validate` naming a broken view.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SpiceClient } from '@spiceai/spice';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ferry, type Running, startFerry } from './helpers.js';

describe('ferry serve: views, Spice names, the results cache and the task history', () => {
  let dir: string;
  let location: string;
  let serve: Running;
  let base: string;
  let flight: string;

  const publish = (dataset: string, engine: 'duckdb' | 'sqlite', sql: string) =>
    ferry(['publish', '--location', location, '--dataset', dataset, '--engine', engine, '--sql', sql]);
  const ORDERS_V1 =
    "SELECT i::BIGINT AS id, (i * 10)::BIGINT AS amount, 'u' || (i % 3) AS customer FROM range(6) t(i)";
  const ORDERS_V2 =
    "SELECT i::BIGINT AS id, (i * 100)::BIGINT AS amount, 'u' || (i % 3) AS customer FROM range(4) t(i)";

  const sql = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${base}/v1/sql`, { method: 'POST', headers: { 'content-type': 'text/plain', ...headers }, body });
  const rows = async (body: string) => {
    const response = await sql(body);
    expect(response.status, body).toBe(200);
    return (await response.json()) as Record<string, unknown>[];
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ferry-serve-spice-'));
    const storeDir = join(dir, 'store');
    await mkdir(storeDir);
    location = pathToFileURL(`${storeDir}/`).href;
    expect((await publish('orders', 'duckdb', ORDERS_V1)).code).toBe(0);
    expect(
      (
        await publish(
          'users',
          'sqlite',
          "SELECT 'u' || i AS handle, (i + 0.5)::DOUBLE AS score FROM range(3) t(i)",
        )
      ).code,
    ).toBe(0);
    await mkdir(join(dir, 'views'));
    await writeFile(
      join(dir, 'views', 'per_user.sql'),
      'SELECT u.handle, sum(o.amount) AS total\nFROM orders o JOIN users u ON o.customer = u.handle\nGROUP BY u.handle\n',
    );
    await writeFile(
      join(dir, 'spicepod.yaml'),
      `version: v1
kind: Spicepod
name: spice-runtime
snapshots:
  location: ${location}
datasets:
  - from: postgres:public.orders
    name: orders
    acceleration: { engine: duckdb, mode: file, refresh_mode: snapshot, snapshots: enabled, refresh_check_interval: 10m }
  - from: postgres:public.users
    name: users
    acceleration: { engine: sqlite, mode: file, refresh_mode: snapshot, snapshots: enabled, refresh_check_interval: 10m }
views:
  - name: big_orders
    description: Orders of 30 or more
    sql: SELECT id, amount FROM orders WHERE amount >= 30
  - name: per_user
    sql_ref: views/per_user.sql
    dependsOn: [orders, users]
runtime:
  caching:
    sql_results:
      item_ttl: 10m
  task_history:
    captured_output: truncated
`,
    );
    serve = startFerry([
      'serve',
      join(dir, 'spicepod.yaml'),
      '--http',
      '127.0.0.1:0',
      '--flight',
      '127.0.0.1:0',
      '--data-dir',
      join(dir, 'data'),
    ]);
    flight = (await serve.waitForStdout(/^Flight on grpc:\/\/(127\.0\.0\.1:\d+)$/m))[1] as string;
    base = (await serve.waitForStdout(/^Listening on (http:\/\/\S+)$/m))[1] as string;
  });

  afterAll(async () => {
    if (serve !== undefined && serve.child.exitCode === null) serve.child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it("resolves Spice's names on both engines and across them", async () => {
    await expect
      .poll(async () => (await fetch(`${base}/v1/ready`)).status, { timeout: 60_000, interval: 200 })
      .toBe(200);
    for (const name of ['orders', 'public.orders', 'spice.public.orders']) {
      expect(await rows(`SELECT count(*) AS n FROM ${name}`), name).toEqual([{ n: 6 }]);
    }
    for (const name of ['users', 'public.users', 'spice.public.users']) {
      expect(await rows(`SELECT count(*) AS n FROM ${name}`), name).toEqual([{ n: 3 }]);
    }
    expect(
      await rows(
        'SELECT u.handle, count(*) AS n FROM spice.public.orders o JOIN public.users u ON o.customer = u.handle GROUP BY 1 ORDER BY 1',
      ),
    ).toEqual([
      { handle: 'u0', n: 2 },
      { handle: 'u1', n: 2 },
      { handle: 'u2', n: 2 },
    ]);
  });

  it('lists every dataset and view once, under spice.public, never an internal name', async () => {
    const shown = await rows('SHOW TABLES');
    expect(shown.filter((row) => row.table_schema === 'public')).toEqual([
      { table_catalog: 'spice', table_schema: 'public', table_name: 'big_orders', table_type: 'VIEW' },
      { table_catalog: 'spice', table_schema: 'public', table_name: 'orders', table_type: 'BASE TABLE' },
      { table_catalog: 'spice', table_schema: 'public', table_name: 'per_user', table_type: 'VIEW' },
      { table_catalog: 'spice', table_schema: 'public', table_name: 'users', table_type: 'BASE TABLE' },
    ]);
    const tables = await rows(
      'SELECT table_catalog, table_schema, table_name FROM information_schema.tables',
    );
    expect(JSON.stringify(tables)).not.toContain('ferry_');
    expect(tables.filter((row) => row.table_name === 'orders')).toHaveLength(1);
    const columns = await rows(
      "SELECT column_name FROM information_schema.columns WHERE table_name = 'users' ORDER BY ordinal_position",
    );
    expect(columns).toEqual([{ column_name: 'handle' }, { column_name: 'score' }]);
    expect((await rows('DESCRIBE spice.public.big_orders')).map((row) => row.column_name)).toEqual([
      'id',
      'amount',
    ]);
  });

  it('answers views over HTTP and over Flight with Spice’s SDK', async () => {
    expect(await rows('SELECT * FROM big_orders ORDER BY id')).toEqual([
      { id: 3, amount: 30 },
      { id: 4, amount: 40 },
      { id: 5, amount: 50 },
    ]);
    expect(await rows('SELECT * FROM spice.public.per_user ORDER BY handle')).toEqual([
      { handle: 'u0', total: 30 },
      { handle: 'u1', total: 50 },
      { handle: 'u2', total: 70 },
    ]);
    const client = new SpiceClient({
      flightUrl: flight,
      flightOnly: true,
      httpUrl: 'http://127.0.0.1:9',
      logging: false,
    });
    client.setMaxRetries(0);
    const table = await client.sql('SELECT count(*) AS n, sum(amount) AS total FROM big_orders');
    expect(table.toArray().map((row) => [Number(row.n), Number(row.total)])).toEqual([[3, 120]]);
    const views = await (await fetch(`${base}/v1/views`)).json();
    expect(views).toEqual([
      {
        name: 'big_orders',
        description: 'Orders of 30 or more',
        sql: 'SELECT id, amount FROM orders WHERE amount >= 30',
        dependsOn: [],
      },
      {
        name: 'per_user',
        description: null,
        sql: 'SELECT u.handle, sum(o.amount) AS total\nFROM orders o JOIN users u ON o.customer = u.handle\nGROUP BY u.handle',
        dependsOn: ['orders', 'users'],
      },
    ]);
  });

  it("answers a repeated query from the cache with Spice's headers, an ETag and 304 until a swap", async () => {
    const statement = 'SELECT sum(amount) AS total FROM orders WHERE id >= 1';
    const first = await sql(statement);
    expect(first.headers.get('x-cache')).toBe('Miss from spiceai');
    expect(first.headers.get('results-cache-status')).toBe('MISS');
    const etag = first.headers.get('etag') as string;
    expect(etag).toMatch(/^"[\w-]+\.\w+"$/);
    expect(await first.json()).toEqual([{ total: 150 }]);
    await expect
      .poll(async () => (await sql(statement)).headers.get('x-cache'), { timeout: 10_000, interval: 50 })
      .toBe('Hit from spiceai');
    const hit = await sql(statement);
    expect(hit.headers.get('results-cache-status')).toBe('HIT');
    expect(hit.headers.get('etag')).toBe(etag);
    expect(await hit.json()).toEqual([{ total: 150 }]);
    const bypass = await sql(statement, { 'cache-control': 'no-cache' });
    expect(bypass.headers.get('results-cache-status')).toBe('BYPASS');
    expect(bypass.headers.get('x-cache')).toBeNull();
    const unchanged = await sql(statement, { 'if-none-match': etag });
    expect(unchanged.status).toBe(304);
    expect(unchanged.headers.get('etag')).toBe(etag);
    // Another format of the same result is another representation: another ETag.
    const csv = await sql(statement, { accept: 'text/csv' });
    expect(csv.headers.get('etag')).not.toBe(etag);
    // A clock is never cached (and has no ETag).
    const clock = await sql('SELECT now() AS t, count(*) AS n FROM orders');
    expect([clock.headers.get('x-cache'), clock.headers.get('etag')]).toEqual([null, null]);

    expect((await publish('orders', 'duckdb', ORDERS_V2)).code).toBe(0);
    expect((await fetch(`${base}/v1/datasets/orders/acceleration/refresh`, { method: 'POST' })).status).toBe(
      201,
    );
    await expect
      .poll(async () => (await sql(statement, { 'if-none-match': etag })).status, {
        timeout: 30_000,
        interval: 200,
      })
      .toBe(200);
    const swapped = await sql(statement);
    expect(await swapped.json()).toEqual([{ total: 600 }]);
    expect(swapped.headers.get('etag')).not.toBe(etag);
    expect(await rows('SELECT count(*) AS n FROM big_orders')).toEqual([{ n: 3 }]);
  });

  it('records every query in spice.runtime.task_history, and the cache in /metrics', async () => {
    const history = await rows(
      "SELECT input, error_message, labels['cache'] AS cache FROM spice.runtime.task_history WHERE input LIKE 'SELECT sum(amount) AS total FROM orders%' ORDER BY start_time",
    );
    expect(history.length).toBeGreaterThanOrEqual(5);
    expect(history.map((row) => row.cache)).toContain('hit');
    expect(history.map((row) => row.cache)).toContain('bypass');
    await sql('SELECT nothing FROM orders');
    const failed = await rows(
      "SELECT error_message FROM spice.runtime.task_history WHERE input = 'SELECT nothing FROM orders'",
    );
    expect(failed).toEqual([{ error_message: expect.stringContaining('nothing') }]);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    const value = (name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(metrics)?.[1]);
    expect(value('results_cache_hits')).toBeGreaterThanOrEqual(1);
    expect(value('results_cache_requests')).toBeGreaterThan(value('results_cache_hits'));
    expect(value('results_cache_max_size_bytes')).toBe(128 * 2 ** 20);
    expect(value('results_cache_size_bytes')).toBeGreaterThan(0);
  });
});

describe('ferry validate with views', () => {
  it('names a view without SQL, and one whose sql_ref cannot be read', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ferry-validate-views-'));
    try {
      const path = join(dir, 'spicepod.yaml');
      await writeFile(
        path,
        `version: v1
kind: Spicepod
name: views
views:
  - name: empty
  - name: missing
    sql_ref: missing.sql
  - name: fine
    sql: SELECT 1
`,
      );
      const result = await ferry(['validate', path]);
      expect(result.code).toBe(1);
      expect(result.stdout).toContain(
        'views[0].sql: missing; give the view its SELECT statement as sql, or a file holding it as sql_ref',
      );
      expect(result.stdout).toContain(
        "views[1].sql_ref: 'missing.sql' cannot be read (ENOENT: no such file); give the path (beside the spicepod) of a file holding the view's SELECT statement",
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
