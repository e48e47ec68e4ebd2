/**
 * The SQLite read pool on real worker threads and a real SQLite file (the fixture store's users
 * snapshot): batching, per-query timeouts inside a batch, errors that stay with their query,
 * cancellation of a queued and of a running query, and a stream that stops when nobody reads it.
 */
import { copyFile, mkdtemp, readdir, readlink, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { batchesFromIpc } from '@ferry/engines/namespaces';
import { fixtureStoreDir } from '@ferry/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SharedCatalog, shareCatalog } from '../src/query/catalog-board.js';
import type { PoolQuery } from '../src/query/duckdb-query-pool.js';
import { LARGE_ANSWER_BYTES } from '../src/query/memory-return.js';
import type { QueryAnswer, QueryRequest } from '../src/query/query-protocol.js';
import { SqliteReadPool } from '../src/query/sqlite-read-pool.js';

const USERS = 'month=2026-11/day=2026-11-29/dataset=users/users_20261129T081000Z.sqlite';
const RUNAWAY =
  'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c, users';

let dir: string;
let path: string;
let expected: number;

function pool(options: {
  threads: number;
  timeoutMs: number;
  file?: string;
  catalog?: () => SharedCatalog;
  spareIdleMs?: number;
}): SqliteReadPool {
  const catalog = shareCatalog({
    version: 1,
    datasets: [
      { name: 'users', engine: 'sqlite', generation: { id: 1, path: options.file ?? path, snapshotId: 7 } },
    ],
  });
  return new SqliteReadPool({
    maxThreads: options.threads,
    queryTimeoutMs: options.timeoutMs,
    catalog: options.catalog ?? (() => catalog),
    workerData: {
      mainPath: join(dir, 'main.sqlite'),
      privateRoots: [dir],
      tempDirectory: dir,
      ...(options.spareIdleMs === undefined ? {} : { spareIdleMs: options.spareIdleMs }),
    },
  });
}

function lookup(id: number): QueryRequest {
  return { sql: 'SELECT count(*) AS n FROM users WHERE rowid <= ?', params: [id], maxRows: 100, maxBytes: 0 };
}

/** This process's descriptors open on `file`: the pool's threads share the process (Linux). */
async function descriptorsOn(file: string): Promise<number> {
  let n = 0;
  for (const fd of await readdir('/proc/self/fd')) {
    try {
      if ((await readlink(`/proc/self/fd/${fd}`)) === file) n++;
    } catch {
      // The descriptor closed while listing.
    }
  }
  return n;
}

function rowsOf(result: QueryAnswer): unknown {
  if ('rows' in result) return result.rows;
  throw new Error(`expected rows, got ${JSON.stringify(result)}`);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ferry-sqlite-pool-'));
  path = join(dir, 'users.sqlite');
  await copyFile(join(fixtureStoreDir(), USERS), path);
  await writeFile(join(dir, 'main.sqlite'), '');
  const probe = pool({ threads: 1, timeoutMs: 0 });
  const counted = await probe.run(['users'], {
    ...lookup(0),
    sql: 'SELECT count(*) AS n FROM users',
    params: [],
  });
  expected = Number((rowsOf(counted) as [{ n: number }])[0].n);
  await probe.close(new Error('closed'));
  expect(expected).toBeGreaterThan(1);
  expect(expected).toBeLessThan(40);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A statement that counts to `to`: 400,000 is ~50 ms in SQLite on these machines. */
const slowQuery = (to = 400_000) => ({
  ...lookup(0),
  sql: `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ${to}) SELECT count(*) AS n FROM c`,
  params: [],
});

/**
 * Both workers warm, `slow`'s cost known (from two runs: a first run also sets the statement up),
 * and the lookup's known cheap: the pool believes a statement's fastest run, so a few runs keep a
 * lookup that a loaded machine once stalled past the threshold from counting as expensive.
 */
async function knowSlow(reads: SqliteReadPool, slow: ReturnType<typeof slowQuery>): Promise<void> {
  for (let n = 0; n < 2; n++)
    await Promise.all([reads.run(['users'], slow), reads.run(['users'], lookup(1))]);
  for (let n = 0; n < 4; n++) await reads.run(['users'], lookup(1));
}

describe('SqliteReadPool', () => {
  it('sends the queries of one turn to a busy pool as one batch per worker, each answered on its own', async () => {
    const reads = pool({ threads: 2, timeoutMs: 30_000 });
    try {
      const ids = Array.from({ length: 40 }, (_, i) => i % (expected + 1));
      const results = await Promise.all(ids.map((id) => reads.run(['users'], lookup(id))));
      expect(results.map(rowsOf)).toEqual(ids.map((id) => [{ n: Math.min(id, expected) }]));
      // Batched: far fewer hops than queries. Not two: a batch answers early once it has run 4 ms
      // of wall time (sqlite-thread.ts), and a cold worker on a loaded machine gets there in a few
      // queries. One hop per query would be 40.
      expect(reads.batches).toBeLessThan(ids.length / 2);
    } finally {
      await reads.close(new Error('closed'));
    }
  });

  it('a query past its timeout fails alone: the queries batched around it are answered', async () => {
    const reads = pool({ threads: 1, timeoutMs: 400 });
    try {
      const before = Array.from({ length: 5 }, (_, i) => reads.run(['users'], lookup(i)));
      const runaway = reads
        .run(['users'], { ...lookup(0), sql: RUNAWAY, params: [] })
        .catch((e: unknown) => e);
      const after = Array.from({ length: 5 }, (_, i) => reads.run(['users'], lookup(i)));
      expect(await runaway).toMatchObject({
        code: 'ERR_QUERY_TIMEOUT',
        message:
          "The query on dataset 'users' ran longer than 400 ms and was cancelled; narrow it or raise the query timeout (runtime.query.ferry_timeout, ferry serve --query-timeout, or queryTimeoutMs when embedded).",
      });
      const answered = await Promise.all([...before, ...after]);
      expect(answered.map(rowsOf)).toEqual(
        [0, 1, 2, 3, 4, 0, 1, 2, 3, 4].map((i) => [{ n: Math.min(i, expected) }]),
      );
      // The innocent ones behind it went again in another batch.
      expect(reads.batches).toBeGreaterThanOrEqual(2);
    } finally {
      await reads.close(new Error('closed'));
    }
  });

  it('an answered query is not held back by slow queries batched after it', async () => {
    const reads = pool({ threads: 1, timeoutMs: 0 });
    const slow = slowQuery();
    try {
      await reads.run(['users'], lookup(1)); // a warm worker
      const answeredAt: number[] = [];
      const started = performance.now();
      const runs = [0, 1, 2].map((i) =>
        reads.run(['users'], slow).then((result) => {
          answeredAt[i] = performance.now() - started;
          return result;
        }),
      );
      expect((await Promise.all(runs)).map(rowsOf)).toEqual([0, 1, 2].map(() => [{ n: 400000 }]));
      // One batch of three would answer all three in one message, in one turn (well under 1 ms
      // apart); each answers when it is done, at least one run of the count (~50 ms of CPU here,
      // more under load) after the one before it.
      const [first, second, third] = answeredAt as [number, number, number];
      expect(second - first).toBeGreaterThan(5);
      expect(third - second).toBeGreaterThan(5);
    } finally {
      await reads.close(new Error('closed'));
    }
  });

  it('runs a statement known to be expensive alone: the cheap queries behind it do not wait for it', async () => {
    const reads = pool({ threads: 2, timeoutMs: 0 });
    const slow = slowQuery();
    try {
      await knowSlow(reads, slow);
      let slowDone = false;
      const running = reads.run(['users'], slow).then((result) => {
        slowDone = true;
        return result;
      });
      // Queued in the same turn as the slow one: one batch of eleven would hold ten behind it.
      const cheap = Array.from({ length: 20 }, (_, i) =>
        reads
          .run(['users'], lookup(i % (expected + 1)))
          .then((result) => ({ result, beforeSlow: !slowDone })),
      );
      const answered = await Promise.all(cheap);
      expect(answered.map((answer) => rowsOf(answer.result))).toEqual(
        Array.from({ length: 20 }, (_, i) => [{ n: Math.min(i % (expected + 1), expected) }]),
      );
      expect(answered.every((answer) => answer.beforeSlow)).toBe(true);
      expect(rowsOf(await running)).toEqual([{ n: 400000 }]);
    } finally {
      await reads.close(new Error('closed'));
    }
  });

  it('keeps one worker for cheap queries: queued behind expensive ones, they do not wait for them', async () => {
    const reads = pool({ threads: 2, timeoutMs: 0 });
    // ~250 ms each: twenty lookups on the kept worker finish well inside one of them, even on a
    // loaded machine (at ~50 ms, a CI run under load once saw three answered first).
    const slow = slowQuery(2_000_000);
    try {
      await knowSlow(reads, slow);
      let slowAnswered = 0;
      // Four expensive queries first, then twenty cheap ones: FIFO would put every cheap one
      // behind two rounds of expensive ones on both workers.
      const slows = Array.from({ length: 4 }, () =>
        reads.run(['users'], slow).then((result) => {
          slowAnswered++;
          return result;
        }),
      );
      // Settled even when an expectation below fails first (close() then rejects them).
      const slowsSettled = Promise.allSettled(slows);
      const cheap = Array.from({ length: 20 }, (_, i) =>
        reads.run(['users'], lookup(i % (expected + 1))).then((result) => ({ result, slowAnswered })),
      );
      const answered = await Promise.all(cheap);
      expect(answered.map((answer) => rowsOf(answer.result))).toEqual(
        Array.from({ length: 20 }, (_, i) => [{ n: Math.min(i % (expected + 1), expected) }]),
      );
      // The first expensive one took a worker; the cheap ones the other, ahead of the second.
      expect(Math.max(...answered.map((answer) => answer.slowAnswered))).toBeLessThanOrEqual(1);
      expect(
        (await slowsSettled).map((settled) => settled.status === 'fulfilled' && rowsOf(settled.value)),
      ).toEqual(Array.from({ length: 4 }, () => [{ n: 2_000_000 }]));
    } finally {
      await reads.close(new Error('closed'));
    }
  });

  it("one query's error stays with it and keeps its code", async () => {
    const reads = pool({ threads: 1, timeoutMs: 0 });
    try {
      const [bad, good] = await Promise.all([
        reads.run(['users'], { ...lookup(0), sql: 'SELECT nope FROM users', params: [] }),
        reads.run(['users'], lookup(1)),
      ]);
      expect(bad).toMatchObject({ error: { message: expect.stringContaining('no such column: nope') } });
      expect(rowsOf(good)).toEqual([{ n: 1 }]);
    } finally {
      await reads.close(new Error('closed'));
    }
  });

  it('close rejects queued queries with the reason and refuses new ones', async () => {
    const reads = pool({ threads: 1, timeoutMs: 0 });
    const reason = new Error('runtime closed');
    const queued = reads.run(['users'], lookup(1)).catch((e: unknown) => e);
    await reads.close(reason);
    expect(await queued).toBe(reason);
    await expect(reads.run(['users'], lookup(1))).rejects.toBe(reason);
  });

  it('a stream asked of a closed pool is refused, counted in flight by nothing and holding no port open', async () => {
    const reads = pool({ threads: 1, timeoutMs: 0 });
    const reason = new Error('runtime closed');
    await reads.close(reason);
    const ports = (): number =>
      process.getActiveResourcesInfo().filter((resource) => resource === 'MessagePort').length;
    const before = ports();
    const query = reads.stream(lookup(1), { schema: () => undefined, batch: () => undefined });
    await expect(query.answer).rejects.toBe(reason);
    expect({ inFlight: reads.inFlight, ports: ports() - before }).toEqual({ inFlight: 0, ports: 0 });
  });

  it("close ends every worker with its SQLite connections closed: no descriptor is left on a dataset's file", async () => {
    // A file of its own, so only this pool's connections count.
    const file = join(dir, 'users-close.sqlite');
    await copyFile(path, file);
    const reads = pool({ threads: 2, timeoutMs: 0, file });
    await Promise.all([reads.run(['users'], slowQuery()), reads.run(['users'], lookup(1))]);
    const open = await descriptorsOn(file);
    await reads.close(new Error('closed'));
    expect({ open: open > 0, afterClose: await descriptorsOn(file) }).toEqual({ open: true, afterClose: 0 });
  });

  it('a cancelled query leaves the queue, or ends the worker running it; the others are answered', async () => {
    const reads = pool({ threads: 1, timeoutMs: 0 });
    try {
      const running = new AbortController();
      const queued = new AbortController();
      const runaway = reads
        .run(['users'], { ...lookup(0), sql: RUNAWAY, params: [] }, running.signal)
        .catch((e: unknown) => e);
      const waiting = reads.run(['users'], lookup(2), queued.signal).catch((e: unknown) => e);
      const innocent = reads.run(['users'], lookup(3));
      queued.abort();
      expect(await waiting).toMatchObject({ code: 'ERR_QUERY_CANCELLED' });
      running.abort();
      expect(await runaway).toMatchObject({ code: 'ERR_QUERY_CANCELLED' });
      expect(rowsOf(await innocent)).toEqual([{ n: Math.min(3, expected) }]);
    } finally {
      await reads.close(new Error('closed'));
    }
  });

  it('a stream sends batches only as they are taken: a consumer that stops reading stops it', async () => {
    const reads = pool({ threads: 1, timeoutMs: 0 });
    try {
      const received: number[] = [];
      let schema: Uint8Array | undefined;
      const sql =
        'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000) SELECT x FROM c';
      const query = reads.stream(
        { sql, params: [], maxRows: 0, maxBytes: 0 },
        {
          // The first batch comes in the schema's message (its rows said).
          schema: (ipc, _read, rows) => {
            schema = ipc;
            if (rows !== undefined) received.push(rows);
          },
          batch: (_ipc, rows) => {
            received.push(rows);
          },
        },
        1_000,
      );
      // Two batches (the window) arrive without any credit; then nothing more.
      while (received.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(received).toEqual([1_000, 1_000]);
      expect(batchesFromIpc(schema as Uint8Array).schema.fields.map((field) => field.name)).toEqual(['x']);
      query.credit();
      while (received.length < 3) await new Promise((resolve) => setTimeout(resolve, 10));
      query.cancel();
      expect(await query.answer).toMatchObject({ kind: 'error' });
      expect(received).toHaveLength(3);
    } finally {
      await reads.close(new Error('closed'));
    }
  });

  it('a stream cancelled after it answered arms no timer', async () => {
    const reads = pool({ threads: 1, timeoutMs: 0 });
    try {
      const query = reads.stream(lookup(1), { schema: () => undefined, batch: () => undefined });
      expect(await query.answer).toMatchObject({ kind: 'done' });
      const timers = (): number =>
        process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
      const before = timers();
      // A consumer that fails the stream late (its idle limit, a cap) cancels it after its engine is done.
      query.cancel();
      expect(timers() - before).toBe(0);
    } finally {
      await reads.close(new Error('closed'));
    }
  });

  it("runs a worker's timers while it waits for tasks: the memory return after a large answer", async () => {
    const reads = pool({ threads: 1, timeoutMs: 0 });
    try {
      // 40 rows of 1 MB: past LARGE_ANSWER_BYTES, so the worker schedules full collections 1 s, 2 s,
      // … after the stream ends. They fire only if its event loop turns while the pool is idle (a
      // worker blocked in Atomics.wait between tasks never runs them, however long it waits).
      const sql =
        'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 40) SELECT randomblob(1000000) AS b FROM c';
      let bytes = 0;
      let query: PoolQuery | undefined;
      query = reads.stream(
        { sql, params: [], maxRows: 0, maxBytes: 0 },
        {
          // The first batch comes with the schema.
          schema: (ipc, _read, rows) => {
            if (rows === undefined) return;
            bytes += ipc.byteLength;
            query?.credit();
          },
          batch: (ipc) => {
            bytes += ipc.byteLength;
            query?.credit();
          },
        },
        4,
      );
      expect(await query.answer).toMatchObject({ kind: 'done' });
      expect(bytes).toBeGreaterThan(LARGE_ANSWER_BYTES);
      expect(await reads.memoryCollections()).toBe(0);
      // Each probe is a task of its own; between probes the pool is idle.
      const deadline = Date.now() + 10_000;
      let collections = 0;
      while (collections === 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        collections = await reads.memoryCollections();
      }
      expect(collections).toBeGreaterThan(0);
    } finally {
      await reads.close(new Error('closed'));
    }
  });

  it('streams nobody reads hold no worker: the queries asked beside them are answered, and each stream still ends whole', async () => {
    // One worker, three streams of 30 batches left unread past their window: before, the first
    // stream blocked the worker for a credit and everything behind it waited (a slow HTTP client, an
    // unredeemed Flight ticket, held every SQLite query of the pool).
    const reads = pool({ threads: 1, timeoutMs: 30_000 });
    try {
      const sql =
        'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 30000) SELECT x FROM c';
      const streams = Array.from({ length: 3 }, () => {
        const received: number[] = [];
        const take = (rows: number | undefined): void => {
          if (rows !== undefined) received.push(rows);
        };
        const query = reads.stream(
          { sql, params: [], maxRows: 0, maxBytes: 0 },
          { schema: (_ipc, _read, rows) => take(rows), batch: (_ipc, rows) => take(rows) },
          1_000,
        );
        return { query, received };
      });
      // Every stream sends its window (2 batches) and waits for its consumer.
      const deadline = Date.now() + 10_000;
      while (streams.some(({ received }) => received.length < 2) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(streams.map(({ received }) => received.length)).toEqual([2, 2, 2]);
      let late: NodeJS.Timeout | undefined;
      const answered = await Promise.race([
        Promise.all([1, 2, 3].map((id) => reads.run(['users'], lookup(id)))),
        new Promise<'held'>((resolve) => {
          late = setTimeout(() => resolve('held'), 10_000);
        }),
      ]);
      clearTimeout(late);
      expect(answered === 'held' ? 'held behind the unread streams' : answered.map(rowsOf)).toEqual(
        [1, 2, 3].map((id) => [{ n: Math.min(id, expected) }]),
      );
      // Nothing was lost meanwhile: read, each stream ends with every row, in order of its batches.
      for (const { query, received } of streams) {
        let taken = 0;
        let ended = false;
        void query.answer.finally(() => {
          ended = true;
        });
        while (!ended) {
          if (received.length > taken) {
            taken++;
            query.credit();
          } else await new Promise((resolve) => setTimeout(resolve, 5));
        }
        expect(await query.answer).toMatchObject({ kind: 'done', rows: 30_000 });
        expect(received).toEqual(Array.from({ length: 30 }, () => 1_000));
      }
    } finally {
      await reads.close(new Error('closed'));
    }
  });

  it('a stream cancelled while it waits for its consumer ends there: the long query running on its worker is not ended with it', async () => {
    const reads = pool({ threads: 1, timeoutMs: 30_000 });
    try {
      let batches = 0;
      const query = reads.stream(
        {
          sql: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000) SELECT x FROM c',
          params: [],
          maxRows: 0,
          maxBytes: 0,
        },
        { schema: () => batches++, batch: () => batches++ },
        1_000,
      );
      while (batches < 2) await new Promise((resolve) => setTimeout(resolve, 10));
      // Counts to 20 million: seconds, well past the 1 s after which a stop not answered ends a worker.
      const sent = reads.batches;
      const slow = reads.run(['users'], slowQuery(20_000_000));
      query.cancel();
      expect(await query.answer).toMatchObject({ kind: 'error' });
      expect(rowsOf(await slow)).toEqual([{ n: 20_000_000 }]);
      // Run once: its worker was not ended under it (a batch ended with its worker is sent again).
      expect(reads.batches - sent).toBe(1);
    } finally {
      await reads.close(new Error('closed'));
    }
  });

  it("a stream's connection, kept for the next stream, lets go of a generation unlinked since once unused a while", async () => {
    // A swap unlinks old generations; their disk space returns only when no connection has them
    // open. The batches' connection follows the catalog with every batch, a spare one only when
    // used again: unused, it is closed after `spareIdleMs`.
    const old = join(dir, 'users-old.sqlite');
    const next = join(dir, 'users-next.sqlite');
    await copyFile(path, old);
    await copyFile(path, next);
    const generation = (id: number, file: string): SharedCatalog =>
      shareCatalog({
        version: id,
        datasets: [{ name: 'users', engine: 'sqlite', generation: { id, path: file, snapshotId: id } }],
      });
    let catalog = generation(1, old);
    const reads = pool({ threads: 1, timeoutMs: 0, catalog: () => catalog, spareIdleMs: 200 });
    try {
      let query: PoolQuery | undefined;
      query = reads.stream(
        { sql: 'SELECT * FROM users', params: [], maxRows: 0, maxBytes: 0 },
        { schema: () => query?.credit(), batch: () => query?.credit() },
      );
      expect(await query.answer).toMatchObject({ kind: 'done', rows: expected });
      // The swap: a new generation in the catalog, the old one unlinked.
      catalog = generation(2, next);
      await unlink(old);
      const deadline = Date.now() + 10_000;
      while ((await descriptorsOn(`${old} (deleted)`)) > 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(await descriptorsOn(`${old} (deleted)`)).toBe(0);
      // And the pool goes on at the new generation.
      expect(rowsOf(await reads.run(['users'], lookup(1)))).toEqual([{ n: 1 }]);
    } finally {
      await reads.close(new Error('closed'));
    }
  });

  it('a stream read as fast as it comes takes turns with the queries sent to its worker', async () => {
    // A credit already there resolves in a microtask: without a turn of the event loop between
    // steps, the worker's next task (these lookups) waited for the whole stream.
    const reads = pool({ threads: 1, timeoutMs: 30_000 });
    try {
      let query: PoolQuery | undefined;
      let batches = 0;
      let first: () => void = () => undefined;
      const started = new Promise<void>((resolve) => {
        first = resolve;
      });
      const take = (): void => {
        batches++;
        first();
      };
      query = reads.stream(
        {
          sql: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT x FROM c',
          params: [],
          maxRows: 0,
          maxBytes: 0,
        },
        { schema: (_ipc, _read, rows) => rows !== undefined && take(), batch: take },
        1_000,
      );
      // Credits far ahead (a consumer as fast as the worker): the stream never waits for one.
      for (let n = 0; n < 5_000; n++) query.credit();
      let ended = false;
      void query.answer.finally(() => {
        ended = true;
      });
      await started;
      const answered = await reads.run(['users'], lookup(1));
      expect({ ended, rows: rowsOf(answered) }).toEqual({ ended: false, rows: [{ n: 1 }] });
      expect(batches).toBeLessThan(3_000);
      query.cancel();
      await query.answer;
    } finally {
      await reads.close(new Error('closed'));
    }
  });
});
