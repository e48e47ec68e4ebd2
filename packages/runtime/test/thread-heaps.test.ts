/**
 * The young generation of the runtime's own threads (thread-limits.ts), with real threads against
 * a real local S3: after swaps on both engines, the coordinator, every dataset thread and every
 * snapshot worker that ran them report V8's young generation as set, not V8's default (48 MiB,
 * which let each grow to 32 MiB of new space in a soak and made RSS grow); so do the query workers
 * that answered queries on both engines, with theirs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  QUERY_THREAD_YOUNG_GENERATION_MB,
  SMALL_THREAD_YOUNG_GENERATION_MB,
} from '../src/common/thread-limits.js';
import { createRuntime, memoryLogger, type Runtime } from '../src/index.js';
import { threadYoungGenerations } from '../src/testing.js';
import { nextEvent, publishVersion, spicepod, tempDir, useLocalAws } from './support.js';

const aws = useLocalAws();
const PREFIX = 'thread-heaps/';
const QUERY_WORKER = / (query|read) worker$/;

describe('runtime threads: a small young generation', () => {
  let runtime: Runtime;

  beforeAll(async () => {
    await publishVersion(aws, 'duck', 'duckdb', 1, { prefix: PREFIX });
    await publishVersion(aws, 'lite', 'sqlite', 1, { prefix: PREFIX });
    const dataDir = await tempDir('ferry-thread-heaps-');
    runtime = await createRuntime(
      {
        yaml: spicepod(
          aws,
          [
            { name: 'duck', engine: 'duckdb' },
            { name: 'lite', engine: 'sqlite' },
          ],
          { prefix: PREFIX },
        ),
        baseDir: dataDir,
      },
      // Snapshot workers stay up between the swaps and the check.
      { logger: memoryLogger(), dataDir, snapshotIdleTimeoutMs: 120_000 },
    );
    await runtime.ready(undefined, { timeoutMs: 30_000 });
  });

  afterAll(async () => {
    await runtime?.close();
  });

  it('the coordinator, each dataset thread and each snapshot worker run with it after swaps', async () => {
    for (const version of [2, 3]) {
      for (const [name, engine] of [
        ['duck', 'duckdb'],
        ['lite', 'sqlite'],
      ] as const) {
        const swapped = nextEvent(runtime, 'swap', (event) => event.dataset === name, 20_000);
        const published = await publishVersion(aws, name, engine, version, { prefix: PREFIX });
        expect((await swapped).to).toBe(published.snapshotId);
      }
    }
    const threads = (await threadYoungGenerations(runtime)).filter(
      (thread) => !QUERY_WORKER.test(thread.thread),
    );
    // Every kind of thread is there: the check is not of an empty list.
    expect(threads.map((thread) => thread.thread).filter((name) => name !== 'snapshot worker')).toEqual([
      'coordinator',
      'dataset duck',
      'dataset lite',
    ]);
    expect(threads.some((thread) => thread.thread === 'snapshot worker')).toBe(true);
    for (const thread of threads) {
      expect(thread, thread.thread).toEqual({
        thread: thread.thread,
        maxYoungGenerationSizeMb: SMALL_THREAD_YOUNG_GENERATION_MB,
      });
    }
  });

  it('the query workers of both engines run with theirs after answering', async () => {
    for (const name of ['duck', 'lite']) {
      expect((await runtime.query(`SELECT count(*) AS n FROM ${name}`)).rows).toHaveLength(1);
    }
    const workers = (await threadYoungGenerations(runtime)).filter((thread) =>
      QUERY_WORKER.test(thread.thread),
    );
    expect(new Set(workers.map((worker) => worker.thread))).toEqual(
      new Set(['DuckDB query worker', 'SQLite read worker']),
    );
    for (const worker of workers) {
      expect(worker, worker.thread).toEqual({
        thread: worker.thread,
        maxYoungGenerationSizeMb: QUERY_THREAD_YOUNG_GENERATION_MB,
      });
    }
  });
});
