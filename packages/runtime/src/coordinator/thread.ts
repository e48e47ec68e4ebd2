/**
 * The coordinator thread: owns the dataset threads and their supervision (a dead dataset thread is
 * restarted with backoff and bootstraps again from its live file), one object store and shared
 * metadata reader per location, the notification consumer, and the snapshot pool, whose tasks it
 * runs for the dataset threads. It never runs queries: each dataset thread gets its own
 * MessagePort to the host.
 */
import {
  isMainThread,
  MessageChannel,
  parentPort,
  resourceLimits,
  type TransferListItem,
  Worker,
  workerData,
} from 'node:worker_threads';
import type { DatasetConfig } from '@ferry/core/base';
import { getDataset, OutsideLocationError, resolveSnapshotKey, serializeError } from '@ferry/core/base';
import { levelWanted } from '@ferry/core/common';
import type { SnapshotInfo, SnapshotListing } from '../api.js';
import type { LogRecord } from '../common/logging.js';
import type {
  CoordinatorToDataset,
  CoordinatorToHost,
  CoordinatorWorkerData,
  DatasetToCoordinator,
  DatasetWorkerData,
  HostToCoordinator,
  SnapshotTask,
} from '../common/protocol.js';
import { RpcClient, respond } from '../common/rpc.js';
import { LiveStatus } from '../common/shared-slots.js';
import { storeFor, storeKey } from '../common/stores.js';
import { Supervisor } from '../common/supervisor.js';
import type { CoordinatorTestRequest, ThreadYoungGeneration } from '../common/test-hooks.js';
import { checkBuildId, threadExecArgv, threadFile } from '../common/thread-files.js';
import { youngGenerationOf } from '../common/thread-limits.js';
import { within } from '../common/within.js';
import { LocationMetadataReader } from './metadata-reader.js';
import type { NotificationConsumer } from './notification-consumer.js';
import { ParkedChecks } from './parked-checks.js';
import { SnapshotPool } from './snapshot-pool.js';

if (isMainThread || parentPort === null) {
  throw new Error(
    'coordinator/thread.js is the entry of the coordinator thread; start it with createRuntime().',
  );
}

const port = parentPort;
const data = workerData as CoordinatorWorkerData;
checkBuildId(data.buildId, import.meta.url);
const datasetThread = threadFile('dataset/thread');
/**
 * Datasets of one process poll on one grid, so shared locations are read once per tick; the grid's
 * phase is random per process, so replicas do not all poll the store at the same instants.
 */
const pollPhaseMs = Math.floor(Math.random() * 86_400_000);

function post(message: CoordinatorToHost, transfer: TransferListItem[] = []): void {
  port.postMessage(message, transfer);
}

function log(
  level: LogRecord['level'],
  message: string,
  dataset?: string,
  fields?: LogRecord['fields'],
): void {
  if (levelWanted(level, data.logLevel)) {
    post({ type: 'log', record: { level, message, component: 'coordinator', dataset, fields } });
  }
}

/** Each location's shared metadata reader and the checks of its parked datasets, by store key. */
const locations = new Map<string, SharedLocation>();
const live = new LiveStatus(data.liveStatus);
const pool = new SnapshotPool(data);

interface SharedLocation {
  readonly reader: LocationMetadataReader;
  readonly parked: ParkedChecks;
}

function locationOf(dataset: DatasetConfig): SharedLocation {
  const key = storeKey(dataset);
  let location = locations.get(key);
  if (location === undefined) {
    const sharing = data.datasets.filter((d) => storeKey(d) === key);
    const fallingBack = new Set(
      sharing.filter((d) => d.bootstrapOnFailure === 'fallback').map((d) => d.name),
    );
    const reader = new LocationMetadataReader(storeFor(dataset), {
      windowMs: Math.min(data.metadataWindowMs, ...sharing.map((d) => d.refreshCheckIntervalMs / 2)),
      keepHistory: (name) => fallingBack.has(name),
    });
    location = { reader, parked: new ParkedChecks({ read: () => reader.document(), live }) };
    locations.set(key, location);
  }
  return location;
}

