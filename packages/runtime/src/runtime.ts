/**
 * The host side of Ferry: `createRuntime()` loads a spicepod, starts the coordinator thread (which
 * starts one thread per dataset), and offers the embed API. Queries go from here straight to a
 * dataset's thread over its own MessagePort (DuckDB), or to the SQLite read pool with the dataset's
 * current file generation — never through the coordinator.
 */
import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { basename, dirname, resolve } from 'node:path';
import type { MessagePort } from 'node:worker_threads';
import { Worker } from 'node:worker_threads';
import type {
  ConfigIssue,
  DatasetConfig,
  DatasetEmitted,
  DatasetStatus,
  JsonValue,
  PollResult,
  QueryResult,
} from '@ferry/core';
import { ConfigError, deserializeError, loadSpicepod, throwIfFatal } from '@ferry/core';
import { assertReadOnlySql } from '@ferry/engines';
import type {
  BootstrapMetrics,
  DatasetCommand,
  DatasetInfo,
  InspectionEvent,
  QueryOptions,
  Runtime,
  RuntimeEvents,
  RuntimeMetrics,
  RuntimeOptions,
  RuntimeQueryResult,
  SnapshotListing,
  SnapshotsOptions,
} from './api.js';
import {
  DatasetFailedError,
  DatasetNotReadyError,
  ReadyTimeoutError,
  ResultTooLargeError,
  RuntimeClosedError,
  UnknownDatasetError,
} from './errors.js';
import { defaultLogger, type Logger, writeLog } from './logging.js';
import type {
  CoordinatorToHost,
  CoordinatorWorkerData,
  DatasetDescriptor,
  DatasetToHost,
  HostToCoordinator,
  HostToDataset,
  SqliteGeneration,
} from './protocol.js';
import { routeQuery } from './query-router.js';
import { RpcClient } from './rpc.js';
import { SqliteReadPool } from './sqlite-read-pool.js';
import { threadFile } from './thread-files.js';

/** Statements whose guard + routing outcome is remembered (see `#plan`), and the longest one. */
const PLAN_CACHE_ENTRIES = 1_024;
const PLAN_CACHE_MAX_SQL = 4_096;

/** A spicepod given inline: YAML (or JSON) text, or the parsed object. */
export interface SpicepodSource {
  readonly yaml?: string;
  readonly object?: unknown;
  /** Used in messages; default `spicepod.yaml`. */
  readonly file?: string;
  /** Relative file params and the default data dir resolve against it; default: the working directory. */
  readonly baseDir?: string;
}

type Listener<K extends keyof RuntimeEvents> = (payload: RuntimeEvents[K]) => void;

interface DatasetEntry {
  readonly name: string;
  readonly config: DatasetConfig | undefined;
  descriptor: DatasetDescriptor | undefined;
  port: MessagePort | undefined;
  rpc: RpcClient<HostToDataset> | undefined;
  status: DatasetStatus | undefined;
  state: DatasetInfo['state'];
  error: string | undefined;
  sqlite: SqliteGeneration | null;
}

/** Every poll result, in the order `/metrics` lists them. */
export const POLL_RESULTS: readonly PollResult[] = [
  'unchanged',
  'newer',
  'same',
  'older',
  'refused',
  'failed',
  'waiting',
];

async function loadSource(
  source: string | SpicepodSource,
  env: Readonly<Record<string, string | undefined>>,
) {
  if (typeof source === 'string') {
    const path = resolve(source);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      throw new ConfigError(
        source,
        [
          {
            path: '',
            message: `${source}: cannot read the spicepod (${(error as Error).message}); pass the path of a spicepod.yaml.`,
            fatal: true,
          },
        ],
        { cause: error },
      );
    }
    return { load: loadSpicepod(text, { file: basename(path), env }), baseDir: dirname(path) };
  }
  const text = source.yaml ?? JSON.stringify(source.object ?? {});
  return {
    load: loadSpicepod(text, { file: source.file ?? 'spicepod.yaml', env }),
    baseDir: resolve(source.baseDir ?? '.'),
  };
}

