/**
 * A dataset thread: hosts one dataset's machine with the real implementations of its actors — the
 * live file restored from a previous run, metadata reads shared through the coordinator, validated
 * downloads and atomic swaps — and serves the dataset's queries on its own MessagePort to the host.
 * DuckDB queries run here, concurrently, on the current generation of the engine; SQLite reads run in
 * the host's read pool, told about each new file generation by this thread.
 */
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import type {
  DatasetEmitted,
  DownloadedSnapshot,
  DownloadSnapshotInput,
  EngineName,
  LoadedSnapshot,
  PreparedSnapshot,
  ReadMetadataOutput,
  VerifySnapshotInput,
} from '@ferry/core';
import {
  type DatasetSnapshot,
  datasetMachine,
  datasetStatus,
  fileFormatOf,
  type ReadMetadataInput,
  type RestoreLocalInput,
  resolveSnapshotKey,
  type SwapSnapshotInput,
  serializeError,
} from '@ferry/core';
import {
  commitSnapshot,
  type DownloadedSnapshot as DownloadedFile,
  discardPrepared,
  downloadSnapshot,
  type PreparedSnapshot as PreparedFile,
  restoreLocal,
  ServingEngine,
  type SnapshotFilesOptions,
  verifySnapshot,
} from '@ferry/snapshots';
import { createActor, fromPromise } from 'xstate';
import { QueryTimeoutError, ResultTooLargeError } from './errors.js';
import { toInspectionEvent } from './inspection.js';
import type { LogRecord } from './logging.js';
import type { MetadataReply } from './metadata-reader.js';
import type {
  CoordinatorToDataset,
  DatasetToCoordinator,
  DatasetToHost,
  DatasetWorkerData,
  HostToDataset,
} from './protocol.js';
import { RpcClient, respond } from './rpc.js';
import { storeFor } from './stores.js';

if (isMainThread || parentPort === null) {
  throw new Error('dataset-thread.js is the entry of a dataset thread; it is started by the coordinator.');
}

const coordinator = parentPort;
const data = workerData as DatasetWorkerData;
const config = data.dataset;
const host = data.hostPort;
const name = config.name;

function toHost(message: DatasetToHost): void {
  host.postMessage(message);
}

function log(level: LogRecord['level'], message: string, fields?: Record<string, unknown>): void {
  toHost({
    type: 'log',
    record: {
      level,
      message,
      component: 'dataset',
      dataset: name,
      ...(fields === undefined ? {} : { fields }),
    },
  });
}

const store = storeFor(config);
const coordinatorRpc = new RpcClient<{ type: 'read-metadata'; ifNoneMatch?: string; fresh: boolean }>(
  coordinator,
  'The coordinator thread',
);

/** The engine whose file format a dataset's snapshots have, once known (configured, or from metadata). */
let engine: EngineName | undefined = config.engine;
let recordedLocation = config.location;
let serving: ServingEngine | undefined;
let generation = 0;
/** Temporary files the machine holds tokens for: downloaded (not yet verified), and verified. */
const downloaded = new Map<string, DownloadedFile>();
const prepared = new Map<string, PreparedFile>();

function filesFor(kind: EngineName): SnapshotFilesOptions {
  return { dataset: name, engine: fileFormatOf(kind), table: name, livePath: data.livePath, store };
}

/** Opens (or reopens, after a swap) the engine on the live file and tells the host where to read. */
async function serveLiveFile(kind: EngineName): Promise<void> {
  generation++;
  if (fileFormatOf(kind) === 'sqlite') {
    toHost({ type: 'sqlite-generation', current: { generation, path: data.livePath, table: name } });
    return;
  }
  if (serving === undefined) {
    serving = await ServingEngine.open({
      dataset: name,
      engine: 'duckdb',
      table: name,
      livePath: data.livePath,
      drainTimeoutMs: 5_000,
    });
  } else {
    await serving.swap();
  }
}

let rootSessionId: string | undefined;
/**
 * Inspection events cost a third of an idle poll's CPU: they are built only while someone inspects
 * (the host says so; on until it does, so an early inspector sees the machine start).
 */
let inspecting = true;

/**
 * The machine's invoked work still running. Stopping the machine does not end it (a download sees
 * its abort signal; a schema check or an engine being opened just finishes), and the thread must
 * not end while DuckDB works on its behalf: that aborts the whole process. `stop` and `crash`
 * wait for it.
 */
const running = new Set<Promise<unknown>>();
function tracked<T>(work: Promise<T>): Promise<T> {
  running.add(work);
  void work.then(
    () => running.delete(work),
    () => running.delete(work),
  );
  return work;
}