/**
 * At most `datasetLoadParallelism` datasets bootstrap at once (Spice's
 * `runtime.dataset_load_parallelism`): a dataset thread starts once it holds a permit and gives it
 * back when its machine first leaves `bootstrapping` (it serves, or waits for a first snapshot), or
 * when it exits. The others stay `starting` meanwhile; each reports ready on its own.
 */
let freePermits = Math.max(1, data.datasetLoadParallelism);
const waitingForPermit: (() => void)[] = [];

/** Resolves with a bootstrap permit: the function that gives it back (idempotent). */
async function bootstrapPermit(): Promise<() => void> {
  if (freePermits > 0) freePermits--;
  else await new Promise<void>((resolve) => waitingForPermit.push(resolve));
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    const next = waitingForPermit.shift();
    if (next === undefined) freePermits++;
    else next();
  };
}

/** One supervised dataset thread. */
class DatasetSlot {
  readonly files: { readonly livePath: string; readonly generationDir: string };
  /** Its location's shared reader, and where its checks are made while it is parked. */
  readonly location: SharedLocation;
  worker: Worker | undefined;
  rpc: RpcClient<{ type: 'stop' }> | undefined;
  incarnation = 0;
  readonly supervisor = new Supervisor({
    delaysMs: data.restartBackoffMs,
    restart: () => void this.startWhenPermitted(),
  });
  stopping = false;
  exited: Promise<void> = Promise.resolve();
  /**
   * The pool tasks its threads started that have not ended. A thread that dies leaves its own
   * running: a load that has begun its commit finishes it, and a restore, a prune or a request to
   * the store cannot be cancelled. The next thread starts once they have ended, so two threads of
   * the dataset never work on its live file at once.
   */
  readonly tasks = new Set<Promise<unknown>>();

  /** `index`: the dataset's place in the host's `LiveStatus`. */
  constructor(
    readonly config: DatasetConfig,
    readonly index: number,
  ) {
    const files = data.files[config.name];
    if (files === undefined) throw new Error(`The host gave no files for dataset '${config.name}'.`);
    this.files = files;
    this.location = locationOf(config);
  }

  /** Gives the bootstrap permit back (see {@link bootstrapPermit}). */
  release: () => void = () => undefined;

  /** Starts the thread once the tasks of the one before it have ended and a bootstrap permit is free. */
  async startWhenPermitted(): Promise<void> {
    await Promise.allSettled(this.tasks);
    const release = await bootstrapPermit();
    if (this.stopping) {
      release();
      return;
    }
    this.release = release;
    this.start();
  }

