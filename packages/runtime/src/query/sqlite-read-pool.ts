/**
 * The host side of the SQLite read pool: queries queue here and go to the piscina pool in batches,
 * one batch per worker, so one thread hop carries many queries when the workers are busy (and a
 * single query at once when one is idle: an idle pool adds no delay). A worker answers a batch
 * early once it has run for a few milliseconds, and the queries it did not reach go back to the
 * front of the queue (for whichever worker is free first), so expensive queries are not run back to
 * back in one batch while another worker idles. A statement known to be expensive goes in a batch
 * of its own, and while every other worker runs one, the last is kept for the cheap queries queued
 * (a point lookup does not wait for aggregates on every thread). That policy is a set of pure
 * functions (sqlite-batching.ts). A batch runs at the catalog version current when it leaves, or a
 * newer one: the host writes each version on the pool's board before sending a batch
 * (catalog-board.ts), so batches carry no catalog and no shared buffer.
 *
 * Timeouts are per query and count from the moment a worker starts it: the worker records the
 * index and start time of the query it runs in its batch's slot of one shared buffer, and the host checks it when
 * the timeout could have run out. A query past its timeout — or cancelled by its caller while it
 * waits in a batch or runs — is stopped inside SQLite through the stop buffer (sqlite-stops.ts):
 * it fails with `SQLITE_INTERRUPT` within microseconds, its caller gets the timeout or the
 * cancellation, and its worker goes on with the rest of the batch. Only a worker still running
 * the stopped work {@link ESCALATE_MS} after the stop (stuck outside SQLite's loop) is ended
 * (piscina's abort; `Escalation`), and the rest of its batch (read-only queries, safe to run again)
 * goes back to the front of the queue, as does a batch ended with it. A cancelled query still queued just leaves the queue. Closing the pool stops every
 * query it runs, so no worker outlives it.
 *
 * Streams run as tasks of their own (`stream`), answering one Arrow batch per credit. A stream
 * waits for its credits without blocking its worker, on a connection of its own, so a worker runs
 * batches beside the streams it holds: piscina's balancer here ({@link SqliteReadPool.#place})
 * sends a batch to a worker running no other batch, whatever streams wait there, and a stream to
 * the worker with the fewest. (A consumer that reads slowly, or not at all, used to hold a whole
 * worker: two such streams stopped every SQLite query of a two-core machine.)
 */
import { MessageChannel, type ResourceLimits } from 'node:worker_threads';
import { BoundedCache } from '@ferry/engines/sql';
import { Piscina } from 'piscina';
import { ChannelClosedError } from '../common/thread-errors.js';
import { threadExecArgv, threadFile } from '../common/thread-files.js';
import { youngGenerationOf } from '../common/thread-limits.js';
import { QueryCancelledError, QueryTimeoutError } from '../errors.js';
import { CatalogBoard, type SharedCatalog } from './catalog-board.js';
import type { PoolQuery, QueryListener } from './duckdb-query-pool.js';
import { type QueryAnswer, type QueryRequest, queriesText } from './query-protocol.js';
import { isExpensive, nextBatch, nextCost } from './sqlite-batching.js';
import { clearRegion, isRunning, MAX_BATCH, stopBuffer, stopQuery } from './sqlite-stops.js';
import type {
  SqliteBatchAnswer,
  SqlitePoolBuffers,
  SqliteReadBatch,
  SqliteStreamMessage,
  SqliteStreamTask,
  SqliteWorkerData,
} from './sqlite-thread.js';
import { StreamCredits } from './stream-credits.js';

export interface SqliteReadPoolOptions {
  readonly maxThreads: number;
  /** Per query, from its start in a worker; 0 = none. */
  readonly queryTimeoutMs: number;
  /** The catalog version a batch leaving now carries. */
  readonly catalog: () => SharedCatalog;
  readonly workerData: SqliteWorkerData;
  readonly resourceLimits?: ResourceLimits;
}

interface Pending {
  /** The datasets the query is known to read (for the timeout's message). */
  readonly datasets: readonly string[];
  readonly query: QueryRequest;
  /** Its promise's: settled through {@link SqliteReadPool.#settle} only. */
  readonly resolve: (result: QueryAnswer) => void;
  readonly reject: (error: unknown) => void;
  /** The batch a worker runs it in, while one does (a cancellation stops it there). */
  running: RunningBatch | undefined;
  /** Answered or failed already (a later outcome is dropped). */
  done: boolean;
  /** The caller's signal and what listens to it, taken off once the query settles (a signal may outlive many queries). */
  readonly signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

/**
 * Stops one batch: what piscina's `signal` option takes (an emitter with `once` / `off`). Not an
 * AbortController: creating one and adding and removing its listener cost more per hop (about
 * 15 µs, measured) than the rest of the host's bookkeeping.
 */
class BatchStop {
  aborted = false;
  reason: unknown;
  #listener: (() => void) | undefined;

