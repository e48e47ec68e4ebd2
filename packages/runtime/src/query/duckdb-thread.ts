/**
 * A DuckDB query worker: one {@link DuckDbNamespace} (every DuckDB dataset attached at its current
 * generation) serving many queries at once — DuckDB executes them on its own threads, this thread
 * only routes, binds and converts results. The host pushes every catalog version; a query waits
 * for the versions that arrived before it. Cancelling a query interrupts it in DuckDB (the
 * connection is free at once); a stream sends a batch only while it holds a credit
 * (stream-credits.ts: awaited here without blocking the thread).
 * A catalog version that fails to apply and an uncaught error are reported to the host's log with
 * their cause (the second ends the worker, once DuckDB runs nothing on its behalf).
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { DuckDbNamespace, type DuckDbNamespaceOptions } from '@ferry/engines/duckdb';
import type { BatchSink, NamespaceCatalog, QueryCancellation, QueryRoute } from '@ferry/engines/namespaces';
import { within } from '../common/within.js';
import { memoryReturn } from './memory-return.js';
import {
  answerOf,
  type HostToQueryWorker,
  InlineResult,
  inlineRows,
  type QueryAnswer,
  type QueryWorkerToHost,
  SchemaWithFirstBatch,
} from './query-protocol.js';
import { takeCredit } from './stream-credits.js';
import { lowerThreadPriority } from './thread-priority.js';

if (isMainThread || parentPort === null) {
  throw new Error('query/duckdb-thread.js is the entry of a DuckDB query worker; the runtime starts it.');
}

export interface DuckDbWorkerData {
  readonly namespace: DuckDbNamespaceOptions;
  readonly catalog: NamespaceCatalog;
  /** Nice value added to this thread's (and so to DuckDB's threads, started from it): thread-priority.ts. */
  readonly niceness?: number;
}

const port = parentPort;
const data = workerData as DuckDbWorkerData;
// Before DuckDB starts its threads: they inherit this thread's priority.
lowerThreadPriority(data.niceness ?? 0);

