/**
 * The dataset machine's public vocabulary: its input, context, events, emitted events and the
 * inputs and outputs of the actors the runtime provides. Everything kept in the context is plain
 * data (no Error objects, no handles, no functions) so persisted snapshots and inspection events
 * round-trip through JSON; the clock (`now`) and the jitter source (`random`) are given to the
 * machine factory instead (`createDatasetMachine`).
 */
import type { BootstrapOnFailure, SnapshotsMode } from '../config/types.js';
import type { EngineName } from '../engines.js';
import type { LogLevel } from '../log-levels.js';
import type { ArrowSchema, DatasetMetadata, SchemaEntry, SnapshotEntry } from '../metadata/types.js';

export type { BootstrapOnFailure, LogLevel, SnapshotsMode };

export interface DatasetMachineInput {
  readonly name: string;
  /** The configured engine; when absent the dataset's metadata `engine` is used. */
  readonly engine?: EngineName | undefined;
  readonly refreshCheckIntervalMs: number;
  /** What a failed download does; defaults to `warn`. */
  readonly bootstrapOnFailure?: BootstrapOnFailure;
  /** `enabled` (default) or `bootstrap_only`; in snapshot mode both behave identically. */
  readonly snapshotsMode?: SnapshotsMode;
  /** The snapshot location as configured (`s3://bucket/prefix/`), named by the waiting and bootstrap logs. */
  readonly location: string;
  /** Upper bound of one retry backoff delay; defaults to 300 000 ms. */
  readonly maxBackoffMs?: number;
  /**
   * When set, scheduled polls fall on the grid `pollPhaseMs + k × refreshCheckIntervalMs` of the
   * `now()` clock instead of one interval after the previous poll ended. Datasets of one process
   * that share a location and an interval then poll at the same instants, so one metadata read
   * serves them all, and their polls never drift apart.
   */
  readonly pollPhaseMs?: number;
  /**
   * `ferry_trusted_keys` is set: every candidate's signature is checked (the `authenticateSnapshot`
   * actor) after its engine and schema, before anything is downloaded. Default false.
   */
  readonly signaturesRequired?: boolean;
  /**
   * How the spicepod declares it: `file_format` (`from: s3://…` with `params.file_format:
   * snapshot`) logs the lines of Spice's snapshot data connector while nothing is served, where
   * `refresh_mode` (default) logs those of its snapshot acceleration.
   */
  readonly form?: 'refresh_mode' | 'file_format';
}

/** The snapshot a dataset serves: what restoreLocal reports, or what a swap installed. */
export interface LoadedSnapshot {
  readonly snapshotId: number;
  readonly timestampMs: number;
  readonly checksum: string;
  /** The recorded Arrow schema of the snapshot; candidates are compared against it. */
  readonly schema: ArrowSchema;
  /** The `schema-id` the schema was recorded under, when known. */
  readonly schemaId?: number;
  /** How its bytes arrived, when it was downloaded by this run (a delta reuses the live file's blocks). */
  readonly transfer?: SnapshotTransferInfo;
}

/** How a downloaded snapshot's bytes arrived: all fetched, or partly reused from the file held before. */
export interface SnapshotTransferInfo {
  readonly mode: 'delta' | 'full';
  readonly fetchedBytes: number;
  readonly reusedBytes: number;
}

/** How one poll (or waiting check, or bootstrap attempt) ended. */
export type PollResult = 'unchanged' | 'newer' | 'same' | 'older' | 'refused' | 'failed' | 'waiting';

/** What started a poll: its timer, an operator command, a notification, or startup. */
export type PollTrigger = 'startup' | 'schedule' | 'command' | 'notification';

/** The `{ code, message }` an error is reduced to in the context and the status view. */
export interface ErrorInfo {
  readonly code: string;
  readonly message: string;
}

export interface DatasetCounters {
  readonly polls: number;
  readonly swaps: number;
  readonly refusals: number;
  readonly failures: number;
  readonly notifications: number;
}

// ---------------------------------------------------------------------------------------------
// Actors the runtime provides (`machine.provide({ actors })`).
// ---------------------------------------------------------------------------------------------

export interface RestoreLocalInput {
  readonly dataset: string;
}

export interface ReadMetadataInput {
  readonly dataset: string;
  /**
   * What started this read. A runtime that shares reads between datasets may reuse a recent one for
   * `schedule`, `startup` and `notification` (the notifier has just read), but an operator's
   * `command` asks for the store as it is now.
   */
  readonly trigger: PollTrigger;
  /** The ETag recorded by the previous poll; absent means read in full. */
  readonly ifNoneMatch?: string;
}

