/**
 * The host side of the DuckDB query pool: a few long-lived workers, each with every DuckDB dataset
 * attached (see `duckdb-thread.ts`), each running many queries at once. Not piscina: these
 * workers hold state (attached generations, SQLite tables read in, prepared statements), are told
 * of every catalog change at once (so a swap attaches the new generation before the next query
 * needs it and lets the old file go), and cancel one query by interrupting it — piscina's abort
 * ends a worker, which under running DuckDB work aborts the process. A query goes to the worker
 * with the fewest queries in flight. A worker that dies fails its queries (`ERR_THREAD_EXITED`)
 * and is replaced.
 *
 * Time limits: one timer for every query of the pool (not one per query), armed while a timed
 * query runs; a query's clock starts when its worker starts it — said by the worker with the
 * datasets it reads (`routed`), or, for a statement that ran before on a worker that is up, when
 * it is sent. A query past its limit is interrupted in DuckDB and fails with
 * `ERR_QUERY_TIMEOUT`; it counts as in flight until its engine stopped.
 */

import { type ResourceLimits, Worker } from 'node:worker_threads';
import type {
  DatasetRead,
  DuckDbNamespaceOptions,
  NamespaceCatalog,
  NamespaceTaskHistory,
} from '@ferry/engines';
import { type Logger, writeLog } from '../common/logging.js';
import { Supervisor } from '../common/supervisor.js';
import { threadExecArgv, threadFile } from '../common/thread-files.js';
import { youngGenerationOf } from '../common/thread-limits.js';
import { within } from '../common/within.js';
import { ChannelClosedError, QueryTimeoutError } from '../errors.js';
import type { DuckDbWorkerData } from './duckdb-thread.js';
import type { HostToQueryWorker, QueryAnswer, QueryRequest, QueryWorkerToHost } from './query-protocol.js';
import { StreamCredits } from './stream-credits.js';

/** What a streamed query hears besides its answer. */
export interface QueryListener {
  /** The schema; when `rows` is set, the first batch (of `rows`) is in the same IPC bytes. */
  schema(ipc: Uint8Array, read: readonly DatasetRead[], rows?: number): void;
  batch(ipc: Uint8Array, rows: number): void;
}

/** A query the pool runs: its answer, and the ways to drive it while it runs. */
export interface PoolQuery {
  readonly answer: Promise<QueryAnswer>;
  /** Stops it in its engine; its answer (an error) is still delivered. */
  cancel(): void;
  /** Lets a batch stream send one more batch. */
  credit(): void;
}

interface Pending {
  readonly resolve: (answer: QueryAnswer) => void;
  readonly reject: (error: Error) => void;
  readonly listener: QueryListener | undefined;
  readonly timeoutMs: number;
  /** When its worker started it (`performance.now()`), once known; the datasets it reads, for a timeout's message. */
  startedAt: number | undefined;
  datasets: readonly string[];
  /** Its caller has its outcome already (it timed out): the answer, when it comes, only ends it. */
  settled: boolean;
}

class QueryWorker {
  readonly worker: Worker;
  readonly pending = new Map<number, Pending>();
  closed: (() => void) | undefined;
  /** It has sent a message: its namespace is up, a query it gets starts at once. */
  started = false;
  readonly #logger: Logger;
  readonly #onStarted: () => void;

