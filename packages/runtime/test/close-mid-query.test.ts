/**
 * `close()` while queries run and streams are open, on both engines: every one of them fails with
 * the runtime's own `ERR_RUNTIME_CLOSED` (`RuntimeClosedError`), as a query asked after close()
 * does, and close() resolves. Found by closing a runtime under runaway statements: DuckDB's failed
 * with a bare `Error('The query was cancelled.')` (no code; HTTP would call it a 500) and an SQLite
 * stream with piscina's `Terminating worker thread`.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { publishSnapshot } from '@ferry/writer';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createRuntime, memoryLogger, type Runtime, type RuntimeQueryStream } from '../src/index.js';
import { queriesInFlight } from '../src/testing.js';
import { podYaml, tempDir } from './support.js';

let work: string;
let runtimes = 0;
const opened: Runtime[] = [];

const RUNAWAY = {
  duckdb: 'SELECT count(*) AS n FROM orders, range(1000000000000) t(i)',
  sqlite:
    'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c, users',
} as const;
const ENDLESS = {
  duckdb: 'SELECT * FROM orders, range(1000000000000) t(i)',
  sqlite: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT * FROM c, users',
} as const;

beforeAll(async () => {
  work = await tempDir('ferry-close-mid-query-');
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
      source: { sql: 'SELECT i::BIGINT AS id FROM range(10) t(i)' },
      notNull: ['id'],
    });
  }
});

/** A runtime serving both datasets, every query unbounded in time. */
async function started(): Promise<Runtime> {
  const location = `file://${join(work, 'store')}/`;
  const runtime = await createRuntime(
    {
      yaml: podYaml(location, [
        { name: 'orders', engine: 'duckdb', interval: '1h' },
        { name: 'users', engine: 'sqlite', interval: '1h' },
      ]),
      baseDir: work,
    },
    { logger: memoryLogger(), dataDir: join(work, `data-${++runtimes}`), queryTimeoutMs: 600_000 },
  );
  opened.push(runtime);
  await runtime.ready(undefined, { timeoutMs: 60_000 });
  return runtime;
}

afterAll(async () => {
  for (const runtime of opened) await runtime.close();
  await rm(work, { recursive: true, force: true });
});

/** What reading `stream` to its end ends with: its error, or 'ended'. */
async function readOut(stream: RuntimeQueryStream): Promise<unknown> {
  try {
    for await (const _batch of stream.batches);
    return 'ended';
  } catch (error) {
    return error;
  }
}

it('a DuckDB query asked with an aborted signal, then close(): cancelled, and no unhandled rejection', async () => {
  const unhandled: unknown[] = [];
  const collect = (reason: unknown): void => {
    unhandled.push(reason);
  };
  process.on('unhandledRejection', collect);
  const runtime = await started();
  try {
    const gone = new AbortController();
    gone.abort(new Error('the caller left'));
    const asked = runtime.query('SELECT count(*) AS n FROM orders WHERE id > 3', [], { signal: gone.signal });
    await expect(asked).rejects.toMatchObject({ code: 'ERR_QUERY_CANCELLED' });
    // Its engine's answer, still to come, fails at close(): that failure is nobody's to handle.
    await runtime.close();
    await new Promise((resolve) => setImmediate(resolve));
    expect(unhandled).toEqual([]);
  } finally {
    process.off('unhandledRejection', collect);
  }
});

it('close() fails the queries and streams in flight on both engines with ERR_RUNTIME_CLOSED', async () => {
  const runtime = await started();
  // Both pools up (their first queries would otherwise still be booting a worker).
  for (const name of ['orders', 'users']) {
    expect((await runtime.query(`SELECT count(*) AS n FROM ${name}`)).rows).toEqual([{ n: 10 }]);
  }
  const queries = [runtime.query(RUNAWAY.duckdb), runtime.query(RUNAWAY.sqlite)].map((query) =>
    query.then(
      () => 'answered',
      (error: unknown) => error,
    ),
  );
  const streams = [await runtime.queryStream(ENDLESS.duckdb), await runtime.queryStream(ENDLESS.sqlite)];
  // The streams have started (their schema came); the two queries are with their pools.
  while (queriesInFlight(runtime) < 4) await new Promise((resolve) => setTimeout(resolve, 10));
  await runtime.close();
  const outcomes = [...(await Promise.all(queries)), ...(await Promise.all(streams.map(readOut)))];
  for (const outcome of outcomes) {
    expect(outcome).toMatchObject({ code: 'ERR_RUNTIME_CLOSED', name: 'RuntimeClosedError' });
  }
});