function post(message: QueryWorkerToHost, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

/** Has the host log `<message>: <the error's message>` at error, with its message, code and stack. */
function logError(message: string, error: unknown): void {
  const cause = error instanceof Error ? error : new Error(String(error));
  const err = { message: cause.message, stack: cause.stack, code: (cause as { code?: unknown }).code };
  post({
    type: 'log',
    record: { level: 'error', component: 'query', message: `${message}: ${cause.message}`, fields: { err } },
  });
}

let namespace: DuckDbNamespace | undefined;
const ready = DuckDbNamespace.create(data.namespace).then((created) => {
  namespace = created;
  return created;
});
/**
 * Every catalog version received so far, applied in order — coalesced: a burst of versions (many
 * datasets swapping at once) is applied as the newest one. `pending` counts versions not applied
 * yet: with none, a query starts without waiting for the chain. The version the worker was started
 * with is the chain's first: a worker slow to start applies the newest version sent meanwhile, not
 * one whose generations may already be pruned (which would fail, and so would every query after).
 */
let catalogs: Promise<unknown> = ready;
let pending = 0;
let newest: NamespaceCatalog | undefined;
let closing = false;

/**
 * What stops one query: the few members of an AbortSignal the namespace uses, without an
 * AbortController and an EventTarget per query.
 */
class QueryStop implements QueryCancellation {
  aborted = false;
  reason: unknown;
  #listeners: (() => void)[] = [];

  addEventListener(_type: 'abort', listener: () => void): void {
    this.#listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    this.#listeners = this.#listeners.filter((known) => known !== listener);
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = new Error('The query was cancelled.');
    const listeners = this.#listeners;
    this.#listeners = [];
    for (const listener of listeners) listener();
  }
}

/** The queries running now, by id. */
const running = new Map<number, QueryStop>();
/** Their answers, until posted (close() waits for them). */
const answering = new Set<Promise<void>>();

type QueryMessage = Extract<HostToQueryWorker, { type: 'query' }>;

/**
 * `ns.rows`, giving the heap back when the cap stopped it: a chunk is read whole before the cap is
 * checked, so a few large values can leave hundreds of MB of garbage in this heap (after a 200 MB
 * answer Node 22 kept ~400 MB resident, 40 s sampled).
 */
async function rowsOf(ns: DuckDbNamespace, ...args: Parameters<DuckDbNamespace['rows']>) {
  const rows = await ns.rows(...args);
  if (rows.kind === 'too-large') memoryReturn.ended(rows.bytes ?? 0);
  return rows;
}

async function answer(message: QueryMessage, stop: QueryStop): Promise<QueryAnswer> {
  if (pending > 0) await catalogs;
  const ns = namespace ?? (await ready);
  const { sql, params, maxRows, maxBytes, shape, pins } = message.request;
  const route: QueryRoute = ns.knownRoute(sql, shape) ?? (await ns.route(sql, shape));
  const shared = route.engine === 'duckdb' ? route.statement?.shared === true : true;
  if (route.engine === 'duckdb' && message.announce === true) {
    post({ type: 'routed', id: message.id, datasets: route.datasets });
  }
  if (route.engine === 'sqlite') {
    const { datasets, duckdbError } = route;
    return { kind: 'reroute', datasets, shared, ...(duckdbError === undefined ? {} : { duckdbError }) };
  }
  let sent = 0;
  const control = { signal: stop, maxRows, maxBytes, ...(pins === undefined ? {} : { pins }) };
  const { credits } = message;
  const bound = message.request.inline ?? 0;
  if (credits === undefined && bound > 0) {
    const rows = await rowsOf(ns, sql, params, route, {
      ...control,
      maxBytes: maxBytes > 0 && maxBytes <= bound ? maxBytes : bound,
    });
    const answered = inlineRows(rows, bound, maxBytes, shared);
    if (answered !== undefined) return answered;
    const inline = new InlineResult(bound);
    const sink: BatchSink = {
      schema: (schema, read) => inline.schema(schema, read),
      built: async (batch) => inline.built(batch),
    };
    const outcome = await ns
      .batches(sql, params, route, sink, { ...control, batchBytes: bound })
      .catch((error: unknown) => ({ error }));
    return inline.answer(outcome, shared);
  }
  if (credits === undefined) return rowsOf(ns, sql, params, route, control);
  const out = new SchemaWithFirstBatch((ipc, first, rows) => {
    const transfer = [ipc.buffer as ArrayBuffer];
    if (first === undefined) post({ type: 'batch', id: message.id, ipc, rows }, transfer);
    else post({ type: 'schema', id: message.id, ipc, ...first }, transfer);
  });
  const sink: BatchSink = {
    schema: (schema, read) => out.schema(schema, read),
    batch: async (ipc, rows) => {
      await takeCredit(credits, stop);
      if (stop.aborted) throw stop.reason;
      sent += out.batch(ipc, rows);
    },
  };
  try {
    const outcome = await ns.batches(sql, params, route, sink, {
      ...control,
      ...(message.batchRows === undefined ? {} : { batchRows: message.batchRows }),
      ...(message.request.parameterTypes === true ? { parameterTypes: true } : {}),
    });
    return { ...outcome, shared };
  } finally {
    // Before the answer: a result with no batch (or failed before its first) still has its schema.
    out.flush();
    // The batches were built in this thread's heap: a large answer's garbage is this heap's too.
    memoryReturn.ended(sent);
  }
}

function run(message: QueryMessage): void {
  const stop = new QueryStop();
  running.set(message.id, stop);
  const answered = answer(message, stop).then(
    (result) => {
      running.delete(message.id);
      post({ type: 'answer', id: message.id, answer: JSON.stringify(result) });
    },
    (error: unknown) => {
      running.delete(message.id);
      post({ type: 'answer', id: message.id, answer: JSON.stringify(answerOf(error)) });
    },
  );
  answering.add(answered);
  void answered.finally(() => answering.delete(answered));
}

async function close(): Promise<void> {
  closing = true;
  for (const stop of running.values()) stop.abort();
  // Closing needs only that the namespace, if there is one, is closed: one that never came up (its
  // failure was each query's answer and the log's) has nothing to close.
  const ns = await ready.catch(() => undefined);
  // The stopped queries end first: closing the namespace under one still being parsed or prepared
  // (a query sent while the worker started) aborted the process ('terminate called after throwing
  // an instance of Napi::Error').
  await within(Promise.all(answering), 10_000);
  // A catalog change in flight finishes first: closing an instance under DDL would not return.
  await catalogs;
  await ns?.close();
  post({ type: 'closed' });
}

/** Appends `step` to the chain of catalog versions, counted as pending: a query sent after it waits for it. */
function chain(step: () => Promise<void>, failed: (error: unknown) => void): void {
  pending++;
  catalogs = catalogs
    .then(step)
    .then(() => undefined, failed)
    .finally(() => {
      pending--;
    });
}

function applyCatalog(catalog: NamespaceCatalog): void {
  newest = catalog;
  chain(
    async () => {
      const next = newest;
      newest = undefined;
      if (next !== undefined && !closing) await (await ready).setCatalog(next);
    },
    (error) => {
      // Queries keep reading the version applied before; the next version is applied in full.
      logError(
        `A DuckDB query worker could not apply catalog version ${catalog.version} (its queries read the previous version until a newer one applies)`,
        error,
      );
    },
  );
}

applyCatalog(data.catalog);

port.on('message', (message: HostToQueryWorker) => {
  switch (message.type) {
    case 'catalog':
      if (!closing) applyCatalog(message.catalog);
      break;
    case 'task-history': {
      const { history } = message;
      if (!closing)
        chain(
          async () => (await ready).setTaskHistory(history),
          () => undefined,
        );
      break;
    }
    case 'query':
      run(message);
      break;
    case 'cancel':
      running.get(message.id)?.abort();
      break;
    case 'close':
      void close();
      break;
  }
});

/**
 * An uncaught error ends the worker (the host starts another), but only once DuckDB runs nothing
 * on its behalf: ending a thread under native work aborts the whole process. The error goes to the
 * host's log first, with its cause.
 */
let crashing = false;
async function crash(error: unknown): Promise<void> {
  logError('A DuckDB query worker failed with an uncaught error and ends', error);
  if (crashing) return;
  crashing = true;
  for (const stop of running.values()) stop.abort();
  const ns = await ready.catch(() => undefined);
  // A catalog version being applied (an ATTACH running in DuckDB) ends first: exiting under it
  // aborts the whole process (a C++ exception thrown where nothing catches it).
  await within(
    catalogs.then(
      () => undefined,
      () => undefined,
    ),
    10_000,
  );
  await within(ns?.cancelAll() ?? Promise.resolve(), 10_000);
  process.exit(1);
}
process.on('uncaughtException', (error) => void crash(error));
process.on('unhandledRejection', (reason) => void crash(reason));
