/**
 * One dataset's host: its machine with the real implementations of its actors — the live file
 * restored from a previous run, metadata reads shared through the coordinator, validated downloads
 * and atomic swaps — and the dataset's commands and status on its channel to the host. Queries do
 * not run here: after each restore or swap the live file is linked as a new generation (a file
 * that never changes) and the host is told, and the host's query pools attach it.
 *
 * It talks to the world only through the two ports it is given (the coordinator's and the host's),
 * so it runs the same in a dataset thread (`dataset-thread.ts`, the ports are `parentPort` and a
 * transferred MessagePort) and in-process in a test (the ports are a MessageChannel's ends).
 */
import { performance } from 'node:perf_hooks';
import type { MessagePort } from 'node:worker_threads';
import type {
  DatasetEmitted,
  DownloadedSnapshot,
  DownloadSnapshotInput,
  EngineName,
  LoadedSnapshot,
  ObjectStore,
  PreparedSnapshot,
  ReadMetadataOutput,
  VerifySnapshotInput,
} from '@ferry/core';
import {
  type DatasetSnapshot,
  type DatasetStatus,
  datasetMachine,
  datasetStatus,
  fileFormatOf,
  type ReadMetadataInput,
  type RestoreLocalInput,
  resolveSnapshotKey,
  type SwapSnapshotInput,
  serializeError,
} from '@ferry/core';
import { openEngine } from '@ferry/engines';
import {
  commitSnapshot,
  type DownloadedSnapshot as DownloadedFile,
  discardPrepared,
  downloadSnapshot,
  GENERATIONS_KEPT,
  generationDirFor,
  type LocalSnapshot,
  linkGeneration,
  type PreparedSnapshot as PreparedFile,
  pruneGenerations,
  releasePrepared,
  restoreLocal,
  type SnapshotFilesOptions,
  verifySnapshot,
} from '@ferry/snapshots';
import {
  type Actor,
  createActor,
  fromPromise,
  type Subscription,
  type InspectionEvent as XStateInspectionEvent,
} from 'xstate';
import { toInspectionEvent } from './inspection.js';
import { levelWanted } from './log-levels.js';
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

/** The dataset's channels: to the coordinator (metadata reads, announcements, stop) and to the host. */
export interface DatasetHostPorts {
  readonly coordinator: MessagePort;
  readonly host: MessagePort;
}

export type DatasetHostData = Omit<DatasetWorkerData, 'hostPort'>;

/**
 * A status without emitted events (a check began, a command was taken) waits this long and leaves
 * only if no newer status overtook it: an unchanged poll, over in a millisecond or two, then posts
 * one status (with its poll event) instead of two. Events and answers to the host never wait.
 */
const STATUS_DELAY_MS = 50;

type MetadataRequest = { type: 'read-metadata'; ifNoneMatch?: string; fresh: boolean };

export class DatasetHost {
  readonly name: string;
  readonly #data: DatasetHostData;
  readonly #ports: DatasetHostPorts;
  readonly #store: ObjectStore;
  readonly #coordinatorRpc: RpcClient<MetadataRequest>;
  readonly #actor: Actor<typeof datasetMachine>;
  /** The engine whose file format the dataset's snapshots have, once known (configured, or from metadata). */
  #engine: EngineName | undefined;
  #recordedLocation: string;
  readonly #generationDir: string;
  /** Temporary files the machine holds tokens for: downloaded (not yet verified), and verified. */
  readonly #downloaded = new Map<string, DownloadedFile>();
  readonly #prepared = new Map<string, PreparedFile>();
  /**
   * The machine's invoked work still running. Stopping the machine does not end it (a download
   * sees its abort signal; a schema check or an engine being opened just finishes), and a thread
   * must not end while DuckDB works on its behalf: that aborts the whole process. `stop` and
   * `crash` wait for it.
   */
  readonly #running = new Set<Promise<unknown>>();
  /**
   * The inspection subscription, held only while someone inspects (the host says so; on until it
   * does, so an early inspector sees the machine start). Without a subscriber XState builds no
   * inspection events at all; with one, they cost a third of an idle poll's CPU.
   */
  #inspection: Subscription | undefined;
  /** The last status posted (as JSON), and a status without events waiting to leave. */
  #postedStatus = '';
  #postedState: DatasetStatus['state'] | undefined;
  #pendingStatus: DatasetStatus | undefined;
  #statusTimer: NodeJS.Timeout | undefined;
  #crashing = false;