  constructor(
    data: DuckDbWorkerData,
    resourceLimits: ResourceLimits | undefined,
    logger: Logger,
    onStarted: () => void,
    onExit: (worker: QueryWorker, error: unknown) => void,
  ) {
    this.#logger = logger;
    this.#onStarted = onStarted;
    this.worker = new Worker(threadFile('query/duckdb-thread'), {
      workerData: data,
      ...threadExecArgv(),
      ...(resourceLimits === undefined ? {} : { resourceLimits }),
    });
    let failure: unknown;
    this.worker.on('message', (message: QueryWorkerToHost) => this.#onMessage(message));
    this.worker.on('error', (error) => {
      failure = error;
    });
    this.worker.once('exit', () => onExit(this, failure));
  }

  #onMessage(message: QueryWorkerToHost): void {
    this.started = true;
    switch (message.type) {
      case 'closed':
        this.closed?.();
        return;
      case 'log':
        writeLog(this.#logger, message.record);
        return;
      case 'answer': {
        const pending = this.pending.get(message.id);
        if (pending === undefined) return;
        this.pending.delete(message.id);
        if (!pending.settled) pending.resolve(JSON.parse(message.answer) as QueryAnswer);
        return;
      }
      case 'routed': {
        const pending = this.pending.get(message.id);
        if (pending === undefined) return;
        pending.datasets = message.datasets ?? [];
        pending.startedAt = performance.now();
        this.#onStarted();
        return;
      }
      case 'schema':
        this.pending.get(message.id)?.listener?.schema(message.ipc, message.read, message.rows);
        return;
      case 'batch':
        this.pending.get(message.id)?.listener?.batch(message.ipc, message.rows);
        return;
    }
  }

  post(message: HostToQueryWorker): void {
    this.worker.postMessage(message);
  }
}

export interface DuckDbQueryPoolOptions {
  readonly workers: number;
  readonly namespace: (index: number) => DuckDbNamespaceOptions;
  readonly resourceLimits?: ResourceLimits;
  readonly logger: Logger;
  /** Nice value each worker adds to its thread's (thread-priority.ts); 0: none. */
  readonly niceness?: number;
  /**
   * The delay before a worker that ended is started again, by how many ended in a row without one
   * running a minute ({@link RestartBackoff}); default {@link QUERY_WORKER_RESTART_DELAYS_MS}.
   */
  readonly restartDelaysMs?: readonly number[];
}

/**
 * A query worker that ended (a query past its heap limit, a fault) is started again at once; one
 * that ends again within a minute waits 1 s, then 2, 5, 10 and 30 s, so a worker that cannot start
 * (its namespace fails to open) does not spin a core and flood the log.
 */
export const QUERY_WORKER_RESTART_DELAYS_MS: readonly number[] = [0, 1_000, 2_000, 5_000, 10_000, 30_000];

export class DuckDbQueryPool {
  readonly #options: DuckDbQueryPoolOptions;
  readonly #workers: (QueryWorker | undefined)[];
  readonly #supervisors: Supervisor[];
  #catalog: NamespaceCatalog;
  #taskHistory: NamespaceTaskHistory | undefined;
  #nextId = 1;
  #closing = false;
  #watchdog: NodeJS.Timeout | undefined;

  constructor(options: DuckDbQueryPoolOptions, catalog: NamespaceCatalog) {
    this.#options = options;
    this.#catalog = catalog;
    const workers = Math.max(1, options.workers);
    this.#supervisors = Array.from(
      { length: workers },
      (_, index) =>
        new Supervisor({
          delaysMs: options.restartDelaysMs ?? QUERY_WORKER_RESTART_DELAYS_MS,
          restart: () => {
            this.#workers[index] = this.#start(index);
          },
          ref: false,
        }),
    );
    this.#workers = Array.from({ length: workers }, (_, index) => this.#start(index));
  }

  #start(index: number): QueryWorker {
    this.#supervisors[index]?.started();
    const worker = new QueryWorker(
      {
        namespace: this.#options.namespace(index),
        catalog: this.#catalog,
        niceness: this.#options.niceness ?? 0,
      },
      this.#options.resourceLimits,
      this.#options.logger,
      () => this.#watch(),
      (worker, error) => this.#exited(index, worker, error),
    );
    if (this.#taskHistory !== undefined) worker.post({ type: 'task-history', history: this.#taskHistory });
    return worker;
  }

