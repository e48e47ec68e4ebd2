/**
 * Gives back the memory a large answer leaves behind. Encoding a few hundred MB for a client (JSON
 * or CSV text, Arrow frames) leaves the host's V8 heap full of garbage that only a full collection
 * frees, and once the answer is out nothing allocates: V8 collects it when its idle memory reducer
 * fires, about a minute later (measured with `--trace-gc` on `ferry serve`: a 200 MB CSV answer left
 * the host heap at 417 MB and the process 0.9 GB above its start for 55–75 s; the collection that
 * came then took the heap to 35 MB). So after an answer of {@link LARGE_ANSWER_BYTES} or more has
 * ended, full collections run at each of {@link COLLECT_AFTER_MS} (1, 2, 4 … 32 s after the end):
 * six in all. Each large answer that ends starts the sequence again, so many ending close together
 * share one. Where an answer ends is said twice: when its last batch is taken (every consumer:
 * HTTP, Flight, an embedder), and, by the HTTP server, when the response has gone out, since the
 * text may sit in the socket for as long as the client takes to read it (16–20 s for Node's fetch
 * reading 200 MB) and only a collection after that frees it. Small answers never start a sequence:
 * the young generation's collections free theirs as they go. One per process, as the heap is
 * the host thread's: {@link memoryReturn}.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { RecordBatch } from 'apache-arrow';

/** An answer at least this large (its Arrow buffers) is followed by a full collection. */
export const LARGE_ANSWER_BYTES = 32 * 2 ** 20;
/** When, after the last large answer ended, a full collection runs (ms). */
export const COLLECT_AFTER_MS: readonly number[] = [1_000, 2_000, 4_000, 8_000, 16_000, 32_000];

export interface MemoryReturnOptions {
  /** A full collection (tests pass their own); default V8's, through `gc()`. */
  readonly collect?: () => void;
  /** Timers (tests pass a simulated clock's). */
  readonly timers?: {
    set(run: () => void, ms: number): unknown;
    clear(timer: unknown): void;
  };
}

const NODE_TIMERS = {
  set: (run: () => void, ms: number): unknown => setTimeout(run, ms).unref(),
  clear: (timer: unknown): void => clearTimeout(timer as NodeJS.Timeout),
};

export class MemoryReturn {
  readonly #collect: () => void;
  readonly #timers: NonNullable<MemoryReturnOptions['timers']>;
  #timer: unknown;
  #collections = 0;

  constructor(options: MemoryReturnOptions = {}) {
    this.#collect = options.collect ?? fullCollection;
    this.#timers = options.timers ?? NODE_TIMERS;
  }

  /** Full collections run so far. */
  get collections(): number {
    return this.#collections;
  }

  /** An answer of `bytes` ended (read through, left early, failed, or delivered). */
  ended(bytes: number): void {
    if (bytes < LARGE_ANSWER_BYTES) return;
    if (this.#timer !== undefined) this.#timers.clear(this.#timer);
    this.#schedule(0);
  }

  #schedule(step: number): void {
    const after = COLLECT_AFTER_MS[step] as number;
    const wait = after - (step === 0 ? 0 : (COLLECT_AFTER_MS[step - 1] as number));
    this.#timer = this.#timers.set(() => {
      this.#timer = undefined;
      this.#collections++;
      this.#collect();
      if (step + 1 < COLLECT_AFTER_MS.length) this.#schedule(step + 1);
    }, wait);
  }

  /** `batches` as read; when they end, {@link ended} with the bytes they carried. */
  async *watch(batches: AsyncIterable<RecordBatch>): AsyncGenerator<RecordBatch> {
    let bytes = 0;
    try {
      for await (const batch of batches) {
        bytes += batch.data.byteLength;
        yield batch;
      }
    } finally {
      this.ended(bytes);
    }
  }
}

let gc: (() => void) | undefined;

/**
 * V8's full collection. `gc()` exists only with `--expose-gc`; the flag set at run time exposes it
 * to a context made after it (as Jest's `--logHeapUsage` does), and is then set back.
 */
function fullCollection(): void {
  if (gc === undefined) {
    const exposed = (globalThis as { gc?: () => void }).gc;
    if (exposed !== undefined) gc = exposed;
    else {
      setFlagsFromString('--expose-gc');
      gc = runInNewContext('gc') as () => void;
      setFlagsFromString('--no-expose-gc');
    }
  }
  gc();
}

/** The process's: the host thread's heap is one. */
export const memoryReturn = new MemoryReturn();
