/**
 * The host side of Ferry: `createRuntime()` loads a spicepod, starts the coordinator thread (which
 * starts one thread per dataset) and wires the parts behind the embed API: the dataset registry
 * (status, readiness), the namespace's catalog and the query service with its pools, metrics, the
 * inspection hub and the typed events. Messages from the threads arrive here and are handed to the
 * part that owns what they report.
 */
import { setMaxListeners } from 'node:events';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import {
  type ConfigIssue,
  type DatasetConfig,
  type DatasetEmitted,
  type QueryParam,
  retentionOf,
  type SpicepodConfig,
} from '@ferry/core/base';
import type { DuckDbNamespaceOptions } from '@ferry/engines';
import { betterSqlite3Build, checkSqliteBinding } from '@ferry/engines/namespaces';
import { generationDirFor, generationsRoot, generationsRootFor } from '@ferry/snapshots/generations';
import type {
  DatasetCommand,
  DatasetInfo,
  InspectionEvent,
  InspectOptions,
  JsonOptions,
  QueryOptions,
  QueryProvenance,
  Runtime,
  RuntimeArrowResult,
  RuntimeEvents,
  RuntimeJsonAnswer,
  RuntimeMetrics,
  RuntimeOptions,
  RuntimeQueryResult,
  RuntimeQueryStream,
  SnapshotListing,
  SnapshotsOptions,
  StreamOptions,
} from '../api.js';
import { DEFAULT_DATA_DIR } from '../api.js';
import { lowestLevel } from '../common/log-levels.js';
import { defaultLogger, type Logger, writeLog } from '../common/logging.js';
import type {
  CoordinatorToHost,
  CoordinatorWorkerData,
  DatasetToHost,
  HostToCoordinator,
  HostToDataset,
} from '../common/protocol.js';
import { RpcClient } from '../common/rpc.js';
import { LiveStatus } from '../common/shared-slots.js';
import { livePathFor } from '../common/stores.js';
import { Supervisor } from '../common/supervisor.js';
import {
  type CoordinatorTestRequest,
  type CrashDrill,
  type RuntimeTestHooks,
  TEST_HOOKS,
  type ThreadYoungGeneration,
} from '../common/test-hooks.js';
import { buildIdOf, threadExecArgv, threadFile } from '../common/thread-files.js';
import {
  QUERY_THREAD_YOUNG_GENERATION_MB,
  SMALL_THREAD_LIMITS,
  SMALL_THREAD_YOUNG_GENERATION_MB,
} from '../common/thread-limits.js';
import { DatasetNotReadyError, RuntimeClosedError } from '../errors.js';
import { QueryCatalog } from '../query/query-catalog.js';
import { QueryFront } from '../query/query-front.js';
import { QueryService, type QueryServiceOptions, streamed } from '../query/query-service.js';
import { lowerThreadpoolPriority } from '../query/thread-priority.js';
import { type DatasetEntry, DatasetRegistry } from './dataset-registry.js';
import { RuntimeEventEmitter } from './events.js';
import { InspectionHub } from './inspection-hub.js';
import { manyThreadsNotice, nodeLineNoticeOnce } from './node-lines.js';
import { redactingLogger } from './redaction.js';
import { POLL_RESULTS, RuntimeMetricsCounter } from './runtime-metrics.js';
import {
  byteSize,
  checkCommand,
  checkQueryOptions,
  checkRuntimeOptions,
  checkSql,
  READY_RULES,
  RESULT_VERSION_RULES,
} from './runtime-options.js';
import { sdkNoticeOnce } from './sdk-notice.js';
import { type LoadedSpicepod, loadSpicepodSource, type SpicepodSource } from './spicepod-source.js';
import { holdToStalenessBound } from './staleness-bound.js';
import { StalenessWatch } from './staleness-watch.js';
import { verificationNotices } from './verification-notice.js';

export { POLL_RESULTS } from './runtime-metrics.js';
export type { SpicepodSource } from './spicepod-source.js';

