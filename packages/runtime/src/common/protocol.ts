/**
 * The wire protocol between Ferry's threads: one discriminated union per direction of each channel,
 * with request ids (`id`) answered by {@link RpcResponse}s. Everything here is structured-clone
 * data: no functions, no class instances, no engine handles. Types only: a dataset thread imports
 * this module, and nothing here may load code.
 *
 *   host  <-> coordinator   the coordinator Worker
 *   host  <-> dataset       a MessagePort per dataset thread (status, commands, generations)
 *   coordinator <-> dataset the dataset Worker (metadata reads, snapshot tasks, announcements, stop)
 *   coordinator -> pool     snapshot tasks (piscina), relayed for the dataset threads
 *
 * The messages only tests send (crash drills) are not here: see `test-hooks.ts`.
 */
import type { MessagePort, ResourceLimits } from 'node:worker_threads';
import type {
  ArrowSchema,
  DatasetConfig,
  DatasetEmitted,
  DatasetMetadata,
  DatasetStatus,
  EngineName,
  FileFormat,
  Freshness,
  HeartbeatStatement,
  JsonValue,
  ObjectInfo,
  ReadMetadataOutput,
  S3Settings,
  SchemaEntry,
  SerializedError,
  SignedEnvelope,
  SnapshotEntry,
  SpicepodConfig,
} from '@ferry/core/base';
import type { Authenticated, LocalSnapshot, SnapshotTransfer } from '@ferry/snapshots';
import type { NotificationEvent, RuntimeOptions } from '../api.js';
import type { LogLevel, LogRecord } from './logging.js';
import type { RpcResponse } from './rpc.js';

/** Operator commands a dataset machine accepts from the host (inspector, CLI, embed API). */
export const DATASET_COMMANDS = ['poll.now', 'polling.pause', 'polling.resume'] as const;
export type DatasetCommand = (typeof DATASET_COMMANDS)[number];

/** A plain-JSON inspection event, tagged with its dataset (see the inspector). */
export interface InspectionEvent {
  readonly dataset: string;
  /** `@xstate.snapshot`, `@xstate.microstep`, `@xstate.event`, `@xstate.actor` or `@xstate.action`. */
  readonly type: string;
  readonly sessionId: string;
  readonly atMs: number;
  readonly event?: JsonValue;
  /** Session id of the actor that sent `event`, when one did. */
  readonly source?: string;
  /** The machine's state name (`serving`, …) and full state value, on snapshots and microsteps of the root actor. */
  readonly state?: string;
  readonly value?: JsonValue;
  readonly status?: DatasetStatus;
  readonly action?: JsonValue;
  /** On `@xstate.actor`: this is the dataset's machine (not one of its invoked actors). */
  readonly root?: boolean;
}

// ---------------------------------------------------------------------------------------------
// host <-> dataset (a MessagePort per dataset thread)
// ---------------------------------------------------------------------------------------------

export type HostToDataset =
  | { readonly type: 'command'; readonly id: number; readonly command: DatasetCommand }
  /** Whether anyone inspects: a thread builds and posts inspection events only then (default on). */
  | { readonly type: 'inspecting'; readonly on: boolean }
  /** Whether anyone listens for `poll` events: a dataset parks between checks only when nobody does (default on). */
  | { readonly type: 'poll-events'; readonly on: boolean };

/**
 * A generation a dataset thread serves: a link to the live file of one snapshot (a file that
 * never changes), what it holds, and in which file format. The host numbers generations.
 */
export interface AnnouncedGeneration {
  readonly path: string;
  readonly snapshotId: number;
  readonly engine: FileFormat;
  readonly schema: ArrowSchema;
}

export type DatasetToHost =
  | RpcResponse
  /** The machine's status after a transition, with the events (swap, poll, error) it emitted. */
  | {
      readonly type: 'status-changed';
      readonly status: DatasetStatus;
      readonly emitted: readonly DatasetEmitted[];
    }
  | { readonly type: 'inspect'; readonly event: InspectionEvent }
  | { readonly type: 'log'; readonly record: LogRecord }
  /** The generation queries read from now on (`null`: none; the dataset serves nothing). */
  | { readonly type: 'generation'; readonly current: AnnouncedGeneration | null }
  /**
   * A snapshot downloaded (`bytes` fetched from the store; `reusedBytes` copied from the live file
   * by a delta download), before it is verified and swapped in.
   */
  | {
      readonly type: 'downloaded';
      readonly bytes: number;
      readonly reusedBytes: number;
      readonly seconds: number;
      readonly snapshotId: number;
      readonly checksum: string;
    }
  /** The dataset's freshness changed (trusted keys only): stale with the reason and since when, or fresh again. */
  | ({ readonly type: 'freshness' } & Freshness);

// ---------------------------------------------------------------------------------------------
// coordinator <-> dataset (the dataset Worker)
// ---------------------------------------------------------------------------------------------

