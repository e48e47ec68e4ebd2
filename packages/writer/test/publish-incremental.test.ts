/**
 * publishIncremental on `file://` and the local S3: a snapshot made by applying INSERT / UPDATE /
 * DELETE to the current one shares most blocks with it (its manifest says so), passes the same
 * checks as any publish, and becomes the writer's kept copy; a missing or stale kept copy is
 * downloaded (and checked) from the store; what cannot be a base or a statement is refused.
 */
import { randomUUID } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { blockManifestKey, type FileFormat, type ObjectStore, parseBlockManifest } from '@ferry/core';
import { createFileStore, createS3Store } from '@ferry/store';
import { type LocalAws, localStoreParams, startLocalAws } from '@ferry/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PublishResult, publishIncremental, publishSnapshot } from '../src/index.js';
import {
  collect,
  datasetOf,
  keysOf,
  removeTempDirs,
  tempDir,
  verifyPublished,
  withHookBeforeMetadataPut,
} from './helpers.js';

const BUCKET = 'incremental';
let aws: LocalAws;

beforeAll(async () => {
  aws = await startLocalAws();
  await aws.createBucket(BUCKET);
});

afterAll(async () => {
  await aws?.close();
  await removeTempDirs();
});

const ROWS = 100_000;
const rowsSql = (from: number, to: number) =>
  `SELECT i::BIGINT AS id, md5(i::VARCHAR) AS payload FROM range(${from}, ${to}) r(i)`;

async function manifestOf(store: ObjectStore, result: PublishResult) {
  const got = await store.get(blockManifestKey(result.key));
  if (got.status !== 'ok') throw new Error('no manifest');
  return parseBlockManifest(new TextDecoder().decode(got.body), result.key, result);
}

/** Blocks of `next` whose digest is the same block of `previous`, as a share of `next`'s blocks. */
async function sharedShare(
  store: ObjectStore,
  previous: PublishResult,
  next: PublishResult,
): Promise<number> {
  const a = await manifestOf(store, previous);
  const b = await manifestOf(store, next);
  return b.blocks.filter((digest, i) => a.blocks[i] === digest).length / b.blocks.length;
}

const storeKinds = {
  file: async () => {
    const dir = await tempDir();
    return createFileStore({ location: pathToFileURL(`${dir}/`).href });
  },
  s3: async () => createS3Store({ location: `s3://${BUCKET}/${randomUUID()}/`, ...localStoreParams(aws) }),
};

