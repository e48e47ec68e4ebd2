/**
 * The embed API's types: what `createRuntime()` returns and takes. An app embeds Ferry through
 * these; the CLI's HTTP server and the inspector are built on exactly the same surface.
 */

import type { ResourceLimits } from 'node:worker_threads';
import type {
  ConfigIssue,
  DatasetStatus,
  FileFormat,
  JsonValue,
  PollResult,
  QueryResult,
  SnapshotEntry,
  SpicepodConfig,
} from '@ferry/core';
import type { Logger, LogLevel } from './logging.js';
import type { DatasetCommand, InspectionEvent } from './protocol.js';

export type { DatasetCommand, InspectionEvent };

export interface RuntimeOptions {
  /** Where logs go; default: pino JSON lines on stdout at `logLevel`. */
  readonly logger?: Logger;
  readonly logLevel?: LogLevel;
  /**
   * Directory for live files of datasets without a `duckdb_file` / `sqlite_file` param.
   * Default: `.ferry/data` beside the spicepod (or in the working directory for an inline config).
   */
  readonly dataDir?: string;
  /** Environment for secret references and endpoint overrides; default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Per-query time limit; default 30 000 ms; 0 disables it. */
  readonly queryTimeoutMs?: number;
  /** Largest number of rows a query may return; default 100 000. */
  readonly maxResultRows?: number;
  /** Threads of the SQLite read pool; default: the number of cores. */
  readonly sqliteReadThreads?: number;
  /** Polls of one location within this many ms share one metadata.json read; default 2 000. */
  readonly metadataWindowMs?: number;
  /** Delays before restarting a dead dataset thread, by consecutive failure; default 1 s … 30 s. */
  readonly restartBackoffMs?: readonly number[];
  /** Memory limits of each dataset thread (an exceeded limit ends the thread, which is restarted). */
  readonly datasetResourceLimits?: ResourceLimits;
  /** SQS consumer tuning (visibility timeout default 300 s, long poll default 20 s). */
  readonly notifications?: {
    readonly visibilityTimeoutSeconds?: number;
    readonly waitTimeSeconds?: number;
    /** Scales the outage retry backoff (1 s … 30 s); tests shrink it. */
    readonly backoffScale?: number;
  };
}

export interface QueryOptions {
  /** Wait for a dataset that is not serving yet instead of failing fast; default false. */
  readonly waitForReady?: boolean;
  /** With `waitForReady`, how long to wait; default 30 000 ms. */
  readonly readyTimeoutMs?: number;
}

export interface RuntimeQueryResult extends QueryResult {
  /** The dataset (table) the query ran against. */
  readonly dataset: string;
  /** The snapshot the result was read from. */
  readonly snapshotId: number | null;
  /** The engine that ran it (`sqlite` for Turso files too): what `columns[].type` names are names of. */
  readonly engine: FileFormat;
}

export interface DatasetInfo {
  readonly name: string;
  /** Configured engine, or the one metadata.json names once read. */
  readonly engine: string | undefined;
  /** `failed` when the dataset's config was refused; `starting` before its thread reports. */
  readonly state: DatasetStatus['state'] | 'failed' | 'starting' | 'restarting';
  readonly status: DatasetStatus | undefined;
  /** Why the dataset cannot run (config error) or its thread died. */
  readonly error: string | undefined;
  /** The dataset's `from` as written in the spicepod; absent when its configuration was refused. */
  readonly from?: string;
}

export interface SwapEvent {
  readonly dataset: string;
  readonly from: number | null;
  readonly to: number;
}

export interface PollEvent {
  readonly dataset: string;
  readonly result: PollResult;
  readonly currentSnapshotId: number | null;
}

export interface ErrorEvent {
  readonly dataset: string;
  readonly code: string;
  readonly message: string;
  readonly snapshotId: number | null;
}

export interface StateEvent {
  readonly dataset: string;
  readonly state: DatasetInfo['state'];
  readonly status: DatasetStatus | undefined;
}

export interface NotificationEvent {
  /** `received`, `deleted`, `left` (kept on the queue) or `unparseable`. */
  readonly outcome: 'received' | 'deleted' | 'left' | 'unparseable';
  readonly count: number;
}

export interface RuntimeEvents {
  readonly swap: SwapEvent;
  readonly poll: PollEvent;
  readonly error: ErrorEvent;
  readonly state: StateEvent;
  readonly notification: NotificationEvent;
}

