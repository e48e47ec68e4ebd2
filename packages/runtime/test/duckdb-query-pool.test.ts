/**
 * The DuckDB query pool on a real worker thread and a real DuckDB file: a catalog version pushed to
 * the worker is what the next query reads; a batch stream sends at most its window of batches
 * until the consumer takes one; a cancelled query is interrupted and the worker keeps serving.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DuckDbNamespaceOptions, NamespaceCatalog } from '@ferry/engines';
import { buildSnapshotFile } from '@ferry/writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDbQueryPool } from '../src/duckdb-query-pool.js';
import { memoryLogger } from '../src/logging.js';
import { STREAM_WINDOW } from '../src/query-protocol.js';

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
      expect(await pool.run(request, 'rows').answer).toMatchObject({
        kind: 'rows',
        rows: [{ v: 1 }],
        read: [{ name: 'orders', snapshotId: 101 }],
      });
      pool.setCatalog(catalog(2, second));
      expect(await pool.run(request, 'rows').answer).toMatchObject({
        rows: [{ v: 2 }],
        read: [{ snapshotId: 102 }],
      });

      // A stream with nobody taking its batches: the window, then nothing until a credit.
      const batches: number[] = [];
      let schema = false;
      const stream = pool.run(
        { sql: 'SELECT i FROM range(100000) t(i)', params: [], maxRows: 0, maxBytes: 0 },
        'batches',
        {
          schema: () => {
            schema = true;
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
      const runaway = pool.run(
        { sql: 'SELECT count(*) FROM orders, range(1000000000000)', params: [], maxRows: 0, maxBytes: 0 },
        'rows',
      );
      runaway.cancel();
      expect(await runaway.answer).toMatchObject({ kind: 'error' });
      expect(await pool.run(request, 'rows').answer).toMatchObject({ rows: [{ v: 2 }] });
      expect(pool.inFlight).toBe(0);
    } finally {
      await pool.close();
    }
  });
});