  start(): void {
    const channel = new MessageChannel();
    const incarnation = data.incarnationBase + ++this.incarnation;
    const threadData: DatasetWorkerData = {
      dataset: this.config,
      ...this.files,
      hostPort: channel.port2,
      buildId: data.buildId,
      pollPhaseMs,
      logLevel: data.logLevel,
      live: { buffer: data.liveStatus, slot: this.index, incarnation },
    };
    const worker = new Worker(datasetThread, {
      workerData: threadData,
      ...threadExecArgv(),
      transferList: [channel.port2],
      resourceLimits: data.datasetResourceLimits,
    });
    this.worker = worker;
    this.supervisor.started();
    const rpc = new RpcClient<{ type: 'stop' }>(worker, `Dataset thread of '${this.config.name}'`);
    this.rpc = rpc;
    let lastError: unknown;
    worker.on('message', (message: DatasetToCoordinator) => {
      if (rpc.handle(message)) return;
      if (message.type === 'read-metadata') {
        respond(worker, message.id, () =>
          this.location.reader.readFor(this.config.name, message.ifNoneMatch, message.fresh),
        );
      } else if (message.type === 'bootstrapped') {
        this.release();
      } else if (message.type === 'park') {
        this.location.parked.park(this.config.name, {
          ...message,
          intervalMs: this.config.refreshCheckIntervalMs,
          slot: this.index,
          wake: (token) => worker.postMessage({ type: 'poll.due', token } satisfies CoordinatorToDataset),
        });
      } else if (message.type === 'snapshot-task') {
        respond(worker, message.id, () => this.run(message.task));
      }
    });
    worker.on('error', (error) => {
      lastError = error;
    });
    this.exited = new Promise((resolve) => {
      worker.once('exit', (exitCode) => {
        this.location.parked.forget(this.config.name);
        rpc.close('exited');
        this.release();
        this.worker = undefined;
        if (!this.stopping) {
          this.supervisor.died(({ delayMs }) => {
            const name = this.config.name;
            const reason = lastError instanceof Error ? lastError.message : `exit code ${exitCode}`;
            const running = this.tasks.size;
            const after =
              running === 0 ? '' : `, once the snapshot tasks it started have ended (${running} running)`;
            log(
              'error',
              `Dataset thread of '${name}' died (${reason}); restarting it in ${delayMs} ms${after}`,
              name,
              { exitCode },
            );
            post({
              type: 'dataset-exited',
              dataset: name,
              exitCode,
              ...(lastError === undefined ? {} : { error: serializeError(lastError) }),
            });
          });
        }
        resolve();
      });
    });
    post({ type: 'dataset-started', dataset: this.config.name, port: channel.port1, incarnation }, [
      channel.port1,
    ]);
  }

  /** Runs a task of its thread in the snapshot pool, counted in {@link tasks} until it ends. */
  run(task: SnapshotTask): Promise<unknown> {
    const running = pool.run(task);
    this.tasks.add(running);
    const ended = (): void => void this.tasks.delete(running);
    running.then(ended, ended);
    return running;
  }

  announce(snapshotId: number): void {
    const reply = this.location.reader.lastReadFor(this.config.name);
    this.worker?.postMessage({ type: 'announce', snapshotId, reply } satisfies CoordinatorToDataset);
  }

  async stop(timeoutMs: number): Promise<void> {
    this.stopping = true;
    this.supervisor.close();
    this.location.parked.forget(this.config.name);
    const worker = this.worker;
    const rpc = this.rpc;
    if (worker === undefined || rpc === undefined) return;
    // A thread that cannot answer (it failed or is exiting) is terminated below all the same.
    const outcome = await within(rpc.request<void>({ type: 'stop' }), timeoutMs);
    if (outcome === 'timeout') {
      log(
        'warn',
        `Dataset thread of '${this.config.name}' did not stop within ${timeoutMs} ms; terminating it`,
        this.config.name,
      );
    }
    await worker.terminate();
    await this.exited;
  }
}

const slots = new Map<string, DatasetSlot>();
for (const [index, config] of data.datasets.entries()) slots.set(config.name, new DatasetSlot(config, index));

// Loaded only for a spicepod with notifications: it brings the SQS and SNS clients.
const consumer: NotificationConsumer | undefined =
  data.config.notifications === undefined
    ? undefined
    : new (await import('./notification-consumer.js')).NotificationConsumer({
        notifications: data.config.notifications,
        datasets: data.datasets,
        readerFor: (dataset) => locationOf(dataset).reader,
        announce: (dataset, snapshotId) => slots.get(dataset)?.announce(snapshotId),
        log: (level, message, fields) => log(level, message, undefined, fields),
        report: (event) => post({ type: 'notification-stats', ...event }),
        options: data.notificationOptions,
      });

/** HEADs in flight at once while listing a dataset's snapshots. */
const LISTING_HEADS = 8;

/**
 * A dataset's snapshots for `runtime.snapshots()`: a read of metadata.json keeping the dataset's
 * whole history (the shared reads keep only current entries), then a HEAD of each listed object
 * through the same store.
 */
