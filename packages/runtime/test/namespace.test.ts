/**
 * One SQL namespace through the embed API, with real threads and pools on a file:// store: queries
 * that read no dataset, joins within DuckDB, within SQLite and across the two, readiness of every
 * dataset a join names, Arrow tables and streams (a million rows past `maxResultRows`),
 * cancellation by AbortSignal, and joins that keep answering while both sides swap once a second —
 * each dataset of a query read at one snapshot throughout, and reported as read.
 */
import { getEventListeners } from 'node:events';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type PublishResult, publishSnapshot } from '@ferry/writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, memoryLogger, type Runtime } from '../src/index.js';
import { queriesInFlight, queriesSent } from '../src/testing.js';
import { nextEvent, podYaml, tempDir } from './support.js';

let work: string;
let location: string;
let runtime: Runtime;
const MAX_ROWS = 1_000;

/** Version `v` of a dataset: `100 + v` rows, every one carrying `v` (so a mix would show). */
function publish(dataset: string, engine: 'duckdb' | 'sqlite', version: number): Promise<PublishResult> {
  return publishSnapshot({
    dataset,
    engine,
    location,
    source: {
      sql: `SELECT i::BIGINT AS id, ${version}::BIGINT AS version, 'n' || (i % 7) AS name FROM range(${100 + version}) t(i)`,
    },
    notNull: ['id'],
  });
}

