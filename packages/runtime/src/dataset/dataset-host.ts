/**
 * One dataset's host: its machine, whose actors are implemented by tasks of the shared snapshot
 * pool (restore, a swap as one `load`, prune: `snapshot-tasks.ts`, reached through the
 * coordinator) and by the coordinator's shared metadata reader, and the dataset's commands and
 * status on its channel to the host. It loads no store, engine or SDK: a dataset thread is the
 * dataset's actor and nothing else (`test/architecture/thread-imports.test.ts`). Queries do not run
 * here: after each restore or swap the pool links the live file as a new generation and this host
 * tells the host thread, whose query pools attach it.
 *
 * It talks to the world only through the ports it is given (the coordinator's and the host's) and
 * a {@link SnapshotTasks} runner, so it runs the same in a dataset thread (`thread.ts`: the
 * ports are `parentPort` and a transferred MessagePort, tasks go to the coordinator) and
 * in-process in a test (MessageChannels, tasks run in-process).
 */
import { MessageChannel, type MessagePort, receiveMessageOnPort } from 'node:worker_threads';
import type { ObjectInfo, SignedEnvelope } from '@ferry/core/base';
import {
  type AuthenticateSnapshotInput,
  createDatasetMachine,
  type DatasetEmitted,
  type DatasetMachine,
  type DatasetSnapshot,
  type DownloadedSnapshot,
  type DownloadSnapshotInput,
  datasetStatus,
  type EngineName,
  fileFormatOf,
  freshnessClock,
  type LoadedSnapshot,
  levelWanted,
  type PreparedSnapshot,
  type ReadMetadataInput,
  type ReadMetadataOutput,
  type SwapSnapshotInput,
  storeVouchesFor,
  type VerifySnapshotInput,
} from '@ferry/core/machine';
import {
  type Actor,
  createActor,
  fromPromise,
  type Subscription,
  type InspectionEvent as XStateInspectionEvent,
} from 'xstate';
import type { LogRecord } from '../common/logging.js';
import type {
  CoordinatorToDataset,
  DatasetFiles,
  DatasetToCoordinator,
  DatasetToHost,
  DatasetWorkerData,
  HostToDataset,
  LoadProgress,
  LoadResult,
  MetadataReply,
  SnapshotTask,
  SnapshotTaskResults,
} from '../common/protocol.js';
import { RpcClient, respond } from '../common/rpc.js';
import { LiveStatus } from '../common/shared-slots.js';
import { within } from '../common/within.js';
import { FreshnessWatch } from './freshness-watch.js';
import { toInspectionEvent } from './inspection.js';

/** The dataset's channels: to the coordinator (metadata reads, announcements, stop) and to the host. */
export interface DatasetHostPorts {
  readonly coordinator: MessagePort;
  readonly host: MessagePort;
}

/** Runs snapshot tasks (in a dataset thread: through the coordinator, on the snapshot pool). */
export interface SnapshotTasks {
  run<K extends SnapshotTask['kind']>(
    task: Extract<SnapshotTask, { kind: K }>,
  ): Promise<SnapshotTaskResults[K]>;
}

export type DatasetHostData = Omit<DatasetWorkerData, 'hostPort' | 'buildId'>;

type CoordinatorRequest =
  | { type: 'read-metadata'; ifNoneMatch: string | undefined; fresh: boolean }
  | { type: 'snapshot-task'; task: SnapshotTask };

