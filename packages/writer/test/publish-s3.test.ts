/**
 * publishSnapshot to S3 (fauxqs through the real AWS SDK): what lands in the bucket, multipart
 * uploads with progress, and the conditional metadata write. fauxqs ignores If-Match /
 * If-None-Match, so `emulateConditionalWrites` gives the 412s S3 would send and `injectS3Fault`
 * forces lost races; the retries are then observed from outside.
 */
import { randomUUID } from 'node:crypto';
import { createS3Store, type S3ObjectStore } from '@ferry/store';
import {
  copyFixtureStore,
  emulateConditionalWrites,
  injectS3Fault,
  type LocalAws,
  localStoreParams,
  startLocalAws,
} from '@ferry/test-support';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type PublishResult, publishSnapshot } from '../src/index.js';
import {
  datasetOf,
  keysOf,
  ordersCsv,
  ordersSql,
  readStoreMetadata,
  removeTempDirs,
  tempDir,
  verifyPublished,
  withHookBeforeMetadataPut,
  writeCsv,
} from './helpers.js';

const bucket = 'writer-tests';
let aws: LocalAws;
const stores: S3ObjectStore[] = [];

beforeAll(async () => {
  aws = await startLocalAws();
  await aws.createBucket(bucket);
});

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

afterAll(async () => {
  await aws.close();
  await removeTempDirs();
});

function s3Store(location: string): S3ObjectStore {
  const store = createS3Store({ location, ...localStoreParams(aws) });
  stores.push(store);
  return store;
}

const newLocation = (): string => `s3://${bucket}/snapshots-${randomUUID()}/`;

async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error('expected a rejection');
}

const isMetadataPut = (commandName: string, input: Readonly<Record<string, unknown>>): boolean =>
  commandName === 'PutObjectCommand' && String(input.Key).endsWith('/metadata.json');