export type ReadMetadataOutput = (
  | { readonly kind: 'unchanged' }
  | {
      readonly kind: 'read';
      /** Absent when there is no metadata.json at the location. */
      readonly etag?: string;
      /** This dataset's entry; absent when metadata.json is missing or does not name the dataset. */
      readonly dataset: DatasetMetadata | undefined;
    }
) & {
  /**
   * When the read this answer comes from began, on the machine's clock: a read shared with other
   * datasets may have begun before this check did. Absent: at the check's start.
   */
  readonly readAtMs?: number;
};

/** The clock and jitter source of a dataset machine (`createDatasetMachine`). */
export interface DatasetMachineClock {
  /**
   * "Now" in milliseconds on the same clock the actor's timers run on. XState's `Clock` has no
   * `now()`, so the runtime passes `freshnessClock` and tests pass `() => clock.now()`.
   */
  readonly now: () => number;
  /** Jitter source in [0, 1) for the retry backoff. */
  readonly random: () => number;
  /**
   * Whether the runtime takes over the scheduled checks of a serving dataset holding `etag`, the
   * next one due at `dueMs`: it reads metadata.json itself and wakes the dataset (`poll.due`) only
   * when the document is no longer the one of `etag`; the checks it answered meanwhile arrive as
   * `checks.unseen` when the dataset next wakes. Asked each time the poll timer is armed; `false`
   * (the default) arms the timer, and every check reads.
   */
  readonly park?: (etag: string, dueMs: number) => boolean;
}

/** Scheduled checks the runtime answered while the dataset was parked (see {@link DatasetMachineClock.park}). */
export interface UnseenChecks {
  /** How many: each found metadata.json unchanged. */
  readonly count: number;
  /** When the last one was made. */
  readonly lastPollAtMs: number;
  /** When the read that answered the last one began (what freshness is measured from). */
  readonly lastReadAtMs: number;
  /** When the next check is due. */
  readonly nextPollDueMs: number;
}

export interface DownloadSnapshotInput {
  /** The dataset entry of the same metadata read the candidate was chosen from. */
  readonly dataset: DatasetMetadata;
  readonly entry: SnapshotEntry;
  /** The dataset's engine (configured, else from metadata), when known. */
  readonly engine: string | undefined;
  /** The candidate's recorded schema (of the same metadata read), which the file is verified against. */
  readonly recorded: SchemaEntry | undefined;
}

/** The candidate whose signature is checked, with the metadata read it came from. */
export interface AuthenticateSnapshotInput {
  readonly dataset: DatasetMetadata;
  readonly entry: SnapshotEntry;
}

/** A downloaded, not yet verified snapshot in a temporary file; `token` identifies it. */
export interface DownloadedSnapshot {
  readonly snapshotId: number;
  readonly token: string;
  readonly transfer?: SnapshotTransferInfo;
}

export interface VerifySnapshotInput {
  readonly downloaded: DownloadedSnapshot;
  readonly entry: SnapshotEntry;
  /** The candidate's recorded schema (of the same metadata read): the downloaded table must match it. */
  readonly schema: ArrowSchema;
  readonly schemaId: number;
  readonly engine: string | undefined;
}

/** A downloaded and verified snapshot waiting in a temporary file; `token` identifies it. */
export interface PreparedSnapshot {
  readonly snapshotId: number;
  readonly token: string;
  readonly transfer?: SnapshotTransferInfo;
}

export interface SwapSnapshotInput {
  readonly prepared: PreparedSnapshot;
  readonly entry: SnapshotEntry;
}

// ---------------------------------------------------------------------------------------------
// Events in, events out, logs.
// ---------------------------------------------------------------------------------------------

export type DatasetEvent =
  | { readonly type: 'snapshot.announced'; readonly snapshotId: number }
  | { readonly type: 'poll.now' }
  | { readonly type: 'polling.pause' }
  | { readonly type: 'polling.resume' }
  | { readonly type: 'stop' }
  /**
   * The scheduled check (or retry) is due: sent by the machine's own `pollTimer`, or by the runtime
   * that took a parked dataset's checks over and found metadata.json changed.
   */
  | { readonly type: 'poll.due' }
  /** A parked dataset wakes: the checks the runtime answered for it meanwhile (recorded first). */
  | ({ readonly type: 'checks.unseen' } & UnseenChecks)
  /**
   * Arm the poll timer again, due when it was: what `park` answers may have changed (nobody watches
   * each check any more), so a serving dataset waiting for its next check may hand it over now.
   */
  | { readonly type: 'poll.rearm' };

