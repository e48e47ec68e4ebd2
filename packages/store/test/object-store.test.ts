/** The ObjectStore contract run against both adapters: S3 (over HTTP to a local fauxqs) and file://. */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  emulateConditionalWrites,
  type LocalAws,
  localStoreParams,
  startLocalAws,
} from '@ferry/test-support';
import { afterAll, beforeAll } from 'vitest';
import { createFileStore, createS3Store } from '../src/index.js';
import { objectStoreContract } from './object-store-contract.js';

let aws: LocalAws;
const bucket = 'contract';

beforeAll(async () => {
  aws = await startLocalAws();
  await aws.createBucket(bucket);
  await aws.createBucket('other-bucket');
});

afterAll(async () => {
  await aws.close();
});

objectStoreContract('s3 (fauxqs over HTTP)', async () => {
  const prefix = `snapshots/${randomUUID()}/`;
  const store = createS3Store({
    location: `s3://${bucket}/${prefix}`,
    ...localStoreParams(aws),
  });
  // fauxqs ignores If-Match / If-None-Match on writes; this answers them as S3 does (412 / 404).
  const conditional = emulateConditionalWrites(store.client, aws);
  return {
    store,
    bodyBytesSent: (key) =>
      aws.requests.responseBytes({ method: 'GET', target: `${bucket}/${prefix}${key}` }),
    foreignUris: [
      `s3://other-bucket/${prefix}x.duckdb`,
      `S3://${bucket}/../${prefix}x.duckdb`,
      `s3:///${prefix}x`,
    ],
    async dispose() {
      conditional.remove();
      await store.close();
    },
  };
});

objectStoreContract('file:// (temp directory)', async () => {
  const parent = await mkdtemp(join(tmpdir(), 'ferry-store-'));
  const dir = join(parent, 'store dir');
  const store = createFileStore({ location: pathToFileURL(`${dir}/`).href });
  return {
    store,
    foreignUris: [
      pathToFileURL(join(parent, 'elsewhere.duckdb')).href,
      `file://otherhost${dir}/x.duckdb`,
      `${pathToFileURL(dir).href}/x.duckdb?v=1`,
      `s3://bucket${dir}/x.duckdb`,
    ],
    async dispose() {
      await store.close();
      await rm(parent, { recursive: true, force: true });
    },
  };
});
