/**
 * The one contract every `ObjectStore` adapter must meet, run against each of them
 * (object-store.test.ts). A subject is a fresh, empty store plus what only its backend can tell:
 * how many body bytes it sent for a key (to prove a conditional get transferred nothing).
 */
import { randomBytes } from 'node:crypto';
import { type ObjectStore, resolveSnapshotKey } from '@ferry/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readParallel } from '../src/index.js';

export interface ContractSubject {
  readonly store: ObjectStore;
  /** Body bytes the backend has sent for `key` so far, when the backend can observe it. */
  readonly bodyBytesSent?: (key: string) => number;
  /** URIs outside the location that only this adapter can name (another bucket, another directory). */
  readonly foreignUris: readonly string[];
  dispose(): Promise<void>;
}

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return new Uint8Array(Buffer.concat(parts));
}

async function* streamOf(bytes: Uint8Array, chunk: number): AsyncGenerator<Uint8Array> {
  for (let offset = 0; offset < bytes.byteLength; offset += chunk)
    yield bytes.subarray(offset, offset + chunk);
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
}

function codeOfSync(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
}

function same(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;
}

export function objectStoreContract(name: string, makeSubject: () => Promise<ContractSubject>): void {
  describe(`ObjectStore contract: ${name}`, () => {
    let subject: ContractSubject;
    let store: ObjectStore;

    beforeEach(async () => {
      subject = await makeSubject();
      store = subject.store;
    });

    afterEach(async () => {
      await subject.dispose();
    });

    it('has a location ending in /', () => {
      expect(store.location.endsWith('/')).toBe(true);
    });

    it('puts, gets, heads and deletes', async () => {
      const { etag } = await store.put('metadata.json', text('{"a":1}'), { contentType: 'application/json' });
      expect(etag).not.toBe('');
      const got = await store.get('metadata.json');
      expect(got).toEqual({ status: 'ok', body: text('{"a":1}'), etag });
      expect(await store.head('metadata.json')).toEqual({ key: 'metadata.json', size: 7, etag });
      await store.delete('metadata.json');
      expect(await store.get('metadata.json')).toEqual({ status: 'not-found' });
      expect(await store.head('metadata.json')).toBeUndefined();
      await store.delete('metadata.json');
    });

    it('reports a missing object as not-found, and read rejects with ERR_OBJECT_NOT_FOUND', async () => {
      expect(await store.get('nope.json')).toEqual({ status: 'not-found' });
      expect(await codeOf(collect(store.read('nope.json')))).toBe('ERR_OBJECT_NOT_FOUND');
      expect(await codeOf(collect(store.read('nope.json', { start: 0, end: 0 })))).toBe(
        'ERR_OBJECT_NOT_FOUND',
      );
    });

    it('answers a conditional get with a matching ETag as unchanged, transferring no body', async () => {
      const body = randomBytes(4096);
      const { etag } = await store.put('metadata.json', body);
      const before = subject.bodyBytesSent?.('metadata.json');
      const unchanged = await store.get('metadata.json', { ifNoneMatch: etag });
      expect(unchanged).toEqual({ status: 'unchanged', etag });
      // Had the body been read, maxBytes 0 would have refused it.
      expect(await store.get('metadata.json', { ifNoneMatch: etag, maxBytes: 0 })).toEqual({
        status: 'unchanged',
        etag,
      });
      if (subject.bodyBytesSent !== undefined && before !== undefined) {
        expect(subject.bodyBytesSent('metadata.json') - before).toBe(0);
        const full = await store.get('metadata.json', { ifNoneMatch: '"some-other-etag"' });
        expect(full.status).toBe('ok');
        expect(subject.bodyBytesSent('metadata.json') - before).toBe(4096);
      }
    });

    it('changes the ETag when an object is rewritten with other bytes of the same size', async () => {
      const first = await store.put('metadata.json', text('{"v":1}'));
      const second = await store.put('metadata.json', text('{"v":2}'));
      expect(second.etag).not.toBe(first.etag);
      expect((await store.head('metadata.json'))?.etag).toBe(second.etag);
      const got = await store.get('metadata.json', { ifNoneMatch: first.etag });
      expect(got).toEqual({ status: 'ok', body: text('{"v":2}'), etag: second.etag });
    });

    it('refuses a conditional put whose precondition fails with ERR_PRECONDITION_FAILED', async () => {
      const { etag } = await store.put('metadata.json', text('v1'), { ifNoneMatch: '*' });
      expect(await codeOf(store.put('metadata.json', text('v2'), { ifNoneMatch: '*' }))).toBe(
        'ERR_PRECONDITION_FAILED',
      );
      const { etag: etag2 } = await store.put('metadata.json', text('v2'), { ifMatch: etag });
      expect(await codeOf(store.put('metadata.json', text('v3'), { ifMatch: etag }))).toBe(
        'ERR_PRECONDITION_FAILED',
      );
      expect(await codeOf(store.put('gone.json', text('v1'), { ifMatch: etag2 }))).toBe(
        'ERR_PRECONDITION_FAILED',
      );
      const got = await store.get('metadata.json');
      expect(got.status === 'ok' ? new TextDecoder().decode(got.body) : got.status).toBe('v2');
    });

    it('reads byte ranges (end exclusive) and streams whole objects', async () => {
      const body = randomBytes(1000);
      await store.put('data.bin', body);
      expect(same(await collect(store.read('data.bin')), body)).toBe(true);
      expect(same(await collect(store.read('data.bin', { start: 10, end: 20 })), body.subarray(10, 20))).toBe(
        true,
      );
      expect(same(await collect(store.read('data.bin', { start: 990 })), body.subarray(990))).toBe(true);
      expect(same(await collect(store.read('data.bin', { end: 1 })), body.subarray(0, 1))).toBe(true);
      expect((await collect(store.read('data.bin', { start: 1000 }))).byteLength).toBe(0);
      expect((await collect(store.read('data.bin', { start: 5, end: 5 }))).byteLength).toBe(0);
    });

    it('puts a streamed body larger than one part and reads it back exactly', async () => {
      const body = randomBytes(9 * 1024 * 1024 + 17);
      const { etag } = await store.put('stream.bin', streamOf(body, 1024 * 1024 - 3));
      const info = await store.head('stream.bin');
      expect(info).toEqual({ key: 'stream.bin', size: body.byteLength, etag });
      expect(same(await collect(store.read('stream.bin')), body)).toBe(true);
      await store.put('empty.bin', streamOf(new Uint8Array(), 1));
      expect(await store.get('empty.bin')).toMatchObject({ status: 'ok', body: new Uint8Array() });
    });

    it('gets a body of many chunks whole and exact, and refuses one over maxBytes', async () => {
      const body = randomBytes(3 * 1024 * 1024 + 5);
      await store.put('large.json', body);
      const got = await store.get('large.json', { maxBytes: body.byteLength });
      expect(got.status).toBe('ok');
      expect(got.status === 'ok' && got.body.byteLength).toBe(body.byteLength);
      expect(got.status === 'ok' && same(got.body, body)).toBe(true);
      expect(await codeOf(store.get('large.json', { maxBytes: body.byteLength - 1 }))).toBe(
        'ERR_OBJECT_TOO_LARGE',
      );
    });

    it('lists recursively under a prefix, with sizes and ETags', async () => {
      const a = await store.put('month=2026-11/day=2026-11-29/dataset=orders/o1.duckdb', text('12345'));
      await store.put('month=2026-11/day=2026-11-30/dataset=orders/o2.duckdb', text('1'));
      await store.put('metadata.json', text('{}'));
      const all: string[] = [];
      for await (const info of store.list()) all.push(info.key);
      expect(all.sort()).toEqual([
        'metadata.json',
        'month=2026-11/day=2026-11-29/dataset=orders/o1.duckdb',
        'month=2026-11/day=2026-11-30/dataset=orders/o2.duckdb',
      ]);
      const some = [];
      for await (const info of store.list('month=2026-11/day=2026-11-29')) some.push(info);
      expect(some).toEqual([
        { key: 'month=2026-11/day=2026-11-29/dataset=orders/o1.duckdb', size: 5, etag: a.etag },
      ]);
      const none = [];
      for await (const info of store.list('nothing/')) none.push(info);
      expect(none).toEqual([]);
    });

    it('refuses objects above maxBytes with ERR_OBJECT_TOO_LARGE', async () => {
      await store.put('metadata.json', randomBytes(100));
      expect(await codeOf(store.get('metadata.json', { maxBytes: 99 }))).toBe('ERR_OBJECT_TOO_LARGE');
      expect((await store.get('metadata.json', { maxBytes: 100 })).status).toBe('ok');
    });

    const keyOf = (uri: string): string => resolveSnapshotKey(store.location, uri);

    it('maps URIs under the location to keys', () => {
      expect(keyOf(`${store.location}metadata.json`)).toBe('metadata.json');
      expect(keyOf(`${store.location}month=2026-11/dataset=orders/o.duckdb`)).toBe(
        'month=2026-11/dataset=orders/o.duckdb',
      );
    });

    it('refuses URIs outside the location with ERR_OUTSIDE_LOCATION, naming the URI and location', () => {
      const base = store.location;
      const outside = [
        `${base}../escape.duckdb`,
        `${base}a/../../escape.duckdb`,
        `${base}a/./b.duckdb`,
        `${base}%2e%2e/escape.duckdb`,
        `${base}a/%2E%2E/%2e%2e/escape.duckdb`,
        `${base}a%2fb.duckdb`,
        `${base.slice(0, -1)}-sibling/x.duckdb`,
        base,
        'https://example.com/x.duckdb',
        'not a uri',
        ...subject.foreignUris,
      ];
      for (const uri of outside) {
        expect(
          codeOfSync(() => keyOf(uri)),
          uri,
        ).toBe('ERR_OUTSIDE_LOCATION');
      }
      let message = '';
      try {
        keyOf(`${base}../escape.duckdb`);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toContain(`${base}../escape.duckdb`);
      expect(message).toContain(base);
    });

    it('refuses keys that would escape the location', async () => {
      for (const key of ['../x', 'a/../../x', '/abs', 'a//b', '', 'a\\b']) {
        expect(await codeOf(store.get(key)), key).toBe('ERR_OUTSIDE_LOCATION');
        expect(await codeOf(store.put(key, text('x'))), key).toBe('ERR_OUTSIDE_LOCATION');
      }
    });

    it('reads a 20 MiB object with readParallel: exact bytes, in order', async () => {
      const body = randomBytes(20 * 1024 * 1024);
      await store.put('snapshot.duckdb', body);
      const size = body.byteLength;
      expect(same(await collect(readParallel(store, 'snapshot.duckdb', { size })), body)).toBe(true);
      const small = readParallel(store, 'snapshot.duckdb', {
        size,
        partSize: 1024 * 1024 + 1,
        concurrency: 3,
      });
      expect(same(await collect(small), body)).toBe(true);
    });
  });
}