/** Starts a runtime for a spicepod (a path, or inline YAML / object). Resolves once threads are starting. */
export async function createRuntime(
  source: string | SpicepodSource,
  options: RuntimeOptions = {},
): Promise<Runtime> {
  checkRuntimeOptions(options);
  const env = options.env ?? process.env;
  const logger = options.logger ?? defaultLogger(options.logLevel);
  const pod = await loadSpicepodSource(source, env, logger);
  // From here on no log line shows a secret the spicepod's references resolved to.
  const safe = redactingLogger(logger, pod.config.secretReferences);
  const sqlite = pod.datasets.some((dataset) => dataset.fileEngine !== 'duckdb');
  // A better-sqlite3 built for another Node.js fails every SQLite file: said once, before anything starts.
  if (sqlite) checkSqliteBinding();
  if (sqlite && betterSqlite3Build() === 'stock') {
    safe.warn(
      { component: 'runtime' },
      "better-sqlite3 is the stock build, not Ferry's patched one: SQLite statements cannot be stopped inside SQLite (a query past its timeout or cancelled runs to its end in its worker, and close() waits for it), and a worker ended while it raises an SQLite error aborts the process; apply patches/better-sqlite3@12.9.0.patch from Ferry's repository (packages/runtime/README.md, Install)",
    );
  }
  // Before any thread of the runtime starts (they would look like pool threads busy): DuckDB's
  // statements run on libuv's threadpool, which must yield to the host thread as the query threads do.
  await lowerThreadpoolPriority(queryThreadNiceness(options));
  return new HostRuntime(pod, safe, options);
}

/**
 * The query options, their signal made able to serve many queries at once without Node's warning:
 * QueryOptions.signal may be an application's shutdown signal shared by every query, and each
 * running query holds one listener on it (taken off when it ends), so past 10 at once Node warned
 * of a possible leak (MaxListenersExceededWarning) on the application's stderr.
 */
function sharedSignal<T extends QueryOptions>(options: T): T {
  if (options.signal !== undefined) setMaxListeners(0, options.signal);
  return options;
}

/** `queryThreadNiceness`, whole and within 0–19; default 2 (docs/reliability.md says why). */
function queryThreadNiceness(options: RuntimeOptions): number {
  return Math.max(0, Math.min(19, Math.floor(options.queryThreadNiceness ?? 2)));
}

