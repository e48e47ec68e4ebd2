/**
 * The SQL results cache. On its own (a simulated clock): keyed by statement, parameters, kind and
 * the snapshots read; bounded in bytes (least recently used out, evictions counted) and by
 * item_ttl; a swap retires exactly the entries that read the swapped dataset; a result read at a
 * snapshot that has since moved is not kept; clocks and random sources are never cached. In a real
 * runtime: a repeated query is answered from the cache (`cache: 'hit'`, the same version), a swap
 * makes the next one run again and read the new snapshot, `noCache` bypasses, a view is cached by
 * the datasets under it, and the counters show it all.
 */
import { getEventListeners } from 'node:events';
import type { ResultsCacheConfig } from '@ferry/core/base';
import { PARAMETER_TYPES_METADATA } from '@ferry/engines/namespaces';
import { type LocalAws, startLocalAws } from '@ferry/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, memoryLogger, type Runtime } from '../src/index.js';
import { type PurgeTimer, ResultsCache, resultVersion } from '../src/query/results-cache.js';
import { BUCKET, nextEvent, publishVersion, spicepod, tempDir } from './support.js';

describe('ResultsCache', () => {
  // lru-cache reads a start time of 0 as "no TTL": the simulated clock starts later.
  let now = 1_000_000;
  const clock = () => now;
  const serving = new Map<string, number>([
    ['orders', 1],
    ['users', 7],
  ]);
  const snapshotOf = (name: string) => serving.get(name);
  const cacheOf = (config: ResultsCacheConfig, timer?: PurgeTimer) =>
    new ResultsCache(config, snapshotOf, clock, timer);
  const lookup = (sql: string, datasets: string[] | undefined, params: unknown[] = []) => ({
    sql,
    params: params as never[],
    datasets,
  });

  it('answers a result stored under the snapshots it read, by statement, parameters and kind', () => {
    const cache = cacheOf({ enabled: true, maxSizeBytes: 1 << 20, itemTtlMs: 60_000 });
    const read = [{ name: 'orders', snapshotId: 1 }];
    expect(
      cache.find('rows', lookup('SELECT * FROM orders WHERE id = ?', ['orders'], [1]))?.value,
    ).toBeUndefined();
    expect(cache.set('rows', 'SELECT * FROM orders WHERE id = ?', [1], read, 'one', 10)).toBe(true);
    expect(cache.find('rows', lookup('SELECT * FROM orders WHERE id = ?', ['orders'], [1]))?.value).toBe(
      'one',
    );
    expect(
      cache.find('rows', lookup('SELECT * FROM orders WHERE id = ?', ['orders'], [2]))?.value,
    ).toBeUndefined();
    expect(
      cache.find('table', lookup('SELECT * FROM orders WHERE id = ?', ['orders'], [1]))?.value,
    ).toBeUndefined();
    // The datasets a statement reads are not known before it first ran: no lookup can hit.
    expect(
      cache.find('rows', lookup('SELECT * FROM orders WHERE id = ?', undefined, [1]))?.value,
    ).toBeUndefined();
    expect(cache.counters()).toMatchObject({ hits: 1, misses: 4, entries: 1 });
    expect(cache.versionNow(lookup('SELECT * FROM orders WHERE id = ?', ['orders'], [1]))).toBe(
      resultVersion('SELECT * FROM orders WHERE id = ?', [1], read),
    );
    expect(resultVersion('SELECT * FROM orders WHERE id = ?', [2], read)).not.toBe(
      resultVersion('SELECT * FROM orders WHERE id = ?', [1], read),
    );
    expect(
      resultVersion('SELECT * FROM orders WHERE id = ?', [1], [{ name: 'orders', snapshotId: 2 }]),
    ).not.toBe(resultVersion('SELECT * FROM orders WHERE id = ?', [1], read));
  });

  it('forgets an entry after item_ttl', () => {
    const cache = cacheOf({ enabled: true, maxSizeBytes: 1 << 20, itemTtlMs: 1_000 });
    cache.set('rows', 'SELECT 1 FROM orders', [], [{ name: 'orders', snapshotId: 1 }], 'v', 10);
    now += 999;
    expect(cache.find('rows', lookup('SELECT 1 FROM orders', ['orders']))?.value).toBe('v');
    now += 2;
    expect(cache.find('rows', lookup('SELECT 1 FROM orders', ['orders']))?.value).toBeUndefined();
  });

  it('sweeps the expired entries nobody looks up, every item_ttl while it holds any', () => {
    const scheduled: { run: () => void; ms: number; cancelled: boolean }[] = [];
    const timer = (run: () => void, ms: number) => {
      const each = { run, ms, cancelled: false };
      scheduled.push(each);
      return {
        cancel: () => {
          each.cancelled = true;
        },
      };
    };
    const cache = cacheOf({ enabled: true, maxSizeBytes: 1 << 20, itemTtlMs: 1_000 }, timer);
    const read = [{ name: 'orders', snapshotId: 1 }];
    // A load of new statements: every answer is stored, none is asked for again.
    for (let k = 0; k < 50; k++) cache.set('rows', `SELECT ${k} FROM orders`, [], read, 'v', 10);
    expect(scheduled.map((each) => each.ms)).toEqual([1_000]);
    now += 600;
    cache.set('rows', 'SELECT 50 FROM orders', [], read, 'v', 10);
    now += 500;
    scheduled[0]?.run();
    // The 50 expired entries are gone (and their bytes); the one still fresh stays and is swept later.
    const key = 'rows\u0000orders@1\u0000\u0000SELECT 50 FROM orders';
    expect(cache.counters()).toMatchObject({ entries: 1, bytes: 10 + 512 + 2 * key.length, evictions: 0 });
    expect(cache.find('rows', lookup('SELECT 50 FROM orders', ['orders']))?.value).toBe('v');
    expect(scheduled.map((each) => each.ms)).toEqual([1_000, 1_000]);
    now += 1_000;
    scheduled[1]?.run();
    expect(cache.counters()).toMatchObject({ entries: 0, bytes: 0 });
    // An empty cache schedules nothing; the next stored answer starts the sweep again.
    expect(scheduled).toHaveLength(2);
    cache.set('rows', 'SELECT 51 FROM orders', [], read, 'v', 10);
    expect(scheduled).toHaveLength(3);
    // A swap's retire still finds nothing stale left behind in its index.
    cache.retire('orders', 2);
    expect(cache.counters().entries).toBe(0);
    cache.close();
    expect(scheduled[2]?.cancelled).toBe(true);
  });
  it('keeps within max_size, least recently used out, counting evictions; a result larger than the cache is not kept', () => {
    const cache = cacheOf({ enabled: true, maxSizeBytes: 10_000, itemTtlMs: 60_000 });
    const read = [{ name: 'orders', snapshotId: 1 }];
    // Each entry weighs its value (2 500 bytes) and its bookkeeping: three fit, a fourth does not.
    for (const n of [1, 2, 3]) cache.set('rows', `SELECT ${n} FROM orders`, [], read, n, 2_500);
    expect(cache.counters().evictions).toBe(0);
    cache.find('rows', lookup('SELECT 1 FROM orders', ['orders']));
    cache.set('rows', 'SELECT 4 FROM orders', [], read, 4, 2_500);
    expect(cache.find('rows', lookup('SELECT 2 FROM orders', ['orders']))?.value).toBeUndefined();
    expect(cache.find('rows', lookup('SELECT 1 FROM orders', ['orders']))?.value).toBe(1);
    expect(cache.counters()).toMatchObject({ evictions: 1, entries: 3 });
    expect(cache.counters().bytes).toBeLessThanOrEqual(10_000);
    expect(cache.set('rows', 'SELECT 5 FROM orders', [], read, 5, 20_000)).toBe(false);
    // A long statement weighs its text too (the key keeps it): 5,000 characters with a one-value
    // answer do not fit in 10,000 bytes.
    const long = `SELECT 6 FROM orders WHERE id IN (${'1,'.repeat(2_500)}1)`;
    expect(cache.set('rows', long, [], read, 6, 8)).toBe(false);
  });

  it('a swap retires exactly the entries that read the swapped dataset', () => {
    const cache = cacheOf({ enabled: true, maxSizeBytes: 1 << 20, itemTtlMs: 600_000 });
    const orders = [{ name: 'orders', snapshotId: 1 }];
    const users = [{ name: 'users', snapshotId: 7 }];
    cache.set('rows', 'SELECT * FROM orders', [], orders, 'o', 10);
    cache.set('rows', 'SELECT * FROM users', [], users, 'u', 10);
    cache.set('rows', 'SELECT * FROM orders JOIN users USING (id)', [], [...orders, ...users], 'ou', 10);
    serving.set('orders', 2);
    cache.retire('orders', 2);
    expect(cache.counters().entries).toBe(1);
    expect(cache.find('rows', lookup('SELECT * FROM users', ['users']))?.value).toBe('u');
    // A result read at snapshot 1 but offered after the swap is not kept.
    expect(cache.set('rows', 'SELECT * FROM orders', [], orders, 'late', 10)).toBe(false);
    serving.set('orders', 1);
  });

  it('never caches a clock, a random source, a listing, or a statement that reads no dataset', () => {
    const cache = cacheOf({ enabled: true, maxSizeBytes: 1 << 20, itemTtlMs: 60_000 });
    const read = [{ name: 'orders', snapshotId: 1 }];
    for (const sql of [
      'SELECT now(), * FROM orders',
      'SELECT * FROM orders ORDER BY random()',
      "SELECT date('now') FROM orders",
      'SELECT * FROM orders USING SAMPLE 10',
      'SELECT * FROM orders, information_schema.tables',
      'DESCRIBE orders',
    ]) {
      expect(cache.set('rows', sql, [], read, 'x', 10), sql).toBe(false);
      expect(cache.versionNow(lookup(sql, ['orders'])), sql).toBeUndefined();
    }
    expect(cache.set('rows', 'SELECT 1', [], [], 'x', 10)).toBe(false);
    expect(cache.set('rows', "SELECT 'now()' AS label FROM orders", [], read, 'x', 10)).toBe(true);
  });

  it('lets an identical request wait for a run in flight, and counts what it got', async () => {
    const cache = cacheOf({ enabled: true, maxSizeBytes: 1 << 20, itemTtlMs: 60_000 });
    const sql = 'SELECT count(*) AS n FROM orders WHERE id > ?';
    const first = cache.find<string>('rows', lookup(sql, ['orders'], [1]));
    expect(first).toEqual({ key: expect.any(String) });
    let answer: (value: string) => void = () => undefined;
    const running = new Promise<string>((resolve) => (answer = resolve));
    const landed = cache.share(first?.key as string, running, (value) => `${value}, shared`);
    const waiting = cache.find<string>('rows', lookup(sql, ['orders'], [1]));
    expect(waiting?.key).toBe(first?.key);
    // Another kind, other parameters, another snapshot: each runs on its own.
    expect(cache.find('table', lookup(sql, ['orders'], [1]))?.running).toBeUndefined();
    expect(cache.find('rows', lookup(sql, ['orders'], [2]))?.running).toBeUndefined();
    serving.set('orders', 2);
    expect(cache.find('rows', lookup(sql, ['orders'], [1]))?.running).toBeUndefined();
    serving.set('orders', 1);
    answer('the answer');
    await expect(waiting?.running).resolves.toBe('the answer, shared');
    cache.countJoined(true);
    landed();
    // Settled: the next one is a miss of its own (its answer is offered to the cache by then).
    expect(cache.find('rows', lookup(sql, ['orders'], [1]))).toEqual({ key: first?.key });

    // A run that fails, or has nothing to share, sends its waiters to run their own.
    const failed = cache.find<string>('rows', lookup(sql, ['orders'], [3]));
    cache.share(failed?.key as string, Promise.reject(new Error('interrupted')), (value) => value);
    await expect(cache.find('rows', lookup(sql, ['orders'], [3]))?.running).resolves.toBeUndefined();
    const streamed = cache.find<string>('rows', lookup(sql, ['orders'], [4]));
    cache.share(streamed?.key as string, Promise.resolve('a stream'), () => undefined);
    await expect(cache.find('rows', lookup(sql, ['orders'], [4]))?.running).resolves.toBeUndefined();
    cache.countJoined(false);
    expect(cache.counters()).toMatchObject({ hits: 1, misses: 8 });
  });

  it('holds nothing when disabled', () => {
    const cache = cacheOf({ enabled: false, maxSizeBytes: 1 << 20, itemTtlMs: 60_000 });
    expect(cache.set('rows', 'SELECT * FROM orders', [], [{ name: 'orders', snapshotId: 1 }], 'x', 10)).toBe(
      false,
    );
    expect(cache.find('rows', lookup('SELECT * FROM orders', ['orders']))?.value).toBeUndefined();
    expect(cache.counters()).toMatchObject({ hits: 0, misses: 0, maxBytes: 0 });
  });
});