  /** Tells every worker the task history as it is now (before a query that reads it). */
  setTaskHistory(history: NamespaceTaskHistory): void {
    this.#taskHistory = history;
    for (const worker of this.#workers) worker?.post({ type: 'task-history', history });
  }

  #exited(index: number, worker: QueryWorker, error: unknown): void {
    const reason = new ChannelClosedError('The DuckDB query worker', 'exited');
    for (const pending of worker.pending.values()) if (!pending.settled) pending.reject(reason);
    worker.pending.clear();
    worker.closed?.();
    if (this.#closing || this.#workers[index] !== worker) return;
    const why = error instanceof Error ? error.message : 'it exited';
    this.#workers[index] = undefined;
    this.#supervisors[index]?.died(({ delayMs, inARow }) =>
      this.#options.logger.error(
        { component: 'query', err: error, restartInMs: delayMs, endedInARow: inARow },
        delayMs === 0
          ? `A DuckDB query worker ended (${why}); starting another`
          : `A DuckDB query worker ended (${why}), ${inARow} in a row; starting another in ${delayMs} ms`,
      ),
    );
  }

  /** Ends worker `index` as a fault would (a test hook: the pool starts another, after its backoff). */
  async endWorker(index: number): Promise<void> {
    await this.#workers[index]?.worker.terminate();
  }

  /** Each running worker's young generation limit in MiB, 0 for V8's default (a test hook). */
  youngGenerations(): number[] {
    return this.#workers.flatMap((worker) =>
      worker === undefined ? [] : [youngGenerationOf(worker.worker)],
    );
  }

  /** Queries not answered yet, over every worker (a timed-out one until its engine stopped). */
  get inFlight(): number {
    return this.#workers.reduce((sum, worker) => sum + (worker?.pending.size ?? 0), 0);
  }

  /** Tells every worker about a new catalog version. */
  setCatalog(catalog: NamespaceCatalog): void {
    this.#catalog = catalog;
    for (const worker of this.#workers) worker?.post({ type: 'catalog', catalog });
  }

  /**
   * Runs a query on the least busy worker; `timeoutMs` bounds its engine time (none at 0); `known`:
   * the datasets the statement read when it last ran (the host's plan), if it did. With a
   * `listener`, its result streams to it (`batchRows` rows per batch at most, one batch per credit:
   * stream-credits.ts); without one, it comes in the answer (rows, or inline JSON).
   */
  run(
    request: QueryRequest,
    timeoutMs = 0,
    known?: readonly string[],
    listener?: QueryListener,
    batchRows?: number,
  ): PoolQuery {
    let worker: QueryWorker | undefined;
    for (const candidate of this.#workers) {
      if (candidate !== undefined && (worker === undefined || candidate.pending.size < worker.pending.size)) {
        worker = candidate;
      }
    }
    if (worker === undefined || this.#closing) {
      const reason = this.#closing ? 'closed' : 'is restarting its workers (they ended, see the log)';
      const closed = Promise.reject(new ChannelClosedError('The DuckDB query pool', reason));
      return { answer: closed, cancel: () => undefined, credit: () => undefined };
    }
    const id = this.#nextId++;
    const credits = listener === undefined ? undefined : new StreamCredits();
    // Timed from now when the worker is up and the host knows what it reads; else from `routed`.
    const announce = timeoutMs > 0 && (!worker.started || known === undefined);
    const target = worker;
    const answer = new Promise<QueryAnswer>((resolve, reject) => {
      target.pending.set(id, {
        resolve,
        reject,
        listener,
        timeoutMs,
        startedAt: timeoutMs > 0 && !announce ? performance.now() : undefined,
        datasets: known ?? [],
        settled: false,
      });
    });
    worker.post({ type: 'query', id, request, batchRows, announce, credits: credits?.control });
    if (timeoutMs > 0 && !announce) this.#watch();
    return {
      answer,
      cancel: () => {
        credits?.cancel();
        target.post({ type: 'cancel', id });
      },
      credit: () => credits?.credit(),
    };
  }

  /**
   * Unless the one timer is armed: fails (and interrupts) every timed query past its limit, and
   * arms the timer for the next to reach it, if a timed query runs.
   */
  #watch(): void {
    if (this.#watchdog !== undefined) return;
    let next = Number.POSITIVE_INFINITY;
    const now = performance.now();
    for (const worker of this.#workers) {
      if (worker === undefined) continue;
      for (const [id, pending] of worker.pending) {
        if (pending.startedAt === undefined || pending.settled || pending.timeoutMs <= 0) continue;
        const left = pending.startedAt + pending.timeoutMs - now;
        if (left > 0) {
          next = Math.min(next, left);
          continue;
        }
        pending.settled = true;
        worker.post({ type: 'cancel', id });
        pending.reject(new QueryTimeoutError(pending.datasets, pending.timeoutMs));
      }
    }
    if (next === Number.POSITIVE_INFINITY) return;
    this.#watchdog = setTimeout(
      () => {
        this.#watchdog = undefined;
        this.#watch();
      },
      Math.max(1, next),
    );
    // Running queries keep the process alive through their worker; an idle pool must not.
    this.#watchdog.unref();
  }

  /**
   * Stops every query, closes every namespace, ends the workers. The queries in flight fail with
   * `reason` at once (what their stopped engines answer later only ends them).
   */
  async close(reason: Error): Promise<void> {
    this.#closing = true;
    clearTimeout(this.#watchdog);
    for (const supervisor of this.#supervisors) supervisor.close();
    for (const worker of this.#workers) {
      for (const pending of worker?.pending.values() ?? []) {
        if (pending.settled) continue;
        pending.settled = true;
        pending.reject(reason);
      }
    }
    await Promise.all(
      this.#workers.map(async (worker) => {
        if (worker === undefined) return;
        const closed = new Promise<void>((resolve) => {
          worker.closed = resolve;
        });
        worker.post({ type: 'close' });
        // Closing waits for a catalog change in flight (many datasets swapping at once).
        await within(closed, 30_000);
        // A worker stuck in native code cannot be terminated until it returns: do not wait for ever.
        await within(worker.worker.terminate(), 5_000);
      }),
    );
  }
}