class HostRuntime implements Runtime {
  readonly config: Runtime['config'];
  readonly tls: Runtime['tls'];
  readonly configErrors: readonly ConfigIssue[];
  readonly configWarnings: readonly ConfigIssue[];
  readonly [TEST_HOOKS]: RuntimeTestHooks;
  readonly #logger: Logger;
  readonly #staleness: StalenessWatch;
  readonly #events = new RuntimeEventEmitter();
  readonly #registry: DatasetRegistry;
  /** What the dataset threads' checks answered in the thread changed in their status (see shared-slots.ts). */
  readonly #live: LiveStatus;
  readonly #metrics = new RuntimeMetricsCounter();
  readonly #inspection: InspectionHub;
  /** Listeners of one dataset's machine (`inspect(listener, { dataset })`), by dataset. */
  readonly #focused = new Map<string, InspectionHub>();
  readonly #catalog: QueryCatalog;
  readonly #queries: QueryService;
  readonly #front: QueryFront;
  #coordinator!: Worker;
  #coordinatorRpc!: RpcClient<HostToCoordinator>;
  readonly #coordinatorData: Omit<CoordinatorWorkerData, 'incarnationBase'>;
  /** Coordinator threads started so far, and their supervisor (restarts with backoff). */
  #coordinatorStarts = 0;
  readonly #coordinatorSupervisor: Supervisor;
  /** The test hooks' requests, on the same channel (the same ids): one client with a wider type. */
  get #testRpc(): RpcClient<CoordinatorTestRequest> {
    return this.#coordinatorRpc as unknown as RpcClient<CoordinatorTestRequest>;
  }
  #closing: Promise<void> | undefined;

  constructor(pod: LoadedSpicepod, logger: Logger, options: RuntimeOptions) {
    const { config, datasets, errors, warnings, baseDir } = pod;
    this.config = config;
    this.tls = pod.tls;
    this.configErrors = errors;
    this.configWarnings = warnings;
    this.#logger = logger;
    this.#live = LiveStatus.create(datasets.length);
    this.#registry = new DatasetRegistry(
      datasets,
      errors,
      (event) => this.#events.publish('state', event),
      this.#live,
    );
    this.#staleness = new StalenessWatch(
      { datasets: () => this.datasets(), onChange: (listener) => this.#registry.onChange(listener) },
      logger,
    );
    this.#events.onListeners('poll', () => {
      for (const entry of this.#registry.entries()) this.#tellPollEvents(entry);
    });
    this.#inspection = new InspectionHub(() => {
      for (const entry of this.#registry.entries()) this.#tellInspecting(entry);
    });
    const dataDir = resolve(baseDir, options.dataDir ?? DEFAULT_DATA_DIR);
    this.#catalog = new QueryCatalog(
      this.#registry,
      (catalog) => this.#queries.setCatalog(catalog),
      config.views.map((view) => ({ name: view.name, sql: view.sql })),
      config.taskHistory.enabled,
    );
    this.#queries = new QueryService(
      this.#registry,
      this.#catalog,
      queryServiceOptions(options, config, datasets, baseDir, dataDir, logger),
      logger,
    );
    this.#front = new QueryFront(
      this.#queries,
      this.#catalog,
      config.resultsCache,
      config.taskHistory,
      logger,
    );
    const files = Object.fromEntries(
      datasets.map((dataset) => {
        const livePath = livePathFor(dataset, baseDir, dataDir);
        return [dataset.name, { livePath, generationDir: generationDirFor(livePath, dataDir, dataset.name) }];
      }),
    );
    this.#coordinatorData = {
      config,
      datasets,
      files,
      liveStatus: this.#live.buffer,
      buildId: buildIdOf(threadFile('coordinator/thread')),
      snapshotThreads: options.snapshotThreads ?? 2,
      datasetLoadParallelism: options.datasetLoadParallelism ?? 4 * availableParallelism(),
      snapshotIdleTimeoutMs: options.snapshotIdleTimeoutMs ?? 30_000,
      metadataWindowMs: options.metadataWindowMs ?? 2_000,
      restartBackoffMs: options.restartBackoffMs ?? [1_000, 2_000, 5_000, 10_000, 30_000],
      stopTimeoutMs: 10_000,
      datasetResourceLimits: options.datasetResourceLimits ?? DATASET_THREAD_LIMITS,
      logLevel: lowestLevel(logger, options.logLevel),
      notificationOptions: options.notifications,
    };
    this.#coordinatorSupervisor = new Supervisor({
      delaysMs: this.#coordinatorData.restartBackoffMs,
      restart: () => this.#startCoordinator(),
    });
    for (const line of verificationNotices(datasets)) {
      this.#logger.info({ component: 'runtime', ...line.fields }, line.message);
    }
    this.#startCoordinator();
    this[TEST_HOOKS] = {
      metadataGets: () => this.#testRpc.request<number>({ type: 'test-metadata-gets', id: 0 }),
      threadYoungGenerations: async () => [
        ...(await this.#testRpc.request<readonly ThreadYoungGeneration[]>({
          type: 'test-thread-young-generations',
          id: 0,
        })),
        ...this.#queries.youngGenerations(),
      ],
      terminateDatasetThread: async (name) => {
        const entry = this.#registry.get(name);
        const drill: CrashDrill = { type: 'test-crash' };
        entry.port?.postMessage(drill);
      },
      killDatasetThread: async (name) => {
        const dataset = this.#registry.get(name).name;
        await this.#testRpc.request<void>({ type: 'test-kill-dataset', id: 0, dataset });
      },
      terminateCoordinatorThread: async () => {
        await this.#coordinator.terminate();
      },
      queriesInFlight: () => this.#queries.inFlight,
      queriesSent: () => this.#queries.sent,
      admission: () => this.#queries.admission,
    };
  }

  /**
   * Starts the coordinator thread (which starts every dataset thread). If it dies while the runtime
   * is open, every dataset is not ready (`restarting`), an error is logged and an `error` event
   * emitted per dataset, and it is started again after the restart backoff: its dataset threads
   * bootstrap again from their live files.
   */
  #startCoordinator(): void {
    this.#coordinatorStarts++;
    this.#coordinatorSupervisor.started();
    const workerData: CoordinatorWorkerData = {
      ...this.#coordinatorData,
      // Dataset threads of a later coordinator never share a start number with an earlier one's.
      incarnationBase: (this.#coordinatorStarts - 1) * 1_000_000,
    };
    const unsupported = nodeLineNoticeOnce();
    if (unsupported !== undefined) this.#logger.warn({ component: 'runtime' }, unsupported);
    const manyThreads =
      this.#coordinatorStarts === 1 ? manyThreadsNotice(this.#coordinatorData.datasets.length) : undefined;
    if (manyThreads !== undefined) this.#logger.warn({ component: 'runtime' }, manyThreads);
    // Only a runtime that reaches AWS (an s3:// store, a queue) has the SDK's notice to pass on.
    const usesAws =
      this.#coordinatorData.config.notifications !== undefined ||
      this.#coordinatorData.datasets.some((dataset) => dataset.s3 !== undefined);
    const notice = sdkNoticeOnce(process.env, process.version, usesAws);
    if (notice.line !== undefined) this.#logger.warn({ component: 'runtime' }, notice.line);
    // The threads load the AWS SDK: each would print its Node-version notice; said once above instead.
    const worker = new Worker(threadFile('coordinator/thread'), {
      workerData,
      env: notice.env,
      ...threadExecArgv(),
      resourceLimits: SMALL_THREAD_LIMITS,
    });
    const rpc = new RpcClient<HostToCoordinator>(worker, 'The coordinator thread');
    this.#coordinator = worker;
    this.#coordinatorRpc = rpc;
    let failure: Error | undefined;
    worker.on('message', (message: CoordinatorToHost) => this.#onCoordinator(message));
    worker.on('error', (error) => {
      failure = error;
      this.#logger.error(
        { component: 'runtime', err: error },
        `The coordinator thread failed: ${error.message}`,
      );
    });
    worker.on('exit', (exitCode) => {
      rpc.close('exited');
      for (const entry of this.#registry.entries()) entry.rpc?.close('exited');
      if (this.#closing !== undefined) return;
      // Started from another build: starting it again would fail the same way.
      if (failure?.name === 'StaleBuildError') this.#failAll(failure.message);
      else {
        this.#coordinatorSupervisor.died(({ delayMs }) =>
          this.#reportCoordinatorDeath(exitCode, failure, delayMs),
        );
      }
    });
  }

  /** Every dataset fails for good (the coordinator cannot run). */
  #failAll(reason: string): void {
    for (const entry of this.#registry.entries()) {
      if (entry.config === undefined) continue;
      entry.error = reason;
      this.#registry.setState(entry, 'failed', entry.status);
    }
  }

  #reportCoordinatorDeath(exitCode: number, failure: Error | undefined, delay: number): void {
    const reason = failure?.message ?? `exit code ${exitCode}`;
    const message = `The coordinator thread died (${reason}); every dataset is restarting from its live file, in ${delay} ms`;
    this.#logger.error({ component: 'runtime', exitCode }, message);
    for (const entry of this.#registry.entries()) {
      if (entry.config === undefined) continue;
      this.#threadGone(entry, message);
      this.#events.publish('error', {
        dataset: entry.name,
        code: 'ERR_THREAD_EXITED',
        message,
        snapshotId: entry.status?.servingSnapshotId ?? null,
      });
    }
  }

  /** The dataset's thread is gone (`error` says why): it serves nothing until the next one starts. */
  #threadGone(entry: DatasetEntry, error: string): void {
    entry.rpc?.close('exited');
    entry.port?.close();
    entry.port = undefined;
    entry.rpc = undefined;
    this.#catalog.withdraw(entry);
    entry.error = error;
    this.#registry.setState(entry, 'restarting', entry.status);
  }

  // ---------------------------------------------------------------------------------------------
  // Messages from the threads.
  // ---------------------------------------------------------------------------------------------

  #onCoordinator(message: CoordinatorToHost): void {
    if (this.#coordinatorRpc.handle(message)) return;
    switch (message.type) {
      case 'dataset-started': {
        const entry = this.#registry.find(message.dataset);
        if (entry === undefined) return;
        entry.port?.close();
        entry.port = message.port;
        const rpc = new RpcClient<HostToDataset>(message.port, `Dataset thread of '${entry.name}'`);
        entry.rpc = rpc;
        message.port.on('message', (event: DatasetToHost) => {
          if (!rpc.handle(event)) this.#onDataset(entry, event);
        });
        entry.incarnation = message.incarnation;
        if (!this.#inspecting(entry)) this.#tellInspecting(entry);
        this.#tellPollEvents(entry);
        break;
      }
      case 'dataset-exited': {
        const entry = this.#registry.find(message.dataset);
        if (entry === undefined) return;
        this.#threadGone(entry, message.error?.message ?? `thread exited with code ${message.exitCode}`);
        break;
      }
      case 'log':
        writeLog(this.#logger, message.record);
        break;
      case 'notification-stats': {
        const event = { outcome: message.outcome, count: message.count };
        this.#metrics.countNotification(event);
        this.#events.publish('notification', event);
        break;
      }
    }
  }

  #onDataset(entry: DatasetEntry, message: DatasetToHost): void {
    switch (message.type) {
      case 'status-changed':
        entry.error = undefined;
        this.#registry.setState(entry, message.status.state, message.status);
        for (const event of message.emitted) this.#onEmitted(entry, event);
        break;
      case 'inspect':
        this.#inspection.publish(message.event);
        this.#focused.get(entry.name)?.publish(message.event);
        break;
      case 'log':
        writeLog(this.#logger, message.record);
        break;
      case 'generation':
        this.#catalog.announce(entry, message.current);
        // A swap retires at once the cached results that read the dataset's previous snapshot.
        this.#front.retire(entry.name, message.current?.snapshotId ?? null);
        break;
      case 'downloaded':
        // Downloaded while nothing is served: this thread is bootstrapping from the store.
        this.#metrics.countDownload(entry.name, message, entry.status?.servingSnapshotId == null);
        break;
      case 'freshness':
        this.#metrics.countFreshness(entry.name, message.stale);
        // Staleness counts from the heartbeat's signing while the heartbeat cannot vouch.
        entry.heartbeatStaleSinceMs = message.stale ? message.sinceMs : undefined;
        break;
      case 'response':
        break;
    }
  }

  #onEmitted(entry: DatasetEntry, event: DatasetEmitted): void {
    this.#metrics.countEmitted(entry.name, event);
    if (event.type === 'swap') {
      this.#events.publish('swap', { dataset: entry.name, from: event.from, to: event.to });
    } else if (event.type === 'poll') {
      this.#events.publish('poll', {
        dataset: entry.name,
        result: event.result,
        currentSnapshotId: event.currentSnapshotId,
      });
    } else {
      this.#events.publish('error', {
        dataset: entry.name,
        code: event.error.code,
        message: event.error.message,
        snapshotId: event.snapshotId,
      });
    }
  }

  /** Whether anyone inspects the dataset: every machine, or this one. */
  #inspecting(entry: DatasetEntry): boolean {
    return this.#inspection.active || this.#focused.get(entry.name)?.active === true;
  }

  /** Tell a dataset thread whether anyone listens for `poll` events (it parks between checks only when nobody does). */
  #tellPollEvents(entry: DatasetEntry): void {
    const message: HostToDataset = { type: 'poll-events', on: this.#events.listenerCount('poll') > 0 };
    entry.port?.postMessage(message);
  }

  /** Tell a dataset thread whether anyone inspects it (it builds inspection events only then). */
  #tellInspecting(entry: DatasetEntry): void {
    const message: HostToDataset = { type: 'inspecting', on: this.#inspecting(entry) };
    entry.port?.postMessage(message);
  }

  // ---------------------------------------------------------------------------------------------
  // The embed API.
  // ---------------------------------------------------------------------------------------------

  datasets(): DatasetInfo[] {
    return [...this.#registry.entries()].map((entry) => this.#registry.info(entry));
  }

  status(name: string): DatasetInfo {
    return this.#registry.info(this.#registry.get(name));
  }

  ready(name?: string, options: { readonly timeoutMs?: number } = {}): Promise<void> {
    try {
      checkQueryOptions('ready', options, READY_RULES);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#registry.ready(name, options.timeoutMs ?? 30_000);
  }

  async query(
    sql: string,
    params: readonly QueryParam[] = [],
    options: QueryOptions = {},
  ): Promise<RuntimeQueryResult> {
    this.#admit('query', sql, options);
    return this.#holdToBound(await this.#front.query(sql, params, sharedSignal(options)), options);
  }

  async queryArrow(
    sql: string,
    params: readonly QueryParam[] = [],
    options: QueryOptions = {},
  ): Promise<RuntimeArrowResult> {
    this.#admit('queryArrow', sql, options);
    return this.#holdToBound(await this.#front.queryArrow(sql, params, sharedSignal(options)), options);
  }

  async queryStream(
    sql: string,
    params: readonly QueryParam[] = [],
    options: StreamOptions = {},
  ): Promise<RuntimeQueryStream> {
    this.#admit('queryStream', sql, options);
    // A stream is a JSON answer asked with no inline text: one path for both.
    return streamed(await this.#queryJson(sql, params, { ...options, inlineBytes: 0 }));
  }

  async queryJson(
    sql: string,
    params: readonly QueryParam[] = [],
    options: JsonOptions = {},
  ): Promise<RuntimeJsonAnswer> {
    this.#admit('queryJson', sql, options);
    return this.#queryJson(sql, params, options);
  }

  /** Refuses a query before it runs: the runtime closing, SQL that is not text, an unusable option (each by `method`). */
  #admit(method: string, sql: string, options: JsonOptions): void {
    if (this.#closing !== undefined) throw new RuntimeClosedError();
    checkSql(method, sql);
    checkQueryOptions(method, options);
  }

  async #queryJson(
    sql: string,
    params: readonly QueryParam[],
    options: JsonOptions,
  ): Promise<RuntimeJsonAnswer> {
    const answer = await this.#front.queryJson(sql, params, sharedSignal(options));
    try {
      return this.#holdToBound(answer, options);
    } catch (error) {
      if (!('json' in answer)) answer.cancel();
      throw error;
    }
  }

  /** `answer`, unless the client's staleness bound (`maxStalenessMs`) refuses a dataset it read. */
  #holdToBound<T extends QueryProvenance>(answer: T, options: QueryOptions): T {
    holdToStalenessBound(
      answer.datasets,
      options.maxStalenessMs,
      (name) => this.status(name),
      options.snapshots,
    );
    return answer;
  }

  on<K extends keyof RuntimeEvents>(event: K, listener: (payload: RuntimeEvents[K]) => void): () => void {
    return this.#events.subscribe(event, listener);
  }

  inspect(listener: (event: InspectionEvent) => void, options: InspectOptions = {}): () => void {
    if (options.dataset === undefined) return this.#inspection.add(listener);
    const entry = this.#registry.get(options.dataset);
    let hub = this.#focused.get(entry.name);
    if (hub === undefined) {
      hub = new InspectionHub(() => this.#tellInspecting(entry));
      this.#focused.set(entry.name, hub);
    }
    return hub.add(listener);
  }

  async send(name: string, command: DatasetCommand): Promise<void> {
    checkCommand(command);
    const entry = this.#registry.get(name);
    // A refused configuration never gets a machine: say why, as queries and ready() do.
    if (entry.state === 'failed') throw this.#registry.failure(entry);
    if (entry.rpc === undefined) throw new DatasetNotReadyError(name, entry.state);
    await entry.rpc.request<void>({ type: 'command', id: 0, command });
  }

  metrics(): RuntimeMetrics {
    const metrics = this.#metrics.snapshot();
    // Checks the coordinator made for parked datasets (no poll event): counted in the live slots.
    const polls = metrics.polls as Record<string, Record<string, number>>;
    for (const entry of this.#registry.entries()) {
      const unposted = entry.liveSlot === undefined ? 0 : (this.#live.read(entry.liveSlot)?.unposted ?? 0);
      if (unposted === 0) continue;
      const counts = polls[entry.name] ?? Object.fromEntries(POLL_RESULTS.map((result) => [result, 0]));
      counts.unchanged = (counts.unchanged ?? 0) + unposted;
      polls[entry.name] = counts;
    }
    return { ...metrics, resultsCache: this.#front.cacheCounters() };
  }

  resultVersion(
    sql: string,
    params: readonly QueryParam[] = [],
    options: Pick<QueryOptions, 'snapshots' | 'maxStalenessMs'> = {},
  ): string | undefined {
    checkQueryOptions('resultVersion', options, RESULT_VERSION_RULES);
    const now = this.#front.resultVersion(sql, params, options);
    if (now === undefined) return undefined;
    // A client told its copy is current (HTTP 304) is given it as the answer: the bound judges it as it would the rows.
    holdToStalenessBound(
      now.datasets.map((name) => ({ name })),
      options.maxStalenessMs,
      (name) => this.status(name),
    );
    return now.version;
  }

  async snapshots(name: string, options: SnapshotsOptions = {}): Promise<SnapshotListing> {
    if (this.#closing !== undefined) throw new RuntimeClosedError();
    const entry = this.#registry.get(name);
    if (entry.config === undefined) throw this.#registry.failure(entry);
    const limit = options.limit;
    if (limit !== undefined && !(Number.isSafeInteger(limit) && limit > 0)) {
      throw new RangeError(`snapshots('${name}'): limit must be a positive integer, got ${limit}.`);
    }
    const listing = await this.#coordinatorRpc.request<SnapshotListing>({
      type: 'snapshots',
      id: 0,
      dataset: name,
      ...(limit === undefined ? {} : { limit }),
    });
    const held = new Set(
      this.#catalog.held(entry.name, retentionOf(entry.config)).map((generation) => generation.snapshotId),
    );
    return {
      ...listing,
      snapshots: listing.snapshots.map((snapshot) => ({ ...snapshot, held: held.has(snapshot.snapshotId) })),
    };
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#staleness.close();
    this.#registry.close();
    this.#coordinatorSupervisor.close();
    try {
      await this.#coordinatorRpc.request<void>({ type: 'close', id: 0 });
    } catch (error) {
      this.#logger.warn(
        { component: 'runtime' },
        `Closing the coordinator thread failed: ${(error as Error).message}`,
      );
    }
    await this.#coordinator.terminate();
    for (const entry of this.#registry.entries()) {
      entry.rpc?.close('closed');
      entry.port?.close();
    }
    this.#front.close();
    await this.#queries.close(new RuntimeClosedError());
  }
}

const GIB = 2 ** 30;

/**
 * A dataset thread's heap: one machine and the metadata it last read. Stating an old-generation
 * limit (any size) settles a thread ~0.7 MiB smaller than Node's default, which sizes each worker
 * from the process's limit (9.2 → 8.5 MiB per idle thread, 100 threads, Node 20). Its young
 * generation is small (thread-limits.ts): V8's default let each grow to 32 MiB of new space.
 */
const DATASET_THREAD_LIMITS = {
  maxOldGenerationSizeMb: 256,
  maxYoungGenerationSizeMb: SMALL_THREAD_YOUNG_GENERATION_MB,
} as const;

/**
 * Queries admitted at once per core, by default (`maxQueriesInFlight`). Past what the engines run
 * at once (about one a core) an admitted query waits in a pool's queue, and its answer then waits
 * for the host: the bound is the queue a client may join. 64 a core keeps the last admitted heavy
 * query's wait well inside the 30 s query timeout (B15: at 512 on two cores, 2 000 heavy queries
 * at once left some admitted ones to time out, 504, while the host's backlog of answers delayed
 * probes and refusals by seconds); a light query (a point lookup, well under a millisecond of
 * engine time) never queues that deep.
 */
const DEFAULT_QUERIES_PER_CORE = 64;

/**
 * The query service's settings and their defaults: the DuckDB workers share half of the machine's
 * memory and all of its cores; each instance may spill 4 GiB into `<dataDir>/.query/tmp/`; the
 * namespaces reach only the generation directories (`.generations/`, or `.ferry-generations/`
 * beside a live file outside the data directory).
 */
function queryServiceOptions(
  options: RuntimeOptions,
  config: SpicepodConfig,
  datasets: readonly DatasetConfig[],
  baseDir: string,
  dataDir: string,
  logger: Logger,
): QueryServiceOptions {
  const workers = Math.max(1, options.duckdbQueryThreads ?? 1);
  const queryTimeoutMs = options.queryTimeoutMs ?? config.queryTimeoutMs ?? 30_000;
  const niceness = queryThreadNiceness(options);
  const resourceLimits = options.queryWorkerResourceLimits ?? {
    maxOldGenerationSizeMb: 2048,
    maxYoungGenerationSizeMb: QUERY_THREAD_YOUNG_GENERATION_MB,
  };
  const queryDir = join(dataDir, '.query');
  const tempRoot = join(queryDir, 'tmp');
  const mainPath = join(queryDir, 'main.sqlite');
  const livePaths = datasets.map((dataset) => livePathFor(dataset, baseDir, dataDir));
  const roots = [
    ...new Set([generationsRoot(dataDir), ...livePaths.map((path) => generationsRootFor(path, dataDir))]),
  ];
  const privateRoots = [...new Set([dataDir, ...livePaths.map((path) => dirname(path))])];
  const memoryLimitBytes = byteSize(
    options.queryMemoryLimit,
    Math.max(256 * 2 ** 20, Math.floor(totalmem() / 2 / workers)),
  );
  const defaultInFlight = DEFAULT_QUERIES_PER_CORE * availableParallelism();
  const maxQueriesInFlight = options.maxQueriesInFlight ?? config.maxQueriesInFlight ?? defaultInFlight;
  const duckdb = (index: number): DuckDbNamespaceOptions => ({
    allowedDirectories: roots.map((root) => `${root}/`),
    tempDirectory: join(tempRoot, `duckdb-${index}`),
    maxTempBytes: byteSize(options.queryTempDirectorySize, 4 * GIB),
    memoryLimitBytes,
    threads: Math.max(1, options.queryThreads ?? Math.floor(availableParallelism() / workers)),
    settings: { memory: 'queryMemoryLimit', threads: 'queryThreads', temp: 'queryTempDirectorySize' },
    crossEngine: {
      maxRows: options.crossEngineMaxRows ?? 1_000_000,
      maxBytes: options.crossEngineMaxBytes ?? 256 * 2 ** 20,
    },
    privateRoots,
    // As many queries at once as are admitted (admission bounds them all): a connection is held
    // for the whole query, hops included, and with the engines' default of 8 B9's cheap load (64
    // clients) served 0.86–0.90× a plain server, against 0.98–1.14× with 64 or more (six runs;
    // 2 and 4 were worse still: bench/RESULTS.md).
    // (Admission off, 0: as many as its default would admit.)
    connections: maxQueriesInFlight > 0 ? maxQueriesInFlight : defaultInFlight,
  });
  return {
    queryTimeoutMs,
    maxResultRows: options.maxResultRows ?? 100_000,
    maxResultBytes: options.maxResultBytes ?? 64 * 2 ** 20,
    maxStreamBytes: options.maxStreamBytes ?? 16 * GIB,
    streamIdleTimeoutMs: options.streamIdleTimeoutMs ?? config.streamIdleTimeoutMs ?? 60_000,
    maxQueriesInFlight,
    duckdbPool: { workers, namespace: duckdb, logger, niceness, resourceLimits },
    sqlitePool: {
      maxThreads: options.sqliteReadThreads ?? availableParallelism(),
      queryTimeoutMs,
      workerData: { mainPath, privateRoots, tempDirectory: join(tempRoot, 'sqlite'), niceness },
      resourceLimits,
    },
    prepare: async () => {
      // Temporary files of an earlier run are garbage; every worker spills into a directory of its own.
      await rm(tempRoot, { recursive: true, force: true });
      for (let index = 0; index < workers; index++) {
        await mkdir(join(tempRoot, `duckdb-${index}`), { recursive: true });
      }
      await mkdir(join(tempRoot, 'sqlite'), { recursive: true });
      await writeFile(mainPath, '', { flag: 'a' });
    },
  };
}
