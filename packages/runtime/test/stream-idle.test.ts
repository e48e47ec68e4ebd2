/**
 * A stream's idle bound (`idleTimeoutMs`) is the consumer's silence while batches wait for it:
 * a consumer that keeps reading, however much slower than the engine, is never cut — even long
 * past the bound, with batches always waiting — and one that stops reading for longer is
 * (`ERR_STREAM_IDLE`, its query cancelled). Real worker threads on a file:// store.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { publishSnapshot } from '@ferry/writer';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createRuntime, memoryLogger, type Runtime } from '../src/index.js';
import { podYaml, tempDir } from './support.js';

const IDLE_MS = 400;
const SQL = 'SELECT i FROM range(200000) t(i)';

let work: string;
let runtime: Runtime;

beforeAll(async () => {
  work = await tempDir('ferry-stream-idle-');
  await mkdir(join(work, 'store'));
  const location = `file://${join(work, 'store')}/`;
  await publishSnapshot({ dataset: 'orders', location, source: { sql: 'SELECT 1::BIGINT AS id' } });
  runtime = await createRuntime(
    { yaml: podYaml(location, [{ name: 'orders', engine: 'duckdb', interval: '1h' }]), baseDir: work },
    { logger: memoryLogger(), dataDir: join(work, 'data') },
  );
  await runtime.ready('orders');
});

afterAll(async () => {
  await runtime?.close();
  await rm(work, { recursive: true, force: true });
});

it('a consumer slower than the engine, reading for longer than the idle bound, gets every row', async () => {
  const stream = await runtime.queryStream(SQL, [], { batchRows: 1_000, idleTimeoutMs: IDLE_MS });
  const started = performance.now();
  let rows = 0;
  for await (const batch of stream.batches) {
    rows += batch.numRows;
    // Three idle bounds of slow reading (a batch every 100 ms: the engine always has one waiting).
    if (performance.now() - started < 3 * IDLE_MS) await sleep(100);
  }
  expect(rows).toBe(200_000);
  expect(performance.now() - started).toBeGreaterThan(3 * IDLE_MS);
});

it('a consumer that stops reading for longer than the idle bound is cut with ERR_STREAM_IDLE', async () => {
  const stream = await runtime.queryStream(SQL, [], { batchRows: 1_000, idleTimeoutMs: IDLE_MS });
  const batches = stream.batches[Symbol.asyncIterator]();
  expect((await batches.next()).done).toBe(false);
  await sleep(3 * IDLE_MS);
  await expect(
    (async () => {
      for (;;) if ((await batches.next()).done) return;
    })(),
  ).rejects.toMatchObject({ code: 'ERR_STREAM_IDLE' });
});
