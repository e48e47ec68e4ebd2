/**
 * A serialisable view of one dataset machine's snapshot, for the runtime's `status()`, the HTTP
 * API and the inspector page: plain JSON, `null` where there is nothing to report.
 */
import type { DatasetContext, DatasetCounters, ErrorInfo, PollResult, SnapshotsMode } from './types.js';

export type DatasetStateName = 'waiting' | 'bootstrapping' | 'serving' | 'polling' | 'swapping' | 'stopped';

export interface DatasetStatus {
  readonly dataset: string;
  readonly state: DatasetStateName;
  readonly paused: boolean;
  readonly snapshotsMode: SnapshotsMode;
  readonly servingSnapshotId: number | null;
  readonly servingTimestampMs: number | null;
  readonly schemaId: number | null;
  readonly etag: string | null;
  readonly lastPollAtMs: number | null;
  readonly lastPollResult: PollResult | null;
  /** When the next check is due, on the machine's `now()` clock; null while checking or paused. */
  readonly nextPollDueMs: number | null;
  /** When this reader last knew it served the store's current snapshot (see `staleness.ts`). */
  readonly freshAtMs: number | null;
  /** The store's current snapshot id as last read; null before a read or when none is published. */
  readonly storeSnapshotId: number | null;
  /** The highest snapshot id a notification announced (it may not be loaded yet). */
  readonly announcedSnapshotId: number | null;
  readonly lastError: ErrorInfo | null;
  readonly counters: DatasetCounters;
  /**
   * Set by the runtime, not the machine: while the writer's signed heartbeat cannot vouch for the
   * snapshot served (`ferry_trusted_keys`), the instant from which it cannot (see `staleness.ts`).
   */
  readonly staleSinceMs?: number | null;
}

/** The parts of a machine snapshot the view reads (any `DatasetSnapshot` fits). */
export interface DatasetSnapshotLike {
  readonly value: string | Readonly<Record<string, unknown>>;
  readonly context: DatasetContext;
}

export function datasetStateName(snapshot: DatasetSnapshotLike): DatasetStateName {
  const top = typeof snapshot.value === 'string' ? snapshot.value : Object.keys(snapshot.value)[0];
  switch (top) {
    case 'waiting':
    case 'bootstrapping':
    case 'serving':
    case 'polling':
    case 'swapping':
    case 'stopped':
      return top;
    default:
      return 'stopped';
  }
}

export function datasetStatus(snapshot: DatasetSnapshotLike): DatasetStatus {
  const context = snapshot.context;
  const serving = context.serving;
  return {
    dataset: context.name,
    state: datasetStateName(snapshot),
    paused: context.paused,
    snapshotsMode: context.snapshotsMode,
    servingSnapshotId: serving?.snapshotId ?? null,
    servingTimestampMs: serving?.timestampMs ?? null,
    schemaId: serving?.schemaId ?? null,
    etag: context.etag,
    lastPollAtMs: context.lastPoll?.atMs ?? null,
    lastPollResult: context.lastPoll?.result ?? null,
    nextPollDueMs: context.nextPollDueMs,
    freshAtMs: context.freshAtMs ?? null,
    storeSnapshotId: context.storeSnapshotId ?? null,
    announcedSnapshotId: context.lastRequestedId,
    lastError:
      context.lastError === null
        ? null
        : { code: context.lastError.code, message: context.lastError.message },
    counters: { ...context.counters },
  };
}
