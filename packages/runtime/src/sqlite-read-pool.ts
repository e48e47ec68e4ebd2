/**
 * The host side of the SQLite read pool: queries queue here and go to the piscina pool in batches,
 * one batch per worker, so one thread hop carries many queries when the workers are busy (and a
 * single query at once when one is idle: an idle pool adds no delay). A worker answers a batch
 * early once it has run for a few milliseconds, and the queries it did not reach go back to the
 * front of the queue (for whichever worker is free first), so expensive queries are not run back to
 * back in one batch while another worker idles.
 *
 * Timeouts are per query and count from the moment a worker starts it: the worker records the
 * index and start time of the query it runs in a small shared buffer, and the host checks it when
 * the timeout could have run out. SQLite cannot be interrupted from another thread, so a query
 * past its timeout is stopped by ending its worker (piscina's abort); it fails with
 * ERR_QUERY_TIMEOUT and the rest of its batch — read-only queries, safe to run again — goes back
 * to the front of the queue.
 */
import { Piscina } from 'piscina';
import { QueryTimeoutError } from './errors.js';
import type { SqliteReadBatch, SqliteReadQuery, SqliteReadResult } from './sqlite-read-task.js';

export interface SqliteReadPoolOptions {
  /** The worker module (`sqlite-read-task`). */
  readonly filename: string;
  readonly maxThreads: number;
  /** Per query, from its start in a worker; 0 = none. */
  readonly queryTimeoutMs: number;
  /** Most queries in one batch. */
  readonly maxBatch?: number;
  /** A worker with nothing to do ends after this long. */
  readonly idleTimeoutMs?: number;
}

interface Pending {
  readonly dataset: string;
  readonly query: SqliteReadQuery;
  resolve(result: SqliteReadResult): void;
  reject(error: unknown): void;
}

/** Slots of a batch's shared progress buffer (written by the worker, read by the host). */
const INDEX = 0;
const STARTED_AT = 1;

export class SqliteReadPool {
  readonly #pool: Piscina<SqliteReadBatch, SqliteReadResult[]>;
  readonly #threads: number;
  readonly #timeoutMs: number;
  readonly #maxBatch: number;
  #queue: Pending[] = [];
  #inFlight = 0;
  #scheduled = false;
  #closed: Error | undefined;
  #batches = 0;

  constructor(options: SqliteReadPoolOptions) {
    this.#threads = Math.max(1, options.maxThreads);
    this.#timeoutMs = options.queryTimeoutMs;
    this.#maxBatch = Math.max(1, options.maxBatch ?? 64);
    this.#pool = new Piscina<SqliteReadBatch, SqliteReadResult[]>({
      filename: options.filename,
      minThreads: 0,
      maxThreads: this.#threads,
      idleTimeout: options.idleTimeoutMs ?? 30_000,
      // Workers run only synchronous tasks, so they may block between tasks: waking one through
      // Atomics.wait is about 50 µs quicker per task than a message event.
      atomics: 'sync',
    });
  }

  /** Batches sent to workers so far (a query sent again after a timeout counts again). */
  get batches(): number {
    return this.#batches;
  }

  /** Run one query of `dataset` (its name is for the timeout's message). */
  run(dataset: string, query: SqliteReadQuery): Promise<SqliteReadResult> {
    if (this.#closed !== undefined) return Promise.reject(this.#closed);
    return new Promise<SqliteReadResult>((resolve, reject) => {
      this.#queue.push({ dataset, query, resolve, reject });
      this.#schedule();
    });
  }

  /** Ends the workers; queued and running queries reject with `reason`. */
  async close(reason: Error): Promise<void> {
    this.#closed ??= reason;
    const queued = this.#queue;
    this.#queue = [];
    for (const pending of queued) pending.reject(reason);
    await this.#pool.destroy();
  }

  /** Dispatch once the current turn has queued what it will (same-turn queries share a batch). */
  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      this.#dispatch();
    });
  }

  #dispatch(): void {
    while (this.#queue.length > 0 && this.#inFlight < this.#threads && this.#closed === undefined) {
      // Share what is queued evenly among the idle workers.
      const idle = this.#threads - this.#inFlight;
      const size = Math.min(this.#maxBatch, Math.ceil(this.#queue.length / idle));
      const batch = this.#queue.splice(0, size);
      this.#inFlight++;
      this.#batches++;
      void this.#runBatch(batch).finally(() => {
        this.#inFlight--;
        this.#dispatch();
      });
    }
  }

  async #runBatch(batch: Pending[]): Promise<void> {
    const timeoutMs = this.#timeoutMs;
    const progress =
      timeoutMs > 0
        ? new BigInt64Array(new SharedArrayBuffer(2 * BigInt64Array.BYTES_PER_ELEMENT))
        : undefined;
    if (progress !== undefined) progress[INDEX] = -1n;
    const controller = new AbortController();
    let timedOut: number | undefined;
    let timer: NodeJS.Timeout | undefined;
    const check = (): void => {
      if (progress === undefined) return;
      // The worker writes the start time before the index: an index read here is never paired
      // with an earlier query's start time (a later one only postpones the check).
      const index = Number(Atomics.load(progress, INDEX));
      if (index < 0) {
        timer = setTimeout(check, timeoutMs); // not started yet (a worker is booting)
        return;
      }
      const left = Number(Atomics.load(progress, STARTED_AT)) + timeoutMs - Date.now();
      if (left > 0) {
        timer = setTimeout(check, left);
        return;
      }
      timedOut = index;
      controller.abort();
    };
    if (progress !== undefined) timer = setTimeout(check, timeoutMs);
    let results: SqliteReadResult[];
    try {
      results = await this.#pool.run(
        { queries: batch.map((pending) => pending.query), ...(progress === undefined ? {} : { progress }) },
        { signal: controller.signal },
      );
    } catch (error) {
      if (timedOut === undefined) {
        for (const pending of batch) pending.reject(error);
        return;
      }
      const late = batch[timedOut] as Pending;
      late.reject(new QueryTimeoutError(late.dataset, timeoutMs));
      const rest = batch.filter((pending) => pending !== late);
      if (this.#closed !== undefined) for (const pending of rest) pending.reject(this.#closed);
      else this.#queue.unshift(...rest);
      return;
    } finally {
      clearTimeout(timer);
    }
    for (const [index, result] of results.entries()) (batch[index] as Pending).resolve(result);
    // A batch that ran past its time budget answers early: the rest goes first in the queue again.
    const rest = batch.slice(results.length);
    if (rest.length > 0) {
      if (this.#closed !== undefined) for (const pending of rest) pending.reject(this.#closed);
      else this.#queue.unshift(...rest);
    }
  }
}
