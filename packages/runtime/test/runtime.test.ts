/**
 * The runtime with real threads against a real local S3 (fauxqs over HTTP): bootstrap, polling
 * swaps under query load, waiting for a first snapshot, shared metadata reads, supervision and a
 * clean shutdown.
 */
import { readdir } from 'node:fs/promises';
import { startFaultProxy } from '@ferry/test-support';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRuntime, memoryLogger, type Runtime } from '../src/index.js';
import {
  queriesInFlight,
  queriesSent,
  queryAdmission,
  terminateCoordinatorThread,
  terminateDatasetThread,
} from '../src/testing.js';
import { BUCKET, nextEvent, publishVersion, spicepod, tempDir, useLocalAws } from './support.js';

const aws = useLocalAws();

const WAITING = "Snapshot acceleration for dataset 'late' is waiting for its first snapshot";

async function start(yaml: string, dataDir: string) {
  const logger = memoryLogger();
  const runtime = await createRuntime({ yaml, baseDir: dataDir }, { logger, dataDir });
  return { runtime, logger };
}

describe('runtime: bootstrap, polling and swaps with real threads', () => {
  let runtime: Runtime;
  let dataDir: string;

  beforeAll(async () => {
    await publishVersion(aws, 'orders', 'duckdb', 1, { prefix: 'three/' });
    await publishVersion(aws, 'events', 'duckdb', 1, { rows: 50, prefix: 'three/' });
    await publishVersion(aws, 'users', 'sqlite', 1, { rows: 30, prefix: 'three/' });
    dataDir = await tempDir('ferry-runtime-');
    const yaml = spicepod(
      aws,
      [
        { name: 'orders', engine: 'duckdb' },
        { name: 'events', engine: 'duckdb' },
        { name: 'users', engine: 'sqlite' },
      ],
      { prefix: 'three/' },
    );
    ({ runtime } = await start(yaml, dataDir));
    await runtime.ready(undefined, { timeoutMs: 30_000 });
  });

  afterAll(async () => {
    await runtime?.close();
  });

  it('three datasets (two DuckDB, one SQLite) bootstrap and serve', async () => {
    const counts = await Promise.all(
      ['orders', 'events', 'users'].map((name) => runtime.query(`SELECT count(*) AS n FROM ${name}`)),
    );
    expect(counts.map((result) => result.rows[0]?.n)).toEqual([100, 50, 30]);
    expect(counts.map((result) => result.dataset)).toEqual(['orders', 'events', 'users']);
    expect(runtime.datasets().map((info) => [info.name, info.state])).toEqual([
      ['orders', expect.stringMatching(/serving|polling/)],
      ['events', expect.stringMatching(/serving|polling/)],
      ['users', expect.stringMatching(/serving|polling/)],
    ]);
  });

  it('a publish is picked up by polling and swapped in while queries run, with no failed or mixed reads', async () => {
    for (const [name, engine] of [
      ['orders', 'duckdb'],
      ['users', 'sqlite'],
    ] as const) {
      const failures: unknown[] = [];
      const versions = new Set<number>();
      let running = true;
      const load = (async () => {
        while (running) {
          try {
            const result = await runtime.query(
              `SELECT count(*) AS n, min(version) AS lo, max(version) AS hi FROM ${name}`,
            );
            const row = result.rows[0] as { n: number; lo: number; hi: number };
            // Every result comes wholly from one snapshot.
            expect(row.lo).toBe(row.hi);
            versions.add(row.lo);
          } catch (error) {
            failures.push(error);
          }
        }
      })();
      const swapped = nextEvent(runtime, 'swap', (event) => event.dataset === name);
      const published = await publishVersion(aws, name, engine, 2, {
        rows: name === 'users' ? 30 : 100,
        prefix: 'three/',
      });
      const swap = await swapped;
      expect(swap.to).toBe(published.snapshotId);
      // Keep querying a little after the swap so reads span both snapshots.
      await Promise.all(Array.from({ length: 20 }, () => runtime.query(`SELECT count(*) FROM ${name}`)));
      running = false;
      await load;
      expect(failures).toEqual([]);
      const after = await runtime.query(`SELECT max(version) AS v FROM ${name}`);
      expect(after.rows[0]?.v).toBe(2);
      expect(after.snapshotId).toBe(published.snapshotId);
      expect(versions.has(2)).toBe(true);
    }
  });

  it('refuses writes with the spec message before they reach a thread, and names unknown tables', async () => {
    await expect(runtime.query('INSERT INTO orders VALUES (1, 1)')).rejects.toThrow(
      "writes to accelerated table orders are not permitted when refresh_mode is 'snapshot'; the accelerator is driven exclusively from the snapshot store",
    );
    await expect(runtime.query('SELECT * FROM nope')).rejects.toThrow(
      "Table 'nope' is not a dataset of this runtime; the datasets are: orders, events, users.",
    );
  });

  it('killing a dataset thread restarts it from its live file while the others keep answering', async () => {
    const restarting = nextEvent(
      runtime,
      'state',
      (event) => event.dataset === 'orders' && event.state === 'restarting',
    );
    // Queries run in the query pool, not in the dataset's thread: one in flight when the thread
    // dies keeps reading the generation it started on, and answers. A stream has started in its
    // engine once its schema is known (a query still on its way when the thread dies is not in
    // flight: it fails as not ready, as any query asked then).
    const served = (await runtime.query('SELECT count(*) AS n, max(version) AS v FROM orders')).rows[0];
    const inFlight = await runtime.queryStream('SELECT version FROM orders, range(20)', [], {
      batchRows: 1_000,
    });
    await terminateDatasetThread(runtime, 'orders');
    await restarting;
    let rows = 0;
    const versions = new Set<number>();
    for await (const batch of inFlight.batches) {
      rows += batch.numRows;
      for (const version of batch.getChild('version') ?? []) versions.add(Number(version));
    }
    expect([rows, [...versions]]).toEqual([Number(served?.n) * 20, [Number(served?.v)]]);
    await expect(runtime.query('SELECT count(*) AS n FROM orders')).rejects.toMatchObject({
      code: 'ERR_DATASET_NOT_READY',
    });
    expect((await runtime.query('SELECT count(*) AS n FROM users')).rows[0]?.n).toBe(30);
    expect((await runtime.query('SELECT count(*) AS n FROM events')).rows[0]?.n).toBe(50);
    await runtime.ready('orders', { timeoutMs: 20_000 });
    const result = await runtime.query('SELECT max(version) AS v FROM orders');
    expect(result.rows[0]?.v).toBe(served?.v);
  });
  it('a restarted SQLite dataset serves snapshots swapped in after the restart (read pool sees the new file)', async () => {
    const before = (await runtime.query('SELECT max(version) AS v FROM users')).rows[0]?.v;
    const restarting = nextEvent(
      runtime,
      'state',
      (event) => event.dataset === 'users' && event.state === 'restarting',
    );
    await terminateDatasetThread(runtime, 'users');
    await restarting;
    await runtime.ready('users', { timeoutMs: 20_000 });
    expect((await runtime.query('SELECT max(version) AS v FROM users')).rows[0]?.v).toBe(before);
    const swapped = nextEvent(runtime, 'swap', (event) => event.dataset === 'users');
    await publishVersion(aws, 'users', 'sqlite', 3, { rows: 30, prefix: 'three/' });
    await swapped;
    expect((await runtime.query('SELECT max(version) AS v FROM users')).rows[0]?.v).toBe(3);
  });
});

