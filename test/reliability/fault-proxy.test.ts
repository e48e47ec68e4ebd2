/**
 * The fault proxy itself, driven by Ferry's S3 adapter (the real AWS SDK) against fauxqs: each
 * fault reaches the client as the failure it imitates (a parsed S3 error, a timeout, a reset or a
 * short body mid-stream, a replaced body with a new ETag), rules pick by method and target, `times`
 * limits them, and `onMatch` holds a request while the test acts.
 */
import { createS3Store, type S3ObjectStore } from '@ferry/store';
import { internalError, localStoreParams, slowDown } from '@ferry/test-support';
import { useLocalAws } from '@ferry/test-support/suite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const BUCKET = 'fault-proxy';
const BODY = new Uint8Array(256 * 1024).map((_, i) => i % 251);

const { aws, proxy } = useLocalAws({ buckets: [BUCKET], faultProxy: true });
let store: S3ObjectStore;

beforeAll(async () => {
  await aws.putObject(BUCKET, 'data/object.bin', BODY);
  await aws.putObject(BUCKET, 'data/small.json', '{"a":1}');
  store = createS3Store({
    location: `s3://${BUCKET}/data/`,
    ...localStoreParams(aws, proxy.endpoint),
    maxAttempts: 1,
    clientTimeoutMs: 300,
  });
});

afterAll(async () => {
  await store?.close();
});

async function readAll(key: string): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of store.read(key)) chunks.push(chunk);
  return new Uint8Array(Buffer.concat(chunks));
}

async function text(key: string): Promise<string> {
  const result = await store.get(key);
  if (result.status !== 'ok') throw new Error(`unexpected ${result.status}`);
  return new TextDecoder().decode(result.body);
}

describe('fault proxy', () => {
  it('passes requests through untouched when no rule matches', async () => {
    proxy.clear();
    expect(Buffer.from(await readAll('object.bin')).equals(Buffer.from(BODY))).toBe(true);
    expect(proxy.requests({ method: 'GET', target: `${BUCKET}/data/object.bin` })).toHaveLength(1);
  });

  it('answers S3 errors the SDK parses by code and status, only for the matching method', async () => {
    proxy.setRules([{ name: 'slow', method: 'GET', target: /object\.bin$/, fault: slowDown }]);
    await expect(readAll('object.bin')).rejects.toMatchObject({
      code: 'ERR_STORE',
      status: 503,
      retryable: true,
      message: expect.stringContaining('SlowDown'),
    });
    expect((await store.head('object.bin'))?.size).toBe(BODY.byteLength);
    expect(proxy.hits('slow')).toBe(1);
    // A faulted request never reaches the server.
    expect(aws.requests.list({ method: 'GET', target: `${BUCKET}/data/object.bin`, status: 503 })).toEqual(
      [],
    );
  });

  it('applies a rule `times` times, then lets requests through', async () => {
    proxy.setRules([{ name: 'once', target: `${BUCKET}/data/small.json`, times: 1, fault: internalError }]);
    await expect(text('small.json')).rejects.toMatchObject({ status: 500 });
    expect(await text('small.json')).toBe('{"a":1}');
    expect(proxy.hits('once')).toBe(1);
  });

  it('a delay holds the answer that long, and a hang never answers', async () => {
    const url = `${proxy.endpoint}/${BUCKET}/data/small.json`;
    proxy.setRules([{ target: /small\.json$/, fault: { kind: 'delay', ms: 400 } }]);
    const started = performance.now();
    await expect(fetch(url, { signal: AbortSignal.timeout(200) })).rejects.toMatchObject({
      name: 'TimeoutError',
    });
    const answer = await fetch(url);
    await answer.arrayBuffer();
    expect(performance.now() - started).toBeGreaterThanOrEqual(600);
    proxy.setRules([{ target: /small\.json$/, fault: { kind: 'hang' } }]);
    await expect(fetch(url, { signal: AbortSignal.timeout(500) })).rejects.toMatchObject({
      name: 'TimeoutError',
    });
  });

  it('a reset mid-body fails the read after some bytes arrived', async () => {
    proxy.setRules([{ target: /object\.bin$/, fault: { kind: 'reset', afterBytes: 1000 } }]);
    let received = 0;
    const failure = await (async () => {
      for await (const chunk of store.read('object.bin')) received += chunk.byteLength;
    })().catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'ERR_STORE', retryable: true });
    expect(received).toBeLessThan(BODY.byteLength);
  });

  it('a truncated body never yields the whole object', async () => {
    proxy.setRules([{ target: /object\.bin$/, fault: { kind: 'truncate', bytes: 4096 } }]);
    const outcome = await readAll('object.bin').catch((error: unknown) => error);
    if (outcome instanceof Uint8Array) expect(outcome.byteLength).toBeLessThan(BODY.byteLength);
    else expect(outcome).toMatchObject({ code: 'ERR_STORE' });
  });

  it('replaces a body, fixing its length and giving it a new ETag, even for a conditional GET', async () => {
    proxy.clear();
    const real = await store.get('small.json');
    if (real.status !== 'ok') throw new Error('no object');
    proxy.setRules([
      {
        target: /small\.json$/,
        fault: { kind: 'replace', body: (original) => `${new TextDecoder().decode(original)}!!` },
      },
    ]);
    const replaced = await store.get('small.json', { ifNoneMatch: real.etag });
    expect(replaced.status).toBe('ok');
    if (replaced.status !== 'ok') return;
    expect(new TextDecoder().decode(replaced.body)).toBe('{"a":1}!!');
    expect(replaced.etag).not.toBe(real.etag);
  });

  it('holds a matched request while onMatch runs, then applies the fault', async () => {
    const order: string[] = [];
    proxy.setRules([
      {
        target: /small\.json$/,
        times: 1,
        fault: { kind: 'pass' },
        onMatch: async () => {
          order.push('held');
          await aws.putObject(BUCKET, 'data/small.json', '{"a":2}');
        },
      },
    ]);
    const body = await text('small.json');
    order.push('answered');
    expect(body).toBe('{"a":2}');
    expect(order).toEqual(['held', 'answered']);
  });
});
