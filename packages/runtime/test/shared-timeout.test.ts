/**
 * Identical requests arriving while one runs wait for its answer (the results cache's sharing);
 * when that run is stopped by the query timeout, they fail with it too instead of each running
 * the statement again. Found by sending three identical runaway statements to `ferry serve` with a
 * 3 s timeout: the first answered 504 after 3 s, the two that waited for it after 6 s, each having
 * run it again (a dashboard's 64 clients on a statement past its timeout: 63 runaways at once
 * after the first, each client answered after twice the timeout).
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { publishSnapshot } from '@ferry/writer';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createRuntime, memoryLogger, type Runtime } from '../src/index.js';
import { queriesSent } from '../src/testing.js';
import { podYaml, tempDir } from './support.js';

let work: string;
let runtime: Runtime;

beforeAll(async () => {
  work = await tempDir('ferry-shared-timeout-');
  await mkdir(join(work, 'store'));
  const location = `file://${join(work, 'store')}/`;
  await publishSnapshot({
    dataset: 'orders',
    engine: 'duckdb',
    location,
    source: { sql: 'SELECT i::BIGINT AS id FROM range(10) t(i)' },
    notNull: ['id'],
  });
  runtime = await createRuntime(
    { yaml: podYaml(location, [{ name: 'orders', engine: 'duckdb', interval: '1h' }]), baseDir: work },
    { logger: memoryLogger(), dataDir: join(work, 'data'), queryTimeoutMs: 1_000 },
  );
  await runtime.ready(undefined, { timeoutMs: 60_000 });
});

afterAll(async () => {
  await runtime?.close();
  await rm(work, { recursive: true, force: true });
});

it('requests waiting for an identical run that timed out fail with its timeout, without running it again', async () => {
  const sql = 'SELECT count(*) AS n FROM orders, range(?) t(i)';
  // The statement has run: its datasets are known, so identical requests share one run.
  expect((await runtime.query(sql, [10])).rows).toEqual([{ n: 100 }]);
  const sent = queriesSent(runtime).duckdb;
  const outcomes = await Promise.allSettled([0, 1, 2].map(() => runtime.query(sql, [1_000_000_000_000])));
  for (const outcome of outcomes) {
    expect(outcome).toMatchObject({ status: 'rejected', reason: { code: 'ERR_QUERY_TIMEOUT' } });
  }
  expect(queriesSent(runtime).duckdb - sent).toBe(1);
});