describe('runtime: waiting for a first snapshot', () => {
  it('a dataset with nothing published waits (exact log line), then serves once a snapshot appears', async () => {
    const dataDir = await tempDir('ferry-waiting-');
    const { runtime, logger } = await start(
      spicepod(aws, [{ name: 'late', engine: 'duckdb' }], { prefix: 'late/' }),
      dataDir,
    );
    try {
      await nextEvent(runtime, 'state', (event) => event.dataset === 'late' && event.state === 'waiting');
      expect(logger.records.some((record) => record.message.startsWith(WAITING))).toBe(true);
      expect(runtime.status('late').status?.state).toBe('waiting');
      await expect(runtime.query('SELECT count(*) FROM late')).rejects.toMatchObject({
        code: 'ERR_DATASET_NOT_READY',
      });
      const waiter = runtime.query('SELECT count(*) AS n FROM late', [], {
        waitForReady: true,
        readyTimeoutMs: 20_000,
      });
      await publishVersion(aws, 'late', 'duckdb', 1, { rows: 7, prefix: 'late/' });
      expect((await waiter).rows[0]?.n).toBe(7);
    } finally {
      await runtime.close();
    }
  });

  it('a query waiting for a dataset stops waiting when its signal aborts, and leaves admission', async () => {
    const dataDir = await tempDir('ferry-waiting-cancelled-');
    const { runtime } = await start(
      spicepod(aws, [{ name: 'never', engine: 'duckdb' }], { prefix: 'never/' }),
      dataDir,
    );
    try {
      await nextEvent(runtime, 'state', (event) => event.dataset === 'never' && event.state === 'waiting');
      const gone = new AbortController();
      const sent = queriesSent(runtime).duckdb;
      const waiter = runtime.query('SELECT count(*) AS n FROM never', [], {
        waitForReady: true,
        readyTimeoutMs: 10_000,
        signal: gone.signal,
      });
      // DuckDB said the dataset does not serve: the query waits for it (admitted); then its caller goes away.
      while (queriesSent(runtime).duckdb === sent || queriesInFlight(runtime) > 0) {
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(queryAdmission(runtime).inFlight).toBe(1);
      const began = performance.now();
      gone.abort(new Error('the caller went away'));
      await expect(waiter).rejects.toMatchObject({ code: 'ERR_QUERY_CANCELLED' });
      // Before, it waited out readyTimeoutMs holding its place.
      expect(performance.now() - began).toBeLessThan(2_000);
      expect(queryAdmission(runtime).inFlight).toBe(0);
    } finally {
      await runtime.close();
    }
  });
});

describe('runtime: shared metadata reads', () => {
  it('two datasets on one location make one metadata GET per tick', async () => {
    await publishVersion(aws, 'alpha', 'duckdb', 1, { rows: 5, prefix: 'shared/' });
    await publishVersion(aws, 'beta', 'sqlite', 1, { rows: 5, prefix: 'shared/' });
    const dataDir = await tempDir('ferry-shared-');
    const yaml = spicepod(
      aws,
      [
        { name: 'alpha', engine: 'duckdb', interval: '1s' },
        { name: 'beta', engine: 'sqlite', interval: '1s' },
      ],
      { prefix: 'shared/' },
    );
    const { runtime } = await start(yaml, dataDir);
    try {
      await runtime.ready(undefined, { timeoutMs: 20_000 });
      const polls = { alpha: 0, beta: 0 };
      const target = `${BUCKET}/shared/metadata.json`;
      const marks: number[] = [];
      const done = new Promise<void>((resolve) => {
        const off = runtime.on('poll', (event) => {
          polls[event.dataset as 'alpha' | 'beta']++;
          const ticks = Math.min(polls.alpha, polls.beta);
          if (ticks > marks.length - 1) {
            marks.push(aws.requests.count('GET', target));
            if (marks.length === 5) {
              off();
              resolve();
            }
          }
        });
      });
      await done;
      // Between "both datasets finished tick k" and "... tick k+3": exactly three GETs.
      expect((marks[4] ?? 0) - (marks[1] ?? 0)).toBe(3);
    } finally {
      await runtime.close();
    }
  });
});

describe('runtime: staleness measured from a shared read', () => {
  /**
   * End to end (f766278): a check answered from the location's shared read (a read younger than the
   * reuse window, `metadataWindowMs`, at most half the check interval) is fresh from when that read
   * began, not from the start of its own check. Here `quick` bootstraps after `slow` (one bootstrap
   * at a time) on the document `slow`'s check read; `quick` v2 is published after that read and
   * before `quick`'s check starts. Before f766278 `quick` served v1 with a staleness of about 0,
   * and an answer under a 500 ms bound read v1 though v2 had been the store's for over a second.
   */
  it('a check answered with an earlier read is fresh from that read, not from its own start', async () => {
    const prefix = 'shared-read/';
    await publishVersion(aws, 'slow', 'duckdb', 1, { rows: 2, prefix });
    await publishVersion(aws, 'quick', 'duckdb', 1, { rows: 2, prefix });
    const proxy = await startFaultProxy(aws.endpoint);
    let publishedAtMs = Number.POSITIVE_INFINITY;
    // slow's snapshot download, after the one metadata read: quick v2 lands, then the download waits 1 s.
    proxy.addRule({
      method: 'GET',
      target: new RegExp(`${prefix}.*slow.*\\.duckdb`),
      times: 1,
      onMatch: async () => {
        await publishVersion(aws, 'quick', 'duckdb', 2, { rows: 2, prefix });
        publishedAtMs = Date.now();
      },
      fault: { kind: 'delay', ms: 1_000 },
    });
    const dataDir = await tempDir('ferry-shared-read-');
    const yaml = spicepod(
      aws,
      [
        { name: 'slow', engine: 'duckdb', interval: '1h' },
        { name: 'quick', engine: 'duckdb', interval: '1h' },
      ],
      { prefix, params: { s3_endpoint: proxy.endpoint } },
    );
    const runtime = await createRuntime(
      { yaml, baseDir: dataDir },
      { logger: memoryLogger(), dataDir, datasetLoadParallelism: 1, metadataWindowMs: 60_000 },
    );
    try {
      await runtime.ready(undefined, { timeoutMs: 30_000 });
      expect(proxy.hits()).toBe(1);
      const quick = runtime.status('quick').status;
      // quick's check began after v2 was published, yet read the document from before it.
      expect(quick?.servingSnapshotId).toBe(0);
      expect(quick?.freshAtMs ?? 0).toBeLessThan(publishedAtMs);
      // So a bound it has been past for a second does not refuse v1's rows.
      await expect(
        runtime.query('SELECT max(version) AS v FROM quick', [], { maxStalenessMs: 500 }),
      ).rejects.toMatchObject({ code: 'ERR_STALE' });
    } finally {
      await runtime.close();
      await proxy.close();
    }
  });
});

describe("runtime: a parked dataset (its unchanged checks are the coordinator's)", () => {
  it('with nobody listening for poll events, status() and metrics() count every check at one GET per tick, and the dataset thread never wakes until the document changes', async () => {
    await publishVersion(aws, 'quiet_a', 'duckdb', 1, { rows: 4, prefix: 'in-thread/' });
    await publishVersion(aws, 'quiet_b', 'sqlite', 1, { rows: 4, prefix: 'in-thread/' });
    const dataDir = await tempDir('ferry-in-thread-');
    const yaml = spicepod(
      aws,
      [
        { name: 'quiet_a', engine: 'duckdb', interval: '1s' },
        { name: 'quiet_b', engine: 'sqlite', interval: '1s' },
      ],
      { prefix: 'in-thread/' },
    );
    const { runtime, logger } = await start(yaml, dataDir);
    try {
      await runtime.ready(undefined, { timeoutMs: 20_000 });
      const target = `${BUCKET}/in-thread/metadata.json`;
      const states: string[] = [];
      runtime.on('state', (event) => states.push(`${event.dataset} ${event.state}`));
      // Once both have parked (a check of their own ends each one), the window starts.
      await vi.waitFor(() => expect(runtime.metrics().polls.quiet_b?.unchanged ?? 0).toBeGreaterThan(0), {
        timeout: 10_000,
        interval: 50,
      });
      const before = runtime.status('quiet_a').status?.counters.polls ?? 0;
      const unchangedBefore = runtime.metrics().polls.quiet_a?.unchanged ?? 0;
      const gets = aws.requests.count('GET', target);
      const logged = logger.records.length;
      const windowStartMs = Date.now();
      // Three ticks of the 1 s schedule (the window starts just after one, so the third falls ~2.9 s
      // in; a fixed 3.5 s window left a loaded machine ~0.5 s to record it).
      await vi.waitFor(
        () =>
          expect((runtime.status('quiet_a').status?.counters.polls ?? 0) - before).toBeGreaterThanOrEqual(3),
        { timeout: 10_000, interval: 50 },
      );
      const status = runtime.status('quiet_a').status;
      const checks = (status?.counters.polls ?? 0) - before;
      expect(status).toMatchObject({ state: 'serving', lastPollResult: 'unchanged' });
      // Every tick of the dataset's interval, not of a slower schedule: the next is due within 1 s.
      const nextInMs = (status?.nextPollDueMs ?? 0) - (status?.lastPollAtMs ?? 0);
      expect(nextInMs).toBeGreaterThan(0);
      expect(nextInMs).toBeLessThanOrEqual(1_000);
      expect(status?.lastPollAtMs).toBeGreaterThan(windowStartMs);
      expect((runtime.metrics().polls.quiet_a?.unchanged ?? 0) - unchangedBefore).toBe(checks);
      // No check left `serving`, the location was read once per tick, and no dataset thread said a
      // word (a check of its own logs at debug level): they slept.
      expect(states).toEqual([]);
      expect(aws.requests.count('GET', target) - gets).toBeLessThanOrEqual(checks + 1);
      const fromDatasets = logger.records
        .slice(logged)
        .filter((record) => (record.fields as { component?: string }).component === 'dataset');
      expect(fromDatasets).toEqual([]);
      // A new snapshot wakes the one it concerns: it records the checks it slept through, then swaps.
      const swapped = nextEvent(runtime, 'swap', (event) => event.dataset === 'quiet_a');
      await publishVersion(aws, 'quiet_a', 'duckdb', 2, { rows: 5, prefix: 'in-thread/' });
      expect(await swapped).toMatchObject({ from: 0, to: 1 });
      const slept = logger.records.find((record) =>
        record.message.startsWith("Snapshot metadata of dataset 'quiet_a' was unchanged at "),
      );
      expect(slept?.message).toMatch(/at (\d+) check\(s\) the runtime made while the dataset was parked$/);
      const after = runtime.status('quiet_a').status;
      expect(after?.counters.polls).toBeGreaterThan(before + checks);
      expect(after?.counters.swaps).toBe((status?.counters.swaps ?? 0) + 1);
      // A listener for poll events gets one per check from then on: the datasets wake and check themselves.
      const polled = await nextEvent(runtime, 'poll', (event) => event.dataset === 'quiet_b');
      expect(polled.result).toBe('unchanged');
    } finally {
      await runtime.close();
    }
  });
});

describe('runtime: bounded bootstraps', () => {
  /**
   * The first dataset's snapshot download is held for a while: with one bootstrap at a time the
   * others wait for it (they serve after it); with three they serve before it.
   */
  async function servingOrder(parallelism: number): Promise<string[]> {
    const prefix = `bounded-${parallelism}/`;
    const names = ['slow', 'quick_a', 'quick_b'];
    const slow = await publishVersion(aws, 'slow', 'duckdb', 1, { rows: 2, prefix });
    for (const name of names.slice(1)) await publishVersion(aws, name, 'duckdb', 1, { rows: 2, prefix });
    const proxy = await startFaultProxy(aws.endpoint);
    const release = proxy.addRule({
      method: 'GET',
      target: new RegExp(`${prefix}.*slow`),
      fault: { kind: 'delay', ms: 1_500 },
    });
    const dataDir = await tempDir('ferry-bounded-');
    const yaml = spicepod(
      aws,
      names.map((name) => ({ name, engine: 'duckdb' as const, interval: '1h' })),
      { prefix, params: { s3_endpoint: proxy.endpoint } },
    );
    const runtime = await createRuntime(
      { yaml, baseDir: dataDir },
      { logger: memoryLogger(), dataDir, datasetLoadParallelism: parallelism },
    );
    const order: string[] = [];
    runtime.on('state', (event) => {
      if (event.state === 'serving') order.push(event.dataset);
    });
    try {
      await runtime.ready(undefined, { timeoutMs: 30_000 });
      expect(runtime.status('slow').status?.servingSnapshotId).toBe(slow.snapshotId);
      return order;
    } finally {
      release();
      await runtime.close();
      await proxy.close();
    }
  }

  it('datasetLoadParallelism bounds the datasets bootstrapping at once; each reports ready on its own', async () => {
    expect(await servingOrder(1)).toEqual(['slow', 'quick_a', 'quick_b']);
    expect((await servingOrder(3)).at(-1)).toBe('slow');
  });
});

describe('runtime: the coordinator thread dies', () => {
  it('says so (not ready, an error log, an error event per dataset) and restarts it: every dataset serves its live file again', async () => {
    await publishVersion(aws, 'ships', 'duckdb', 1, { rows: 7, prefix: 'coordinator/' });
    await publishVersion(aws, 'ports', 'sqlite', 1, { rows: 3, prefix: 'coordinator/' });
    const dataDir = await tempDir('ferry-coordinator-');
    const yaml = spicepod(
      aws,
      [
        { name: 'ships', engine: 'duckdb', interval: '1h' },
        { name: 'ports', engine: 'sqlite', interval: '1h' },
      ],
      { prefix: 'coordinator/' },
    );
    const logger = memoryLogger();
    const runtime = await createRuntime(
      { yaml, baseDir: dataDir },
      { logger, dataDir, restartBackoffMs: [300] },
    );
    try {
      await runtime.ready(undefined, { timeoutMs: 30_000 });
      const served = runtime.status('ships').status?.servingSnapshotId;
      const errors: string[] = [];
      runtime.on('error', (event) => errors.push(`${event.dataset} ${event.code}`));
      const restarting = nextEvent(
        runtime,
        'state',
        (event) => event.dataset === 'ports' && event.state === 'restarting',
      );
      await terminateCoordinatorThread(runtime);
      await restarting;
      expect(runtime.status('ships').state).toBe('restarting');
      await expect(runtime.query('SELECT count(*) AS n FROM ships')).rejects.toMatchObject({
        code: 'ERR_DATASET_NOT_READY',
      });
      expect(errors.sort()).toEqual(['ports ERR_THREAD_EXITED', 'ships ERR_THREAD_EXITED']);
      expect(
        logger.records.filter((record) => record.level === 'error').map((record) => record.message),
      ).toEqual([
        expect.stringMatching(
          /^The coordinator thread died \(.*\); every dataset is restarting from its live file, in 300 ms$/,
        ),
      ]);
      await runtime.ready(undefined, { timeoutMs: 30_000 });
      expect(runtime.status('ships').status?.servingSnapshotId).toBe(served);
      expect((await runtime.query('SELECT count(*) AS n FROM ships')).rows[0]?.n).toBe(7);
      expect((await runtime.query('SELECT count(*) AS n FROM ports')).rows[0]?.n).toBe(3);
      expect(logger.records.map((record) => record.message)).toContain(
        `Dataset 'ships' serves snapshot ${served} from its live file while the store is consulted`,
      );
    } finally {
      await runtime.close();
    }
  });
});

describe('runtime: commands', () => {
  it('poll.now reads the store as it is now, even right after a shared read', async () => {
    await publishVersion(aws, 'manual', 'duckdb', 1, { rows: 4, prefix: 'manual/' });
    const dataDir = await tempDir('ferry-command-');
    const { runtime } = await start(
      spicepod(aws, [{ name: 'manual', engine: 'duckdb', interval: '10m' }], { prefix: 'manual/' }),
      dataDir,
    );
    try {
      await runtime.ready('manual');
      const published = await publishVersion(aws, 'manual', 'duckdb', 2, { rows: 4, prefix: 'manual/' });
      const swapped = nextEvent(runtime, 'swap', (event) => event.dataset === 'manual');
      await runtime.send('manual', 'poll.now');
      expect((await swapped).to).toBe(published.snapshotId);
      expect((await runtime.query('SELECT max(version) AS v FROM manual')).rows[0]?.v).toBe(2);
    } finally {
      await runtime.close();
    }
  });
});

describe('runtime: inspection', () => {
  it('a listener added after start gets the events of the next check; the threads stop building them when it leaves', async () => {
    await publishVersion(aws, 'seen', 'duckdb', 1, { rows: 2, prefix: 'seen/' });
    const dataDir = await tempDir('ferry-inspect-');
    const { runtime } = await start(
      spicepod(aws, [{ name: 'seen', engine: 'duckdb', interval: '10m' }], { prefix: 'seen/' }),
      dataDir,
    );
    try {
      // Serving with nobody inspecting: the thread has been told to build no inspection events.
      await runtime.ready('seen');
      const seen: { type: string; state?: string; event?: unknown }[] = [];
      const stop = runtime.inspect((event) => {
        if (event.dataset === 'seen') seen.push(event);
      });
      const polled = nextEvent(runtime, 'poll', (event) => event.dataset === 'seen');
      await runtime.send('seen', 'poll.now');
      await polled;
      expect(
        seen.some(
          (event) => event.type === '@xstate.event' && JSON.stringify(event.event).includes('poll.now'),
        ),
      ).toBe(true);
      expect(seen.some((event) => event.type === '@xstate.snapshot' && event.state === 'polling')).toBe(true);
      stop();
      const count = seen.length;
      const again = nextEvent(runtime, 'poll', (event) => event.dataset === 'seen');
      await runtime.send('seen', 'poll.now');
      await again;
      expect(seen).toHaveLength(count);
    } finally {
      await runtime.close();
    }
  });

  it('a listener of one dataset gets that machine’s events only, and its thread stops building them when it leaves', async () => {
    await publishVersion(aws, 'watched', 'sqlite', 1, { rows: 2, prefix: 'focus/' });
    await publishVersion(aws, 'other', 'sqlite', 1, { rows: 2, prefix: 'focus/' });
    const dataDir = await tempDir('ferry-inspect-one-');
    const { runtime } = await start(
      spicepod(
        aws,
        [
          { name: 'watched', engine: 'sqlite', interval: '10m' },
          { name: 'other', engine: 'sqlite', interval: '10m' },
        ],
        { prefix: 'focus/' },
      ),
      dataDir,
    );
    try {
      await runtime.ready();
      expect(() => runtime.inspect(() => undefined, { dataset: 'nope' })).toThrow(
        expect.objectContaining({ code: 'ERR_UNKNOWN_DATASET' }),
      );
      const seen: { dataset: string; type: string; state?: string }[] = [];
      const stop = runtime.inspect((event) => seen.push(event), { dataset: 'watched' });
      const polled = Promise.all(
        ['watched', 'other'].map((name) => nextEvent(runtime, 'poll', (event) => event.dataset === name)),
      );
      await runtime.send('other', 'poll.now');
      await runtime.send('watched', 'poll.now');
      await polled;
      // Nobody inspects every machine: these events exist because this one thread was told to build them.
      expect(seen.some((event) => event.type === '@xstate.snapshot' && event.state === 'polling')).toBe(true);
      expect(new Set(seen.map((event) => event.dataset))).toEqual(new Set(['watched']));
      stop();
      const count = seen.length;
      const again = nextEvent(runtime, 'poll', (event) => event.dataset === 'watched');
      await runtime.send('watched', 'poll.now');
      await again;
      expect(seen).toHaveLength(count);
    } finally {
      await runtime.close();
    }
  });
});

describe('runtime: shutdown', () => {
  it('after close() no worker threads, handles or temporary files remain, and close is idempotent', async () => {
    await publishVersion(aws, 'solo', 'sqlite', 1, { rows: 3, prefix: 'solo/' });
    const dataDir = await tempDir('ferry-close-');
    const tally = () => {
      const counts = new Map<string, number>();
      for (const kind of process.getActiveResourcesInfo()) counts.set(kind, (counts.get(kind) ?? 0) + 1);
      return counts;
    };
    const before = tally();
    const { runtime } = await start(
      spicepod(aws, [{ name: 'solo', engine: 'sqlite' }], { prefix: 'solo/' }),
      dataDir,
    );
    await runtime.ready('solo');
    expect((await runtime.query('SELECT count(*) AS n FROM solo')).rows[0]?.n).toBe(3);
    await runtime.close();
    await runtime.close();
    const leaked = [...tally()].filter(
      ([kind, count]) => kind !== 'Timeout' && count > (before.get(kind) ?? 0),
    );
    expect(leaked).toEqual([]);
    const files = await readdir(dataDir, { recursive: true });
    expect(files.filter((file) => file.includes('ferry-tmp'))).toEqual([]);
    await expect(runtime.query('SELECT 1 FROM solo')).rejects.toMatchObject({ code: 'ERR_RUNTIME_CLOSED' });
  });
});