/** Waits until the pools have answered every query (a cancelled query counts until its engine stopped). */
async function drained(deadlineMs = 10_000): Promise<void> {
  const started = performance.now();
  while (queriesInFlight(runtime) > 0) {
    if (performance.now() - started > deadlineMs)
      throw new Error(`${queriesInFlight(runtime)} queries still run`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const snapshots = new Map<string, Map<number, number>>();

async function publishAndRecord(
  dataset: string,
  engine: 'duckdb' | 'sqlite',
  version: number,
): Promise<number> {
  const published = await publish(dataset, engine, version);
  let byId = snapshots.get(dataset);
  if (byId === undefined) {
    byId = new Map();
    snapshots.set(dataset, byId);
  }
  byId.set(published.snapshotId, version);
  return published.snapshotId;
}

beforeAll(async () => {
  work = await tempDir('ferry-namespace-');
  await mkdir(join(work, 'store'));
  location = `file://${join(work, 'store')}/`;
  await publishAndRecord('orders', 'duckdb', 1);
  await publishAndRecord('customers', 'duckdb', 1);
  await publishAndRecord('users', 'sqlite', 1);
  await publishAndRecord('accounts', 'sqlite', 1);
  const yaml = podYaml(location, [
    { name: 'orders', engine: 'duckdb', interval: '1h' },
    { name: 'customers', engine: 'duckdb', interval: '1h' },
    { name: 'users', engine: 'sqlite', interval: '1h' },
    { name: 'accounts', engine: 'sqlite', interval: '1h' },
    { name: 'late', engine: 'duckdb', interval: '1h' },
  ]);
  runtime = await createRuntime(
    { yaml, baseDir: work },
    { logger: memoryLogger(), dataDir: join(work, 'data'), maxResultRows: MAX_ROWS, queryTimeoutMs: 20_000 },
  );
  await Promise.all(['orders', 'customers', 'users', 'accounts'].map((name) => runtime.ready(name)));
});

afterAll(async () => {
  await runtime?.close();
  await rm(work, { recursive: true, force: true });
});

describe('one namespace through the embed API', () => {
  it('answers statements that read no dataset, in DuckDB', async () => {
    expect(await runtime.query('SELECT 1 AS one')).toMatchObject({
      rows: [{ one: 1 }],
      datasets: [],
      dataset: null,
      snapshotId: null,
      engine: 'duckdb',
    });
    const version = await runtime.query('SELECT version() AS v');
    expect(version.rows[0]?.v).toMatch(/^v\d+\.\d+/);
  });

  it('joins two DuckDB datasets natively, reporting both at their snapshots', async () => {
    const result = await runtime.query(
      'SELECT count(*) AS n, max(o.version) AS ov, max(c.version) AS cv FROM orders o JOIN customers c USING (id) WHERE o.name = ?',
      ['n3'],
    );
    expect(result.rows).toEqual([{ n: 14, ov: 1, cv: 1 }]);
    expect(result.engine).toBe('duckdb');
    expect(result.datasets.map((read) => read.name)).toEqual(['orders', 'customers']);
    expect([result.dataset, result.snapshotId]).toEqual([null, null]);
    for (const read of result.datasets) expect(snapshots.get(read.name)?.get(read.snapshotId)).toBe(1);
  });

  it('joins two SQLite datasets in SQLite (its quoting too)', async () => {
    const result = await runtime.query(
      'SELECT count(*) AS n FROM [users] u JOIN accounts a ON u.id = a.id WHERE a.id < ?',
      [50],
    );
    expect(result).toMatchObject({ rows: [{ n: 50 }], engine: 'sqlite' });
    expect(result.datasets.map((read) => read.name).sort()).toEqual(['accounts', 'users']);
  });

  it('joins across engines: the SQLite side is read into DuckDB', async () => {
    const result = await runtime.query(
      'SELECT count(*) AS n, sum(o.id + u.id) AS s FROM orders o JOIN users u ON o.id = u.id AND o.name = u.name',
    );
    expect(result).toMatchObject({ rows: [{ n: 101, s: 10100 }], engine: 'duckdb' });
    expect(result.datasets.map((read) => read.name)).toEqual(['orders', 'users']);
  });

  it('a single-dataset query keeps dataset and snapshotId', async () => {
    const result = await runtime.query('SELECT count(*) AS n FROM users');
    expect(result).toMatchObject({ rows: [{ n: 101 }], dataset: 'users', engine: 'sqlite' });
    expect(snapshots.get('users')?.get(result.snapshotId as number)).toBe(1);
  });

  it('sends a statement it sees first to the engine that runs it: one reading only SQLite datasets never visits DuckDB', async () => {
    const cases: { sql: string; engine: 'duckdb' | 'sqlite'; sent: { duckdb: number; sqlite: number } }[] = [
      {
        sql: 'SELECT count(*) AS first_n FROM users WHERE id < 10',
        engine: 'sqlite',
        sent: { duckdb: 0, sqlite: 1 },
      },
      {
        sql: 'SELECT u.name AS first_name FROM spice.public.users u JOIN accounts a ON u.id = a.id WHERE a.id = 3',
        engine: 'sqlite',
        sent: { duckdb: 0, sqlite: 1 },
      },
      { sql: 'SELECT count(*) AS first_n FROM orders', engine: 'duckdb', sent: { duckdb: 1, sqlite: 0 } },
      {
        sql: 'SELECT count(*) AS first_n FROM orders o JOIN users u USING (id)',
        engine: 'duckdb',
        sent: { duckdb: 1, sqlite: 0 },
      },
      // A word that only shares a DuckDB dataset's name: DuckDB's parser finds the SQLite read and re-routes.
      {
        sql: 'SELECT count(*) AS orders FROM users WHERE id < 10',
        engine: 'sqlite',
        sent: { duckdb: 1, sqlite: 1 },
      },
    ];
    for (const { sql, engine, sent } of cases) {
      const before = queriesSent(runtime);
      const result = await runtime.query(sql);
      const after = queriesSent(runtime);
      expect(result.engine, sql).toBe(engine);
      expect({ duckdb: after.duckdb - before.duckdb, sqlite: after.sqlite - before.sqlite }, sql).toEqual(
        sent,
      );
    }
    // Its shape is known now: a new literal goes straight to SQLite too.
    const before = queriesSent(runtime);
    await runtime.query('SELECT count(*) AS orders FROM users WHERE id < 7');
    expect(queriesSent(runtime).duckdb).toBe(before.duckdb);
  });

  it('a join naming a dataset that serves nothing yet fails naming it, or waits for it', async () => {
    const sql = 'SELECT count(*) AS n FROM orders JOIN late USING (id)';
    await expect(runtime.query(sql)).rejects.toMatchObject({
      code: 'ERR_DATASET_NOT_READY',
      message: expect.stringContaining("Dataset 'late' is not ready"),
    });
    const waiting = runtime.query(sql, [], { waitForReady: true, readyTimeoutMs: 20_000 });
    await publishAndRecord('late', 'duckdb', 3);
    await runtime.send('late', 'poll.now');
    expect((await waiting).rows).toEqual([{ n: 101 }]);
  });

  it('an unknown table is named with the datasets', async () => {
    await expect(runtime.query('SELECT * FROM orders JOIN nope USING (id)')).rejects.toThrow(
      "Table 'nope' is not a dataset of this runtime; the datasets are: orders, customers, users, accounts, late.",
    );
  });

  it('a serving dataset named under a qualifier that holds no dataset is unknown as written, not "not ready"', async () => {
    // DuckDB's error names the table without its qualifier (`Table with name orders does not exist`).
    for (const [written, sql] of [
      ['main.orders', 'SELECT * FROM main.orders'],
      ['memory.main.orders', 'SELECT * FROM memory.main.orders'],
      ['system.main.orders', 'SELECT * FROM system.main.orders'],
      ['temp.orders', 'SELECT count(*) FROM customers JOIN temp.orders USING (id)'],
      ['main.users', 'SELECT * FROM main.users'],
      ['nosuch.orders', 'SELECT * FROM nosuch.orders'],
    ]) {
      await expect(runtime.query(sql as string), sql).rejects.toMatchObject({
        code: 'ERR_UNKNOWN_DATASET',
        message: `Table '${written}' is not a dataset of this runtime; the datasets are: orders, customers, users, accounts, late.`,
      });
    }
  });

  it('a small SQLite result streamed again and again arrives whole each time (its answer never overtakes its batches)', async () => {
    const { rows } = await runtime.query('SELECT count(*) AS n FROM users');
    const expected = Number(rows[0]?.n);
    expect(expected).toBeGreaterThan(0);
    for (let round = 0; round < 40; round++) {
      const stream = await runtime.queryStream('SELECT * FROM users', []);
      let received = 0;
      for await (const batch of stream.batches) received += batch.numRows;
      expect(received, `round ${round}`).toBe(expected);
      expect((await runtime.queryArrow('SELECT id FROM users')).table.numRows, `round ${round}`).toBe(
        expected,
      );
    }
  });

  it('answers Arrow tables (capped like JSON) and streams a million rows past maxResultRows', async () => {
    const arrow = await runtime.queryArrow(
      'SELECT o.id, c.name FROM orders o JOIN customers c USING (id) ORDER BY o.id LIMIT 5',
    );
    expect(arrow.table.numRows).toBe(5);
    expect(arrow.table.schema.fields.map((field) => `${field.name}:${field.type}`)).toEqual([
      'id:Int64',
      'name:Utf8',
    ]);
    expect(arrow.table.get(4)?.toJSON()).toEqual({ id: 4n, name: 'n4' });
    await expect(runtime.queryArrow('SELECT * FROM range(5000)')).rejects.toMatchObject({
      code: 'ERR_RESULT_TOO_LARGE',
    });
    await expect(runtime.queryArrow('SELECT * FROM users a, users b')).rejects.toMatchObject({
      code: 'ERR_RESULT_TOO_LARGE',
      message: `The query on dataset 'users' returned more than ${MAX_ROWS} rows; add a LIMIT or raise maxResultRows.`,
    });
    await expect(runtime.query('SELECT * FROM range(1000000)')).rejects.toMatchObject({
      code: 'ERR_RESULT_TOO_LARGE',
    });

    const stream = await runtime.queryStream('SELECT i, i * 2 AS twice FROM range(1000000) t(i)');
    expect(stream.schema.fields.map((field) => field.name)).toEqual(['i', 'twice']);
    let rows = 0;
    let last = -1n;
    for await (const batch of stream.batches) {
      rows += batch.numRows;
      last = batch.getChild('i')?.get(batch.numRows - 1) as bigint;
    }
    expect([rows, last]).toEqual([1_000_000, 999_999n]);

    const sqliteStream = await runtime.queryStream(
      'SELECT u.id, a.name FROM users u JOIN accounts a ON u.id = a.id',
    );
    let sqliteRows = 0;
    for await (const batch of sqliteStream.batches) sqliteRows += batch.numRows;
    expect([sqliteStream.engine, sqliteRows]).toEqual(['sqlite', 101]);
  });

  it('leaving a stream early, or its AbortSignal, stops the query in its engine', async () => {
    const stream = await runtime.queryStream('SELECT * FROM range(1000000000000)');
    for await (const batch of stream.batches) {
      expect(batch.numRows).toBeGreaterThan(0);
      break;
    }
    await drained();
    const controller = new AbortController();
    const running = runtime.query('SELECT count(*) FROM orders, range(1000000000000)', [], {
      signal: controller.signal,
    });
    const sqlite = runtime.query(
      'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c, users',
      [],
      { signal: controller.signal },
    );
    controller.abort();
    await expect(running).rejects.toMatchObject({ code: 'ERR_QUERY_CANCELLED' });
    await expect(sqlite).rejects.toMatchObject({ code: 'ERR_QUERY_CANCELLED' });
    await drained();
    expect((await runtime.query('SELECT count(*) AS n FROM orders')).rows).toEqual([{ n: 101 }]);
  });

  it('a long-lived AbortSignal (one per connection, or the application’s) keeps no listener of a query that ended', async () => {
    const controller = new AbortController();
    const { signal } = controller;
    for (let i = 0; i < 12; i++) {
      for (const table of ['orders', 'users']) {
        const sql = `SELECT count(*) AS n FROM ${table} WHERE id >= ${i}`;
        await runtime.query(sql, [], { signal });
        await runtime.queryJson(sql, [], { signal, noCache: true });
        await runtime.queryArrow(sql, [], { signal, noCache: true });
        const stream = await runtime.queryStream(sql, [], { signal, noCache: true });
        for await (const batch of stream.batches) expect(batch.numRows).toBe(1);
      }
    }
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    // And it still cancels the next query it is passed to.
    const running = runtime.query(
      'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c, users',
      [],
      { signal },
    );
    controller.abort();
    await expect(running).rejects.toMatchObject({ code: 'ERR_QUERY_CANCELLED' });
    await drained();
  });

  it('a stream refused after it started (the staleness bound) keeps no listener on the caller’s signal', async () => {
    const { signal } = new AbortController();
    for (let i = 0; i < 6; i++) {
      for (const table of ['orders', 'users']) {
        const refused = runtime.queryStream(`SELECT * FROM ${table} WHERE id >= ${i}`, [], {
          signal,
          noCache: true,
          maxStalenessMs: 0,
        });
        await expect(refused).rejects.toMatchObject({ code: 'ERR_STALE' });
      }
    }
    await drained();
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  });

  it('a stream asked with a signal already aborted is cancelled before it starts', async () => {
    const controller = new AbortController();
    controller.abort(new Error('the client went away'));
    for (const table of ['orders', 'users']) {
      const stream = runtime.queryStream(`SELECT * FROM ${table}`, [], {
        signal: controller.signal,
        noCache: true,
      });
      await expect(stream).rejects.toMatchObject({ code: 'ERR_QUERY_CANCELLED' });
    }
    await drained();
  });
});

/**
 * Joins within DuckDB, within SQLite and across engines run without a pause while both sides of
 * each join swap to a new version once a second. Every version has its own row count and every row
 * carries its version, so a dataset read at two generations in one query would show (two versions,
 * or a count of neither); each answer must also match the snapshots it reports.
 */
describe('joins while both sides swap once a second', () => {
  it('no join fails and none mixes generations', async () => {
    const pairs = [
      ['orders', 'customers'],
      ['users', 'accounts'],
      ['orders', 'users'],
    ] as const;
    const engines: Record<string, 'duckdb' | 'sqlite'> = {
      orders: 'duckdb',
      customers: 'duckdb',
      users: 'sqlite',
      accounts: 'sqlite',
    };
    // The first few failures and wrong answers, and how many there were: a query failing at once
    // in these tight loops would otherwise fill the heap before the assertions could report it.
    const failures: unknown[] = [];
    const wrong: string[] = [];
    let failed = 0;
    let wrongs = 0;
    let answered = 0;
    let running = true;
    const seen = new Set<string>();
    const loops = pairs.map(async ([left, right]) => {
      const sql = `SELECT min(a.version) AS alo, max(a.version) AS ahi, min(b.version) AS blo, max(b.version) AS bhi,
          count(*) AS n, (SELECT count(*) FROM ${left}) AS an, (SELECT count(*) FROM ${right}) AS bn
        FROM ${left} a JOIN ${right} b ON a.id = b.id`;
      while (running) {
        try {
          const result = await runtime.query(sql);
          answered++;
          const row = result.rows[0] as Record<string, number>;
          const reported = Object.fromEntries(
            result.datasets.map((read) => [read.name, snapshots.get(read.name)?.get(read.snapshotId)]),
          );
          const a = reported[left] as number;
          const b = reported[right] as number;
          seen.add(`${left}:${a}`);
          const ok =
            row.alo === a &&
            row.ahi === a &&
            row.blo === b &&
            row.bhi === b &&
            row.an === 100 + a &&
            row.bn === 100 + b &&
            row.n === Math.min(100 + a, 100 + b);
          if (!ok && wrongs++ < 5)
            wrong.push(`${sql} → ${JSON.stringify(row)} reported ${JSON.stringify(reported)}`);
        } catch (error) {
          if (failed++ < 5) failures.push(error);
          // A failure that comes at once must not starve the swaps this test waits for.
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
    });
    const swapsPerDataset = 5;
    for (let version = 2; version < 2 + swapsPerDataset; version++) {
      const second = new Promise((resolve) => setTimeout(resolve, 1_000));
      await Promise.all(
        Object.entries(engines).map(async ([dataset, engine]) => {
          const snapshotId = await publishAndRecord(dataset, engine, version);
          const swapped = nextEvent(
            runtime,
            'swap',
            (event) => event.dataset === dataset && event.to === snapshotId,
            20_000,
          );
          await runtime.send(dataset, 'poll.now');
          // Seen once under a loaded full run (21 s): say what the dataset and the joins were doing.
          await swapped.catch((error: unknown) => {
            const info = runtime.datasets().find((entry) => entry.name === dataset);
            throw new Error(
              `${dataset} did not swap to ${snapshotId}: ${JSON.stringify({ state: info?.state, error: info?.error, status: info?.status })}; joins answered ${answered}, failed ${failed} (first: ${String(failures[0])})`,
              { cause: error },
            );
          });
        }),
      );
      await second;
    }
    running = false;
    await Promise.all(loops);
    expect({ failed, failures }).toEqual({ failed: 0, failures: [] });
    expect({ wrongs, wrong }).toEqual({ wrongs: 0, wrong: [] });
    expect(answered).toBeGreaterThan(30);
    // The joins saw the swaps: more than one version of orders was read.
    expect([...seen].filter((key) => key.startsWith('orders:')).length).toBeGreaterThan(2);
  });
});
