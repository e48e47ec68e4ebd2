/**
 * readParallel over a real file store, wrapped to observe and steer the ranged reads it issues:
 * order, bounded concurrency and buffering, single read for small objects, and cancellation.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ObjectStore, ReadOptions } from '@ferry/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFileStore, readParallel, readParallelParts } from '../src/index.js';

interface ReadCall {
  readonly start: number | undefined;
  readonly end: number | undefined;
  readonly signal: AbortSignal | undefined;
}

/** A store that records every read and lets `gate` hold or fail a read before it starts. */
function observed(
  inner: ObjectStore,
  gate: (call: ReadCall, index: number) => Promise<void> = async () => undefined,
): { store: ObjectStore; calls: ReadCall[]; inFlight: () => number; maxInFlight: () => number } {
  const calls: ReadCall[] = [];
  let active = 0;
  let max = 0;
  const store: ObjectStore = {
    ...inner,
    location: inner.location,
    read(key: string, options: ReadOptions = {}) {
      const call = { start: options.start, end: options.end, signal: options.signal };
      const index = calls.push(call) - 1;
      return (async function* () {
        active++;
        max = Math.max(max, active);
        try {
          await gate(call, index);
          yield* inner.read(key, options);
        } finally {
          active--;
        }
      })();
    },
  };
  return { store, calls, inFlight: () => active, maxInFlight: () => max };
}

function aborted(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal === undefined) return;
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return Buffer.concat(parts);
}

let dir: string;
let inner: ObjectStore;
const MiB = 1024 * 1024;
const body = randomBytes(10 * MiB + 123);

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ferry-read-parallel-'));
  inner = createFileStore({ location: pathToFileURL(`${dir}/`).href });
  await inner.put('snapshot.duckdb', body);
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('readParallel', () => {
  it('yields the exact bytes in order, each part read once, at most `concurrency` at a time', async () => {
    const { store, calls, maxInFlight } = observed(inner);
    const out = await collect(
      readParallel(store, 'snapshot.duckdb', { size: body.byteLength, partSize: MiB, concurrency: 3 }),
    );
    expect(Buffer.compare(out, body)).toBe(0);
    expect(calls).toHaveLength(11);
    expect(calls.map((c) => [c.start, c.end]).sort((a, b) => (a[0] ?? 0) - (b[0] ?? 0))).toEqual(
      Array.from({ length: 11 }, (_, i) => [i * MiB, Math.min(body.byteLength, (i + 1) * MiB)]),
    );
    expect(maxInFlight()).toBeLessThanOrEqual(3);
  });

  it('keeps no more than `concurrency` parts started ahead of the consumer', async () => {
    const { store, calls } = observed(inner);
    let consumed = 0;
    for await (const chunk of readParallel(store, 'snapshot.duckdb', {
      size: body.byteLength,
      partSize: MiB,
      concurrency: 2,
    })) {
      consumed++;
      expect(calls.length - consumed).toBeLessThanOrEqual(1);
      expect(chunk.byteLength).toBeGreaterThan(0);
    }
    expect(consumed).toBe(11);
  });

  it('reads an object no larger than one part with a single plain read', async () => {
    const { store, calls } = observed(inner);
    const out = await collect(
      readParallel(store, 'snapshot.duckdb', { size: body.byteLength, partSize: 16 * MiB }),
    );
    expect(Buffer.compare(out, body)).toBe(0);
    expect(calls).toEqual([{ start: undefined, end: undefined, signal: undefined }]);
  });

  it('fails with the first error and aborts the parts still in flight', async () => {
    const failure = new Error('part 1 failed');
    const { store, calls } = observed(inner, async (call, index) => {
      if (index === 1) throw failure;
      if (index > 0) await aborted(call.signal);
    });
    const reading = collect(
      readParallel(store, 'snapshot.duckdb', { size: body.byteLength, partSize: MiB, concurrency: 4 }),
    );
    await expect(reading).rejects.toBe(failure);
    expect(calls).toHaveLength(4);
    expect(calls.every((c) => c.signal?.aborted === true)).toBe(true);
  });

  it('aborts outstanding parts when the consumer stops early', async () => {
    const { store, calls, inFlight } = observed(inner, async (call, index) => {
      if (index > 0) await aborted(call.signal);
    });
    for await (const _ of readParallel(store, 'snapshot.duckdb', {
      size: body.byteLength,
      partSize: MiB,
      concurrency: 3,
    })) {
      break;
    }
    expect(calls.slice(1).every((c) => c.signal?.aborted === true)).toBe(true);
    expect(inFlight()).toBe(0);
  });

  it('rejects with the caller’s abort reason', async () => {
    const controller = new AbortController();
    const reason = new Error('cancelled');
    const { store } = observed(inner, async (call) => aborted(call.signal));
    const reading = collect(
      readParallel(store, 'snapshot.duckdb', {
        size: body.byteLength,
        partSize: MiB,
        signal: controller.signal,
      }),
    );
    controller.abort(reason);
    await expect(reading).rejects.toBe(reason);
  });

  it('readParallelParts yields each part as the very chunks the store read, in order', async () => {
    const read: Uint8Array[] = [];
    const { store } = observed({
      ...inner,
      location: inner.location,
      async *read(key, options) {
        for await (const chunk of inner.read(key, options)) {
          read.push(chunk);
          yield chunk;
        }
      },
    });
    const parts: (readonly Uint8Array[])[] = [];
    for await (const part of readParallelParts(store, 'snapshot.duckdb', {
      size: body.byteLength,
      partSize: MiB,
      concurrency: 3,
    })) {
      parts.push(part);
    }
    expect(parts).toHaveLength(11);
    expect(parts.map((part) => part.reduce((sum, chunk) => sum + chunk.byteLength, 0))).toEqual(
      Array.from({ length: 11 }, (_, i) => Math.min(MiB, body.byteLength - i * MiB)),
    );
    expect(Buffer.compare(Buffer.concat(parts.flat()), body)).toBe(0);
    // Not copied: every yielded chunk is one the store produced.
    const produced = new Set(read);
    expect(parts.flat().every((chunk) => produced.has(chunk))).toBe(true);
  });

  it('refuses an object shorter than the recorded size', async () => {
    const reading = collect(
      readParallel(inner, 'snapshot.duckdb', { size: body.byteLength + MiB, partSize: MiB }),
    );
    await expect(reading).rejects.toMatchObject({ code: 'ERR_STORE' });
  });
});