  constructor(data: DatasetHostData, ports: DatasetHostPorts) {
    const config = data.dataset;
    this.name = config.name;
    this.#data = data;
    this.#ports = ports;
    this.#engine = config.engine;
    this.#recordedLocation = config.location;
    this.#generationDir = generationDirFor(data.livePath, data.dataDir, config.name);
    this.#store = storeFor(config);
    this.#coordinatorRpc = new RpcClient<MetadataRequest>(ports.coordinator, 'The coordinator thread');
    this.#actor = this.#createActor();
    this.#setInspecting(true);
    // The machine's own `@xstate.actor` event was sent while it was created, before anyone listened.
    this.#inspected({ type: '@xstate.actor', actorRef: this.#actor, rootId: this.#actor.sessionId });
    ports.host.on('message', (message: HostToDataset) => this.#onHost(message));
    ports.coordinator.on('message', (message: CoordinatorToDataset | DatasetToCoordinator) =>
      this.#onCoordinator(message),
    );
  }

  /** Starts the machine (it restores the live file, then consults the store). */
  start(): void {
    this.#actor.start();
  }

  /** Where this dataset's generation links are. */
  get generationDir(): string {
    return this.#generationDir;
  }

  #toHost(message: DatasetToHost): void {
    this.#ports.host.postMessage(message);
  }