/** Serve the live file left by an earlier run, if it matches its manifest. */
async function restoreLiveFile(): Promise<LoadedSnapshot | null> {
  if (engine === undefined) return null;
  const local = await restoreLocal(filesFor(engine));
  if (local === null) return null;
  try {
    await serveLiveFile(engine);
  } catch (error) {
    log('warn', `The live file of dataset '${name}' could not be opened; bootstrapping from the store`, {
      error: (error as Error).message,
    });
    return null;
  }
  log(
    'info',
    `Dataset '${name}' serves snapshot ${local.snapshotId} from its live file while the store is consulted`,
  );
  return {
    snapshotId: local.snapshotId,
    timestampMs: local.timestampMs,
    checksum: local.checksum,
    schema: local.schema,
    schemaId: local.schemaId,
  };
}

function kindOf(input: { readonly engine: string | undefined }): EngineName {
  return (input.engine as EngineName | undefined) ?? engine ?? 'duckdb';
}

/** Download a snapshot into a temporary file; the machine has it verified next. */
async function downloadFile(input: DownloadSnapshotInput, signal: AbortSignal): Promise<DownloadedSnapshot> {
  const started = performance.now();
  const file = await downloadSnapshot(
    filesFor(kindOf(input)),
    { entry: input.entry, key: resolveSnapshotKey(recordedLocation, input.entry.uri) },
    { signal },
  );
  toHost({
    type: 'downloaded',
    bytes: input.entry.size,
    seconds: (performance.now() - started) / 1000,
    snapshotId: input.entry.snapshotId,
    checksum: input.entry.checksum,
  });
  const token = `${input.entry.snapshotId}:${file.tempPath}`;
  downloaded.set(token, file);
  return { snapshotId: input.entry.snapshotId, token };
}

/** Verify a downloaded file (checksum, real schema); the machine swaps it in later. */
async function verifyFile(input: VerifySnapshotInput, signal: AbortSignal): Promise<PreparedSnapshot> {
  const file = downloaded.get(input.downloaded.token);
  if (file === undefined)
    throw new Error(`Downloaded snapshot ${input.downloaded.token} of dataset '${name}' is gone.`);
  downloaded.delete(input.downloaded.token);
  const kind = kindOf(input);
  const verified = await verifySnapshot(
    filesFor(kind),
    file,
    { schemaId: input.schemaId, schema: input.schema },
    { signal },
  );
  prepared.set(input.downloaded.token, verified);
  engine = kind;
  return { snapshotId: input.entry.snapshotId, token: input.downloaded.token };
}

/** Commit a prepared snapshot over the live file and serve it. */
async function swapIn(input: SwapSnapshotInput): Promise<void> {
  const file = prepared.get(input.prepared.token);
  if (file === undefined)
    throw new Error(`Prepared snapshot ${input.prepared.token} of dataset '${name}' is gone.`);
  prepared.delete(input.prepared.token);
  const kind = engine ?? 'duckdb';
  await commitSnapshot(filesFor(kind), file);
  await serveLiveFile(kind);
}

const machine = datasetMachine.provide({
  actors: {
    restoreLocal: fromPromise<LoadedSnapshot | null, RestoreLocalInput>(() => tracked(restoreLiveFile())),
    readMetadata: fromPromise<ReadMetadataOutput, ReadMetadataInput>(async ({ input }) => {
      const reply = await coordinatorRpc.request<MetadataReply>({
        type: 'read-metadata',
        // An operator's "poll now" wants the store as it is now, not a read shared moments ago.
        fresh: input.trigger === 'command',
        ...(input.ifNoneMatch === undefined ? {} : { ifNoneMatch: input.ifNoneMatch }),
      });
      if (reply.kind === 'read' && reply.recordedLocation !== undefined)
        recordedLocation = reply.recordedLocation;
      return reply;
    }),
    downloadSnapshot: fromPromise<DownloadedSnapshot, DownloadSnapshotInput>(({ input, signal }) =>
      tracked(downloadFile(input, signal)),
    ),
    verifySnapshot: fromPromise<PreparedSnapshot, VerifySnapshotInput>(({ input, signal }) =>
      tracked(verifyFile(input, signal)),
    ),
    swapSnapshot: fromPromise<void, SwapSnapshotInput>(({ input }) => tracked(swapIn(input))),
  },
  actions: {
    log: (_args, entry) => log(entry.level, entry.message, { ...entry.fields }),
  },
});

const actor = createActor(machine, {
  input: {
    name,
    ...(config.engine === undefined ? {} : { engine: config.engine }),
    refreshCheckIntervalMs: config.refreshCheckIntervalMs,
    bootstrapOnFailure: config.bootstrapOnFailure,
    snapshotsMode: config.snapshotsMode,
    location: config.location,
    pollPhaseMs: data.pollPhaseMs,
  },
  inspect: (event) => {
    // The machine's own actor is the first one inspected; invoked actors come later.
    rootSessionId ??= event.actorRef.sessionId;
    if (!inspecting) return;
    const plain = toInspectionEvent(name, event, rootSessionId, Date.now());
    if (plain !== undefined) toHost({ type: 'inspect', event: plain });
  },
});

