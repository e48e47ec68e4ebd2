/**
 * The host side of the DuckDB query pool: a few long-lived workers, each with every DuckDB dataset
 * attached (see `duckdb-query-worker.ts`), each running many queries at once. Not piscina: these
 * workers hold state (attached generations, SQLite tables read in, prepared statements), are told
 * of every catalog change at once (so a swap attaches the new generation before the next query
 * needs it and lets the old file go), and cancel one query by interrupting it — piscina's abort
 * ends a worker, which under running DuckDB work aborts the process. A query goes to the worker
 * with the fewest queries in flight. A worker that dies fails its queries (`ERR_THREAD_EXITED`)
 * and is replaced.
 */

import type { ResourceLimits } from 'node:worker_threads';
import { Worker } from 'node:worker_threads';
import type { DatasetRead, DuckDbNamespaceOptions, NamespaceCatalog } from '@ferry/engines';
import type { DuckDbWorkerData } from './duckdb-query-worker.js';
import { ChannelClosedError } from './errors.js';
import type { Logger } from './logging.js';
import type {
  HostToQueryWorker,
  QueryAnswer,
  QueryMode,
  QueryRequest,
  QueryWorkerToHost,
} from './query-protocol.js';
import { threadFile } from './thread-files.js';

/** What a running query hears besides its answer (batch mode). */
export interface QueryListener {
  /**
   * DuckDB: the statement runs there and reads these datasets. Said by the worker before it
   * starts the query, or — when the worker has started and `known` names what the statement read
   * before — by the pool as it sends it (one message fewer each way per query).
   */
  routed?(datasets: readonly string[] | undefined): void;
  /** The datasets the statement read when it last ran (the host's plan), if it ran before. */
  readonly known?: readonly string[];
  schema?(ipc: Uint8Array, read: readonly DatasetRead[]): void;
  batch?(ipc: Uint8Array, rows: number): void;
}

/** A query the pool runs: its answer, and the ways to drive it while it runs. */
export interface PoolQuery {
  readonly answer: Promise<QueryAnswer>;
  /** Stops it in DuckDB; its answer (an error) is still delivered. */
  cancel(): void;
  /** Lets a batch stream send one more batch. */
  credit(): void;
}

interface Pending {
  readonly resolve: (answer: QueryAnswer) => void;
  readonly reject: (error: Error) => void;
  readonly listener: QueryListener | undefined;
}

class QueryWorker {
  readonly worker: Worker;
  readonly pending = new Map<number, Pending>();
  closed: (() => void) | undefined;
  /** It has sent a message: its namespace is up, a query it gets starts at once. */
  started = false;

  constructor(
    data: DuckDbWorkerData,
    resourceLimits: ResourceLimits | undefined,
    onExit: (worker: QueryWorker, error: unknown) => void,
  ) {
    this.worker = new Worker(threadFile('duckdb-query-worker'), {
      workerData: data,
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
    if (message.type === 'closed') {
      this.closed?.();
      return;
    }
    const pending = this.pending.get(message.id);
    if (pending === undefined) return;
    if (message.type === 'answer') {
      this.pending.delete(message.id);
      pending.resolve(message.answer);
    } else if (message.type === 'routed') pending.listener?.routed?.(message.datasets);
    else if (message.type === 'schema') pending.listener?.schema?.(message.ipc, message.read);
    else pending.listener?.batch?.(message.ipc, message.rows);
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
}

export class DuckDbQueryPool {
  readonly #options: DuckDbQueryPoolOptions;
  readonly #workers: (QueryWorker | undefined)[];
  #catalog: NamespaceCatalog;
  #nextId = 1;
  #closing = false;

  constructor(options: DuckDbQueryPoolOptions, catalog: NamespaceCatalog) {
    this.#options = options;
    this.#catalog = catalog;
    this.#workers = Array.from({ length: Math.max(1, options.workers) }, (_, index) => this.#start(index));
  }

  #start(index: number): QueryWorker {
    return new QueryWorker(
      { namespace: this.#options.namespace(index), catalog: this.#catalog },
      this.#options.resourceLimits,
      (worker, error) => this.#exited(index, worker, error),
    );
  }

  #exited(index: number, worker: QueryWorker, error: unknown): void {
    const reason = new ChannelClosedError('The DuckDB query worker', 'exited');
    for (const pending of worker.pending.values()) pending.reject(reason);
    worker.pending.clear();
    worker.closed?.();
    if (this.#closing || this.#workers[index] !== worker) return;
    this.#options.logger.error(
      { component: 'query', err: error },
      `A DuckDB query worker ended (${error instanceof Error ? error.message : 'it exited'}); starting another`,
    );
    this.#workers[index] = this.#start(index);
  }

  /** Queries not answered yet, over every worker. */
  get inFlight(): number {
    return this.#workers.reduce((sum, worker) => sum + (worker?.pending.size ?? 0), 0);
  }

  /** Tells every worker about a new catalog version. */
  setCatalog(catalog: NamespaceCatalog): void {
    this.#catalog = catalog;
    for (const worker of this.#workers) worker?.post({ type: 'catalog', catalog });
  }

  /** Runs a query on the least busy worker. */
  run(request: QueryRequest, mode: QueryMode, listener?: QueryListener, batchRows?: number): PoolQuery {
    const worker = this.#workers.reduce<QueryWorker | undefined>(
      (best, candidate) =>
        candidate !== undefined && (best === undefined || candidate.pending.size < best.pending.size)
          ? candidate
          : best,
      undefined,
    );
    if (worker === undefined || this.#closing) {
      const closed = Promise.reject(new ChannelClosedError('The DuckDB query pool', 'closed'));
      return { answer: closed, cancel: () => undefined, credit: () => undefined };
    }
    const id = this.#nextId++;
    const answer = new Promise<QueryAnswer>((resolve, reject) => {
      worker.pending.set(id, { resolve, reject, listener });
    });
    const announce = listener?.routed !== undefined && (!worker.started || listener.known === undefined);
    worker.post({
      type: 'query',
      id,
      mode,
      request,
      ...(batchRows === undefined ? {} : { batchRows }),
      ...(announce ? { announce } : {}),
    });
    if (listener?.routed !== undefined && !announce) listener.routed(listener.known);
    return {
      answer,
      cancel: () => worker.post({ type: 'cancel', id }),
      credit: () => worker.post({ type: 'credit', id }),
    };
  }

  /** Stops every query, closes every namespace, ends the workers. */
  async close(): Promise<void> {
    this.#closing = true;
    await Promise.all(
      this.#workers.map(async (worker) => {
        if (worker === undefined) return;
        const closed = new Promise<void>((resolve) => {
          worker.closed = resolve;
        });
        worker.post({ type: 'close', id: 0 });
        const waited = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());
        // Closing waits for a catalog change in flight (many datasets swapping at once).
        await Promise.race([closed, waited(30_000)]);
        // A worker stuck in native code cannot be terminated until it returns: do not wait for ever.
        await Promise.race([worker.worker.terminate(), waited(5_000)]);
      }),
    );
  }
}