async function listSnapshots(name: string, limit: number | undefined): Promise<SnapshotListing> {
  const slot = slots.get(name);
  if (slot === undefined) throw new Error(`The coordinator runs no dataset named '${name}'.`);
  const { reader } = slot.location;
  const metadata = await reader.history(name);
  const dataset = metadata === undefined ? undefined : getDataset(metadata, name);
  const location = metadata?.location ?? slot.config.location;
  const entries = dataset?.snapshots ?? [];
  const listed = limit === undefined ? entries : entries.slice(Math.max(0, entries.length - limit));
  const snapshots: SnapshotInfo[] = [];
  for (let start = 0; start < listed.length; start += LISTING_HEADS) {
    const batch = listed.slice(start, start + LISTING_HEADS).map(async (entry): Promise<SnapshotInfo> => {
      let storedSize: number | null = null;
      try {
        storedSize = (await reader.store.head(resolveSnapshotKey(location, entry.uri)))?.size ?? null;
      } catch (error) {
        // A URI outside the location cannot be checked (and is refused when bootstrapping).
        if (!(error instanceof OutsideLocationError)) throw error;
      }
      return {
        ...entry,
        isCurrent: entry.snapshotId === dataset?.currentSnapshotId,
        storedSize,
        verified: storedSize === entry.size,
        // The host marks the ones it holds (it knows its generations; this thread does not).
        held: false,
      };
    });
    snapshots.push(...(await Promise.all(batch)));
  }
  return {
    dataset: name,
    location,
    lastUpdatedMs: metadata?.lastUpdatedMs ?? null,
    ...(dataset?.engine === undefined ? {} : { engine: dataset.engine }),
    ...(dataset?.currentSnapshotId === undefined ? {} : { currentSnapshotId: dataset.currentSnapshotId }),
    snapshots,
  };
}

let closing: Promise<void> | undefined;

async function close(): Promise<void> {
  await consumer?.close(data.stopTimeoutMs);
  // The dataset threads discard their temporary files through the pool: it ends after them.
  await Promise.all([...slots.values()].map((slot) => slot.stop(data.stopTimeoutMs)));
  await pool.close();
  for (const { parked } of locations.values()) parked.close();
  await Promise.all([...locations.values()].map(({ reader }) => reader.store.close()));
}

/** The young generation of this thread, of each dataset thread and of each snapshot worker (a test hook). */
function threadYoungGenerations(): ThreadYoungGeneration[] {
  const threads: ThreadYoungGeneration[] = [
    { thread: 'coordinator', maxYoungGenerationSizeMb: resourceLimits.maxYoungGenerationSizeMb ?? 0 },
  ];
  for (const [name, { worker }] of slots) {
    if (worker !== undefined)
      threads.push({ thread: `dataset ${name}`, maxYoungGenerationSizeMb: youngGenerationOf(worker) });
  }
  for (const young of pool.youngGenerations())
    threads.push({ thread: 'snapshot worker', maxYoungGenerationSizeMb: young });
  return threads;
}

port.on('message', (message: HostToCoordinator | CoordinatorTestRequest) => {
  if (message.type === 'test-thread-young-generations') {
    respond(port, message.id, threadYoungGenerations);
  } else if (message.type === 'test-metadata-gets') {
    respond(port, message.id, () =>
      [...locations.values()].reduce((sum, { reader }) => sum + reader.gets, 0),
    );
  } else if (message.type === 'test-kill-dataset') {
    respond(port, message.id, async () => {
      await slots.get(message.dataset)?.worker?.terminate();
    });
  } else if (message.type === 'close') {
    closing ??= close();
    respond(port, message.id, () => closing);
  } else if (message.type === 'snapshots') {
    respond(port, message.id, () => listSnapshots(message.dataset, message.limit));
  }
});

for (const slot of slots.values()) void slot.startWhenPermitted();
consumer?.start();