  once(_name: 'abort', listener: () => void): void {
    this.#listener = listener;
  }

  off(_name: 'abort', listener: () => void): void {
    if (this.#listener === listener) this.#listener = undefined;
  }

  /** piscina's name for `off`. */
  readonly removeListener = this.off;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listener = this.#listener;
    this.#listener = undefined;
    listener?.();
  }
}

/** A batch a worker has: its slot, how to end its worker, and the queries stopped in it (and why). */
interface RunningBatch {
  readonly batch: Pending[];
  readonly slot: number;
  readonly stop: BatchStop;
  readonly stopped: Map<Pending, Error>;
  /** Ends the worker if it does not answer soon after a stop. */
  escalation: Escalation | undefined;
}

/**
 * How long a worker may take to answer after one of its queries was stopped before it is ended:
 * SQLite stops within microseconds, so only a worker stuck outside SQLite's loop reaches it.
 */
const ESCALATE_MS = 1_000;

/**
 * After a stop: ends the worker (`end`) if the stopped work still `runs` there {@link ESCALATE_MS}
 * on, checked again each {@link ESCALATE_MS} while it does not run. Work waiting for its worker (a
 * batch behind a stream's step, a stream waiting for its consumer) answers its stop once it gets
 * there; ending the worker meanwhile would only end the work beside it.
 */
class Escalation {
  #timer: NodeJS.Timeout | undefined;

  constructor(runs: () => boolean, end: () => void) {
    const check = (): void => {
      if (!runs()) this.#timer = setTimeout(check, ESCALATE_MS);
      else {
        this.#timer = undefined;
        end();
      }
    };
    this.#timer = setTimeout(check, ESCALATE_MS);
  }

  clear(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

/**
 * Each running batch has a slot of the pool's one progress buffer, `[index, startedAtMs]` of the
 * query its worker runs now (written by the worker, read by the host): one buffer shared with every
 * worker when it starts, instead of a SharedArrayBuffer made, posted and collected per batch.
 */
const INDEX = 0;
const STARTED_AT = 1;
/** Slots beyond the threads: a slot is free again only once its batch's outcome is in. */
const SPARE_SLOTS = 4;

/** Where piscina's balancer reads a stream task's placement (its queue options). */
const PLACEMENT = Piscina.queueOptionsSymbol;

/** The worker a stream was placed on (set by the balancer), and its stop buffer (whether it steps now). */
interface StreamPlacement {
  worker: number | undefined;
  readonly stops: Int32Array;
}

type Balancer = NonNullable<NonNullable<ConstructorParameters<typeof Piscina>[0]>['loadBalancer']>;

/**
 * Tasks a worker may hold at once, for piscina (the balancer decides): one batch and the streams
 * beside it. Streams are bounded by admission (`maxQueriesInFlight`), not here: a stream waiting
 * for a worker would wait for another stream's consumer.
 */
const MAX_TASKS_PER_WORKER = 1_024;

/** piscina's error for a task whose worker was ended for another task's abort (or the pool's end). */
function isThreadTermination(error: unknown): boolean {
  return error instanceof Error && error.message === 'Terminating worker thread';
}

export class SqliteReadPool {
  readonly #pool: Piscina<
    SqliteReadBatch | SqliteStreamTask | Record<string, never>,
    string | QueryAnswer | number
  >;
  readonly #threads: number;
  readonly #timeoutMs: number;
  readonly #catalog: () => SharedCatalog;
  #queue: Pending[] = [];
  #inFlight = 0;
  /** Batches of one expensive query a worker has now. */
  #expensiveInFlight = 0;
  #scheduled = false;
  #closed: Error | undefined;
  #batches = 0;
  #unanswered = 0;
  /** Batches a worker has now, and the one timer that times their queries out. */
  readonly #running = new Set<RunningBatch>();
  #watchdog: NodeJS.Timeout | undefined;
  readonly #progress: BigInt64Array;
  readonly #freeSlots: number[];
  readonly #board = new CatalogBoard();
  readonly #stops: Int32Array;
  /** Streams running now, each with its stop buffer. */
  readonly #streams = new Set<Int32Array>();
  /** The streams each worker holds now, by thread id (the balancer's). */
  readonly #streamsOn = new Map<number, Set<StreamPlacement>>();
  /** What each statement (by shape, else text) took to run, as a moving average in ms. */
  readonly #costs = new BoundedCache<string, { ms: number; runs: number }>({
    entries: 4_096,
    bytes: 4 * 1024 * 1024,
  });

