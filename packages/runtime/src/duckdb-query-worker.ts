/**
 * A DuckDB query worker: one {@link DuckDbNamespace} (every DuckDB dataset attached at its current
 * generation) serving many queries at once — DuckDB executes them on its own threads, this thread
 * only prepares, binds and converts results. The host pushes every catalog version; a query waits
 * for the versions that arrived before it. Cancelling a query interrupts it in DuckDB (the
 * connection is free at once); a stream sends a batch only while the host has credit for it.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import {
  type BatchSink,
  DuckDbNamespace,
  type DuckDbNamespaceOptions,
  type NamespaceCatalog,
} from '@ferry/engines/namespaces';
import {
  answerOf,
  type HostToQueryWorker,
  type QueryAnswer,
  type QueryWorkerToHost,
  STREAM_WINDOW,
  transferable,
} from './query-protocol.js';

if (isMainThread || parentPort === null) {
  throw new Error('duckdb-query-worker.js is the entry of a DuckDB query worker; the runtime starts it.');
}

export interface DuckDbWorkerData {
  readonly namespace: DuckDbNamespaceOptions;
  readonly catalog: NamespaceCatalog;
}

const port = parentPort;
const data = workerData as DuckDbWorkerData;
const ready = DuckDbNamespace.create(data.namespace).then(async (namespace) => {
  await namespace.setCatalog(data.catalog);
  return namespace;
});
/**
 * Every catalog version received so far, applied in order — coalesced: a burst of versions (many
 * datasets swapping at once) is applied as the newest one.
 */
let catalogs: Promise<unknown> = ready;
let newest: NamespaceCatalog | undefined;
let closing = false;

interface Running {
  readonly controller: AbortController;
  credits: number;
  wake: (() => void) | undefined;
}

const running = new Map<number, Running>();

function post(message: QueryWorkerToHost, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

async function run(
  message: Extract<HostToQueryWorker, { type: 'query' }>,
  catalogsBefore: Promise<unknown>,
): Promise<void> {
  const state: Running = { controller: new AbortController(), credits: STREAM_WINDOW, wake: undefined };
  running.set(message.id, state);
  const { signal } = state.controller;
  signal.addEventListener('abort', () => state.wake?.(), { once: true });
  let answer: QueryAnswer;
  try {
    const namespace = await ready;
    await catalogsBefore;
    const { sql, params, maxRows, maxBytes } = message.request;
    const route = await namespace.route(sql);
    if (route.engine === 'duckdb' && message.announce === true) {
      post({ type: 'routed', id: message.id, datasets: route.datasets });
    }
    if (route.engine === 'sqlite') {
      answer = { kind: 'reroute', datasets: route.datasets };
    } else if (message.mode === 'rows') {
      answer = await namespace.rows(sql, params, route, { signal, maxRows, maxBytes });
    } else {
      const sink: BatchSink = {
        schema: (ipc, read) => {
          const bytes = transferable(ipc);
          post({ type: 'schema', id: message.id, ipc: bytes, read }, [bytes.buffer as ArrayBuffer]);
        },
        batch: async (ipc, rows) => {
          while (state.credits === 0) {
            signal.throwIfAborted();
            await new Promise<void>((resolve) => {
              state.wake = resolve;
            });
            state.wake = undefined;
          }
          signal.throwIfAborted();
          state.credits--;
          const bytes = transferable(ipc);
          post({ type: 'batch', id: message.id, ipc: bytes, rows }, [bytes.buffer as ArrayBuffer]);
        },
      };
      answer = await namespace.batches(sql, params, route, sink, {
        signal,
        maxRows,
        maxBytes,
        ...(message.batchRows === undefined ? {} : { batchRows: message.batchRows }),
      });
    }
  } catch (error) {
    answer = answerOf(error);
  } finally {
    running.delete(message.id);
  }
  post({ type: 'answer', id: message.id, answer });
}

async function close(id: number): Promise<void> {
  closing = true;
  for (const state of running.values()) state.controller.abort();
  const namespace = await ready.catch(() => undefined);
  // A catalog change in flight finishes first: closing an instance under DDL would not return.
  await catalogs;
  await namespace?.close();
  post({ type: 'closed', id });
}

port.on('message', (message: HostToQueryWorker) => {
  switch (message.type) {
    case 'catalog':
      if (closing) break;
      newest = message.catalog;
      catalogs = catalogs
        .then(async () => {
          const catalog = newest;
          newest = undefined;
          if (catalog !== undefined && !closing) await (await ready).setCatalog(catalog);
        })
        .catch(() => undefined);
      break;
    case 'task-history': {
      if (closing) break;
      const { history } = message;
      // In the chain of catalog versions: a query sent after it waits for it.
      catalogs = catalogs.then(async () => (await ready).setTaskHistory(history)).catch(() => undefined);
      break;
    }
    case 'query':
      void run(message, catalogs);
      break;
    case 'cancel':
      running.get(message.id)?.controller.abort();
      break;
    case 'credit': {
      const state = running.get(message.id);
      if (state !== undefined) {
        state.credits++;
        state.wake?.();
      }
      break;
    }
    case 'close':
      void close(message.id);
      break;
  }
});

/**
 * An uncaught error ends the worker (the host starts another), but only once DuckDB runs nothing
 * on its behalf: ending a thread under native work aborts the whole process.
 */
let crashing = false;
async function crash(): Promise<void> {
  if (crashing) return;
  crashing = true;
  for (const state of running.values()) state.controller.abort();
  const namespace = await ready.catch(() => undefined);
  await Promise.race([namespace?.cancelAll(), new Promise((resolve) => setTimeout(resolve, 10_000))]);
  process.exit(1);
}
process.on('uncaughtException', () => void crash());
process.on('unhandledRejection', () => void crash());
