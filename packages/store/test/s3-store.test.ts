/**
 * S3-only behaviour: configuration checks, the mapping of S3 failures to Ferry errors (faults are
 * injected as real HTTP responses parsed by the SDK), and what actually goes over the wire.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { injectS3Fault, type LocalAws, localStoreParams, startLocalAws } from '@ferry/test-support';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createObjectStore,
  createS3Store,
  DEFAULT_CLIENT_TIMEOUT_MS,
  PreconditionFailedError,
  type S3ObjectStore,
  type S3StoreOptions,
  StoreError,
  s3ClientConfig,
} from '../src/index.js';

let aws: LocalAws;
const bucket = 's3-specific';
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
});

function makeStore(overrides: Partial<S3StoreOptions> = {}): S3ObjectStore {
  const store = createS3Store({
    location: `s3://${bucket}/p-${randomUUID()}/`,
    ...localStoreParams(aws),
    ...overrides,
  });
  stores.push(store);
  return store;
}

async function errorOf(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error('expected a rejection');
}

function configError(options: S3StoreOptions): Error & { code?: string; setting?: string } {
  try {
    createS3Store(options);
  } catch (error) {
    return error as Error & { code?: string; setting?: string };
  }
  throw new Error('expected a config error');
}

describe('createS3Store configuration', () => {
  it('refuses a plain-http endpoint unless allow_http is set, naming both settings', () => {
    const error = configError({ location: 's3://b/p/', endpoint: 'http://minio.local:9000' });
    expect(error.code).toBe('ERR_STORE_CONFIG');
    expect(error.message).toContain('s3_endpoint');
    expect(error.message).toContain('allow_http');
    expect(() =>
      createS3Store({ location: 's3://b/p/', endpoint: 'http://minio.local:9000', allowHttp: true }).close(),
    ).not.toThrow();
  });

  it('refuses half-given static credentials and bad locations', () => {
    expect(configError({ location: 's3://b/p/', accessKeyId: 'AKIA' }).message).toContain('s3_secret');
    expect(configError({ location: 's3://b/p/', auth: 'key' }).code).toBe('ERR_STORE_CONFIG');
    expect(configError({ location: 'https://b/p/' }).code).toBe('ERR_STORE_CONFIG');
    expect(configError({ location: 's3:///p/' }).code).toBe('ERR_STORE_CONFIG');
    expect(configError({ location: 's3://b/../p/' }).code).toBe('ERR_STORE_CONFIG');
  });

  it('uses static credentials only when given, path-style and the timeout for custom endpoints', async () => {
    const chain = s3ClientConfig({
      location: 's3://b/p/',
      auth: 'iam_role',
      accessKeyId: 'a',
      secretAccessKey: 's',
    });
    expect(chain.credentials).toBeUndefined();
    expect(chain.forcePathStyle).toBe(false);
    const keyed = s3ClientConfig({
      location: 's3://b/p/',
      accessKeyId: 'a',
      secretAccessKey: 's',
      sessionToken: 't',
      endpoint: 'https://minio.local',
      clientTimeoutMs: 1234,
    });
    expect(keyed.credentials).toEqual({ accessKeyId: 'a', secretAccessKey: 's', sessionToken: 't' });
    expect(keyed.forcePathStyle).toBe(true);
    expect(keyed.requestHandler).toEqual({
      connectionTimeout: 1234,
      requestTimeout: 1234,
      throwOnRequestTimeout: true,
      socketTimeout: 1234,
    });
    expect(s3ClientConfig({ location: 's3://b/p/' }).requestHandler).toMatchObject({
      requestTimeout: DEFAULT_CLIENT_TIMEOUT_MS,
      socketTimeout: DEFAULT_CLIENT_TIMEOUT_MS,
    });
    const store = makeStore({ location: 's3://b/p' });
    expect(store.location).toBe('s3://b/p/');
    expect(await store.client.config.region()).toBe('us-east-1');
  });

  it('is chosen by createObjectStore for s3:// locations; unknown schemes are refused', async () => {
    const store = createObjectStore(`s3://${bucket}/via-factory/`, {
      endpoint: aws.endpoint,
      accessKeyId: 'test',
      secretAccessKey: 'test',
      allowHttp: true,
    });
    // Its client loads on the first request; every operation goes through it.
    expect(store.location).toBe(`s3://${bucket}/via-factory/`);
    try {
      const { etag } = await store.put('x.json', new TextEncoder().encode('{}'));
      expect(await aws.getObject(bucket, 'via-factory/x.json')).toEqual(new TextEncoder().encode('{}'));
      const got = await store.get('x.json');
      expect(got).toEqual({ status: 'ok', body: new TextEncoder().encode('{}'), etag });
      expect(await store.get('x.json', { ifNoneMatch: etag })).toEqual({ status: 'unchanged', etag });
      const chunks: Uint8Array[] = [];
      for await (const chunk of store.read('x.json', { start: 1 })) chunks.push(chunk);
      expect(Buffer.concat(chunks).toString()).toBe('}');
      expect(await store.head('x.json')).toEqual({ key: 'x.json', size: 2, etag });
      const listed: string[] = [];
      for await (const info of store.list()) listed.push(info.key);
      expect(listed).toEqual(['x.json']);
      await store.delete('x.json');
      expect(await store.head('x.json')).toBeUndefined();
    } finally {
      await store.close();
    }
    expect(() => createObjectStore('gs://bucket/p/')).toThrow(/unsupported scheme 'gs:'/);
    expect(() => createObjectStore('/no/scheme')).toThrow(/no scheme/);
  });

  it('through createObjectStore, refuses unusable S3 settings when configured, not at the first request', async () => {
    expect(() =>
      createObjectStore(`s3://${bucket}/p/`, {
        endpoint: 'http://127.0.0.1:1',
        accessKeyId: 'k',
        secretAccessKey: 's',
      }),
    ).toThrow(/allow_http: true/);
    expect(() => createObjectStore(`s3://${bucket}/p/`, { accessKeyId: 'k' })).toThrow(
      /s3_key without s3_secret/,
    );
    expect(() => createObjectStore('s3:///p/')).toThrow(/not an s3:\/\/bucket\/prefix\/ URI/);
    // A store that never made a request closes without loading its client.
    await createObjectStore(`s3://${bucket}/p/`, localStoreParams(aws)).close();
  });
});

describe('S3 requests on the wire', () => {
  it('gets with exactly one GET, and a 304 carries no body', async () => {
    const store = makeStore();
    const { etag } = await store.put('metadata.json', new TextEncoder().encode('{"format-version":1}'));
    const target = `${bucket}/${store.prefix}metadata.json`;
    aws.requests.clear();
    expect((await store.get('metadata.json')).status).toBe('ok');
    expect(aws.requests.count('GET', target)).toBe(1);
    expect(await store.get('metadata.json', { ifNoneMatch: etag })).toEqual({ status: 'unchanged', etag });
    const [conditional] = aws.requests.list({ method: 'GET', target, status: 304 });
    expect(conditional?.headers['if-none-match']).toBe(etag);
    expect(conditional?.responseBytes).toBe(0);
    expect(aws.requests.count('GET', target)).toBe(2);
  });

  it('uploads large bodies as a multipart upload with 8 MiB parts', async () => {
    const store = makeStore();
    const body = randomBytes(20 * 1024 * 1024);
    aws.requests.clear();
    const { etag } = await store.put('snapshot.duckdb', body);
    expect(etag).toMatch(/-3"$/);
    const target = `${bucket}/${store.prefix}snapshot.duckdb`;
    const parts = aws.requests.list({ method: 'PUT', target });
    expect(parts.map((p) => Number(p.headers['content-length'])).sort((a, b) => b - a)).toEqual([
      8 * 1024 * 1024,
      8 * 1024 * 1024,
      4 * 1024 * 1024,
    ]);
    expect(parts.every((p) => /partNumber=\d/.test(p.query))).toBe(true);
  });

  it('uploads a streamed body in 8 MiB parts, with the condition on the completing request', async () => {
    const store = makeStore();
    const body = randomBytes(17 * 1024 * 1024);
    async function* chunks(): AsyncGenerator<Uint8Array> {
      for (let offset = 0; offset < body.byteLength; offset += 1024 * 1024) {
        yield body.subarray(offset, offset + 1024 * 1024);
      }
    }
    aws.requests.clear();
    const { etag } = await store.put('streamed.duckdb', chunks(), {
      ifNoneMatch: '*',
      size: body.byteLength,
    });
    expect(etag).toMatch(/-3"$/);
    const target = `${bucket}/${store.prefix}streamed.duckdb`;
    const parts = aws.requests.list({ method: 'PUT', target });
    expect(parts.map((p) => Number(p.headers['content-length'])).sort((a, b) => b - a)).toEqual([
      8 * 1024 * 1024,
      8 * 1024 * 1024,
      1024 * 1024,
    ]);
    const [complete] = aws.requests.list({ method: 'POST', target }).filter((r) => /uploadId=/.test(r.query));
    expect(complete?.headers['if-none-match']).toBe('*');
    const read: Uint8Array[] = [];
    for await (const chunk of store.read('streamed.duckdb')) read.push(chunk);
    expect(Buffer.concat(read).equals(body)).toBe(true);
  });

  it('lists past the 1,000-key page size by following continuation tokens', async () => {
    const store = makeStore();
    const keys = Array.from({ length: 1003 }, (_, i) => `k/${String(i).padStart(4, '0')}.json`);
    await Promise.all(keys.map((key) => aws.putObject(bucket, store.prefix + key, '{}')));
    aws.requests.clear();
    const listed: string[] = [];
    for await (const info of store.list('k/')) listed.push(info.key);
    expect(listed.sort()).toEqual(keys);
    const pages = aws.requests.list({ method: 'GET', target: bucket });
    expect(pages.map((r) => r.query.includes('list-type=2'))).toEqual([true, true]);
    expect(pages[1]?.query).toContain('continuation-token=');
  });

  it('reads a range with a single ranged GET', async () => {
    const store = makeStore();
    await store.put('data.bin', randomBytes(100));
    aws.requests.clear();
    for await (const _ of store.read('data.bin', { start: 10, end: 20 })) {
      // drain
    }
    const [get] = aws.requests.list({ method: 'GET' });
    expect(get?.headers.range).toBe('bytes=10-19');
    expect(get?.responseBytes).toBe(10);
  });
});

describe('S3 failures as Ferry errors', () => {
  it('maps an injected 412 on a conditional put to PreconditionFailedError', async () => {
    const store = makeStore();
    const fault = injectS3Fault(store.client, ({ commandName }) =>
      commandName === 'PutObjectCommand' ? { status: 412, code: 'PreconditionFailed' } : undefined,
    );
    const error = await errorOf(store.put('metadata.json', new Uint8Array([1]), { ifMatch: '"abc"' }));
    expect(error).toBeInstanceOf(PreconditionFailedError);
    expect(error.code).toBe('ERR_PRECONDITION_FAILED');
    expect((error as PreconditionFailedError).status).toBe(412);
    expect(error.message).toContain(`${store.location}metadata.json`);
    expect(fault.injected()).toBe(1);
    fault.remove();
  });

  it('maps a 409 ConditionalRequestConflict and a 412 on CompleteMultipartUpload the same way', async () => {
    const store = makeStore();
    const conflict = injectS3Fault(store.client, ({ commandName }) =>
      commandName === 'PutObjectCommand' ? { status: 409, code: 'ConditionalRequestConflict' } : undefined,
    );
    expect((await errorOf(store.put('m.json', new Uint8Array([1]), { ifNoneMatch: '*' }))).code).toBe(
      'ERR_PRECONDITION_FAILED',
    );
    conflict.remove();
    const complete = injectS3Fault(store.client, ({ commandName }) =>
      commandName === 'CompleteMultipartUploadCommand'
        ? { status: 412, code: 'PreconditionFailed' }
        : undefined,
    );
    const big = randomBytes(9 * 1024 * 1024);
    expect((await errorOf(store.put('big.bin', big, { ifNoneMatch: '*' }))).code).toBe(
      'ERR_PRECONDITION_FAILED',
    );
    expect(await store.head('big.bin')).toBeUndefined();
    expect(aws.requests.list({ method: 'DELETE', target: `${bucket}/${store.prefix}big.bin` })).toHaveLength(
      1,
    );
    complete.remove();
  });

  it('reports throttling as a retryable StoreError with the status, operation and URI', async () => {
    const store = makeStore({ maxAttempts: 1 });
    const fault = injectS3Fault(store.client, () => ({
      status: 503,
      code: 'SlowDown',
      message: 'Reduce your rate',
    }));
    const error = await errorOf(store.get('metadata.json'));
    fault.remove();
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ code: 'ERR_STORE', status: 503, retryable: true, operation: 'get' });
    expect(error.message).toContain(`${store.location}metadata.json`);
    expect(error.message).toContain('SlowDown');
  });

  it('reports access denied as a permanent StoreError', async () => {
    const store = makeStore({ maxAttempts: 1 });
    const fault = injectS3Fault(store.client, () => ({ status: 403, code: 'AccessDenied' }));
    const errors = [
      await errorOf(store.head('a')),
      await errorOf(store.put('a', new Uint8Array([1]))),
      await errorOf(
        (async () => {
          for await (const _ of store.list()) {
            // drain
          }
        })(),
      ),
    ];
    fault.remove();
    expect(errors.map((e) => [e.code, (e as StoreError).status, (e as StoreError).retryable])).toEqual([
      ['ERR_STORE', 403, false],
      ['ERR_STORE', 403, false],
      ['ERR_STORE', 403, false],
    ]);
    expect(errors.map((e) => (e as StoreError).operation)).toEqual(['head', 'put', 'list']);
  });

  it('reports an unreachable endpoint as a retryable StoreError without status', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const store = makeStore({ endpoint: `http://127.0.0.1:${port}`, maxAttempts: 1 });
    const error = await errorOf(store.get('metadata.json'));
    expect(error).toMatchObject({ code: 'ERR_STORE', status: undefined, retryable: true });
  });

  it('does not call a failing source body retryable', async () => {
    const store = makeStore();
    async function* broken(): AsyncGenerator<Uint8Array> {
      yield new Uint8Array([1]);
      throw new Error('source failed');
    }
    expect(await errorOf(store.put('x.bin', broken()))).toMatchObject({
      code: 'ERR_STORE',
      retryable: false,
    });
  });

  it('aborts the multipart upload when a streamed body fails after some parts', async () => {
    const store = makeStore();
    async function* failsLate(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 5; i++) yield randomBytes(4 * 1024 * 1024);
      throw new Error('source failed');
    }
    aws.requests.clear();
    expect(await errorOf(store.put('late.bin', failsLate(), { size: 24 * 1024 * 1024 }))).toMatchObject({
      code: 'ERR_STORE',
      retryable: false,
    });
    const target = `${bucket}/${store.prefix}late.bin`;
    expect(aws.requests.list({ method: 'PUT', target }).every((r) => /partNumber=\d/.test(r.query))).toBe(
      true,
    );
    expect(
      aws.requests.list({ method: 'DELETE', target }).filter((r) => /uploadId=/.test(r.query)),
    ).toHaveLength(1);
    expect(await store.head('late.bin')).toBeUndefined();
  });

  it('rejects with the abort reason when the signal is aborted', async () => {
    const store = makeStore();
    await store.put('metadata.json', new Uint8Array([1]));
    const controller = new AbortController();
    const reason = new Error('shutting down');
    controller.abort(reason);
    expect(await errorOf(store.get('metadata.json', { signal: controller.signal }))).toBe(reason);
  });
});