  #log(level: LogRecord['level'], message: string, fields?: Record<string, unknown>): void {
    if (!levelWanted(level, this.#data.logLevel ?? 'debug')) return;
    this.#toHost({
      type: 'log',
      record: {
        level,
        message,
        component: 'dataset',
        dataset: this.name,
        ...(fields === undefined ? {} : { fields }),
      },
    });
  }

  #tracked<T>(work: Promise<T>): Promise<T> {
    this.#running.add(work);
    const forget = (): void => {
      this.#running.delete(work);
    };
    void work.then(forget, forget);
    return work;
  }

  #filesFor(kind: EngineName): SnapshotFilesOptions {
    return {
      dataset: this.name,
      engine: fileFormatOf(kind),
      table: this.name,
      livePath: this.#data.livePath,
      store: this.#store,
    };
  }

  #kindOf(input: { readonly engine: string | undefined }): EngineName {
    return (input.engine as EngineName | undefined) ?? this.#engine ?? 'duckdb';
  }

  // ---------------------------------------------------------------------------------------------
  // The machine's actors.
  // ---------------------------------------------------------------------------------------------

  /** Links the live file as a new generation and tells the host: queries read it from now on. */
  async #serveLiveFile(kind: EngineName, snapshot: LocalSnapshot): Promise<void> {
    const path = await linkGeneration(this.#data.livePath, this.#generationDir, snapshot.snapshotId, {
      prune: false,
    });
    this.#toHost({
      type: 'generation',
      current: { path, snapshotId: snapshot.snapshotId, engine: fileFormatOf(kind), schema: snapshot.schema },
    });
    // After the announcement, off the swap's path: unlinking an old generation of a large file frees its blocks.
    void this.#tracked(
      pruneGenerations(this.#generationDir, GENERATIONS_KEPT).catch((error: unknown) =>
        this.#log(
          'warn',
          `Old generations of dataset '${this.name}' could not be removed; retried at the next swap`,
          {
            error: (error as Error).message,
          },
        ),
      ),
    );
  }

  /** Serve the live file left by an earlier run, if it matches its manifest. */
  async #restoreLiveFile(): Promise<LoadedSnapshot | null> {
    const engine = this.#engine;
    // Links of an earlier run are stale (the pools that held them are gone with it).
    await pruneGenerations(this.#generationDir, 0);
    if (engine === undefined) return null;
    const local = await restoreLocal(this.#filesFor(engine));
    if (local === null) return null;
    try {
      // The file matches its manifest; opening it proves the engine reads it and has the table.
      await (await openEngine(engine, this.#data.livePath, { table: this.name })).close();
      await this.#serveLiveFile(engine, local);
    } catch (error) {
      this.#log(
        'warn',
        `The live file of dataset '${this.name}' could not be opened; bootstrapping from the store`,
        { error: (error as Error).message },
      );
      return null;
    }
    this.#log(
      'info',
      `Dataset '${this.name}' serves snapshot ${local.snapshotId} from its live file while the store is consulted`,
    );
    return {
      snapshotId: local.snapshotId,
      timestampMs: local.timestampMs,
      checksum: local.checksum,
      schema: local.schema,
      schemaId: local.schemaId,
    };
  }

  async #readMetadata(input: ReadMetadataInput): Promise<ReadMetadataOutput> {
    const reply = await this.#coordinatorRpc.request<MetadataReply>({
      type: 'read-metadata',
      // An operator's "poll now" wants the store as it is now, not a read shared moments ago.
      fresh: input.trigger === 'command',
      ...(input.ifNoneMatch === undefined ? {} : { ifNoneMatch: input.ifNoneMatch }),
    });
    if (reply.kind === 'read' && reply.recordedLocation !== undefined) {
      this.#recordedLocation = reply.recordedLocation;
    }
    return reply;
  }

  /** Download a snapshot into a temporary file; the machine has it verified next. */
  async #download(input: DownloadSnapshotInput, signal: AbortSignal): Promise<DownloadedSnapshot> {
    const started = performance.now();
    const file = await downloadSnapshot(
      this.#filesFor(this.#kindOf(input)),
      { entry: input.entry, key: resolveSnapshotKey(this.#recordedLocation, input.entry.uri) },
      { signal },
    );
    this.#toHost({
      type: 'downloaded',
      bytes: input.entry.size,
      seconds: (performance.now() - started) / 1000,
      snapshotId: input.entry.snapshotId,
      checksum: input.entry.checksum,
    });
    const token = `${input.entry.snapshotId}:${file.tempPath}`;
    this.#downloaded.set(token, file);
    return { snapshotId: input.entry.snapshotId, token };
  }

  /** Verify a downloaded file (checksum, real schema); the machine swaps it in later. */
  async #verify(input: VerifySnapshotInput, signal: AbortSignal): Promise<PreparedSnapshot> {
    const file = this.#downloaded.get(input.downloaded.token);
    if (file === undefined) {
      throw new Error(`Downloaded snapshot ${input.downloaded.token} of dataset '${this.name}' is gone.`);
    }
    this.#downloaded.delete(input.downloaded.token);
    const kind = this.#kindOf(input);
    const verified = await verifySnapshot(
      this.#filesFor(kind),
      file,
      { schemaId: input.schemaId, schema: input.schema },
      { signal },
    );
    this.#prepared.set(input.downloaded.token, verified);
    this.#engine = kind;
    return { snapshotId: input.entry.snapshotId, token: input.downloaded.token };
  }

  /** Commit a prepared snapshot over the live file and serve it. */
  async #swapIn(input: SwapSnapshotInput): Promise<void> {
    const file = this.#prepared.get(input.prepared.token);
    if (file === undefined) {
      throw new Error(`Prepared snapshot ${input.prepared.token} of dataset '${this.name}' is gone.`);
    }
    this.#prepared.delete(input.prepared.token);
    const kind = this.#engine ?? 'duckdb';
    try {
      await commitSnapshot(this.#filesFor(kind), file, { releaseLater: true });
      await this.#serveLiveFile(kind, file.snapshot);
    } finally {
      // The engine that checked the file closes after the swap is announced, not before.
      void this.#tracked(releasePrepared(file));
    }
  }

  #createActor(): Actor<typeof datasetMachine> {
    const config = this.#data.dataset;
    const machine = datasetMachine.provide({
      actors: {
        restoreLocal: fromPromise<LoadedSnapshot | null, RestoreLocalInput>(() =>
          this.#tracked(this.#restoreLiveFile()),
        ),
        readMetadata: fromPromise<ReadMetadataOutput, ReadMetadataInput>(({ input }) =>
          this.#readMetadata(input),
        ),
        downloadSnapshot: fromPromise<DownloadedSnapshot, DownloadSnapshotInput>(({ input, signal }) =>
          this.#tracked(this.#download(input, signal)),
        ),
        verifySnapshot: fromPromise<PreparedSnapshot, VerifySnapshotInput>(({ input, signal }) =>
          this.#tracked(this.#verify(input, signal)),
        ),
        swapSnapshot: fromPromise<void, SwapSnapshotInput>(({ input }) => this.#tracked(this.#swapIn(input))),
      },
      actions: {
        log: (_args, entry) => this.#log(entry.level, entry.message, { ...entry.fields }),
      },
    });
    const actor = createActor(machine, {
      input: {
        name: this.name,
        ...(config.engine === undefined ? {} : { engine: config.engine }),
        refreshCheckIntervalMs: config.refreshCheckIntervalMs,
        bootstrapOnFailure: config.bootstrapOnFailure,
        snapshotsMode: config.snapshotsMode,
        location: config.location,
        pollPhaseMs: this.#data.pollPhaseMs,
      },
    });
    /*
     * Emitted events (swap, poll, error) leave with the status of the snapshot they belong to, so
     * the host never announces a swap while its status still shows the previous snapshot. XState
     * emits during the transition and notifies observers after it: hold the events until then.
     */
    const emitted: DatasetEmitted[] = [];
    actor.on('*', (event) => {
      emitted.push(event);
    });
    actor.subscribe((snapshot: DatasetSnapshot) => {
      const events = emitted.splice(0);
      if (events.length > 0) {
        this.#postStatus(datasetStatus(snapshot), events);
      } else {
        this.#pendingStatus = datasetStatus(snapshot);
        this.#statusTimer ??= setTimeout(() => this.#flushStatus(), STATUS_DELAY_MS).unref();
      }
    });
    return actor;
  }

  /** Posts a status (with its events at once; a status alone only when it differs from the last). */
  #postStatus(status: DatasetStatus, emitted: DatasetEmitted[]): void {
    clearTimeout(this.#statusTimer);
    this.#statusTimer = undefined;
    // A waiting status in a state of its own (a check began) travels along, so the host still sees
    // the dataset pass through that state: its `state` events are the same, from one message.
    const waiting = this.#pendingStatus;
    this.#pendingStatus = undefined;
    const overtaken =
      waiting !== undefined && waiting.state !== status.state && waiting.state !== this.#postedState
        ? waiting
        : undefined;
    const text = JSON.stringify(status);
    if (text === this.#postedStatus && emitted.length === 0 && overtaken === undefined) return;
    this.#postedStatus = text;
    this.#postedState = status.state;
    this.#toHost({
      type: 'status-changed',
      status,
      emitted,
      ...(overtaken === undefined ? {} : { overtaken }),
    });
  }

  /** Posts the status waiting to leave, if any: before an answer to the host, and when its delay ends. */
  #flushStatus(): void {
    const status = this.#pendingStatus;
    if (status === undefined) {
      clearTimeout(this.#statusTimer);
      this.#statusTimer = undefined;
    } else {
      this.#postStatus(status, []);
    }
  }

  #setInspecting(on: boolean): void {
    if (on && this.#inspection === undefined) {
      this.#inspection = this.#actor.system.inspect((event) => this.#inspected(event));
    } else if (!on && this.#inspection !== undefined) {
      this.#inspection.unsubscribe();
      this.#inspection = undefined;
    }
  }

  #inspected(event: XStateInspectionEvent): void {
    const plain = toInspectionEvent(this.name, event, this.#actor.sessionId, Date.now());
    if (plain !== undefined) this.#toHost({ type: 'inspect', event: plain });
  }

  // ---------------------------------------------------------------------------------------------
  // Commands and status requests from the host.
  // ---------------------------------------------------------------------------------------------

  #onHost(message: HostToDataset): void {
    const host = this.#ports.host;
    switch (message.type) {
      case 'inspecting':
        this.#setInspecting(message.on);
        break;
      case 'status':
        respond(
          host,
          message.id,
          () => {
            this.#flushStatus();
            return datasetStatus(this.#actor.getSnapshot());
          },
          serializeError,
        );
        break;
      case 'command':
        respond(
          host,
          message.id,
          () => {
            this.#actor.send({ type: message.command });
            // The status the command caused reaches the host before the answer does.
            this.#flushStatus();
          },
          serializeError,
        );
        break;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Messages from the coordinator.
  // ---------------------------------------------------------------------------------------------

  #onCoordinator(message: CoordinatorToDataset | DatasetToCoordinator): void {
    if (this.#coordinatorRpc.handle(message)) return;
    if (message.type === 'announce') {
      this.#actor.send({ type: 'snapshot.announced', snapshotId: message.snapshotId });
    } else if (message.type === 'stop') {
      respond(
        this.#ports.coordinator,
        message.id,
        async () => {
          await this.stop();
          // Let the answer leave, then close both ports: nothing keeps a thread alive after that.
          setImmediate(() => {
            this.#ports.host.close();
            this.#ports.coordinator.close();
          });
        },
        serializeError,
      );
    }
  }

  /** Stops the machine, waits for its work, discards temporary files and closes the engine and store. */
  async stop(): Promise<void> {
    this.#actor.send({ type: 'stop' });
    this.#actor.stop();
    this.#flushStatus();
    await Promise.allSettled(this.#running);
    for (const file of [...this.#downloaded.values(), ...this.#prepared.values()]) {
      await discardPrepared(file);
    }
    this.#downloaded.clear();
    this.#prepared.clear();
    await this.#store.close();
    this.#coordinatorRpc.close('stopped');
  }

  /**
   * After an uncaught error: stop answering the host and wait (up to `limitMs`) for the machine's
   * work (a schema check runs DuckDB on this thread's behalf), so the thread can end without
   * tearing native code down under it. Pending requests are not answered; the host rejects them
   * with ERR_THREAD_EXITED when the thread exits.
   */
  async crash(error: unknown, limitMs = 10_000): Promise<void> {
    if (this.#crashing) return;
    this.#crashing = true;
    this.#log(
      'error',
      `Dataset thread of '${this.name}' hit an uncaught error; ending it so that it is restarted`,
      { error: error instanceof Error ? error.message : String(error) },
    );
    this.#ports.host.close();
    const closed = Promise.allSettled(this.#running);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      closed,
      new Promise((resolve) => {
        timer = setTimeout(resolve, limitMs);
      }),
    ]);
    clearTimeout(timer);
  }
}