/** A promise and its settling functions (`Promise.withResolvers` from Node 22 on). */
function deferred<T>(): { promise: Promise<T>; resolve(value: T): void; reject(error: unknown): void } {
  let resolve: (value: T) => void = () => undefined;
  let reject: (error: unknown) => void = () => undefined;
  const promise = new Promise<T>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  // Awaited by the machine's actor of its stage, if that stage is reached.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

type Downloaded = Extract<LoadProgress, { stage: 'downloaded' }>;

/**
 * A swap in flight: one `load` task of the snapshot pool. Its progress, posted on its port, settles
 * the machine's download and verification in turn; its answer, the swap. A failure fails the first
 * stage not reached, so the machine names the step that failed.
 */
class Load {
  readonly token: string;
  readonly #port: MessagePort;
  readonly #downloaded = deferred<Downloaded>();
  readonly #verified = deferred<void>();
  /** The task's answer: the snapshot committed over the live path, and its generation link. */
  readonly loaded: Promise<LoadResult>;

  constructor(snapshotId: number, port: MessagePort, run: Promise<LoadResult>) {
    this.token = String(snapshotId);
    this.#port = port;
    port.on('message', (progress: LoadProgress) => this.#progress(progress));
    this.loaded = run.then(
      (result) => {
        this.#drain();
        // Settled by the drained progress; never left waiting if a stage was not reported.
        this.#downloaded.reject(
          new Error(`The load of snapshot ${snapshotId} answered without its download.`),
        );
        this.#verified.resolve(undefined);
        return result;
      },
      (error: unknown) => {
        this.#drain();
        this.#downloaded.reject(error);
        this.#verified.reject(error);
        throw error;
      },
    );
  }

  /** The bytes are in; `signal` (the machine's actor stopped) cancels the load meanwhile. */
  downloaded(signal: AbortSignal): Promise<Downloaded> {
    return this.#until(this.#downloaded.promise, signal);
  }

  /** The file passed its checks; `signal` cancels the load meanwhile. */
  verified(signal: AbortSignal): Promise<void> {
    return this.#until(this.#verified.promise, signal);
  }

  async #until<T>(stage: Promise<T>, signal: AbortSignal): Promise<T> {
    const cancel = (): void => this.cancel();
    signal.addEventListener('abort', cancel, { once: true });
    if (signal.aborted) cancel();
    try {
      return await stage;
    } finally {
      signal.removeEventListener('abort', cancel);
    }
  }

  /** Asks the task to stop (it still commits if its commit began). */
  cancel(): void {
    this.#port.postMessage('abort');
  }

  #progress(progress: LoadProgress): void {
    if (progress.stage === 'downloaded') this.#downloaded.resolve(progress);
    else this.#verified.resolve(undefined);
  }

  /**
   * The task answered: its progress is all in the port's queue by now (posted before the answer),
   * though the port may not have delivered it yet. Read it first, so each stage settles in order.
   */
  #drain(): void {
    for (let next = receiveMessageOnPort(this.#port); next !== undefined; ) {
      this.#progress(next.message as LoadProgress);
      next = receiveMessageOnPort(this.#port);
    }
    this.#port.close();
  }
}

export class DatasetHost {
  readonly name: string;
  readonly #data: DatasetHostData;
  readonly #ports: DatasetHostPorts;
  readonly #tasks: SnapshotTasks;
  readonly #coordinatorRpc: RpcClient<CoordinatorRequest>;
  readonly #actor: Actor<DatasetMachine>;
  /** The engine whose file format the dataset's snapshots have, once known (configured, or from metadata). */
  #engine: EngineName | undefined;
  #recordedLocation: string;
  /** The swap in flight (its download, verification and commit are one pool task). */
  #load: Load | undefined;
  /**
   * The machine's invoked work still running. Stopping the machine does not end it (a download
   * sees its abort signal; a schema check or an engine being opened just finishes), and a thread
   * must not end while DuckDB works on its behalf: that aborts the whole process. A `stop` message
   * and `crash` wait for it.
   */
  readonly #running = new Set<Promise<unknown>>();
  /**
   * The inspection subscription, held only while someone inspects (the host says so; on until it
   * does, so an early inspector sees the machine start). Without a subscriber XState builds no
   * inspection events at all; with one, they cost a third of an idle poll's CPU.
   */
  #inspection: Subscription | undefined;
  /** The last status posted (as JSON). */
  #postedStatus = '';
  /** The host's live status slot (absent in tests without one: the dataset never parks). */
  readonly #live:
    | { readonly table: LiveStatus; readonly slot: number; readonly incarnation: number }
    | undefined;
  /** Whether the machine has left `bootstrapping` once (the coordinator is told, once). */
  #bootstrapped = false;
  /** Whether the host listens for poll events (it says so; on until it does): a dataset parks only when nobody does. */
  #pollEvents = true;
  /** The checks the machine's poll timer offered (`park`), taken once its transition is over. */
  #parkOffer: { readonly etag: string; readonly dueMs: number } | undefined;
  /** The token the live slot is lent under while parked. */
  #parkedToken: number | undefined;
  #parkTokens = 0;
  /** Set while a parked dataset wakes in place: the timer is armed, not parked again. */
  #waking = false;
  /** While an announcement is delivered: the coordinator's read that found it. */
  #announced: MetadataReply | undefined;
  #crashing = false;
  /**
   * The candidate the signature check authenticated last: the HEAD it made of the object (for the
   * download) and the signature (for the load to record). Taken by the next download.
   */
  #authenticated:
    | { readonly snapshotId: number; readonly head?: ObjectInfo; readonly signature: SignedEnvelope }
    | undefined;
  /** The writer's heartbeat watch of a dataset with trusted keys. */
  readonly #freshness: FreshnessWatch | undefined;