export interface DatasetWorkerData {
  readonly dataset: DatasetConfig;
  /** Absolute live file path. */
  readonly livePath: string;
  readonly hostPort: MessagePort;
  /** The build this thread's host was made from (see `thread-files.ts`): a thread of another build refuses to start. */
  readonly buildId: string;
  /** Clock phase shared by every dataset of the process, so shared locations poll together. */
  readonly pollPhaseMs: number;
  /** The dataset's generation directory (`generationDirFor`): its links of the live file. */
  readonly generationDir: string;
  /** The lowest level of log record the host's logger writes (the thread posts no others); default debug. */
  readonly logLevel?: LogLevel;
  /**
   * The host's `LiveStatus` and this dataset's slot. With it, a serving dataset parks between
   * checks: the coordinator makes its scheduled checks and writes them there, and wakes it only when
   * metadata.json changed. Absent: every check is the dataset's own. `incarnation`: this thread's
   * start number for the dataset (+1 per restart), written in the slot with its checks.
   */
  readonly live?: { readonly buffer: SharedArrayBuffer; readonly slot: number; readonly incarnation: number };
}

export type DatasetToCoordinator =
  | RpcResponse
  /** `fresh`: a new read, not one shared within the reuse window (an operator's "poll now"). */
  | {
      readonly type: 'read-metadata';
      readonly id: number;
      readonly ifNoneMatch: string | undefined;
      readonly fresh: boolean;
    }
  /** The machine left `bootstrapping` for the first time (it serves, or waits): its bootstrap permit is free. */
  | { readonly type: 'bootstrapped' }
  /**
   * The dataset parks: its live slot is lent to the coordinator under `token`, which makes its
   * scheduled checks (the next due at `dueMs`, then every interval) while metadata.json is the
   * document of `etag`. `freshens`: an unchanged check moves the dataset's freshness.
   */
  | {
      readonly type: 'park';
      readonly token: number;
      readonly etag: string;
      readonly dueMs: number;
      readonly freshens: boolean;
    }
  /** A task for the snapshot pool; a load's port travels in the transfer list. */
  | { readonly type: 'snapshot-task'; readonly id: number; readonly task: SnapshotTask };

export type CoordinatorToDataset =
  | RpcResponse
  /**
   * The location's current snapshot id of the dataset moved (a notification). `reply`: the fresh
   * read that found it, which the check the announcement starts uses instead of asking again.
   */
  | { readonly type: 'announce'; readonly snapshotId: number; readonly reply?: MetadataReply | undefined }
  /** A check of the dataset parked under `token` found metadata.json changed (or unreadable): it checks for itself. */
  | { readonly type: 'poll.due'; readonly token: number }
  | { readonly type: 'stop'; readonly id: number };

/**
 * The reply to a dataset's metadata read, plus the location recorded inside metadata.json (for key
 * resolution).
 */
export type MetadataReply = ReadMetadataOutput & { readonly recordedLocation?: string };

// ---------------------------------------------------------------------------------------------
// snapshot tasks (dataset thread -> coordinator -> snapshot pool)
// ---------------------------------------------------------------------------------------------

/** Where a dataset's files are and how its store is reached: everything a pool task needs. */
export interface DatasetFiles {
  readonly dataset: string;
  /** The engine whose file format the snapshots have. */
  readonly engine: EngineName;
  readonly livePath: string;
  /** The dataset's own generation directory (see `generationDirFor`). */
  readonly generationDir: string;
  /** The configured location and its S3 settings: a pool worker keeps one store per (location, credentials). */
  readonly location: string;
  readonly s3?: S3Settings | undefined;
}

/** What a load reports on its port as it goes (the dataset's machine moves on at each). */
export type LoadProgress =
  | {
      readonly stage: 'downloaded';
      readonly transfer: SnapshotTransfer;
      readonly seconds: number;
    }
  | { readonly stage: 'verified' };

/** One task of a snapshot pool worker. */
export type SnapshotTask =
  /**
   * Removes stale generation links, matches the live file to its manifest, checks it and links it.
   * `trustedKeys` (PEM): the live file is restored only when the signature recorded with it
   * verifies with one of them and describes it.
   */
  | { readonly kind: 'restore'; readonly files: DatasetFiles; readonly trustedKeys?: readonly string[] }
  /**
   * A swap, as one task: downloads the entry (ranged, hashed as it arrives, fsynced), verifies it
   * (size, SHA-256, the table's real schema against `recorded`), commits it over the live path and
   * links the new generation. `port`: the worker posts {@link LoadProgress} on it; its first
   * message, or its closing (the dataset thread died), cancels the load before the commit starts.
   * A load that fails or is cancelled leaves no temporary file.
   */
  | {
      readonly kind: 'load';
      readonly files: DatasetFiles;
      readonly entry: SnapshotEntry;
      /** The candidate's recorded schema (of the same metadata read). */
      readonly recorded: SchemaEntry;
      /** The location metadata.json records, which the entry's URI is resolved against. */
      readonly recordedLocation: string;
      /** The object's HEAD, made beside the signature check (not repeated). */
      readonly head?: ObjectInfo | undefined;
      /** The signature that authenticated the entry, recorded in the live file's manifest. */
      readonly signature?: SignedEnvelope | undefined;
      readonly port: MessagePort;
    }
  /**
   * Checks a candidate's signature against the dataset's trusted keys (PEM) before it is
   * downloaded; refuses it with a signature rejection.
   */
  | {
      readonly kind: 'authenticate';
      readonly files: DatasetFiles;
      readonly dataset: DatasetMetadata;
      readonly entry: SnapshotEntry;
      readonly recordedLocation: string;
      readonly trustedKeys: readonly string[];
    }
  /** Reads and verifies the dataset's heartbeat statement. */
  | { readonly kind: 'heartbeat'; readonly files: DatasetFiles; readonly trustedKeys: readonly string[] }
  /**
   * Prunes the dataset's generations: all but those the retention holds and the newest few that
   * queries in flight may still attach, or (`null`, the start of a dataset whose engine is not known
   * yet) every one (links of an earlier run) and the temporary files an earlier run left beside the
   * live file.
   */
  | {
      readonly kind: 'prune';
      readonly files: DatasetFiles;
      readonly retention: {
        readonly retainSnapshots: number | undefined;
        readonly retainDiskBudgetBytes: number | undefined;
      } | null;
    }
  /** Closes the worker's warm checkers and stores (before the pool ends). */
  | { readonly kind: 'release' };

