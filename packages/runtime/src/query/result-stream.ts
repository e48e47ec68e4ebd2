/**
 * A query result as an async iterator of Arrow record batches, fed by a pool worker: the worker
 * sends a batch only while it has credit, and credit is given back one batch at a time as the
 * consumer takes them, so at most `STREAM_WINDOW` batches wait here — a consumer that stops
 * reading stops the producer. Leaving the iteration early (break, return, throw) cancels the query
 * in its engine. Bounds: the producer's time per batch (`timeoutMs`, counted only while the
 * consumer waits for it), the consumer's idleness (`idleTimeoutMs`, counted while batches wait for
 * it) and the caller's signal.
 */
import { batchesFromIpc, type DatasetRead } from '@ferry/engines/namespaces';
import type { RecordBatch, Schema } from 'apache-arrow';
import { QueryCancelledError, QueryTimeoutError, StreamIdleError } from '../errors.js';
import type { PoolQuery, QueryListener } from './duckdb-query-pool.js';

export interface ResultStreamOptions {
  readonly timeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly signal?: AbortSignal | undefined;
  /** The datasets the query reads, for a timeout's message. */
  readonly datasets: readonly string[];
}

type Item = { readonly batch: RecordBatch } | { readonly end: true } | { readonly error: unknown };

export class ResultStream implements QueryListener {
  readonly #options: ResultStreamOptions;
  #query: PoolQuery | undefined;
  readonly #items: Item[] = [];
  #wake: (() => void) | undefined;
  #schema: Schema | undefined;
  /** Who waits in {@link schemaReady} (the query service, once per stream). */
  #schemaWaiter: (() => void) | undefined;
  #failure: unknown;
  #finished = false;
  #ended = false;
  #producerTimer: NodeJS.Timeout | undefined;
  /** What the query reads, at which snapshots (known with the schema). */
  read: readonly DatasetRead[] = [];
  #idleTimer: NodeJS.Timeout | undefined;
  readonly #onAbort: () => void;
  readonly #stopped = new AbortController();
  #markDone!: () => void;
  /**
   * Resolves once the consumer is done with the stream: it read to the end, left, or the stream
   * failed or was disposed. Until then its batches may still be taking the host's time.
   */
  readonly done = new Promise<void>((resolve) => {
    this.#markDone = resolve;
  });