  /** `tasks`: where snapshot tasks run; default: sent to the coordinator, which runs them on the snapshot pool. */
  constructor(data: DatasetHostData, ports: DatasetHostPorts, tasks?: SnapshotTasks) {
    const config = data.dataset;
    this.name = config.name;
    this.#data = data;
    this.#ports = ports;
    this.#engine = config.engine;
    this.#recordedLocation = config.location;
    const rpc = new RpcClient<CoordinatorRequest>(ports.coordinator, 'The coordinator thread');
    this.#coordinatorRpc = rpc;
    this.#tasks = tasks ?? {
      // A load's port travels in the transfer list.
      run: (task: SnapshotTask) =>
        rpc.request({ type: 'snapshot-task', task }, task.kind === 'load' ? [task.port] : []),
    };
    this.#live =
      data.live === undefined ? undefined : { ...data.live, table: new LiveStatus(data.live.buffer) };
    this.#actor = this.#createActor();
    this.#freshness = this.#createFreshnessWatch();
    this.#setInspecting(true);
    // The machine's own `@xstate.actor` event was sent while it was created, before anyone listened.
    this.#inspected({ type: '@xstate.actor', actorRef: this.#actor, rootId: this.#actor.sessionId });
    ports.host.on('message', (message: HostToDataset) => this.#onHost(message));
    ports.coordinator.on('message', (message: CoordinatorToDataset) => this.#onCoordinator(message));
  }

  /** Starts the machine (it restores the live file, then consults the store). */
  start(): void {
    this.#actor.start();
  }

  #createFreshnessWatch(): FreshnessWatch | undefined {
    const config = this.#data.dataset;
    const trustedKeys = config.trustedKeys?.map((key) => key.pem);
    if (trustedKeys === undefined) return undefined;
    return new FreshnessWatch({
      dataset: this.name,
      intervalMs: config.refreshCheckIntervalMs,
      // A check or two to load what the writer has just published.
      graceMs: 2 * config.refreshCheckIntervalMs,
      read: () => this.#tracked(this.#tasks.run({ kind: 'heartbeat', files: this.#filesFor(), trustedKeys })),
      servingSnapshotId: () => this.#actor.getSnapshot().context.serving?.snapshotId ?? null,
      servingChecksum: () => this.#actor.getSnapshot().context.serving?.checksum ?? null,
      location: () => this.#recordedLocation,
      log: (level, message, fields) => this.#log(level, message, fields),
      report: (freshness) => this.#toHost({ type: 'freshness', ...freshness }),
    });
  }