export type RestoreResult =
  | { readonly kind: 'none' }
  /** The manifest names the file, but its engine cannot read it (or its table and schema differ). */
  | { readonly kind: 'unreadable'; readonly error: string }
  /**
   * Not served (`error` says why): it was loaded from another location than the dataset's now, or,
   * with trusted keys, it was not authenticated by a key trusted now.
   */
  | { readonly kind: 'refused'; readonly snapshotId: number; readonly error: string }
  | { readonly kind: 'restored'; readonly snapshot: LocalSnapshot; readonly generation: string };

/** A load's answer: the snapshot now in the live file, and its generation link. */
export interface LoadResult {
  readonly snapshot: LocalSnapshot;
  readonly generation: string;
}

/** What each task kind answers. */
export interface SnapshotTaskResults {
  readonly restore: RestoreResult;
  readonly load: LoadResult;
  /** With the object's HEAD, made at the same time as the signature's GET (absent: not found). */
  readonly authenticate: Authenticated & { readonly head?: ObjectInfo | undefined };
  readonly heartbeat: HeartbeatStatement | { readonly problem: string };
  readonly prune: null;
  readonly release: null;
}

/** A task's answer as the pool worker posts it: errors serialised (piscina's own posting loses their fields). */
export type SnapshotTaskReply =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: SerializedError };

// ---------------------------------------------------------------------------------------------
// host <-> coordinator (the coordinator Worker)
// ---------------------------------------------------------------------------------------------

export interface CoordinatorWorkerData {
  readonly config: SpicepodConfig;
  readonly datasets: readonly DatasetConfig[];
  /** Each dataset's live file and generation directory, by name (the host decides them). */
  readonly files: Readonly<Record<string, { readonly livePath: string; readonly generationDir: string }>>;
  /** Shortest time between two reads of one location's metadata.json by polls. */
  readonly metadataWindowMs: number;
  readonly restartBackoffMs: readonly number[];
  /** How long close() waits for a dataset thread to stop before terminating it. */
  readonly stopTimeoutMs: number;
  readonly datasetResourceLimits: ResourceLimits;
  /** The host's `LiveStatus` buffer: one slot per dataset, in the order of `datasets`. */
  readonly liveStatus: SharedArrayBuffer;
  /** The lowest level of log record the host's logger writes. */
  readonly logLevel: LogLevel;
  /** The build the host was made from (see `thread-files.ts`). */
  readonly buildId: string;
  /** Added to the start numbers of this coordinator's dataset threads (a restarted coordinator's never repeat). */
  readonly incarnationBase: number;
  /** Datasets bootstrapping at once, at most (Spice's `runtime.dataset_load_parallelism`). */
  readonly datasetLoadParallelism: number;
  /** Workers of the snapshot pool, and how long an idle one lives. */
  readonly snapshotThreads: number;
  readonly snapshotIdleTimeoutMs: number;
  readonly notificationOptions?: RuntimeOptions['notifications'];
}

export type HostToCoordinator =
  | { readonly type: 'close'; readonly id: number }
  /** A dataset's snapshots from its location's metadata.json, each checked with a HEAD. */
  | { readonly type: 'snapshots'; readonly id: number; readonly dataset: string; readonly limit?: number };

export type CoordinatorToHost =
  | RpcResponse
  /** A dataset thread started: the host talks to it on `port`. */
  | {
      readonly type: 'dataset-started';
      readonly dataset: string;
      readonly port: MessagePort;
      readonly incarnation: number;
    }
  | {
      readonly type: 'dataset-exited';
      readonly dataset: string;
      readonly exitCode: number;
      readonly error?: SerializedError;
    }
  | ({ readonly type: 'notification-stats' } & NotificationEvent)
  | { readonly type: 'log'; readonly record: LogRecord };
