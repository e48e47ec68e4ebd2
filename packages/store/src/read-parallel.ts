/**
 * Parallel ranged reads of one large object (a snapshot download): up to `concurrency` parts are
 * fetched at once and yielded strictly in order, so the caller can hash and write a stream while
 * memory stays bounded by `concurrency` parts. The first failure aborts every other part.
 *
 * `readParallelParts` yields each part as the chunks it arrived in, never copied: a download
 * hashes them and writes them with one `writev`. Gathering every part into a fresh part-sized
 * buffer cost a copy, page faults and, above all, garbage collections driven by the external
 * memory (together more CPU than hashing the bytes, on a machine whose cores also serve them).
 * `readParallel` yields one buffer per part.
 */
import type { ObjectStore } from '@ferry/core/base';
import { StoreError } from './errors.js';

export interface ReadParallelOptions {
  /** The object's size in bytes (from metadata.json or `head`). */
  readonly size: number;
  /** Default 8 MiB. */
  readonly partSize?: number;
  /** Parts in flight or buffered at once. Default 4. */
  readonly concurrency?: number;
  readonly signal?: AbortSignal;
}

export const DEFAULT_READ_PART_SIZE = 8 * 1024 * 1024;
/** An object read in one request is yielded in batches of at least this many bytes. */
const SINGLE_READ_BATCH = 1024 * 1024;

/**
 * Bytes `[start, end)` of `key` as the chunks they arrived in; fails (retryable) when the store
 * returns another length. Parts of a parallel read, and the changed ranges of a delta download.
 */
export async function readRange(
  store: ObjectStore,
  key: string,
  start: number,
  end: number,
  signal: AbortSignal,
): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  const length = end - start;
  let filled = 0;
  for await (const chunk of store.read(key, { start, end, signal })) {
    filled += chunk.byteLength;
    if (filled > length) break;
    chunks.push(chunk);
  }
  if (filled !== length) {
    throw new StoreError({
      operation: 'read',
      uri: `${store.location}${key}`,
      retryable: true,
      reason: `bytes ${start}-${end - 1} returned ${filled} bytes instead of ${length}; the object changed or is not the recorded size`,
    });
  }
  return chunks;
}

/** Read `key` as in-order chunks using parallel ranged reads: one buffer per part. */
export async function* readParallel(
  store: ObjectStore,
  key: string,
  options: ReadParallelOptions,
): AsyncGenerator<Uint8Array> {
  for await (const chunks of readParallelParts(store, key, options)) {
    yield chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks);
  }
}

/**
 * Read `key` with parallel ranged reads, yielding each part in order as the chunks it arrived in
 * (not copied). An object no larger than one part is one plain read, yielded as it arrives in
 * batches of about a MiB, so a caller counting bytes sees more than `size` when the object is longer.
 */
export async function* readParallelParts(
  store: ObjectStore,
  key: string,
  options: ReadParallelOptions,
): AsyncGenerator<readonly Uint8Array[]> {
  const { size } = options;
  const partSize = options.partSize ?? DEFAULT_READ_PART_SIZE;
  const concurrency = options.concurrency ?? 4;
  if (!Number.isSafeInteger(size) || size < 0 || !(partSize > 0) || !(concurrency >= 1)) {
    throw new RangeError(`readParallel(${key}): size, partSize and concurrency must be positive integers`);
  }
  if (size <= partSize) {
    // Yielded in batches of about a MiB (one writev each), not chunk by chunk.
    let batch: Uint8Array[] = [];
    let batched = 0;
    for await (const chunk of store.read(
      key,
      options.signal === undefined ? {} : { signal: options.signal },
    )) {
      batch.push(chunk);
      batched += chunk.byteLength;
      if (batched >= SINGLE_READ_BATCH) {
        yield batch;
        batch = [];
        batched = 0;
      }
    }
    if (batch.length > 0) yield batch;
    return;
  }
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', onAbort, { once: true });
  if (options.signal?.aborted === true) onAbort();
  const window: Promise<Uint8Array[]>[] = [];
  let next = 0;
  const startNext = (): void => {
    const start = next * partSize;
    if (start >= size) return;
    next++;
    const part = readRange(store, key, start, Math.min(size, start + partSize), controller.signal);
    // The first failure cancels the rest; rejections are observed when the part is awaited.
    part.catch((error: unknown) => controller.abort(error));
    window.push(part);
  };
  try {
    for (let i = 0; i < concurrency; i++) startNext();
    for (let part = window.shift(); part !== undefined; part = window.shift()) {
      const bytes = await part;
      yield bytes;
      startNext();
    }
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    if (window.length > 0) {
      controller.abort(new Error('readParallel stopped before the last part'));
      await Promise.allSettled(window);
    }
  }
}