  #toHost(message: DatasetToHost): void {
    this.#ports.host.postMessage(message);
  }

  #log(level: LogRecord['level'], message: string, fields?: LogRecord['fields']): void {
    if (levelWanted(level, this.#data.logLevel ?? 'debug')) {
      this.#toHost({
        type: 'log',
        record: { level, message, component: 'dataset', dataset: this.name, fields },
      });
    }
  }

  #tracked<T>(work: Promise<T>): Promise<T> {
    this.#running.add(work);
    const forget = (): boolean => this.#running.delete(work);
    void work.then(forget, forget);
    return work;
  }

  #filesFor(kind: EngineName = this.#engine ?? 'duckdb'): DatasetFiles {
    const config = this.#data.dataset;
    return {
      dataset: this.name,
      engine: kind,
      livePath: this.#data.livePath,
      generationDir: this.#data.generationDir,
      location: config.location,
      s3: config.s3,
    };
  }

  #kindOf(input: { readonly engine: string | undefined }): EngineName {
    return (input.engine as EngineName | undefined) ?? this.#engine ?? 'duckdb';
  }

  // ---------------------------------------------------------------------------------------------
  // The machine's actors.
  // ---------------------------------------------------------------------------------------------

  /** Tells the host the generation queries read from now on, then has the old links pruned (off the swap's path). */
  #serve(kind: EngineName, snapshot: LoadedSnapshot, path: string): void {
    this.#toHost({
      type: 'generation',
      current: { path, snapshotId: snapshot.snapshotId, engine: fileFormatOf(kind), schema: snapshot.schema },
    });
    // Unlinking an old generation of a large file frees its blocks: tens of ms that need not come first.
    void this.#tracked(
      this.#tasks
        .run({
          kind: 'prune',
          files: this.#filesFor(kind),
          retention: {
            retainSnapshots: this.#data.dataset.retainSnapshots,
            retainDiskBudgetBytes: this.#data.dataset.retainDiskBudgetBytes,
          },
        })
        .catch((error: unknown) =>
          this.#log(
            'warn',
            `Old generations of dataset '${this.name}' could not be removed; retried at the next swap`,
            { error: (error as Error).message },
          ),
        ),
    );
  }

  /** Serve the live file left by an earlier run, if it matches its manifest. */
  async #restoreLiveFile(): Promise<LoadedSnapshot | null> {
    const engine = this.#engine;
    if (engine === undefined) {
      // Links of an earlier run are stale (the pools that held them are gone with it).
      await this.#tasks.run({ kind: 'prune', files: this.#filesFor('duckdb'), retention: null });
      return null;
    }
    const trustedKeys = this.#data.dataset.trustedKeys?.map((key) => key.pem);
    const restored = await this.#tasks.run({
      kind: 'restore',
      files: this.#filesFor(engine),
      ...(trustedKeys === undefined ? {} : { trustedKeys }),
    });
    if (restored.kind === 'none') return null;
    if (restored.kind === 'refused') {
      this.#log(
        'warn',
        `The live file of dataset '${this.name}' (snapshot ${restored.snapshotId}) ${restored.error}; it is not served, and the dataset bootstraps from the store`,
        { snapshotId: restored.snapshotId, reason: restored.error },
      );
      return null;
    }
    if (restored.kind === 'unreadable') {
      this.#log(
        'warn',
        `The live file of dataset '${this.name}' could not be opened; bootstrapping from the store`,
        { error: restored.error },
      );
      return null;
    }
    const local = restored.snapshot;
    const loaded: LoadedSnapshot = {
      snapshotId: local.snapshotId,
      timestampMs: local.timestampMs,
      checksum: local.checksum,
      schema: local.schema,
      schemaId: local.schemaId,
    };
    this.#serve(engine, loaded, restored.generation);
    this.#log(
      'info',
      `Dataset '${this.name}' serves snapshot ${local.snapshotId} from its live file while the store is consulted`,
    );
    return loaded;
  }

  async #readMetadata(input: ReadMetadataInput): Promise<ReadMetadataOutput> {
    const announced = this.#announced;
    this.#announced = undefined;
    const reply =
      announced !== undefined && input.trigger === 'notification' && input.ifNoneMatch === undefined
        ? announced
        : await this.#coordinatorRpc.request<MetadataReply>({
            type: 'read-metadata',
            // An operator's "poll now" wants the store as it is now, not a read shared moments ago.
            fresh: input.trigger === 'command',
            ifNoneMatch: input.ifNoneMatch,
          });
    if (reply.kind === 'read' && reply.recordedLocation !== undefined) {
      this.#recordedLocation = reply.recordedLocation;
    }
    return reply;
  }

  /** Check the candidate's signature and statement before download (a pool task). */
  async #authenticate(input: AuthenticateSnapshotInput): Promise<void> {
    const trustedKeys = this.#data.dataset.trustedKeys?.map((key) => key.pem) ?? [];
    this.#authenticated = undefined;
    const { keyId, head, signature } = await this.#tasks.run({
      kind: 'authenticate',
      files: this.#filesFor(),
      dataset: input.dataset,
      entry: input.entry,
      recordedLocation: this.#recordedLocation,
      trustedKeys,
    });
    this.#authenticated = {
      snapshotId: input.entry.snapshotId,
      signature,
      ...(head === undefined ? {} : { head }),
    };
    this.#log(
      'debug',
      `Snapshot ${input.entry.snapshotId} of dataset '${this.name}' is signed by trusted key ${keyId}`,
      { snapshotId: input.entry.snapshotId, keyId },
    );
  }

  /**
   * Starts the swap of a candidate as one pool task (`load`: download, verify, commit, link) and
   * answers when its bytes are in (the machine has it verified next, by the same task).
   */
  async #download(input: DownloadSnapshotInput, signal: AbortSignal): Promise<DownloadedSnapshot> {
    const { entry, recorded } = input;
    if (recorded === undefined) {
      throw new Error(
        `Snapshot ${entry.snapshotId} of dataset '${this.name}' has no recorded schema to verify it against.`,
      );
    }
    const authenticated =
      this.#authenticated?.snapshotId === entry.snapshotId ? this.#authenticated : undefined;
    this.#authenticated = undefined;
    const { port1, port2 } = new MessageChannel();
    const run = this.#tasks.run({
      kind: 'load',
      files: this.#filesFor(this.#kindOf(input)),
      entry,
      recorded,
      recordedLocation: this.#recordedLocation,
      head: authenticated?.head,
      signature: authenticated?.signature,
      port: port2,
    });
    const load = new Load(entry.snapshotId, port1, run);
    this.#load = load;
    void this.#tracked(load.loaded).catch(() => undefined);
    const { transfer, seconds } = await load.downloaded(signal);
    if (transfer.fallback !== undefined) {
      this.#log(
        transfer.doubtful === true ? 'warn' : 'debug',
        `Snapshot ${entry.snapshotId} of dataset '${this.name}' was downloaded whole: ${transfer.fallback}`,
        { snapshotId: entry.snapshotId, fallback: transfer.fallback },
      );
    }
    this.#toHost({
      type: 'downloaded',
      bytes: transfer.fetchedBytes,
      reusedBytes: transfer.reusedBytes,
      seconds,
      snapshotId: entry.snapshotId,
      checksum: entry.checksum,
    });
    // The machine's plain view of how the bytes arrived.
    const { mode, fetchedBytes, reusedBytes } = transfer;
    return { snapshotId: entry.snapshotId, token: load.token, transfer: { mode, fetchedBytes, reusedBytes } };
  }

  /** The load of `token` (the one the machine holds), or an error naming what is gone. */
  #loadOf(token: string): Load {
    const load = this.#load;
    if (load === undefined || load.token !== token) {
      throw new Error(`The load of snapshot ${token} of dataset '${this.name}' is gone.`);
    }
    return load;
  }

  /** Answers when the load's file passed its checks (checksum, real schema); the same task commits it next. */
  async #verify(input: VerifySnapshotInput, signal: AbortSignal): Promise<PreparedSnapshot> {
    const load = this.#loadOf(input.downloaded.token);
    await load.verified(signal);
    this.#engine = this.#kindOf(input);
    return {
      snapshotId: input.entry.snapshotId,
      token: load.token,
      ...(input.downloaded.transfer === undefined ? {} : { transfer: input.downloaded.transfer }),
    };
  }

  /** Answers when the load committed the file over the live path; then it is served. */
  async #swapIn(input: SwapSnapshotInput): Promise<void> {
    const load = this.#loadOf(input.prepared.token);
    const { snapshot, generation } = await load.loaded;
    this.#load = undefined;
    this.#serve(this.#engine ?? 'duckdb', snapshot, generation);
  }

  // ---------------------------------------------------------------------------------------------
  // Parking: the coordinator makes a serving dataset's unchanged checks (see `parked-checks.ts`).
  // ---------------------------------------------------------------------------------------------

  /** The poll timer offers its checks: taken when nobody watches each check (events, inspector). */
  #offerPark(etag: string, dueMs: number): boolean {
    if (this.#live === undefined || this.#waking || this.#pollEvents || this.#inspection !== undefined) {
      return false;
    }
    this.#parkOffer = { etag, dueMs };
    return true;
  }

  /** After the transition that took the offer: lends the live slot and tells the coordinator. */
  #park(snapshot: DatasetSnapshot): void {
    const offer = this.#parkOffer;
    const live = this.#live;
    this.#parkOffer = undefined;
    if (offer === undefined || live === undefined || !snapshot.matches({ serving: 'scheduled' })) return;
    const { context } = snapshot;
    const token = ++this.#parkTokens;
    // A restarted thread goes on counting where the last one stopped (the host's metrics add them up).
    const unposted = live.table.read(live.slot)?.unposted ?? 0;
    live.table.park(live.slot, token, {
      incarnation: live.incarnation,
      polls: context.counters.polls,
      lastPollAtMs: context.lastPoll?.atMs ?? 0,
      nextPollDueMs: context.nextPollDueMs,
      freshAtMs: context.freshAtMs,
      unposted,
    });
    this.#parkedToken = token;
    this.#ports.coordinator.postMessage({
      type: 'park',
      token,
      ...offer,
      freshens: storeVouchesFor(context.serving?.snapshotId, context.storeSnapshotId),
    } satisfies DatasetToCoordinator);
  }

  /**
   * Wakes a parked dataset: takes its live slot back and has the machine record the checks the
   * coordinator made meanwhile (its timer is armed again, not parked). Nothing when not parked.
   */
  #wake(): void {
    const token = this.#parkedToken;
    const live = this.#live;
    this.#parkOffer = undefined;
    if (token === undefined || live === undefined) return;
    this.#parkedToken = undefined;
    const checks = live.table.takeBack(live.slot, token);
    const { context } = this.#actor.getSnapshot();
    if (checks === undefined) return;
    this.#waking = true;
    try {
      this.#actor.send({
        type: 'checks.unseen',
        count: Math.max(0, checks.polls - context.counters.polls),
        lastPollAtMs: checks.lastPollAtMs,
        lastReadAtMs: checks.freshAtMs ?? checks.lastPollAtMs,
        nextPollDueMs: checks.nextPollDueMs ?? context.nextPollDueMs ?? freshnessClock(),
      });
    } finally {
      this.#waking = false;
    }
  }

  #createActor(): Actor<DatasetMachine> {
    const config = this.#data.dataset;
    const machine = createDatasetMachine({
      now: freshnessClock,
      random: Math.random,
      park: (etag, dueMs) => this.#offerPark(etag, dueMs),
    }).provide({
      actors: {
        restoreLocal: fromPromise(() => this.#tracked(this.#restoreLiveFile())),
        readMetadata: fromPromise(({ input }) => this.#readMetadata(input)),
        authenticateSnapshot: fromPromise(({ input }) => this.#tracked(this.#authenticate(input))),
        downloadSnapshot: fromPromise(({ input, signal }) => this.#tracked(this.#download(input, signal))),
        verifySnapshot: fromPromise(({ input, signal }) => this.#tracked(this.#verify(input, signal))),
        swapSnapshot: fromPromise(({ input }) => this.#tracked(this.#swapIn(input))),
      },
      actions: {
        log: (_args, entry) => this.#log(entry.level, entry.message, entry.fields),
      },
    });
    const actor = createActor(machine, {
      input: {
        name: this.name,
        engine: config.engine,
        refreshCheckIntervalMs: config.refreshCheckIntervalMs,
        bootstrapOnFailure: config.bootstrapOnFailure,
        snapshotsMode: config.snapshotsMode,
        location: config.location,
        pollPhaseMs: this.#data.pollPhaseMs,
        signaturesRequired: config.trustedKeys !== undefined,
        form: config.form,
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
      if (!this.#bootstrapped && !snapshot.matches('bootstrapping')) {
        this.#bootstrapped = true;
        const done: DatasetToCoordinator = { type: 'bootstrapped' };
        this.#ports.coordinator.postMessage(done);
        // Judged from the first metadata read on: it tells the location the statement must name.
        this.#freshness?.start();
      }
      const events = emitted.splice(0);
      this.#park(snapshot);
      // A status alone is posted only when it differs from the last.
      const status = datasetStatus(snapshot);
      const text = JSON.stringify(status);
      if (text === this.#postedStatus && events.length === 0) return;
      this.#postedStatus = text;
      this.#toHost({ type: 'status-changed', status, emitted: events });
    });
    return actor;
  }

  /**
   * Someone started or stopped watching each check: a parked dataset wakes; an unwatched one waiting
   * for its next check parks now.
   */
  #watched(): void {
    if (this.#pollEvents || this.#inspection !== undefined) this.#wake();
    else if (this.#parkedToken === undefined && this.#actor.getSnapshot().matches({ serving: 'scheduled' })) {
      this.#actor.send({ type: 'poll.rearm' });
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
    const plain = toInspectionEvent(this.name, event, this.#actor.sessionId, freshnessClock());
    if (plain !== undefined) this.#toHost({ type: 'inspect', event: plain });
  }

  // ---------------------------------------------------------------------------------------------
  // Commands from the host, and whether it watches each check (inspector, poll events).
  // ---------------------------------------------------------------------------------------------

  #onHost(message: HostToDataset): void {
    switch (message.type) {
      case 'inspecting':
        this.#setInspecting(message.on);
        this.#watched();
        break;
      case 'poll-events':
        this.#pollEvents = message.on;
        this.#watched();
        break;
      case 'command':
        respond(this.#ports.host, message.id, () => {
          this.#wake();
          // The status the command caused is posted before the answer.
          this.#actor.send({ type: message.command });
        });
        break;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Messages from the coordinator.
  // ---------------------------------------------------------------------------------------------

  #onCoordinator(message: CoordinatorToDataset): void {
    if (this.#coordinatorRpc.handle(message)) return;
    if (message.type === 'announce') {
      this.#wake();
      // A check the announcement starts at once reads what the coordinator's fresh read found.
      this.#announced = message.reply;
      try {
        this.#actor.send({ type: 'snapshot.announced', snapshotId: message.snapshotId });
      } finally {
        this.#announced = undefined;
      }
    } else if (message.type === 'poll.due') {
      // A wake for an earlier park (the dataset woke since) is stale.
      if (message.token !== this.#parkedToken) return;
      this.#wake();
      this.#actor.send({ type: 'poll.due' });
    } else if (message.type === 'stop') {
      // Stops the machine, waits for its work (a load not committing yet stops and removes its
      // temporary file), then lets the answer leave and closes both ports: nothing keeps a thread
      // alive after that.
      respond(this.#ports.coordinator, message.id, async () => {
        this.#wake();
        this.#actor.send({ type: 'stop' });
        this.#actor.stop();
        await this.#freshness?.stop();
        this.#load?.cancel();
        await Promise.allSettled(this.#running);
        this.#coordinatorRpc.close('stopped');
        setImmediate(() => {
          this.#ports.host.close();
          this.#ports.coordinator.close();
        });
      });
    }
  }

  /**
   * After an uncaught error: stop answering the host and wait (up to 10 s) for the machine's work
   * in flight (its pool tasks end on their own; their abort ports close with the thread). Pending
   * requests are not answered; the host rejects them with ERR_THREAD_EXITED when the thread exits.
   */
  async crash(error: unknown): Promise<void> {
    if (this.#crashing) return;
    this.#crashing = true;
    void this.#freshness?.stop();
    this.#log(
      'error',
      `Dataset thread of '${this.name}' hit an uncaught error; ending it so that it is restarted`,
      { error: error instanceof Error ? error.message : String(error) },
    );
    this.#ports.host.close();
    await within(Promise.allSettled(this.#running), 10_000);
  }
}
