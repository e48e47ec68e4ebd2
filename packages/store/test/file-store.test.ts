/**
 * file://-only behaviour: ETags from stat, atomic conditional writes under concurrency, the lock
 * file (stale owners, timeouts), no temporary files left or listed, and no body read for an
 * unchanged conditional get.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createFileStore,
  createObjectStore,
  type FileObjectStore,
  type FileStoreOptions,
} from '../src/index.js';

let dir: string;
let store: FileObjectStore;
const text = (s: string): Uint8Array => new TextEncoder().encode(s);

function makeStore(options: Partial<FileStoreOptions> = {}): FileObjectStore {
  return createFileStore({ location: pathToFileURL(`${dir}/`).href, ...options });
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
}

/** Every name under `dir`, recursively, including hidden ones. */
async function allNames(): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).map(String).sort();
}

/** Bytes this process has read through read(2)-like calls so far (Linux). */
function bytesReadByProcess(): number {
  const match = /^rchar:\s+(\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'));
  return Number(match?.[1] ?? Number.NaN);
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ferry-file-store-'));
  store = makeStore();
});

afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('createFileStore', () => {
  it('normalises the location and refuses non-file ones', () => {
    expect(createFileStore({ location: pathToFileURL(dir).href }).location).toBe(
      `${pathToFileURL(dir).href}/`,
    );
    expect(store.root).toBe(dir);
    for (const location of ['s3://b/p/', 'file://host/dir/', 'not a uri']) {
      expect(() => createFileStore({ location }), location).toThrow(
        expect.objectContaining({ code: 'ERR_STORE_CONFIG' }),
      );
    }
    expect(createObjectStore(pathToFileURL(`${dir}/`).href).location).toBe(store.location);
  });

  it('changes the ETag when identical bytes are rewritten', async () => {
    const first = await store.put('metadata.json', text('same'));
    const second = await store.put('metadata.json', text('same'));
    expect(second.etag).not.toBe(first.etag);
    expect(first.etag).toMatch(/^"[0-9a-f]+-[0-9a-f]+-[0-9a-f]+"$/);
  });

  it.skipIf(!existsSync('/proc/self/io'))('does not read the body of an unchanged object', async () => {
    const size = 8 * 1024 * 1024;
    const { etag } = await store.put('metadata.json', randomBytes(size));
    const before = bytesReadByProcess();
    expect((await store.get('metadata.json', { ifNoneMatch: etag })).status).toBe('unchanged');
    expect(bytesReadByProcess() - before).toBeLessThan(size / 4);
    const control = bytesReadByProcess();
    expect((await store.get('metadata.json')).status).toBe('ok');
    expect(bytesReadByProcess() - control).toBeGreaterThanOrEqual(size);
  });

  it('lets exactly one of many concurrent If-None-Match * writers win', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 16 }, (_, i) =>
        store.put('metadata.json', text(`writer ${i}`), { ifNoneMatch: '*' }),
      ),
    );
    const winners = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
    expect(winners).toHaveLength(1);
    for (const r of results) {
      if (r.status === 'rejected')
        expect((r.reason as { code?: string }).code).toBe('ERR_PRECONDITION_FAILED');
    }
    const got = await store.get('metadata.json');
    expect(got.status === 'ok' ? new TextDecoder().decode(got.body) : got.status).toBe(
      `writer ${winners[0]}`,
    );
    expect(await allNames()).toEqual(['metadata.json']);
  });

  it('lets exactly one of many concurrent If-Match writers with the same ETag win', async () => {
    const { etag } = await store.put('metadata.json', text('v0'));
    const results = await Promise.allSettled(
      Array.from({ length: 16 }, (_, i) => store.put('metadata.json', text(`v1 by ${i}`), { ifMatch: etag })),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(await allNames()).toEqual(['metadata.json']);
  });

  it('breaks a lock left by a dead process', async () => {
    const dead = spawnSync(process.execPath, ['-e', '0']).pid;
    await writeFile(
      join(dir, '.metadata.json.ferry-lock'),
      JSON.stringify({ pid: dead, host: hostname(), at: 0 }),
    );
    await store.put('metadata.json', text('v1'), { ifNoneMatch: '*' });
    expect(await allNames()).toEqual(['metadata.json']);
  });

  it('breaks a lock older than staleLockMs from another host', async () => {
    const lock = join(dir, '.metadata.json.ferry-lock');
    await writeFile(lock, JSON.stringify({ pid: 1, host: 'elsewhere', at: 0 }));
    const old = new Date(Date.now() - 120_000);
    await utimes(lock, old, old);
    await store.put('metadata.json', text('v1'));
    expect(await allNames()).toEqual(['metadata.json']);
  });

  it('times out (retryable) on a live lock and leaves no temporary file', async () => {
    const lock = join(dir, '.metadata.json.ferry-lock');
    await writeFile(lock, JSON.stringify({ pid: process.pid, host: hostname(), at: Date.now() }));
    const impatient = makeStore({ lockTimeoutMs: 30 });
    const error = await impatient.put('metadata.json', text('v1')).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'ERR_STORE', retryable: true, operation: 'put' });
    expect(await allNames()).toEqual(['.metadata.json.ferry-lock']);
    await rm(lock);
    await impatient.put('metadata.json', text('v1'));
  });

  it('never lists its own temporary or lock files', async () => {
    await mkdir(join(dir, 'a'), { recursive: true });
    await writeFile(join(dir, 'a', '.x.duckdb.1234.ferry-tmp'), 'partial');
    await writeFile(join(dir, 'a', '.y.duckdb.ferry-lock'), '{}');
    await store.put('a/x.duckdb', text('x'));
    const keys: string[] = [];
    for await (const info of store.list()) keys.push(info.key);
    expect(keys).toEqual(['a/x.duckdb']);
  });

  it('cleans up after a failed conditional put and a failing body stream', async () => {
    await store.put('metadata.json', text('v1'));
    expect(await codeOf(store.put('metadata.json', text('v2'), { ifNoneMatch: '*' }))).toBe(
      'ERR_PRECONDITION_FAILED',
    );
    async function* broken(): AsyncGenerator<Uint8Array> {
      yield text('half');
      throw new Error('source failed');
    }
    expect(await codeOf(store.put('other.json', broken()))).toBe('ERR_STORE');
    expect(await allNames()).toEqual(['metadata.json']);
    expect(await readFile(join(dir, 'metadata.json'), 'utf8')).toBe('v1');
  });

  it('maps keys to paths under the directory', async () => {
    await store.put('month=2026-11/day=2026-11-29/dataset=users/u.sqlite', text('db'));
    expect(
      await readFile(join(dir, 'month=2026-11', 'day=2026-11-29', 'dataset=users', 'u.sqlite'), 'utf8'),
    ).toBe('db');
  });
});
