/**
 * Admission control through the embed API: a runtime admits at most `maxQueriesInFlight` queries
 * at once (running or queued; a stream until it ends); the next one is refused at once with
 * `QueryRejectedError` — exported from `@ferry/runtime`, with its code and a retry hint — and never
 * waits in an unbounded queue; once the queries in flight end, queries are admitted again. The
 * counter itself (the retry hint from the recent finishing rate) on a simulated clock.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { publishSnapshot } from '@ferry/writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createRuntime,
  memoryLogger,
  QueryRejectedError,
  type Runtime,
  type RuntimeQueryStream,
} from '../src/index.js';
import { QueryAdmission } from '../src/query/admission.js';
import { queriesInFlight, queryAdmission } from '../src/testing.js';
import { podYaml, tempDir } from './support.js';

const CAP = 3;
let work: string;
let runtime: Runtime;

beforeAll(async () => {
  work = await tempDir('ferry-admission-');
  await mkdir(join(work, 'store'));
  const location = `file://${join(work, 'store')}/`;
  for (const [dataset, engine] of [
    ['orders', 'duckdb'],
    ['users', 'sqlite'],
  ] as const) {
    await publishSnapshot({
      dataset,
      engine,
      location,
      source: { sql: `SELECT i::BIGINT AS id FROM range(200000) t(i)` },
      notNull: ['id'],
    });
  }
  runtime = await createRuntime(
    {
      yaml: podYaml(location, [
        { name: 'orders', engine: 'duckdb', interval: '1h' },
        { name: 'users', engine: 'sqlite', interval: '1h' },
      ]),
      baseDir: work,
    },
    { logger: memoryLogger(), dataDir: join(work, 'data'), maxQueriesInFlight: CAP },
  );
  await runtime.ready(undefined, { timeoutMs: 60_000 });
});

afterAll(async () => {
  await runtime?.close();
  await rm(work, { recursive: true, force: true });
});

/** Streams that hold their admission: opened (their schema known), not read. */
async function held(count: number): Promise<RuntimeQueryStream[]> {
  const streams: RuntimeQueryStream[] = [];
  for (let n = 0; n < count; n++) {
    streams.push(
      await runtime.queryStream(n % 2 === 0 ? 'SELECT * FROM orders' : 'SELECT * FROM users', [], {
        batchRows: 1000,
      }),
    );
  }
  return streams;
}

/** Waits until the pools have answered every query and no query holds its admission. */
async function drained(): Promise<void> {
  const started = performance.now();
  while (queriesInFlight(runtime) > 0 || queryAdmission(runtime).inFlight > 0) {
    if (performance.now() - started > 15_000) {
      throw new Error(
        `queries still run: ${queriesInFlight(runtime)}, admitted ${queryAdmission(runtime).inFlight}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('admission through the embed API', () => {
  it('refuses a query past the cap at once with QueryRejectedError, then admits again once they end', async () => {
    const streams = await held(CAP);
    const began = performance.now();
    const refused = await runtime.query('SELECT count(*) AS n FROM orders').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(performance.now() - began).toBeLessThan(1_000);
    expect(refused).toBeInstanceOf(QueryRejectedError);
    expect(refused).toMatchObject({
      code: 'ERR_QUERY_REJECTED',
      limit: CAP,
      message: expect.stringMatching(
        /already has 3 queries in flight.*\(maxQueriesInFlight\); retry in \d+ s/,
      ),
    });
    expect((refused as QueryRejectedError).retryAfterSeconds).toBeGreaterThanOrEqual(1);
    // Every kind of query is refused, not queued: a burst of four times the cap, each at once.
    const burst = await Promise.allSettled(
      Array.from({ length: 4 * CAP }, (_, n) =>
        n % 2 === 0 ? runtime.query('SELECT 1 AS one') : runtime.queryArrow('SELECT 1 AS one'),
      ),
    );
    expect(
      burst.every((outcome) => outcome.status === 'rejected' && outcome.reason instanceof QueryRejectedError),
    ).toBe(true);
    for (const stream of streams) stream.cancel();
    await drained();
    expect(await runtime.query('SELECT count(*) AS n FROM orders')).toMatchObject({ rows: [{ n: 200000 }] });
    expect(await runtime.query('SELECT count(*) AS n FROM users')).toMatchObject({ rows: [{ n: 200000 }] });
  });

  it('lets every query of a burst at the cap run, and a stream read to its end frees its place', async () => {
    const answers = await Promise.all(
      Array.from({ length: CAP }, (_, n) =>
        runtime.query(`SELECT count(*) AS n FROM ${n % 2 === 0 ? 'orders' : 'users'}`),
      ),
    );
    expect(answers.map((answer) => answer.rows[0]?.n)).toEqual(Array(CAP).fill(200000));
    const stream = await runtime.queryStream('SELECT * FROM orders LIMIT 10');
    let rows = 0;
    for await (const batch of stream.batches) rows += batch.numRows;
    expect(rows).toBe(10);
    await drained();
    const all = await held(CAP);
    for (const open of all) open.cancel();
    await drained();
  });
});

describe('QueryAdmission', () => {
  it('admits up to the cap, refuses past it, and counts what it refused', () => {
    const admission = new QueryAdmission({ maxInFlight: 2, now: () => 0 });
    admission.admit();
    admission.admit();
    expect(() => admission.admit()).toThrow(QueryRejectedError);
    admission.release();
    admission.admit();
    expect([admission.inFlight, admission.rejected]).toEqual([2, 1]);
  });

  it('hints a retry after the time the queries in flight take to finish at the recent rate (at least 1 s)', () => {
    let now = 0;
    const admission = new QueryAdmission({ maxInFlight: 100, now: () => now });
    for (let n = 0; n < 100; n++) admission.admit();
    expect(admission.retryAfterSeconds()).toBe(1);
    // 5 queries a second finish for two seconds: 90 left in flight take about 18 s.
    for (let n = 0; n < 10; n++) {
      now += 200;
      admission.release();
    }
    const slow = admission.retryAfterSeconds();
    expect(slow).toBeGreaterThanOrEqual(12);
    expect(slow).toBeLessThanOrEqual(27);
    // Ten times the rate: about a tenth of the wait.
    for (let n = 0; n < 80; n++) {
      now += 20;
      admission.release();
    }
    expect(admission.retryAfterSeconds()).toBeLessThanOrEqual(2);
    // Long after, nothing finished recently: one second.
    now = 60_000;
    expect(admission.retryAfterSeconds()).toBe(1);
  });

  it('admits everything with no cap', () => {
    const admission = new QueryAdmission({ maxInFlight: 0 });
    for (let n = 0; n < 10_000; n++) admission.admit();
    expect(admission.inFlight).toBe(10_000);
  });
});