describe('publishSnapshot to S3', () => {
  it('publishes a CSV query to the dated key with metadata a reader accepts', async () => {
    const location = newLocation();
    const dir = await tempDir();
    const csv = await writeCsv(dir, 'orders.csv', ordersCsv(6));
    const result = await publishSnapshot({
      dataset: 'orders',
      location,
      storeParams: localStoreParams(aws),
      source: { sql: ordersSql(csv) },
    });
    expect(result).toMatchObject({ snapshotId: 0, schemaId: 0, rowCount: 6, attempts: 1 });
    const store = s3Store(location);
    await verifyPublished(store, 'orders', 'duckdb', result, 6);
    expect(await keysOf(store)).toEqual(
      [result.key, `${result.key}.ferry-blocks.json`, 'metadata.json'].sort(),
    );
  });

  it('uploads a large file in parts, reporting progress, with the checksum of the stored bytes', async () => {
    const location = newLocation();
    const store = s3Store(location);
    const progress: number[] = [];
    const totals = new Set<number>();
    const result = await publishSnapshot({
      dataset: 'hashes',
      location: store,
      source: {
        sql: 'SELECT range AS id, md5(range::VARCHAR) || md5((range + 1)::VARCHAR) AS h FROM range(400000)',
      },
      onProgress: (bytes, total) => {
        progress.push(bytes);
        totals.add(total);
      },
    });
    expect(result.size).toBeGreaterThan(11 * 1024 * 1024);
    expect(progress.length).toBeGreaterThan(2);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.at(-1)).toBe(result.size);
    expect([...totals]).toEqual([result.size]);
    const parts = aws.requests
      .list({ method: 'PUT' })
      .filter((r) => r.target.endsWith(result.key) && r.query.includes('partNumber='));
    expect(parts.length).toBeGreaterThanOrEqual(2);
    await verifyPublished(store, 'hashes', 'duckdb', result, 400000);
  });

  it('retries the metadata step after a lost conditional write', async () => {
    const location = newLocation();
    const store = s3Store(location);
    let refused = 0;
    const fault = injectS3Fault(store.client, ({ commandName, input }) =>
      isMetadataPut(commandName, input) && refused++ < 2
        ? {
            status: 412,
            code: 'PreconditionFailed',
            message: 'At least one of the pre-conditions did not hold',
          }
        : undefined,
    );
    try {
      const result = await publishSnapshot({
        dataset: 'nums',
        location: store,
        source: { sql: 'SELECT 1 AS n' },
      });
      expect(fault.injected()).toBe(2);
      expect(result).toMatchObject({ snapshotId: 0, attempts: 3 });
      const entry = await datasetOf(store, 'nums');
      expect(entry.snapshots.map((s) => s.uri)).toEqual([result.uri]);
    } finally {
      fault.remove();
    }
  });

  it('a writer that loses the race to another one (If-Match) appends after it', async () => {
    const location = newLocation();
    const first = await publishSnapshot({
      dataset: 'nums',
      location,
      storeParams: localStoreParams(aws),
      source: { sql: 'SELECT 1 AS n' },
    });
    const raw = s3Store(location);
    const conditional = emulateConditionalWrites(raw.client, aws);
    let winner: PublishResult | undefined;
    try {
      const loser = await publishSnapshot({
        dataset: 'nums',
        location: withHookBeforeMetadataPut(raw, async () => {
          winner = await publishSnapshot({
            dataset: 'nums',
            location,
            storeParams: localStoreParams(aws),
            source: { sql: 'SELECT 2 AS n' },
          });
        }),
        source: { sql: 'SELECT 3 AS n' },
      });
      expect(conditional.injected()).toBe(1);
      expect(winner).toMatchObject({ snapshotId: 1, attempts: 1 });
      expect(loser).toMatchObject({ snapshotId: 2, attempts: 2 });
      const entry = await datasetOf(raw, 'nums');
      expect(entry.snapshots.map((s) => s.uri)).toEqual([first.uri, winner?.uri, loser.uri]);
      await verifyPublished(raw, 'nums', 'duckdb', loser, 1);
    } finally {
      conditional.remove();
    }
  });

  it('gives up after maxAttempts lost writes and deletes the unreferenced upload', async () => {
    const location = newLocation();
    const store = s3Store(location);
    await publishSnapshot({ dataset: 'nums', location: store, source: { sql: 'SELECT 1 AS n' } });
    const keysBefore = await keysOf(store);
    const metadataBefore = await readStoreMetadata(store);
    const fault = injectS3Fault(store.client, ({ commandName, input }) =>
      isMetadataPut(commandName, input) ? { status: 412, code: 'PreconditionFailed' } : undefined,
    );
    try {
      const error = await rejection(
        publishSnapshot({
          dataset: 'nums',
          location: store,
          source: { sql: 'SELECT 2 AS n' },
          maxAttempts: 3,
        }),
      );
      expect(error.code).toBe('ERR_WRITER_METADATA_CONFLICT');
      expect(error.message).toContain("dataset 'nums'");
      expect(fault.injected()).toBe(3);
    } finally {
      fault.remove();
    }
    expect(await keysOf(store)).toEqual(keysBefore);
    expect(await readStoreMetadata(store)).toEqual(metadataBefore);
  });

  it('appends orders snapshot 2 to an S3 copy of the fixture store', async () => {
    const copy = await copyFixtureStore({
      kind: 's3',
      aws,
      location: `s3://${bucket}/fixture-${randomUUID()}/`,
    });
    const store = s3Store(copy.location);
    const dir = await tempDir();
    const csv = await writeCsv(dir, 'orders.csv', ordersCsv(2));
    const result = await publishSnapshot({
      dataset: 'orders',
      location: store,
      source: { sql: ordersSql(csv) },
    });
    expect(result).toMatchObject({ snapshotId: 2, schemaId: 0 });
    await verifyPublished(store, 'orders', 'duckdb', result, 2);
  });
});