describe('the results cache in a runtime', () => {
  let aws: LocalAws;
  let runtime: Runtime;

  beforeAll(async () => {
    aws = await startLocalAws();
    await aws.createBucket(BUCKET);
    await publishVersion(aws, 'orders', 'duckdb', 1, { rows: 10, prefix: 'cache/' });
    await publishVersion(aws, 'users', 'sqlite', 1, { rows: 5, prefix: 'cache/' });
    const dataDir = await tempDir('ferry-cache-');
    const yaml = `${spicepod(
      aws,
      [
        { name: 'orders', engine: 'duckdb', interval: '10m' },
        { name: 'users', engine: 'sqlite', interval: '10m' },
      ],
      { prefix: 'cache/' },
    )}views:
  - name: recent
    sql: SELECT id, version FROM orders WHERE id < 3
runtime:
  caching:
    sql_results:
      item_ttl: 10m
`;
    runtime = await createRuntime({ yaml, baseDir: dataDir }, { logger: memoryLogger(), dataDir });
    await runtime.ready(undefined, { timeoutMs: 30_000 });
  });

  afterAll(async () => {
    await runtime?.close();
    await aws?.close();
  });

  /** Lets the result of the last query be offered to the cache (it is, after the answer). */
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

  it('answers a repeated query from the cache, and a swap makes it read the new snapshot', async () => {
    const sql = 'SELECT max(version) AS v, count(*) AS n FROM orders WHERE id >= ?';
    const first = await runtime.query(sql, [0]);
    expect(first).toMatchObject({ cache: 'miss', rows: [{ v: 1, n: 10 }] });
    await settle();
    const version = resultVersion(sql, [0], first.datasets);
    expect(runtime.resultVersion(sql, [0])).toBe(version);
    const second = await runtime.query(sql, [0]);
    expect(second).toMatchObject({ cache: 'hit', rows: [{ v: 1, n: 10 }] });
    expect(resultVersion(sql, [0], second.datasets)).toBe(version);
    expect((await runtime.query(sql, [5])).cache).toBe('miss');
    const bypass = await runtime.query(sql, [0], { noCache: true });
    expect(bypass.cache).toBe('bypass');

    const published = await publishVersion(aws, 'orders', 'duckdb', 2, { rows: 4, prefix: 'cache/' });
    const swapped = nextEvent(runtime, 'swap', (event) => event.dataset === 'orders');
    await runtime.send('orders', 'poll.now');
    expect((await swapped).to).toBe(published.snapshotId);
    const fresh = await runtime.query(sql, [0]);
    expect(fresh).toMatchObject({ cache: 'miss', rows: [{ v: 2, n: 4 }] });
    expect(resultVersion(sql, [0], fresh.datasets)).not.toBe(version);
    expect(runtime.resultVersion(sql, [0])).toBe(resultVersion(sql, [0], fresh.datasets));
  });

  it('caches streams and tables apart from rows, and a view by the datasets under it', async () => {
    const sql = 'SELECT * FROM recent ORDER BY id';
    const collect = async () => {
      const stream = await runtime.queryStream(sql);
      let rows = 0;
      for await (const batch of stream.batches) rows += batch.numRows;
      return { cache: stream.cache, rows, datasets: stream.datasets };
    };
    const miss = await collect();
    await settle();
    const hit = await collect();
    expect(miss.cache).toBe('miss');
    expect(hit).toEqual({ ...miss, cache: 'hit' });
    expect(hit.datasets.map((read) => read.name)).toEqual(['orders']);
    // Answers from the cache never stop on their own; each has a signal of its own with no
    // listener on it (one shared signal held a listener per hit for good: a server's leak).
    const hits = [];
    for (let n = 0; n < 12; n++) hits.push(await runtime.queryStream(sql));
    expect(hits.map((stream) => stream.cache)).toEqual(Array(12).fill('hit'));
    expect(new Set(hits.map((stream) => stream.stopped)).size).toBe(12);
    expect(hits.map((stream) => getEventListeners(stream.stopped, 'abort').length)).toEqual(
      Array(12).fill(0),
    );
    for (const stream of hits) for await (const _ of stream.batches);
    expect((await runtime.queryArrow(sql)).cache).toBe('miss');
    await settle();
    const table = await runtime.queryArrow(sql);
    expect(table.cache).toBe('hit');
    expect(table.table.numRows).toBe(3);
  });

  it("keeps a stream that names its parameters' types apart from the plain one", async () => {
    const sql = 'SELECT id FROM orders WHERE id > ? ORDER BY id';
    const read = async (parameterTypes: boolean, from = 0) => {
      const stream = await runtime.queryStream(sql, [from], parameterTypes ? { parameterTypes } : {});
      let rows = 0;
      for await (const batch of stream.batches) rows += batch.numRows;
      return { cache: stream.cache, rows, types: stream.schema.metadata.get(PARAMETER_TYPES_METADATA) };
    };
    const plain = await read(false);
    expect(plain).toMatchObject({ cache: 'miss', types: undefined });
    expect(plain.rows).toBeGreaterThan(0);
    const { rows } = plain;
    await settle();
    expect(await read(true)).toEqual({ cache: 'miss', rows, types: '["Int64"]' });
    await settle();
    expect(await read(true)).toEqual({ cache: 'hit', rows, types: '["Int64"]' });
    expect(await read(false)).toEqual({ cache: 'hit', rows, types: undefined });
    // Run anew, a plain one has no types either (results of the same columns share a schema).
    expect(await read(false, 1)).toMatchObject({ cache: 'miss', types: undefined });
    // SQLite's, from the statement's program.
    const users = await runtime.queryStream('SELECT id FROM users WHERE id = ?', [1], {
      parameterTypes: true,
    });
    for await (const _ of users.batches);
    expect(users.schema.metadata.get(PARAMETER_TYPES_METADATA)).toBe('["Int64"]');
    await expect(runtime.queryStream('SELECT 1', [], { parameterTypes: 'yes' as never })).rejects.toThrow(
      /parameterTypes: must be/,
    );
  });

  it('runs identical requests arriving together once, each waiter free to give up', async () => {
    const sql = 'SELECT max(version) AS v, count(*) AS n, sum(id) AS s FROM orders WHERE id >= ?';
    // The statement's shape has run: its datasets are known, so the requests below can be keyed.
    expect((await runtime.query(sql, [0])).cache).toBe('miss');
    const before = runtime.metrics().resultsCache;
    const gaveUp = new AbortController();
    const answers = Array.from({ length: 12 }, (_, n) =>
      runtime.query(sql, [2], n === 5 ? { signal: gaveUp.signal } : {}),
    );
    const bypass = runtime.query(sql, [2], { noCache: true });
    gaveUp.abort(new Error('the client left'));
    const settled = await Promise.allSettled(answers);
    expect(settled[5]).toMatchObject({ status: 'rejected', reason: { code: 'ERR_QUERY_CANCELLED' } });
    const rows = settled.filter((each) => each.status === 'fulfilled').map((each) => each.value);
    expect(rows).toHaveLength(11);
    expect(rows.map((each) => each.cache)).toEqual(['miss', ...Array(10).fill('hit')]);
    const ran = await bypass;
    expect(ran.cache).toBe('bypass');
    expect(ran.rows).toHaveLength(1);
    for (const each of rows) expect(each.rows).toEqual(ran.rows);
    const after = runtime.metrics().resultsCache;
    expect(after.hits - before.hits).toBe(10);
    expect(after.misses - before.misses).toBe(1);
    // Arrow tables and JSON answers share their runs the same way; a stream is its caller's.
    const tables = await Promise.all([0, 1, 2].map(() => runtime.queryArrow(sql, [3])));
    expect(tables.map((each) => each.cache)).toEqual(['miss', 'hit', 'hit']);
    expect(tables.map((each) => each.table.numRows)).toEqual([1, 1, 1]);
    const json = await Promise.all([0, 1, 2].map(() => runtime.queryJson(sql, [4])));
    expect(json.map((each) => each.cache)).toEqual(['miss', 'hit', 'hit']);
    expect(new Set(json.map((each) => ('json' in each ? each.json : undefined))).size).toBe(1);
    // A stream is its caller's: identical ones each run (and none waits for another to start).
    const streams = await Promise.all([0, 1, 2].map(() => runtime.queryStream(sql, [5])));
    expect(streams.map((each) => each.cache)).toEqual(['miss', 'miss', 'miss']);
    for (const stream of streams) for await (const _ of stream.batches);
  });

  it('does not cache a clock or a statement that reads no dataset', async () => {
    expect((await runtime.query('SELECT now() AS t, count(*) AS n FROM orders')).cache).toBeUndefined();
    expect(
      (await runtime.query("SELECT datetime('now') AS t, count(*) AS n FROM users")).cache,
    ).toBeUndefined();
    expect((await runtime.query('SELECT 1 AS one')).cache).toBeUndefined();
    const users = await runtime.query('SELECT count(*) AS n FROM users');
    await settle();
    expect((await runtime.query('SELECT count(*) AS n FROM users')).cache).toBe('hit');
    expect(users.rows).toEqual([{ n: 5 }]);
  });

  it('counts hits, misses, bypasses and the bytes held', () => {
    const counters = runtime.metrics().resultsCache;
    expect(counters.hits).toBeGreaterThanOrEqual(4);
    expect(counters.misses).toBeGreaterThanOrEqual(5);
    expect(counters.bypasses).toBe(2);
    expect(counters.entries).toBeGreaterThan(0);
    expect(counters.bytes).toBeGreaterThan(0);
    expect(counters.maxBytes).toBe(128 * 2 ** 20);
  });
});
