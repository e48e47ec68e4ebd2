/**
 * Delta swaps through the whole runtime (real threads, the snapshot pool): the incremental writer
 * publishes 1 % more rows, the reader fetches only the changed blocks (local S3 and `file://`),
 * the swap log line and `metrics()` say how much was reused, and queries see the new rows. A
 * snapshot published without a block manifest (a Spice writer's layout) is swapped in whole, as
 * before.
 */
import { join } from 'node:path';
import { localStoreParams } from '@ferry/test-support';
import { publishIncremental, publishSnapshot } from '@ferry/writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, memoryLogger, type Runtime } from '../src/index.js';
import { location, nextEvent, podYaml, spicepod, tempDir, useLocalAws } from './support.js';

const aws = useLocalAws();
const ROWS = 100_000;
const rowsSql = (from: number, to: number) =>
  `SELECT i::BIGINT AS id, md5(i::VARCHAR) AS payload FROM range(${from}, ${to}) r(i)`;

describe.each<['s3' | 'file', 'duckdb' | 'sqlite']>([
  ['s3', 'duckdb'],
  ['file', 'sqlite'],
])('runtime: delta swaps (%s, %s)', (storeKind, engine) => {
  let runtime: Runtime;
  let logger: ReturnType<typeof memoryLogger>;
  let work: string;
  let snapshotLocation: string;
  let storeParams: ReturnType<typeof localStoreParams> | Record<string, never>;
  const dataset = `orders_${engine}`;
  const insert = (from: number, to: number) =>
    engine === 'duckdb'
      ? `INSERT INTO ${dataset} ${rowsSql(from, to)}`
      : `INSERT INTO ${dataset} WITH RECURSIVE r(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM r WHERE i + 1 < ${to}) SELECT i, hex(randomblob(16)) FROM r`;

  beforeAll(async () => {
    work = await tempDir('ferry-delta-swap-');
    storeParams = storeKind === 's3' ? localStoreParams(aws) : {};
    snapshotLocation = storeKind === 's3' ? location(`delta-${engine}/`) : `file://${join(work, 'store')}/`;
    await publishSnapshot({
      dataset,
      engine,
      location: snapshotLocation,
      storeParams,
      source: { sql: rowsSql(0, ROWS) },
    });
    const datasets = [{ name: dataset, engine, interval: '1h' }];
    const yaml =
      storeKind === 's3'
        ? spicepod(aws, datasets, { prefix: `delta-${engine}/` })
        : podYaml(snapshotLocation, datasets);
    logger = memoryLogger();
    runtime = await createRuntime({ yaml, baseDir: work }, { logger, dataDir: join(work, 'data') });
    await runtime.ready(undefined, { timeoutMs: 60_000 });
  });

  afterAll(async () => {
    await runtime?.close();
  });

  async function refresh(expected: number): Promise<void> {
    const swapped = nextEvent(runtime, 'swap', (event) => event.dataset === dataset && event.to === expected);
    await runtime.send(dataset, 'poll.now');
    await swapped;
  }

  it('1 % of rows appended by the incremental writer: only the changed blocks are fetched', async () => {
    const published = await publishIncremental({
      dataset,
      location: snapshotLocation,
      storeParams,
      stateDir: join(work, 'writer'),
      statements: [insert(ROWS, ROWS + ROWS / 100)],
    });
    await refresh(published.snapshotId);
    const last = runtime.metrics().lastDownloads[dataset];
    expect(last?.snapshotId).toBe(published.snapshotId);
    expect((last?.reusedBytes ?? 0) + (last?.fetchedBytes ?? 0)).toBe(published.size);
    expect(last?.fetchedBytes).toBeLessThan(published.size / 2);
    const line = logger.records.find((record) =>
      record.message.startsWith(`Dataset '${dataset}' now serves snapshot ${published.snapshotId} (`),
    );
    expect(line?.message).toMatch(/% of .* MiB reused from snapshot 0's file, .* MiB fetched\)$/);
    expect(line?.fields).toMatchObject({ reusedBytes: last?.reusedBytes, fetchedBytes: last?.fetchedBytes });
    const result = await runtime.query(`SELECT count(*) AS n FROM ${dataset}`);
    expect(Number(result.rows[0]?.n)).toBe(ROWS + ROWS / 100);
    expect(result.snapshotId).toBe(published.snapshotId);
  });

  it('a snapshot without a block manifest (Spice layout) is downloaded whole and served', async () => {
    const published = await publishSnapshot({
      dataset,
      engine,
      location: snapshotLocation,
      storeParams,
      source: { sql: rowsSql(0, 500) },
      blockManifest: false,
    });
    await refresh(published.snapshotId);
    expect(runtime.metrics().lastDownloads[dataset]).toEqual({
      snapshotId: published.snapshotId,
      fetchedBytes: published.size,
      reusedBytes: 0,
    });
    const line = logger.records.find((record) =>
      record.message.startsWith(`Dataset '${dataset}' now serves snapshot ${published.snapshotId}`),
    );
    expect(line?.message).toBe(`Dataset '${dataset}' now serves snapshot ${published.snapshotId}`);
    const result = await runtime.query(`SELECT count(*) AS n FROM ${dataset}`);
    expect(Number(result.rows[0]?.n)).toBe(500);
  });
});
