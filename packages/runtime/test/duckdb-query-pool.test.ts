/**
 * The DuckDB query pool on a real worker thread and a real DuckDB file: a catalog version pushed to
 * the worker is what the next query reads; a batch stream sends at most its window of batches
 * until the consumer takes one; a cancelled query is interrupted and the worker keeps serving.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { DuckDbNamespaceOptions, NamespaceCatalog } from '@ferry/engines';
import { buildSnapshotFile } from '@ferry/writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryLogger } from '../src/common/logging.js';
import { threadFile } from '../src/common/thread-files.js';
import { RuntimeClosedError } from '../src/errors.js';
import { DuckDbQueryPool } from '../src/query/duckdb-query-pool.js';
import { type QueryWorkerToHost, STREAM_WINDOW } from '../src/query/query-protocol.js';

let dir: string;
let generations: string;

async function duckdbFile(name: string, version: number): Promise<string> {
  const path = join(generations, `${name}.duckdb`);
  await buildSnapshotFile({
    dataset: 'orders',
    engine: 'duckdb',
    output: path,
    notNull: ['id'],
    source: { sql: `SELECT i::BIGINT AS id, ${version}::BIGINT AS version FROM range(1000) t(i)` },
  });
  return path;
}

function catalog(version: number, path: string): NamespaceCatalog {
  return {
    version,
    datasets: [
      { name: 'orders', engine: 'duckdb', generation: { id: version, path, snapshotId: 100 + version } },
    ],
  };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ferry-duckdb-pool-'));
  generations = join(dir, 'generations');
  await mkdir(generations);
  await mkdir(join(dir, 'tmp', 'w0'), { recursive: true });
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function options(): DuckDbNamespaceOptions {
  return {
    allowedDirectories: [`${generations}/`],
    tempDirectory: join(dir, 'tmp', 'w0'),
    maxTempBytes: 64 * 2 ** 20,
    memoryLimitBytes: 512 * 2 ** 20,
    threads: 1,
    settings: { memory: 'queryMemoryLimit', threads: 'queryThreads', temp: 'queryTempDirectorySize' },
    crossEngine: { maxRows: 1000, maxBytes: 2 ** 20 },
  };
}

describe('DuckDbQueryPool', () => {
  it('reads the catalog version pushed before a query; bounds a stream to its window; cancels by interrupting', async () => {
    const first = await duckdbFile('g1', 1);
    const second = await duckdbFile('g2', 2);
    const pool = new DuckDbQueryPool(
      { workers: 1, namespace: options, logger: memoryLogger() },
      catalog(1, first),
    );
    try {
      const request = { sql: 'SELECT max(version) AS v FROM orders', params: [], maxRows: 0, maxBytes: 0 };
      expect(await pool.run(request).answer).toMatchObject({
        kind: 'rows',
        rows: [{ v: 1 }],
        read: [{ name: 'orders', snapshotId: 101 }],
      });
      pool.setCatalog(catalog(2, second));
      expect(await pool.run(request).answer).toMatchObject({
        rows: [{ v: 2 }],
        read: [{ snapshotId: 102 }],
      });

      // A stream with nobody taking its batches: the window, then nothing until a credit.
      const batches: number[] = [];
      let schema = false;
      const stream = pool.run(
        { sql: 'SELECT i FROM range(100000) t(i)', params: [], maxRows: 0, maxBytes: 0 },
        0,
        undefined,
        {
          // The first batch comes in the schema's message (its rows said).
          schema: (_ipc, _read, rows) => {
            schema = true;
            if (rows !== undefined) batches.push(rows);
          },
          batch: (_ipc, rows) => {
            batches.push(rows);
          },
        },
        1_000,
      );
      while (batches.length < STREAM_WINDOW) await new Promise((resolve) => setTimeout(resolve, 10));
      // No event says "nothing more came": give the worker ample time to overrun, if it would.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect([schema, batches]).toEqual([true, [1_000, 1_000]]);
      stream.credit();
      while (batches.length < STREAM_WINDOW + 1) await new Promise((resolve) => setTimeout(resolve, 10));
      stream.cancel();
      expect(await stream.answer).toMatchObject({ kind: 'error' });
      expect(batches).toHaveLength(STREAM_WINDOW + 1);

      // A runaway query, interrupted: the worker answers the next one at once.
      const runaway = pool.run({
        sql: 'SELECT count(*) FROM orders, range(1000000000000)',
        params: [],
        maxRows: 0,
        maxBytes: 0,
      });
      runaway.cancel();
      expect(await runaway.answer).toMatchObject({ kind: 'error' });
      expect(await pool.run(request).answer).toMatchObject({ rows: [{ v: 2 }] });
      expect(pool.inFlight).toBe(0);
    } finally {
      await pool.close(new RuntimeClosedError());
    }
  });

  it('times a query out from when its worker starts it, with one timer, and interrupts it', async () => {
    const first = await duckdbFile('g3', 3);
    const pool = new DuckDbQueryPool(
      { workers: 1, namespace: options, logger: memoryLogger() },
      catalog(3, first),
    );
    try {
      const began = performance.now();
      const slow = pool.run(
        { sql: 'SELECT count(*) FROM orders, range(1000000000000)', params: [], maxRows: 0, maxBytes: 0 },
        300,
      );
      await expect(slow.answer).rejects.toMatchObject({
        code: 'ERR_QUERY_TIMEOUT',
        message:
          "The query on dataset 'orders' ran longer than 300 ms and was cancelled; narrow it or raise the query timeout (runtime.query.ferry_timeout, ferry serve --query-timeout, or queryTimeoutMs when embedded).",
      });
      expect(performance.now() - began).toBeLessThan(5_000);
      // Interrupted in DuckDB: the worker answers the next query, and nothing stays in flight.
      const request = { sql: 'SELECT max(version) AS v FROM orders', params: [], maxRows: 0, maxBytes: 0 };
      expect(await pool.run(request, 300, ['orders']).answer).toMatchObject({
        rows: [{ v: 3 }],
      });
      while (pool.inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    } finally {
      await pool.close(new RuntimeClosedError());
    }
  });

  it('logs a catalog version it cannot apply, with the cause, and keeps serving the one before', async () => {
    const first = await duckdbFile('g4', 4);
    const logger = memoryLogger();
    const pool = new DuckDbQueryPool({ workers: 1, namespace: options, logger }, catalog(4, first));
    try {
      const request = { sql: 'SELECT max(version) AS v FROM orders', params: [], maxRows: 0, maxBytes: 0 };
      expect(await pool.run(request).answer).toMatchObject({ rows: [{ v: 4 }] });
      pool.setCatalog(catalog(5, join(generations, 'missing.duckdb')));
      // The query after it waits for that version, which fails: it reads version 4.
      expect(await pool.run(request).answer).toMatchObject({ rows: [{ v: 4 }] });
      const record = logger.records.find((entry) =>
        entry.message.includes('could not apply catalog version 5'),
      );
      expect(record).toMatchObject({ level: 'error', fields: { component: 'query' } });
      expect(record?.message).toMatch(/missing\.duckdb|No such file|Cannot open/i);
      expect((record?.fields as { err?: { stack?: string } } | undefined)?.err?.stack).toBeTypeOf('string');
    } finally {
      await pool.close(new RuntimeClosedError());
    }
  });

  it('started with a version whose generation is already gone (pruned while it started), serves the next one', async () => {
    const sixth = await duckdbFile('started-late', 6);
    const logger = memoryLogger();
    const pool = new DuckDbQueryPool(
      { workers: 1, namespace: options, logger },
      catalog(5, join(generations, 'pruned.duckdb')),
    );
    try {
      pool.setCatalog(catalog(6, sixth));
      const request = { sql: 'SELECT max(version) AS v FROM orders', params: [], maxRows: 0, maxBytes: 0 };
      expect(await pool.run(request).answer).toMatchObject({
        kind: 'rows',
        rows: [{ v: 6 }],
        read: [{ name: 'orders', snapshotId: 106 }],
      });
    } finally {
      await pool.close(new RuntimeClosedError());
    }
  });
});

describe('DuckDbQueryPool restarts', () => {
  it('starts an ended worker again at once, and backs off when it ends again within the minute', async () => {
    const path = await duckdbFile('g8', 6);
    const logger = memoryLogger();
    const pool = new DuckDbQueryPool(
      { workers: 1, namespace: options, logger, restartDelaysMs: [0, 400] },
      catalog(6, path),
    );
    const request = { sql: 'SELECT max(version) AS v FROM orders', params: [], maxRows: 0, maxBytes: 0 };
    try {
      expect(await pool.run(request).answer).toMatchObject({ rows: [{ v: 6 }] });

      // The first end: another worker at once, so the next query is answered.
      await pool.endWorker(0);
      expect(await pool.run(request).answer).toMatchObject({ rows: [{ v: 6 }] });
      expect(
        logger.records.filter((record) => record.level === 'error').map((record) => record.message),
      ).toEqual(['A DuckDB query worker ended (it exited); starting another']);

      // The second, within the minute: no worker for 400 ms; a query then is refused, saying why.
      await pool.endWorker(0);
      const endedAt = performance.now();
      expect(logger.records.at(-1)).toMatchObject({
        level: 'error',
        message: 'A DuckDB query worker ended (it exited), 2 in a row; starting another in 400 ms',
        fields: { restartInMs: 400, endedInARow: 2 },
      });
      await expect(pool.run(request).answer).rejects.toThrow(
        'The DuckDB query pool is restarting its workers (they ended, see the log) before answering',
      );
      // Then it serves again, not before the delay.
      let answer: unknown;
      while (answer === undefined) {
        answer = await pool.run(request).answer.catch(() => undefined);
        if (answer === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(answer).toMatchObject({ rows: [{ v: 6 }] });
      expect(performance.now() - endedAt).toBeGreaterThanOrEqual(400);
    } finally {
      await pool.close(new RuntimeClosedError());
    }
  });

  it('starts no worker after close, even one whose restart was waiting', async () => {
    const path = await duckdbFile('g9', 7);
    const pool = new DuckDbQueryPool(
      { workers: 1, namespace: options, logger: memoryLogger(), restartDelaysMs: [200] },
      catalog(7, path),
    );
    await pool.endWorker(0);
    await pool.close(new RuntimeClosedError());
    await expect(pool.run({ sql: 'SELECT 1', params: [], maxRows: 0, maxBytes: 0 }).answer).rejects.toThrow(
      'The DuckDB query pool closed before answering',
    );
    expect(pool.youngGenerations()).toEqual([]);
  });
});

describe('the DuckDB query worker', () => {
  it('reports an uncaught error to the host with its cause before it ends', async () => {
    const first = await duckdbFile('g6', 6);
    const worker = new Worker(threadFile('query/duckdb-thread'), {
      workerData: { namespace: options(), catalog: catalog(6, first) },
    });
    const messages: QueryWorkerToHost[] = [];
    worker.on('message', (message: QueryWorkerToHost) => messages.push(message));
    const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
    // A message no host sends: the handler throws outside any query.
    worker.postMessage(null);
    expect(await exited).toBe(1);
    const logged = messages.find((message) => message.type === 'log');
    expect(logged).toMatchObject({
      type: 'log',
      record: {
        level: 'error',
        component: 'query',
        message: expect.stringMatching(
          /^A DuckDB query worker failed with an uncaught error and ends: .*null/,
        ),
      },
    });
  });
});