/*
 * Emitted events (swap, poll, error) leave with the status of the snapshot they belong to, so the
 * host never announces a swap while its status still shows the previous snapshot. XState emits
 * during the transition and notifies observers after it: hold the events until then.
 */
let lastStatus = '';
const emitted: DatasetEmitted[] = [];
actor.on('*', (event) => {
  emitted.push(event);
});
actor.subscribe((snapshot: DatasetSnapshot) => {
  const status = datasetStatus(snapshot);
  const text = JSON.stringify(status);
  const events = emitted.splice(0);
  if (text !== lastStatus || events.length > 0) {
    lastStatus = text;
    toHost({ type: 'status-changed', status, emitted: events });
  }
});

// ---------------------------------------------------------------------------------------------
// Queries and commands from the host.
// ---------------------------------------------------------------------------------------------

async function runQuery(sql: string, params: readonly import('@ferry/core').JsonValue[]) {
  if (serving === undefined) {
    throw new Error(`Dataset '${name}' has no DuckDB engine open; its queries run in the SQLite read pool.`);
  }
  const timeoutMs = data.queryTimeoutMs;
  // The timeout interrupts the query in DuckDB (so it stops using a connection and CPU), and the
  // row cap stops reading a result after one row too many (so it is never held whole).
  const controller = new AbortController();
  const query = serving.query(sql, params, {
    signal: controller.signal,
    ...(data.maxResultRows > 0 ? { maxRows: data.maxResultRows } : {}),
  });
  let timer: NodeJS.Timeout | undefined;
  const result =
    timeoutMs > 0
      ? await Promise.race([
          query,
          new Promise<never>((_resolve, reject) => {
            timer = setTimeout(() => {
              const timeout = new QueryTimeoutError(name, timeoutMs);
              controller.abort(timeout);
              reject(timeout);
            }, timeoutMs);
          }),
        ]).finally(() => clearTimeout(timer))
      : await query;
  if (data.maxResultRows > 0 && result.rows.length > data.maxResultRows) {
    throw new ResultTooLargeError(name, data.maxResultRows);
  }
  return result;
}

host.on('message', (message: HostToDataset) => {
  switch (message.type) {
    case 'inspecting':
      inspecting = message.on;
      break;
    case 'query':
      respond(host, message.id, () => runQuery(message.sql, message.params ?? []), serializeError);
      break;
    case 'status':
      respond(host, message.id, () => datasetStatus(actor.getSnapshot()), serializeError);
      break;
    case 'command':
      respond(
        host,
        message.id,
        () => {
          actor.send({ type: message.command });
        },
        serializeError,
      );
      break;
  }
});

// ---------------------------------------------------------------------------------------------
// Messages from the coordinator.
// ---------------------------------------------------------------------------------------------

async function stop(): Promise<void> {
  actor.send({ type: 'stop' });
  actor.stop();
  await Promise.allSettled(running);
  for (const file of [...downloaded.values(), ...prepared.values()]) await discardPrepared(file);
  downloaded.clear();
  prepared.clear();
  await serving?.close();
  await store.close();
  coordinatorRpc.close('stopped');
}

/**
 * An uncaught error ends the thread — the coordinator restarts it and it bootstraps again from its
 * live file — but first the queries DuckDB is executing are interrupted: tearing a thread down while
 * native code works on its behalf would abort the whole process. Pending queries are not answered;
 * the host rejects them with ERR_THREAD_EXITED when the thread exits.
 */
let crashing = false;
async function crash(error: unknown): Promise<void> {
  if (crashing) return;
  crashing = true;
  log('error', `Dataset thread of '${name}' hit an uncaught error; ending it so that it is restarted`, {
    error: error instanceof Error ? error.message : String(error),
  });
  host.close();
  const closed = (async () => {
    await serving?.cancelAll();
    await Promise.allSettled(running);
    await serving?.close();
  })();
  await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  process.exit(1);
}
process.on('uncaughtException', (error) => void crash(error));
process.on('unhandledRejection', (error) => void crash(error));

coordinator.on('message', (message: CoordinatorToDataset | DatasetToCoordinator) => {
  if (coordinatorRpc.handle(message)) return;
  if (message.type === 'crash') {
    setImmediate(() => {
      throw new Error('crash drill: terminateDatasetThread() was called');
    });
  } else if (message.type === 'announce') {
    actor.send({ type: 'snapshot.announced', snapshotId: message.snapshotId });
  } else if (message.type === 'stop') {
    respond(
      coordinator,
      message.id,
      async () => {
        await stop();
        // Let the response leave, then end the thread's handles so it exits on its own.
        setImmediate(() => {
          host.close();
          coordinator.close();
        });
      },
      serializeError,
    );
  }
});

actor.start();
