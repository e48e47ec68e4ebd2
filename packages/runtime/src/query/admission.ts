/**
 * Admission control for queries: an O(1) counter in front of the query pools. Up to the cap,
 * a query is admitted — it runs, or waits in the pools' queues (a DuckDB connection's, the SQLite
 * pool's), whose length the cap therefore bounds. Past the cap a query is refused at once with
 * `QueryRejectedError` (HTTP answers 429 with `Retry-After`, Flight `RESOURCE_EXHAUSTED`): never an
 * unbounded queue. The retry hint is how long the queries in flight take to drain at the rate
 * queries have been finishing (the last two seconds), at least one second.
 */
import { QueryRejectedError } from '../errors.js';

export interface AdmissionOptions {
  /** Queries admitted at once (running or queued); 0 admits every query. */
  readonly maxInFlight: number;
  /** The clock (ms); tests pass their own. */
  readonly now?: () => number;
}

const WINDOW_MS = 1_000;

export class QueryAdmission {
  readonly #max: number;
  readonly #now: () => number;
  #inFlight = 0;
  #rejected = 0;
  /** Queries finished in the current window and the one before, and when the current one began. */
  #finishedNow = 0;
  #finishedBefore = 0;
  #windowStart: number;

  constructor(options: AdmissionOptions) {
    this.#max = Math.max(0, Math.floor(options.maxInFlight));
    this.#now = options.now ?? Date.now;
    this.#windowStart = this.#now();
  }

  /** Queries admitted and not finished. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Queries refused so far. */
  get rejected(): number {
    return this.#rejected;
  }

  /** Admits one query (call {@link release} when it ends), or throws `QueryRejectedError`. */
  admit(): void {
    if (this.#max > 0 && this.#inFlight >= this.#max) {
      this.#rejected++;
      throw new QueryRejectedError(this.#max, this.retryAfterSeconds());
    }
    this.#inFlight++;
  }

  /** An admitted query ended (answered, failed, cancelled, or its stream closed). */
  release(): void {
    this.#inFlight--;
    this.#roll();
    this.#finishedNow++;
  }

  /** Whole seconds until the queries in flight have drained at the recent rate; at least 1. */
  retryAfterSeconds(): number {
    this.#roll();
    const elapsed = Math.max(1, this.#now() - this.#windowStart) + WINDOW_MS;
    const perSecond = ((this.#finishedNow + this.#finishedBefore) * 1_000) / elapsed;
    if (perSecond <= 0) return 1;
    return Math.max(1, Math.ceil(this.#inFlight / perSecond));
  }

  #roll(): void {
    const now = this.#now();
    if (now - this.#windowStart < WINDOW_MS) return;
    const windows = Math.floor((now - this.#windowStart) / WINDOW_MS);
    this.#finishedBefore = windows === 1 ? this.#finishedNow : 0;
    this.#finishedNow = 0;
    this.#windowStart += windows * WINDOW_MS;
  }
}