  constructor(options: ResultStreamOptions) {
    this.#options = options;
    this.#onAbort = () => this.fail(new QueryCancelledError(options.signal?.reason));
    // A signal aborted already (its client gone before the query came) fails the stream at once:
    // its query is cancelled as it is attached. An aborted signal never fires again.
    if (options.signal?.aborted === true) this.#onAbort();
    else {
      options.signal?.addEventListener('abort', this.#onAbort, { once: true });
      this.#waitForProducer();
    }
  }

  /** The pool query feeding this stream (set right after it starts). */
  attach(query: PoolQuery): void {
    this.#query = query;
    if (this.#failure !== undefined) query.cancel();
  }

  // QueryListener: what the worker sends.

  schema(ipc: Uint8Array, read: readonly DatasetRead[], rows?: number): void {
    const { schema, batches } = batchesFromIpc(ipc);
    this.read = read;
    this.#schema = schema;
    // The first batch came in the same bytes: queued before anyone waiting for the schema runs.
    if (rows !== undefined) this.#batches(batches);
    this.#schemaWaiter?.();
  }

  batch(ipc: Uint8Array): void {
    this.#batches(batchesFromIpc(ipc).batches);
  }

  #batches(batches: readonly RecordBatch[]): void {
    for (const batch of batches) this.#push({ batch });
    clearTimeout(this.#producerTimer);
    this.#producerTimer = undefined;
    // Batches wait for the consumer now: its idleness counts.
    if (this.#idleTimer === undefined) this.#startIdleTimer();
  }

  #startIdleTimer(): void {
    this.#idleTimer = this.#timer(
      this.#options.idleTimeoutMs,
      () => new StreamIdleError(this.#options.idleTimeoutMs),
    );
  }

  /** The producer is done (every batch was sent). */
  end(): void {
    this.#push({ end: true });
  }

  /** Aborted with the reason when the stream ends early on its own (see `RuntimeQueryStream.stopped`). */
  get stopped(): AbortSignal {
    return this.#stopped.signal;
  }

  /** Ends the stream with `error`, cancelling the query if it still runs. */
  fail(error: unknown): void {
    if (this.#finished || this.#failure !== undefined) return;
    this.#failure = error;
    this.#stopped.abort(error);
    this.#query?.cancel();
    this.#push({ error });
    this.#schemaWaiter?.();
    // Nothing more to time or to hear, whether or not anyone reads the error (a stream refused
    // after it started is never read): the caller's signal may outlive many streams.
    this.#release();
  }

  /** Why the stream ended early (a limit, a cancellation), if it did. */
  get failure(): unknown {
    return this.#failure;
  }

  /** The schema, if the worker sent it already. */
  get receivedSchema(): Schema | undefined {
    return this.#schema;
  }

  /** Resolves once the worker sent the schema ({@link receivedSchema}), or the stream failed first. */
  async schemaReady(): Promise<void> {
    if (this.#schema !== undefined || this.#failure !== undefined) return;
    return new Promise<void>((resolve) => {
      this.#schemaWaiter = resolve;
    });
  }

  /** Ends the stream without a consumer: its query answered before any schema (it was re-routed, or failed). */
  dispose(): void {
    this.#failure ??= new QueryCancelledError('the stream was not started');
    this.#schemaWaiter?.();
    this.#cleanup();
  }

  #timer(ms: number, error: () => Error): NodeJS.Timeout | undefined {
    if (ms <= 0 || this.#failure !== undefined) return undefined;
    const timer = setTimeout(() => this.fail(error()), ms);
    timer.unref?.();
    return timer;
  }

  /** The consumer waits for the next batch: the producer's time counts. */
  #waitForProducer(): void {
    clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
    this.#producerTimer ??= this.#timer(
      this.#options.timeoutMs,
      () => new QueryTimeoutError(this.#options.datasets, this.#options.timeoutMs),
    );
  }

  #push(item: Item): void {
    this.#items.push(item);
    this.#wake?.();
  }

  #cleanup(): void {
    this.#finished = true;
    this.#release();
  }

  /** The stream's outcome is known: its timers stop and its listener leaves the caller's signal. */
  #release(): void {
    this.#markDone();
    clearTimeout(this.#producerTimer);
    this.#producerTimer = undefined;
    clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
    this.#options.signal?.removeEventListener('abort', this.#onAbort);
  }

  async *batches(): AsyncGenerator<RecordBatch, void, undefined> {
    try {
      for (;;) {
        let item = this.#items.shift();
        while (item === undefined) {
          if (this.#items.length === 0) this.#waitForProducer();
          await new Promise<void>((resolve) => {
            this.#wake = resolve;
          });
          this.#wake = undefined;
          item = this.#items.shift();
        }
        if ('error' in item) throw item.error;
        if ('end' in item) {
          this.#ended = true;
          return;
        }
        // The consumer took one: the producer may send one more, and the consumer's idleness
        // counts afresh from now (while batches wait), not from when the first of them arrived.
        this.#query?.credit();
        clearTimeout(this.#idleTimer);
        this.#idleTimer = undefined;
        if (this.#items.length > 0) this.#startIdleTimer();
        yield item.batch;
      }
    } finally {
      if (this.#failure === undefined && !this.#ended) {
        // Left early: stop the query in its engine.
        this.#failure = new QueryCancelledError('the consumer stopped reading');
        this.#query?.cancel();
      }
      this.#cleanup();
    }
  }
}