describe.each<[FileFormat, keyof typeof storeKinds]>([
  ['duckdb', 'file'],
  ['sqlite', 'file'],
  ['duckdb', 's3'],
])('publishIncremental (%s on %s)', (engine, storeKind) => {
  let store: ObjectStore;
  let stateDir: string;
  let first: PublishResult;

  beforeAll(async () => {
    store = await storeKinds[storeKind]();
    stateDir = await tempDir();
    first = await publishSnapshot({
      dataset: 'orders',
      location: store,
      engine,
      source: { sql: rowsSql(0, ROWS) },
    });
  });

  afterAll(async () => {
    await store?.close();
  });

  const insert = (from: number, to: number) =>
    engine === 'duckdb'
      ? `INSERT INTO orders ${rowsSql(from, to)}`
      : `INSERT INTO orders WITH RECURSIVE r(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM r WHERE i + 1 < ${to}) SELECT i, hex(randomblob(16)) FROM r`;

  it('downloads the current snapshot the first time, applies the statements, and shares most blocks with it', async () => {
    const second = await publishIncremental({
      dataset: 'orders',
      location: store,
      stateDir,
      statements: [insert(ROWS, ROWS + ROWS / 100)],
    });
    expect(second.base).toEqual({ snapshotId: first.snapshotId, source: 'downloaded' });
    expect(second.snapshotId).toBe(first.snapshotId + 1);
    await verifyPublished(store, 'orders', engine, second, ROWS + ROWS / 100);
    expect(await sharedShare(store, first, second)).toBeGreaterThan(0.5);
    // The kept copy is the published file.
    const published = await collect(store.read(second.key));
    expect(Buffer.compare(await readFile(join(stateDir, 'orders.snapshot')), published)).toBe(0);
  });

  it('next time starts from its kept copy; UPDATE and DELETE apply too', async () => {
    const third = await publishIncremental({
      dataset: 'orders',
      location: store,
      stateDir,
      statements: [
        'UPDATE orders SET payload = upper(payload) WHERE id < 10',
        'DELETE FROM orders WHERE id >= 100 AND id < 120',
      ],
    });
    expect(third.base.source).toBe('kept');
    await verifyPublished(store, 'orders', engine, third, ROWS + ROWS / 100 - 20);
  });

  it('a kept copy that is not the current snapshot is replaced by a download', async () => {
    await writeFile(join(stateDir, 'orders.snapshot'), 'not the snapshot');
    const fourth = await publishIncremental({
      dataset: 'orders',
      location: store,
      stateDir,
      statements: [insert(ROWS * 2, ROWS * 2 + 10)],
    });
    expect(fourth.base.source).toBe('downloaded');
    await verifyPublished(store, 'orders', engine, fourth, ROWS + ROWS / 100 - 10);
  });

  it('refuses anything but INSERT, UPDATE and DELETE, and publishes nothing', async () => {
    const before = await collect(store.read('metadata.json'));
    for (const statement of ['SELECT 1', 'DROP TABLE orders', 'CREATE TABLE x (a INTEGER)']) {
      await expect(
        publishIncremental({ dataset: 'orders', location: store, stateDir, statements: [statement] }),
      ).rejects.toMatchObject({ code: 'ERR_WRITER_STATEMENT' });
    }
    expect(Buffer.compare(await collect(store.read('metadata.json')), before)).toBe(0);
  });
});

describe('publishIncremental without a base', () => {
  it('refuses a dataset the location has no snapshot of', async () => {
    const dir = await tempDir();
    const store = createFileStore({ location: pathToFileURL(`${dir}/`).href });
    await expect(
      publishIncremental({
        dataset: 'orders',
        location: store,
        stateDir: join(dir, 'state'),
        statements: ['DELETE FROM orders'],
      }),
    ).rejects.toMatchObject({ code: 'ERR_WRITER_INCREMENTAL_BASE' });
    await rm(dir, { recursive: true, force: true });
  });
});

describe('publishIncremental racing another writer', () => {
  it('refuses to publish over a snapshot another writer made current meanwhile, which its file lacks', async () => {
    const dir = await tempDir();
    const store = createFileStore({ location: pathToFileURL(`${dir}/`).href });
    const sql = (n: number) => `SELECT i::BIGINT AS id FROM range(${n}) r(i)`;
    const base = await publishSnapshot({ dataset: 'orders', location: store, source: { sql: sql(10) } });
    let other: PublishResult | undefined;
    // Another writer publishes 20 rows after this writer read metadata.json (its base: 10 rows).
    const racing = withHookBeforeMetadataPut(store, async () => {
      other = await publishSnapshot({ dataset: 'orders', location: store, source: { sql: sql(20) } });
    });
    const error = await publishIncremental({
      dataset: 'orders',
      location: racing,
      stateDir: join(dir, 'state'),
      statements: ['INSERT INTO orders VALUES (100)'],
    }).then(
      () => undefined,
      (caught: Error & { code?: string }) => caught,
    );
    expect(other?.snapshotId).toBe(base.snapshotId + 1);
    // Published, its 11 rows would have replaced the other writer's 20 as the current snapshot.
    expect(error?.code).toBe('ERR_WRITER_INCREMENTAL_BASE');
    expect(error?.message).toContain(`snapshot ${other?.snapshotId}`);
    const entry = await datasetOf(store, 'orders');
    expect(entry.currentSnapshotId).toBe(other?.snapshotId);
    expect(entry.snapshots.map((s) => s.snapshotId)).toEqual([0, 1]);
    // Its upload is taken back: only the two published snapshots (and their manifests) remain.
    expect((await keysOf(store)).filter((key) => key.startsWith('month='))).toHaveLength(4);
  });
});