export type DatasetEmitted =
  | { readonly type: 'swap'; readonly dataset: string; readonly from: number | null; readonly to: number }
  | {
      readonly type: 'poll';
      readonly dataset: string;
      readonly result: PollResult;
      /** The store's current snapshot id as read by this poll, when it read one. */
      readonly currentSnapshotId: number | null;
    }
  | {
      readonly type: 'error';
      readonly dataset: string;
      readonly error: ErrorInfo;
      readonly snapshotId: number | null;
    };

/** The params of the one `log` action; `fields` always carries `dataset`. */
export interface LogEntry {
  readonly level: LogLevel;
  readonly message: string;
  readonly fields: Readonly<Record<string, string | number | boolean | null>>;
}

// ---------------------------------------------------------------------------------------------
// Context.
// ---------------------------------------------------------------------------------------------

/** Where in a check a failure happened. */
export type FailureStage = 'metadata' | 'selection' | 'validation' | 'download' | 'verification' | 'swap';

/** The failure a check is routing: recorded by the transition that met it, read by the guards. */
export interface PollFailure {
  readonly error: ErrorInfo;
  /** A `SnapshotRejectedError` (engine, schema, size, checksum, content, object missing). */
  readonly rejection: boolean;
  /** The error says retrying cannot fix it (e.g. an unsupported format version). */
  readonly permanent: boolean;
  readonly stage: FailureStage;
  readonly snapshotId: number | null;
}

/** The poll in flight: everything decided from its single metadata read. */
export interface PollInProgress {
  readonly trigger: PollTrigger;
  readonly startedAtMs: number;
  /** When its metadata read began, if before {@link startedAtMs} (a shared read): what freshness is measured from. */
  readonly readAtMs: number | undefined;
  readonly ifNoneMatch: string | undefined;
  /** The ETag and dataset entry of this poll's one metadata read, once it returned. */
  readonly etag: string | undefined;
  readonly dataset: DatasetMetadata | undefined;
  readonly engine: string | undefined;
  readonly recorded: SchemaEntry | undefined;
  /** Snapshots to try, in order (one unless `fallback`). */
  readonly candidates: readonly SnapshotEntry[];
  readonly index: number;
  readonly downloaded: DownloadedSnapshot | undefined;
  readonly prepared: PreparedSnapshot | undefined;
  /** The failure being routed, if any. */
  readonly failure: PollFailure | undefined;
  /** Retry mode only: the next poll is a backoff retry. */
  readonly retry: boolean;
}

export interface DatasetContext {
  readonly name: string;
  readonly engine: EngineName | undefined;
  readonly refreshCheckIntervalMs: number;
  readonly bootstrapOnFailure: BootstrapOnFailure;
  readonly snapshotsMode: SnapshotsMode;
  readonly maxBackoffMs: number;
  readonly pollPhaseMs: number | null;
  readonly location: string;
  /** Candidates are authenticated (signature and statement) before download. */
  readonly signaturesRequired: boolean;
  /** See {@link DatasetMachineInput.form}; absent in a snapshot persisted before it existed. */
  readonly form?: 'refresh_mode' | 'file_format';
  /** What queries are served from; changes only when the swap actor resolves. */
  readonly serving: LoadedSnapshot | null;
  /** The metadata ETag to send with the next conditional read. */
  readonly etag: string | null;
  readonly paused: boolean;
  /** Highest snapshot id a notification asked for. */
  readonly lastRequestedId: number | null;
  /** A notification arrived during a poll (or while paused): poll again, in full, afterwards. */
  readonly reloadRequested: boolean;
  /** Consecutive retry-mode failures; the next delay is the backoff for this attempt. */
  readonly backoffAttempt: number;
  /** When the scheduled check (or retry) is due, on the `now()` clock; null while none is scheduled. */
  readonly nextPollDueMs: number | null;
  readonly lastPoll: { readonly atMs: number; readonly result: PollResult } | null;
  /**
   * When this reader last knew it served the store's current snapshot: the start of the last check
   * that read the store and found nothing newer than the served snapshot (or loaded the current
   * one). Null until such a check. What staleness is measured from (`staleness.ts`).
   */
  readonly freshAtMs: number | null;
  /** The store's `current-snapshot-id` as the last successful read of metadata.json found it. */
  readonly storeSnapshotId: number | null;
  readonly lastError: ErrorInfo | null;
  readonly counters: DatasetCounters;
  readonly poll: PollInProgress | null;
}
