/**
 * The wire protocol between Ferry's threads: one discriminated union per direction of each channel,
 * with request ids (`id`) answered by {@link RpcResponse}s. Everything here is structured-clone
 * data: no functions, no class instances, no engine handles.
 *
 *   host  <-> coordinator   the coordinator Worker
 *   host  <-> dataset       a MessagePort per dataset thread (status, commands, generations)
 *   coordinator <-> dataset the dataset Worker (metadata reads, announcements, stop)
 */
import type { MessagePort } from 'node:worker_threads';
import type {
  ArrowSchema,
  DatasetConfig,
  DatasetEmitted,
  DatasetStatus,
  EngineName,
  FileFormat,
  JsonValue,
  ReadMetadataOutput,
  SerializedError,
  SpicepodConfig,
} from '@ferry/core';
import type { LogLevel, LogRecord } from './logging.js';
import type { RpcResponse } from './rpc.js';

/** Operator commands a dataset machine accepts from the host (inspector, CLI, embed API). */
export type DatasetCommand = 'poll.now' | 'polling.pause' | 'polling.resume';

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
  | { readonly type: 'status'; readonly id: number }
  | { readonly type: 'command'; readonly id: number; readonly command: DatasetCommand }
  /** Whether anyone inspects: a thread builds and posts inspection events only then (default on). */
  | { readonly type: 'inspecting'; readonly on: boolean };

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
      /** A status the machine passed through (a check began) that this one overtook before it was posted. */
      readonly overtaken?: DatasetStatus;
    }
  | { readonly type: 'inspect'; readonly event: InspectionEvent }
  | { readonly type: 'log'; readonly record: LogRecord }
  /** The generation queries read from now on (`null`: none; the dataset serves nothing). */
  | { readonly type: 'generation'; readonly current: AnnouncedGeneration | null }
  /** A snapshot downloaded and validated (`bytes` is its recorded size), before it is swapped in. */
  | {
      readonly type: 'downloaded';
      readonly bytes: number;
      readonly seconds: number;
      readonly snapshotId: number;
      readonly checksum: string;
    };

// ---------------------------------------------------------------------------------------------
// coordinator <-> dataset (the dataset Worker)
// ---------------------------------------------------------------------------------------------

export interface DatasetWorkerData {
  readonly dataset: DatasetConfig;
  /** Absolute live file path. */
  readonly livePath: string;
  readonly hostPort: MessagePort;
  /** Clock phase shared by every dataset of the process, so shared locations poll together. */
  readonly pollPhaseMs: number;
  /** The runtime's data directory: generation links go under it (see `generationDirFor`). */
  readonly dataDir: string;
  /** The lowest level of log record the host's logger writes (the thread posts no others); default debug. */
  readonly logLevel?: LogLevel;
}

export type DatasetToCoordinator =
  | RpcResponse
  | {
      readonly type: 'read-metadata';
      readonly id: number;
      readonly ifNoneMatch?: string;
      readonly fresh?: boolean;
    }
  | { readonly type: 'log'; readonly record: LogRecord };

export type CoordinatorToDataset =
  | RpcResponse
  | { readonly type: 'announce'; readonly snapshotId: number }
  /** A crash drill (sent only through `@ferry/runtime/testing`): the thread throws an uncaught error, as a bug would. */
  | { readonly type: 'crash' }
  | { readonly type: 'stop'; readonly id: number };

export type ReadMetadataReply = ReadMetadataOutput;

// ---------------------------------------------------------------------------------------------
// host <-> coordinator (the coordinator Worker)
// ---------------------------------------------------------------------------------------------

export interface CoordinatorWorkerData {
  readonly config: SpicepodConfig;
  readonly datasets: readonly DatasetConfig[];
  readonly dataDir: string;
  readonly baseDir: string;
  /** Shortest time between two reads of one location's metadata.json by polls. */
  readonly metadataWindowMs: number;
  readonly restartBackoffMs: readonly number[];
  /** How long close() waits for a dataset thread to stop before terminating it. */
  readonly stopTimeoutMs: number;
  readonly datasetResourceLimits?: import('node:worker_threads').ResourceLimits;
  /** The lowest level of log record the host's logger writes. */
  readonly logLevel: LogLevel;
  readonly notificationOptions?: {
    readonly visibilityTimeoutSeconds?: number;
    readonly waitTimeSeconds?: number;
    readonly backoffScale?: number;
    readonly missedCommitGraceMs?: number;
  };
}

export type HostToCoordinator =
  | { readonly type: 'close'; readonly id: number }
  | { readonly type: 'terminate-dataset'; readonly id: number; readonly dataset: string }
  | { readonly type: 'metadata-gets'; readonly id: number }
  /** A dataset's snapshots from its location's metadata.json, each checked with a HEAD. */
  | { readonly type: 'snapshots'; readonly id: number; readonly dataset: string; readonly limit?: number };

export interface DatasetDescriptor {
  readonly name: string;
  readonly engine: EngineName | undefined;
  readonly fileEngine: FileFormat;
  readonly livePath: string;
}

export type CoordinatorToHost =
  | RpcResponse
  | {
      readonly type: 'dataset-started';
      readonly dataset: DatasetDescriptor;
      readonly port: MessagePort;
      readonly incarnation: number;
    }
  | {
      readonly type: 'dataset-exited';
      readonly dataset: string;
      readonly exitCode: number;
      readonly error?: SerializedError;
      readonly restartInMs: number | null;
    }
  | {
      readonly type: 'notification-stats';
      readonly outcome: 'received' | 'deleted' | 'left' | 'unparseable';
      readonly count: number;
    }
  | { readonly type: 'log'; readonly record: LogRecord };