/**
 * A dataset's bootstraps: snapshots it downloaded (and validated) while it served nothing, i.e.
 * at the start of a dataset thread that had no usable live file.
 */
export interface BootstrapMetrics {
  /** Milliseconds spent downloading and validating bootstrap snapshots, summed over thread starts. */
  readonly durationMs: number;
  /** `snapshot-size` of the last bootstrap snapshot. */
  readonly bytes: number;
  /** `snapshot-checksum` (SHA-256, hex) of the last bootstrap snapshot. */
  readonly checksum: string;
  readonly snapshotId: number;
}

/** Counters kept by the host for `/metrics`. */
export interface RuntimeMetrics {
  readonly swaps: Readonly<Record<string, number>>;
  readonly polls: Readonly<Record<string, Readonly<Record<PollResult, number>>>>;
  readonly downloadedBytes: number;
  readonly downloadSeconds: number;
  readonly sqsMessages: { readonly received: number; readonly deleted: number; readonly left: number };
  /** Per dataset, once it bootstrapped from the store. */
  readonly bootstraps: Readonly<Record<string, BootstrapMetrics>>;
  /** Per dataset: the snapshot failures its machine reported (each `error` event). */
  readonly failures: Readonly<Record<string, number>>;
}

/** One `snapshots[]` entry of a dataset's metadata.json (as parsed), checked against the store. */
export interface SnapshotInfo extends SnapshotEntry {
  /** The entry `current-snapshot-id` names. */
  readonly isCurrent: boolean;
  /** The object's size as a HEAD found it; null when it is missing or its URI lies outside the location. */
  readonly storedSize: number | null;
  /** The object exists with the recorded `size` (a HEAD, not a download: the checksum is not recomputed). */
  readonly verified: boolean;
}

/** What `runtime.snapshots()` answers: a dataset's snapshots as the store records them now. */
export interface SnapshotListing {
  readonly dataset: string;
  /** The location recorded in metadata.json (the configured one when there is no metadata.json). */
  readonly location: string;
  /** `last-updated-ms` of metadata.json; null when the location has no metadata.json yet. */
  readonly lastUpdatedMs: number | null;
  /** The dataset entry's `engine`, when recorded. */
  readonly engine?: string;
  readonly currentSnapshotId?: number;
  /** In recorded order (oldest first); only the last `limit` entries when a limit was given. */
  readonly snapshots: readonly SnapshotInfo[];
}

export interface SnapshotsOptions {
  /** Keep only the last `limit` entries (a positive integer); default: all. */
  readonly limit?: number;
}

export interface Runtime {
  /** The loaded configuration (secrets included: never log it whole). */
  readonly config: SpicepodConfig;
  /** Config errors of datasets that were refused (others run) and warnings. */
  readonly configErrors: readonly ConfigIssue[];
  readonly configWarnings: readonly ConfigIssue[];
  /** Runs one read-only statement against the dataset it names as a table. */
  query(sql: string, params?: readonly JsonValue[], options?: QueryOptions): Promise<RuntimeQueryResult>;
  datasets(): DatasetInfo[];
  /** The dataset's machine status; throws `ERR_UNKNOWN_DATASET` for a name not configured. */
  status(name: string): DatasetInfo;
  /** Resolves when the dataset (or every dataset) serves; rejects after `timeoutMs`. */
  ready(name?: string, options?: { readonly timeoutMs?: number }): Promise<void>;
  on<K extends keyof RuntimeEvents>(event: K, listener: (payload: RuntimeEvents[K]) => void): () => void;
  inspect(listener: (event: InspectionEvent) => void): () => void;
  send(name: string, command: DatasetCommand): Promise<void>;
  metrics(): RuntimeMetrics;
  /**
   * The dataset's snapshots: a fresh (conditional) read of its location's metadata.json by the
   * coordinator's shared reader, then one HEAD per listed entry through the coordinator's store for
   * that location. Throws `ERR_UNKNOWN_DATASET` for a name not configured, `ERR_DATASET_FAILED`
   * for a dataset whose configuration was refused, and the store's or the metadata's error when
   * the read fails.
   */
  snapshots(name: string, options?: SnapshotsOptions): Promise<SnapshotListing>;
  /** Stops polling, drains queries, closes engines and ends every thread; harmless to call twice. */
  close(): Promise<void>;
}