/** Starts a runtime for a spicepod (a path, or inline YAML / object). Resolves once threads are starting. */
export async function createRuntime(
  source: string | SpicepodSource,
  options: RuntimeOptions = {},
): Promise<Runtime> {
  const env = options.env ?? process.env;
  const logger = options.logger ?? defaultLogger(options.logLevel);
  const { load, baseDir } = await loadSource(source, env);
  const config = throwIfFatal(load);
  for (const issue of load.warnings) {
    logger.warn({ component: 'config', path: issue.path }, issue.message);
  }
  for (const issue of load.errors) {
    logger.error(
      {
        component: 'config',
        path: issue.path,
        ...(issue.dataset === undefined ? {} : { dataset: issue.dataset }),
      },
      issue.message,
    );
  }
  return new HostRuntime(config, load.datasets, load.errors, load.warnings, baseDir, logger, options);
}

class HostRuntime implements Runtime {
  readonly config: Runtime['config'];
  readonly configErrors: readonly ConfigIssue[];
  readonly configWarnings: readonly ConfigIssue[];
  readonly #logger: Logger;
  readonly #options: RuntimeOptions;
  readonly #entries = new Map<string, DatasetEntry>();
  readonly #listeners = new Map<keyof RuntimeEvents, Set<(payload: never) => void>>();
  readonly #inspectors = new Set<(event: InspectionEvent) => void>();
  readonly #stateWaiters = new Set<() => void>();
  readonly #coordinator: Worker;
  readonly #coordinatorRpc: RpcClient<HostToCoordinator>;
  readonly #queryTimeoutMs: number;
  readonly #maxRows: number;
  #pool: SqliteReadPool | undefined;
  readonly #plans = new Map<string, string>();
  #sqliteGenerations = 0;
  #closing: Promise<void> | undefined;
  readonly #metrics = {
    swaps: {} as Record<string, number>,
    polls: {} as Record<string, Record<PollResult, number>>,
    downloadedBytes: 0,
    downloadSeconds: 0,
    sqsMessages: { received: 0, deleted: 0, left: 0 },
    bootstraps: {} as Record<string, BootstrapMetrics>,
    failures: {} as Record<string, number>,
  };

  constructor(
    config: Runtime['config'],
    datasets: readonly DatasetConfig[],
    errors: readonly ConfigIssue[],
    warnings: readonly ConfigIssue[],
    baseDir: string,
    logger: Logger,
    options: RuntimeOptions,
  ) {
    this.config = config;
    this.configErrors = errors;
    this.configWarnings = warnings;
    this.#logger = logger;
    this.#options = options;
    this.#queryTimeoutMs = options.queryTimeoutMs ?? 30_000;
    this.#maxRows = options.maxResultRows ?? 100_000;
    for (const dataset of datasets) this.#addEntry(dataset.name, dataset, undefined);
    for (const issue of errors) {
      if (issue.dataset !== undefined && !this.#entries.has(issue.dataset)) {
        this.#addEntry(issue.dataset, undefined, issue.message);
      }
    }
    const workerData: CoordinatorWorkerData = {
      config,
      datasets,
      baseDir,
      dataDir: resolve(baseDir, options.dataDir ?? '.ferry/data'),
      queryTimeoutMs: this.#queryTimeoutMs,
      maxResultRows: this.#maxRows,
      metadataWindowMs: options.metadataWindowMs ?? 2_000,
      restartBackoffMs: options.restartBackoffMs ?? [1_000, 2_000, 5_000, 10_000, 30_000],
      stopTimeoutMs: 10_000,
      ...(options.datasetResourceLimits === undefined
        ? {}
        : { datasetResourceLimits: options.datasetResourceLimits }),
      ...(options.notifications === undefined ? {} : { notificationOptions: options.notifications }),
    };
    this.#coordinator = new Worker(threadFile('coordinator-thread'), { workerData });
    this.#coordinatorRpc = new RpcClient(this.#coordinator, 'The coordinator thread');
    this.#coordinator.on('message', (message: CoordinatorToHost) => this.#onCoordinator(message));
    this.#coordinator.on('error', (error) => {
      logger.error({ component: 'runtime', err: error }, `The coordinator thread failed: ${error.message}`);
    });
    this.#coordinator.on('exit', () => {
      this.#coordinatorRpc.close('exited');
      for (const entry of this.#entries.values()) entry.rpc?.close('exited');
    });
  }

  #addEntry(name: string, config: DatasetConfig | undefined, error: string | undefined): void {
    this.#entries.set(name, {
      name,
      config,
      descriptor: undefined,
      port: undefined,
      rpc: undefined,
      status: undefined,
      state: config === undefined ? 'failed' : 'starting',
      error,
      sqlite: null,
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Messages from the threads.
  // ---------------------------------------------------------------------------------------------

  #onCoordinator(message: CoordinatorToHost): void {
    if (this.#coordinatorRpc.handle(message)) return;
    switch (message.type) {
      case 'dataset-started': {
        const entry = this.#entries.get(message.dataset.name);
        if (entry === undefined) return;
        entry.port?.close();
        entry.descriptor = message.dataset;
        entry.port = message.port;
        const rpc = new RpcClient<HostToDataset>(message.port, `Dataset thread of '${entry.name}'`);
        entry.rpc = rpc;
        message.port.on('message', (event: DatasetToHost) => {
          if (!rpc.handle(event)) this.#onDataset(entry, event);
        });
        if (this.#inspectors.size === 0) this.#tellInspecting(entry);
        break;
      }
      case 'dataset-exited': {
        const entry = this.#entries.get(message.dataset);
        if (entry === undefined) return;
        entry.rpc?.close('exited');
        entry.port?.close();
        entry.port = undefined;
        entry.rpc = undefined;
        entry.sqlite = null;
        entry.error = message.error?.message ?? `thread exited with code ${message.exitCode}`;
        this.#setState(entry, 'restarting', entry.status);
        break;
      }
      case 'log':
        writeLog(this.#logger, message.record);
        break;
      case 'notification-stats': {
        const counters = this.#metrics.sqsMessages;
        if (message.outcome === 'received') counters.received += message.count;
        else if (message.outcome === 'deleted') counters.deleted += message.count;
        else if (message.outcome === 'left') counters.left += message.count;
        this.#emit('notification', { outcome: message.outcome, count: message.count });
        break;
      }
    }
  }

  #onDataset(entry: DatasetEntry, message: DatasetToHost): void {
    switch (message.type) {
      case 'status-changed':
        entry.error = undefined;
        this.#setState(entry, message.status.state, message.status);
        for (const event of message.emitted) this.#onEmitted(entry, event);
        break;
      case 'inspect':
        for (const listener of this.#inspectors) listener(message.event);
        break;
      case 'log':
        writeLog(this.#logger, message.record);
        break;
      case 'sqlite-generation':
        // Numbered here, not by the thread: a restarted thread counts from 1 again, and the read
        // pool must still see every new file as newer than the one it has open.
        entry.sqlite =
          message.current === null ? null : { ...message.current, generation: ++this.#sqliteGenerations };
        break;
      case 'downloaded': {
        this.#metrics.downloadedBytes += message.bytes;
        this.#metrics.downloadSeconds += message.seconds;
        // Downloaded while nothing is served: this thread is bootstrapping from the store.
        if (entry.status?.servingSnapshotId == null) {
          const earlier = this.#metrics.bootstraps[entry.name]?.durationMs ?? 0;
          this.#metrics.bootstraps[entry.name] = {
            durationMs: earlier + message.seconds * 1000,
            bytes: message.bytes,
            checksum: message.checksum,
            snapshotId: message.snapshotId,
          };
        }
        break;
      }
      case 'response':
        break;
    }
  }

  #onEmitted(entry: DatasetEntry, event: DatasetEmitted): void {
    if (event.type === 'swap') {
      this.#metrics.swaps[entry.name] = (this.#metrics.swaps[entry.name] ?? 0) + 1;
      this.#emit('swap', { dataset: entry.name, from: event.from, to: event.to });
    } else if (event.type === 'poll') {
      const polls =
        this.#metrics.polls[entry.name] ??
        (Object.fromEntries(POLL_RESULTS.map((result) => [result, 0])) as Record<PollResult, number>);
      polls[event.result]++;
      this.#metrics.polls[entry.name] = polls;
      this.#emit('poll', {
        dataset: entry.name,
        result: event.result,
        currentSnapshotId: event.currentSnapshotId,
      });
    } else {
      this.#metrics.failures[entry.name] = (this.#metrics.failures[entry.name] ?? 0) + 1;
      this.#emit('error', {
        dataset: entry.name,
        code: event.error.code,
        message: event.error.message,
        snapshotId: event.snapshotId,
      });
    }
  }

  #setState(entry: DatasetEntry, state: DatasetInfo['state'], status: DatasetStatus | undefined): void {
    const changed = entry.state !== state;
    entry.state = state;
    entry.status = status;
    if (changed) this.#emit('state', { dataset: entry.name, state, status });
    for (const waiter of [...this.#stateWaiters]) waiter();
  }

  #emit<K extends keyof RuntimeEvents>(event: K, payload: RuntimeEvents[K]): void {
    for (const listener of this.#listeners.get(event) ?? []) (listener as Listener<K>)(payload);
  }

  // ---------------------------------------------------------------------------------------------
  // The embed API.
  // ---------------------------------------------------------------------------------------------

  #entry(name: string): DatasetEntry {
    const entry = this.#entries.get(name);
    if (entry === undefined) throw new UnknownDatasetError(name, [...this.#entries.keys()]);
    return entry;
  }

  #info(entry: DatasetEntry): DatasetInfo {
    return {
      name: entry.name,
      engine: entry.config?.engine ?? entry.descriptor?.engine,
      state: entry.state,
      status: entry.status,
      error: entry.error,
      ...(entry.config === undefined ? {} : { from: entry.config.from }),
    };
  }

  datasets(): DatasetInfo[] {
    return [...this.#entries.values()].map((entry) => this.#info(entry));
  }

  status(name: string): DatasetInfo {
    return this.#info(this.#entry(name));
  }

  #serving(entry: DatasetEntry): boolean {
    return entry.status?.servingSnapshotId != null && entry.state !== 'restarting' && entry.rpc !== undefined;
  }

  ready(name?: string, options: { readonly timeoutMs?: number } = {}): Promise<void> {
    if (this.#closing !== undefined) return Promise.reject(new RuntimeClosedError());
    const timeoutMs = options.timeoutMs ?? 30_000;
    let entries: DatasetEntry[];
    try {
      entries = name === undefined ? [...this.#entries.values()] : [this.#entry(name)];
    } catch (error) {
      return Promise.reject(error);
    }
    const failed = entries.find((entry) => entry.state === 'failed');
    if (failed !== undefined)
      return Promise.reject(
        new DatasetFailedError(failed.name, failed.error ?? 'its configuration was refused'),
      );
    return new Promise<void>((resolvePromise, reject) => {
      const check = (): void => {
        if (this.#closing !== undefined) {
          finish();
          reject(new RuntimeClosedError());
        } else if (entries.every((entry) => this.#serving(entry))) {
          finish();
          resolvePromise();
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(
          new ReadyTimeoutError(
            entries.filter((entry) => !this.#serving(entry)).map((entry) => entry.name),
            timeoutMs,
          ),
        );
      }, timeoutMs);
      const finish = (): void => {
        clearTimeout(timer);
        this.#stateWaiters.delete(check);
      };
      this.#stateWaiters.add(check);
      check();
    });
  }

  async query(
    sql: string,
    params: readonly JsonValue[] = [],
    options: QueryOptions = {},
  ): Promise<RuntimeQueryResult> {
    if (this.#closing !== undefined) throw new RuntimeClosedError();
    const name = this.#plan(sql);
    const entry = this.#entry(name);
    if (entry.state === 'failed')
      throw new DatasetFailedError(name, entry.error ?? 'its configuration was refused');
    if (!this.#serving(entry)) {
      if (options.waitForReady !== true) throw new DatasetNotReadyError(name, entry.state);
      await this.ready(name, { timeoutMs: options.readyTimeoutMs ?? 30_000 });
    }
    const snapshotId = entry.status?.servingSnapshotId ?? null;
    // SQLite files are read by the host's pool; a dataset thread answers only for DuckDB.
    const sqlite = entry.sqlite;
    const result =
      sqlite !== null
        ? await this.#querySqlite(name, sqlite, sql, params)
        : await this.#queryThread(entry, sql, params);
    return { ...result, dataset: name, snapshotId, engine: sqlite !== null ? 'sqlite' : 'duckdb' };
  }

  /**
   * The SQL guard and the routing, once per distinct statement: both depend only on the text (and
   * the fixed dataset names), and an application sends the same statements with new parameters.
   * Refusals are not remembered (they are rare and must keep their message).
   */
  #plan(sql: string): string {
    const known = this.#plans.get(sql);
    if (known !== undefined) return known;
    assertReadOnlySql(sql);
    const name = routeQuery(sql, [...this.#entries.keys()]);
    if (sql.length <= PLAN_CACHE_MAX_SQL) {
      if (this.#plans.size >= PLAN_CACHE_ENTRIES) this.#plans.clear();
      this.#plans.set(sql, name);
    }
    return name;
  }

  async #queryThread(entry: DatasetEntry, sql: string, params: readonly JsonValue[]): Promise<QueryResult> {
    const rpc = entry.rpc;
    if (rpc === undefined) throw new DatasetNotReadyError(entry.name, entry.state);
    return rpc.request<QueryResult>({ type: 'query', id: 0, sql, params });
  }

  async #querySqlite(
    name: string,
    generation: SqliteGeneration,
    sql: string,
    params: readonly JsonValue[],
  ): Promise<QueryResult> {
    this.#pool ??= new SqliteReadPool({
      filename: threadFile('sqlite-read-task').href,
      maxThreads: this.#options.sqliteReadThreads ?? availableParallelism(),
      queryTimeoutMs: this.#queryTimeoutMs,
    });
    const result = await this.#pool.run(name, {
      path: generation.path,
      generation: generation.generation,
      sql,
      params,
      maxRows: this.#maxRows,
    });
    if ('error' in result) throw deserializeError(result.error);
    if ('tooLarge' in result) throw new ResultTooLargeError(name, this.#maxRows);
    return result;
  }

  on<K extends keyof RuntimeEvents>(event: K, listener: Listener<K>): () => void {
    let set = this.#listeners.get(event);
    if (set === undefined) {
      set = new Set();
      this.#listeners.set(event, set);
    }
    set.add(listener as (payload: never) => void);
    return () => set.delete(listener as (payload: never) => void);
  }

  inspect(listener: (event: InspectionEvent) => void): () => void {
    const first = this.#inspectors.size === 0;
    this.#inspectors.add(listener);
    if (first) for (const entry of this.#entries.values()) this.#tellInspecting(entry);
    return () => {
      if (this.#inspectors.delete(listener) && this.#inspectors.size === 0)
        for (const entry of this.#entries.values()) this.#tellInspecting(entry);
    };
  }

  /** Tell a dataset thread whether anyone inspects (it builds inspection events only then). */
  #tellInspecting(entry: DatasetEntry): void {
    const message: HostToDataset = { type: 'inspecting', on: this.#inspectors.size > 0 };
    entry.port?.postMessage(message);
  }

  async send(name: string, command: DatasetCommand): Promise<void> {
    const entry = this.#entry(name);
    if (entry.rpc === undefined) throw new DatasetNotReadyError(name, entry.state);
    await entry.rpc.request<void>({ type: 'command', id: 0, command });
  }

  metrics(): RuntimeMetrics {
    return structuredClone(this.#metrics);
  }

  async snapshots(name: string, options: SnapshotsOptions = {}): Promise<SnapshotListing> {
    if (this.#closing !== undefined) throw new RuntimeClosedError();
    const entry = this.#entry(name);
    if (entry.config === undefined) {
      throw new DatasetFailedError(name, entry.error ?? 'its configuration was refused');
    }
    const limit = options.limit;
    if (limit !== undefined && !(Number.isSafeInteger(limit) && limit > 0)) {
      throw new RangeError(`snapshots('${name}'): limit must be a positive integer, got ${limit}.`);
    }
    return this.#coordinatorRpc.request<SnapshotListing>({
      type: 'snapshots',
      id: 0,
      dataset: name,
      ...(limit === undefined ? {} : { limit }),
    });
  }

  /** For tests and operators: how many GETs of metadata.json the coordinator has made. */
  metadataGets(): Promise<number> {
    return this.#coordinatorRpc.request<number>({ type: 'metadata-gets', id: 0 });
  }

  /** For supervision tests: kill a dataset's thread as a crash would. */
  async terminateDatasetThread(name: string): Promise<void> {
    this.#entry(name);
    await this.#coordinatorRpc.request<void>({ type: 'terminate-dataset', id: 0, dataset: name });
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    for (const waiter of [...this.#stateWaiters]) waiter();
    try {
      await this.#coordinatorRpc.request<void>({ type: 'close', id: 0 });
    } catch (error) {
      this.#logger.warn(
        { component: 'runtime' },
        `Closing the coordinator thread failed: ${(error as Error).message}`,
      );
    }
    await this.#coordinator.terminate();
    for (const entry of this.#entries.values()) {
      entry.rpc?.close('closed');
      entry.port?.close();
    }
    await this.#pool?.close(new RuntimeClosedError());
  }
}