  constructor(options: SqliteReadPoolOptions) {
    this.#threads = Math.max(1, options.maxThreads);
    this.#timeoutMs = options.queryTimeoutMs;
    this.#catalog = options.catalog;
    const slots = this.#threads + SPARE_SLOTS;
    this.#progress = new BigInt64Array(new SharedArrayBuffer(2 * slots * BigInt64Array.BYTES_PER_ELEMENT));
    this.#freeSlots = Array.from({ length: slots }, (_, slot) => slot);
    this.#stops = stopBuffer(slots);
    const workerData: SqliteWorkerData & SqlitePoolBuffers = {
      ...options.workerData,
      progress: this.#progress.buffer as SharedArrayBuffer,
      board: this.#board.buffer,
      stops: this.#stops.buffer as SharedArrayBuffer,
    };
    this.#pool = new Piscina({
      filename: threadFile('query/sqlite-thread').href,
      ...threadExecArgv(),
      minThreads: 0,
      maxThreads: this.#threads,
      // A worker with nothing to do ends after this long.
      idleTimeout: 30_000,
      workerData,
      ...(options.resourceLimits === undefined ? {} : { resourceLimits: options.resourceLimits }),
      // Workers wait for tasks with Atomics.waitAsync, so their event loop runs between tasks: V8's
      // memory reducer and idle collection need it (a worker blocked in Atomics.wait between tasks
      // never runs them), and so does anything a worker schedules. B1 and B9 did not move against
      // 'sync' (bench/RESULTS.md, "One-hour soak alone, 2026-12-03").
      atomics: 'async',
      concurrentTasksPerWorker: MAX_TASKS_PER_WORKER,
      loadBalancer: this.#place,
    });
  }

  /**
   * piscina's balancer: a batch goes to a worker running no other batch (the streams it holds do
   * not count: they wait for their consumers between steps), one where no stream steps now first,
   * then the one holding the fewest streams; a stream goes to the worker holding the fewest, one
   * running no batch and no step first. Null: no worker for it now, or only a busy one while the
   * pool may start another (piscina starts one; the task waits for it, or for a task to finish).
   * The dispatcher sends at most a batch a worker, so a batch finds one once the workers run.
   */
  readonly #place: Balancer = (task, workers) => {
    // piscina gives null for a task without queue options (a batch).
    const placement = ((task as unknown as Record<symbol, unknown>)[PLACEMENT] ?? undefined) as
      | StreamPlacement
      | undefined;
    let best: (typeof workers)[number] | null = null;
    let bestScore = Number.POSITIVE_INFINITY;
    for (const worker of workers) {
      if (worker.terminating) continue;
      const streams = this.#streamsOn.get(worker.id);
      const held = streams?.size ?? 0;
      // piscina counts a worker's one task with a signal as Infinity.
      const tasks = worker.currentUsage === Number.POSITIVE_INFINITY ? 1 : worker.currentUsage;
      const batches = tasks - held;
      if (placement === undefined && batches > 0) continue;
      let stepping = false;
      for (const stream of streams ?? []) stepping ||= isRunning(stream.stops, 0);
      const score = ((batches > 0 ? 2 : 0) + (stepping ? 1 : 0)) * MAX_TASKS_PER_WORKER + held;
      if (score < bestScore) {
        best = worker;
        bestScore = score;
      }
    }
    // Busy (a batch, or a stream stepping) while the pool may start another worker: start one.
    if (bestScore >= MAX_TASKS_PER_WORKER && workers.length < this.#threads) return null;
    if (best !== null && placement !== undefined) {
      placement.worker = best.id;
      const streams = this.#streamsOn.get(best.id);
      if (streams === undefined) this.#streamsOn.set(best.id, new Set([placement]));
      else streams.add(placement);
    }
    return best;
  };

  /** A stream's worker no longer holds it. */
  #unplace(placement: StreamPlacement): void {
    const { worker } = placement;
    if (worker === undefined) return;
    placement.worker = undefined;
    const streams = this.#streamsOn.get(worker);
    streams?.delete(placement);
    if (streams?.size === 0) this.#streamsOn.delete(worker);
  }

  /** Each running worker's young generation limit in MiB, 0 for V8's default (a test hook). */
  youngGenerations(): number[] {
    return this.#pool.threads.map(youngGenerationOf);
  }

  /** Full collections run by the memory return of the worker that takes this task (a test hook). */
  async memoryCollections(): Promise<number> {
    const collections = await this.#pool.run({}, { name: 'memoryCollections' });
    if (typeof collections !== 'number') throw new Error('memoryCollections answered no number');
    return collections;
  }

  /** Queries and streams not answered yet (queued or running). */
  get inFlight(): number {
    return this.#unanswered;
  }

  /** Batches sent to workers so far (a query sent again after a timeout counts again). */
  get batches(): number {
    return this.#batches;
  }

  /** Run one query; `datasets` (known so far) name it in a timeout's message. */
  run(datasets: readonly string[], query: QueryRequest, signal?: AbortSignal): Promise<QueryAnswer> {
    if (this.#closed !== undefined) return Promise.reject(this.#closed);
    if (signal?.aborted === true) return Promise.reject(new QueryCancelledError(signal.reason));
    this.#unanswered++;
    return new Promise<QueryAnswer>((resolve, reject) => {
      const pending: Pending = {
        datasets,
        query,
        resolve,
        reject,
        running: undefined,
        done: false,
        signal,
        onAbort: undefined,
      };
      if (signal !== undefined) {
        pending.onAbort = () => {
          const error = new QueryCancelledError(signal.reason);
          const queued = this.#queue.indexOf(pending);
          if (queued >= 0) {
            this.#queue.splice(queued, 1);
            this.#settle(pending, error);
          } else if (pending.running !== undefined) this.#stop(pending.running, pending, error);
        };
        signal.addEventListener('abort', pending.onAbort, { once: true });
      }
      this.#queue.push(pending);
      this.#schedule();
    });
  }

  /**
   * Streams one query's result: `listener` hears the schema and each batch; `credit()` lets one
   * more batch come (at most the window ahead: stream-credits.ts). `cancel()` stops it: the worker notices
   * between batches, and SQLite through the stream's stop buffer (the worker is ended only if it
   * does not answer within {@link ESCALATE_MS}).
   */
  stream(query: QueryRequest, listener: QueryListener, batchRows?: number): PoolQuery {
    // Refused before anything is counted or opened (a port listened to keeps the process alive).
    if (this.#closed !== undefined) {
      return { answer: Promise.reject(this.#closed), cancel: () => undefined, credit: () => undefined };
    }
    const channel = new MessageChannel();
    const credits = new StreamCredits();
    // Ends the worker only if it does not stop (BatchStop: cheaper than an AbortController).
    const stop = new BatchStop();
    const stops = stopBuffer(1);
    channel.port1.on('message', (message: SqliteStreamMessage) => {
      if (message.type === 'end') ended();
      else if (message.type === 'schema') listener.schema(message.ipc, message.read, message.rows);
      else listener.batch(message.ipc, message.rows);
    });
    const placement: StreamPlacement = { worker: undefined, stops };
    const task: SqliteStreamTask & { readonly [PLACEMENT]: StreamPlacement } = {
      catalog: this.#catalogOf(),
      request: query,
      port: channel.port2,
      control: credits.control,
      stops,
      batchRows,
      [PLACEMENT]: placement,
    };
    // The answer comes back on piscina's port, the schema and batches on this channel: no order
    // holds between the two, so the answer waits for the channel's last message ('end', posted
    // after every batch; not the port's close, which a worker parked by piscina never delivers).
    let ended: () => void = () => undefined;
    const drained = new Promise<void>((resolve) => {
      ended = resolve;
    });
    this.#unanswered++;
    let escalation: Escalation | undefined;
    let finished = false;
    const answer = (async (): Promise<QueryAnswer> => {
      this.#streams.add(stops);
      try {
        const result = (await this.#pool.run(task, {
          name: 'stream',
          signal: stop,
          transferList: [channel.port2],
        })) as QueryAnswer;
        await drained;
        return result;
      } catch (error) {
        // Its worker ended by close(): the stream fails with the pool's reason, as queries do. Ended
        // for a stopped batch beside it that did not stop: it cannot run again (batches went out).
        if (this.#closed !== undefined) throw this.#closed;
        if (isThreadTermination(error)) {
          throw new ChannelClosedError(
            'The SQLite read thread running the stream',
            'was ended (a query beside it did not stop)',
          );
        }
        throw error;
      } finally {
        finished = true;
        this.#unanswered--;
        this.#unplace(placement);
        this.#streams.delete(stops);
        channel.port1.close();
        escalation?.clear();
      }
    })();
    return {
      answer,
      cancel: () => {
        // Its worker is done with it (a consumer may fail the stream later): nothing to stop.
        if (finished) return;
        credits.cancel();
        // A worker inside a long SQLite step does not see the credits: stop the statement there,
        // and end the worker only if it does not answer soon.
        stopQuery(stops, 0, 0);
        escalation ??= new Escalation(
          () => isRunning(stops, 0),
          () => stop.abort(),
        );
      },
      credit: () => credits.credit(),
    };
  }

  /** The catalog a task leaving now carries: none when the board holds it (the usual case). */
  #catalogOf(): SharedCatalog | undefined {
    const catalog = this.#catalog();
    return this.#board.publish(catalog) ? undefined : catalog;
  }

  /**
   * Ends the workers; queued and running queries reject with `reason`. Every statement a worker
   * runs is stopped inside SQLite first, so ending the workers never waits for one.
   */
  async close(reason: Error): Promise<void> {
    this.#closed ??= reason;
    clearTimeout(this.#watchdog);
    const queued = this.#queue;
    this.#queue = [];
    for (const pending of queued) this.#settle(pending, reason);
    for (const running of this.#running) {
      for (const pending of running.batch) this.#stop(running, pending, reason);
    }
    for (const stops of this.#streams) stopQuery(stops, 0, 0);
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
    while (
      this.#queue.length > 0 &&
      this.#inFlight < this.#threads &&
      this.#freeSlots.length > 0 &&
      this.#closed === undefined
    ) {
      const queue = this.#queue;
      const take = nextBatch(queue.length, (index) => this.#expensive(queue[index] as Pending), {
        threads: this.#threads,
        inFlight: this.#inFlight,
        expensiveInFlight: this.#expensiveInFlight,
        maxBatch: MAX_BATCH,
      });
      const batch = this.#takeAt(take);
      const expensive = batch.length === 1 && this.#expensive(batch[0] as Pending);
      const slot = this.#freeSlots.pop() as number;
      this.#inFlight++;
      if (expensive) this.#expensiveInFlight++;
      this.#batches++;
      void this.#runBatch(batch, slot).finally(() => {
        this.#freeSlots.push(slot);
        this.#inFlight--;
        if (expensive) this.#expensiveInFlight--;
        this.#dispatch();
      });
    }
  }

  async #runBatch(batch: Pending[], slot: number): Promise<void> {
    Atomics.store(this.#progress, 2 * slot + INDEX, -1n);
    clearRegion(this.#stops, slot);
    const running: RunningBatch = {
      batch,
      slot,
      stop: new BatchStop(),
      stopped: new Map(),
      escalation: undefined,
    };
    for (const pending of batch) pending.running = running;
    this.#running.add(running);
    if (this.#timeoutMs > 0 && this.#watchdog === undefined) this.#arm(this.#timeoutMs);
    let results: QueryAnswer[];
    try {
      const answered = JSON.parse(
        (await this.#pool.run(
          {
            catalog: this.#catalogOf(),
            ...queriesText(batch.map((pending) => pending.query)),
            slot,
          },
          { signal: running.stop },
        )) as string,
      ) as SqliteBatchAnswer;
      results = answered.answers;
      for (const [index, ms] of answered.ms.entries()) this.#cost(batch[index] as Pending, ms);
    } catch (error) {
      // The worker failed, or was ended after a stop it did not answer: the stopped queries fail
      // with their own reason, the others run again elsewhere.
      const { stopped } = running;
      if (stopped.size === 0) {
        // Its worker was ended for a stream beside it that did not stop: its queries (read-only) run
        // again. Any other failure (the worker crashed) is theirs.
        if (isThreadTermination(error) && this.#closed === undefined) this.#requeue(batch);
        else for (const pending of batch) this.#settle(pending, error);
        return;
      }
      for (const [pending, reason] of stopped) this.#settle(pending, reason);
      this.#requeue(batch.filter((pending) => !stopped.has(pending)));
      return;
    } finally {
      running.escalation?.clear();
      this.#running.delete(running);
      for (const pending of batch) pending.running = undefined;
    }
    for (const [index, result] of results.entries()) {
      const pending = batch[index] as Pending;
      const reason = running.stopped.get(pending);
      // A stopped query answers SQLITE_INTERRUPT (or, had it just finished, its rows): either way
      // its caller has been told it was stopped, and why.
      this.#settle(pending, reason, reason === undefined ? result : undefined);
    }
    // The stopped queries it did not reach (those it reached are settled above).
    for (const [pending, reason] of running.stopped) this.#settle(pending, reason);
    // A batch that ran past its time budget answers early: the rest goes first in the queue again.
    this.#requeue(batch.slice(results.length));
  }

  /** The queries at `positions` (ascending) of the queue, taken out of it. */
  #takeAt(positions: readonly number[]): Pending[] {
    const last = positions[positions.length - 1];
    // The usual case, the queue's front: one splice.
    if (last === positions.length - 1) return this.#queue.splice(0, positions.length);
    const taken = new Set(positions);
    const batch: Pending[] = [];
    const rest: Pending[] = [];
    for (const [index, pending] of this.#queue.entries()) (taken.has(index) ? batch : rest).push(pending);
    this.#queue = rest;
    return batch;
  }

  /** Whether `pending`'s statement is known to be expensive (sqlite-batching.ts). */
  #expensive(pending: Pending): boolean {
    const { query } = pending;
    return isExpensive(this.#costs.get(query.shape ?? query.sql));
  }

  /** Records that `pending`'s statement took `ms` this time (sqlite-batching.ts). */
  #cost(pending: Pending, ms: number): void {
    const key = pending.query.shape ?? pending.query.sql;
    const known = this.#costs.get(key);
    if (known === undefined) this.#costs.set(key, nextCost(undefined, ms), 2 * key.length + 64);
    else Object.assign(known, nextCost(known, ms));
  }

  /**
   * Stops `pending` in its running batch (timed out, cancelled, or the pool closing): inside SQLite
   * if it runs, before it starts if not; the worker goes on with the rest of the batch. A worker
   * that does not answer within {@link ESCALATE_MS} is ended.
   */
  #stop(running: RunningBatch, pending: Pending, error: Error): void {
    if (pending.done || running.stopped.has(pending)) return;
    const index = running.batch.indexOf(pending);
    if (index < 0) return;
    running.stopped.set(pending, error);
    stopQuery(this.#stops, running.slot, index);
    running.escalation ??= new Escalation(
      () => Atomics.load(this.#progress, 2 * running.slot + INDEX) >= 0n,
      () => running.stop.abort(),
    );
  }

  /**
   * One timer for every running batch (not one per batch: arming and clearing a timer per hop
   * costs more than the hop's own bookkeeping). It fires at the earliest moment a running query
   * could be past its timeout, stops the ones that are, and is armed again while batches run.
   */
  #arm(ms: number): void {
    const timeoutMs = this.#timeoutMs;
    this.#watchdog = setTimeout(() => {
      this.#watchdog = undefined;
      const now = Date.now();
      let next = timeoutMs;
      for (const running of this.#running) {
        const { slot, batch } = running;
        // The worker writes the start time before the index: an index read here is never paired
        // with an earlier query's start time (a later one only postpones the check).
        const index = Number(Atomics.load(this.#progress, 2 * slot + INDEX));
        if (index < 0) continue; // not started yet (a worker is booting): checked a timeout later
        const left = Number(Atomics.load(this.#progress, 2 * slot + STARTED_AT)) + timeoutMs - now;
        if (left > 0) next = Math.min(next, left);
        else {
          const late = batch[index] as Pending;
          this.#stop(running, late, new QueryTimeoutError(late.datasets, timeoutMs));
        }
      }
      if (this.#running.size > 0) this.#arm(next);
    }, ms);
    // A running batch keeps the process alive (its worker is referenced); an idle pool must not.
    this.#watchdog.unref();
  }

  /** Answers `pending` (`answer`), else fails it with `error`, unless it is done already. */
  #settle(pending: Pending, error: unknown, answer?: QueryAnswer): void {
    if (pending.done) return;
    pending.done = true;
    this.#unanswered--;
    if (pending.onAbort !== undefined) pending.signal?.removeEventListener('abort', pending.onAbort);
    if (answer === undefined) pending.reject(error);
    else pending.resolve(answer);
  }

  #requeue(batch: Pending[]): void {
    const rest = batch.filter((pending) => !pending.done);
    if (rest.length === 0) return;
    if (this.#closed !== undefined) for (const pending of rest) this.#settle(pending, this.#closed);
    else this.#queue.unshift(...rest);
  }
}
