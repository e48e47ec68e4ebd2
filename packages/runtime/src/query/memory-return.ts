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
 * HTTP, Flight, an embedder; `watched` in query-front.ts), and, by the HTTP server, when the response has gone out, since the
 * text may sit in the socket for as long as the client takes to read it (16–20 s for Node's fetch
 * reading 200 MB) and only a collection after that frees it. Small answers never start a sequence:
 * the young generation's collections free theirs as they go. One per thread, as each thread has a
 * heap of its own: {@link memoryReturn}.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

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
}

/** V8's `gc()` and its options. */
type Gc = (options?: { flavor: 'last-resort' }) => void;

let gc: Gc | undefined;

/**
 * What a full collection that gives pooled pages back is asked with: `{ flavor: 'last-resort' }`
 * from V8 12 (Node 22 and 24). V8 11 (Node 20), which pools no pages, takes any object given to
 * `gc()` as a request for a young-generation collection (measured: `gc({ type: 'major' })` runs a
 * Scavenge there), so it is asked with nothing.
 */
const FULL =
  Number(process.versions.v8.split('.')[0]) >= 12 ? ({ flavor: 'last-resort' } as const) : undefined;

/**
 * V8's full collection, as a last resort: it also gives back the pages V8 pools for reuse. Node 24's
 * V8 keeps up to 128 MB of freed pages in a pool after a plain full collection and frees them only
 * when its own memory reducer runs (~30 s later, measured with `--trace-gc`: "pooled: 127 MB");
 * `flavor: 'last-resort'` collects with memory reduction (two collections, ~25 ms each on a 40 MB
 * heap, against ~25 ms for one plain one); see {@link FULL} for Node 20.
 * `gc()` exists only with `--expose-gc`; the flag set at run time exposes it to a context made
 * after it (as Jest's `--logHeapUsage` does), and is then set back. Flags are the process's, and
 * every thread runs this: one thread may set the flag back between another's two steps, so the
 * lookup is tried again until it finds the function.
 */
function fullCollection(): void {
  if (gc === undefined) {
    const exposed = (globalThis as { gc?: Gc }).gc;
    for (let tries = 0; exposed === undefined && gc === undefined && tries < 8; tries++) {
      setFlagsFromString('--expose-gc');
      const found: unknown = runInNewContext('typeof gc === "function" ? gc : undefined');
      setFlagsFromString('--no-expose-gc');
      if (typeof found === 'function') gc = found as Gc;
    }
    gc ??= exposed;
    if (gc === undefined) return;
  }
  gc(FULL);
}

/**
 * This thread's. A heap is a thread's: the host's holds the answers it encodes for clients, and a
 * query worker's the Arrow batches it built (which it transfers, but whose builders' buffers stay
 * its garbage: on Node 24 a 200 MB answer left 200 MB in the DuckDB worker for over a minute), so
 * the host and each query worker call {@link MemoryReturn.ended} for the answers they made.
 */
export const memoryReturn = new MemoryReturn();
