/**
 * The JSON shape of one dataset in `GET /v1/datasets`, built from the runtime's `DatasetInfo`:
 * Spice's fields (`from`, `name`, `replication_enabled`, `acceleration_enabled`, and with
 * `?status=true` a Spice `status`), then Ferry's (times as ISO-8601 strings, `null` where there is
 * nothing to report). `ferry status` reads it.
 */
import { formatStaleness, isStalerThan, redactSecrets, type SecretReference } from '@ferry/core/base';
import type { DatasetInfo } from '@ferry/runtime';

/** Spice's dataset status values (`Disabled` never applies: every Ferry dataset is accelerated). */
export type SpiceDatasetStatus = 'Initializing' | 'Ready' | 'Refreshing' | 'Error' | 'ShuttingDown';

export interface DatasetView {
  /** As written in the spicepod; null for a dataset whose configuration was refused. */
  readonly from: string | null;
  readonly name: string;
  /** Always false: Ferry does not replicate. */
  readonly replication_enabled: boolean;
  /** True for every configured dataset (each is accelerated from snapshots). */
  readonly acceleration_enabled: boolean;
  /** Only with `?status=true`; see {@link spiceStatus}. */
  readonly status?: SpiceDatasetStatus;
  readonly engine: string | null;
  /** The machine state (`waiting`, `serving`, `polling`, …), or `starting` / `restarting` / `failed`. */
  readonly state: string;
  /** True when queries are answered from a loaded snapshot. */
  readonly ready: boolean;
  readonly paused: boolean;
  readonly snapshotId: number | null;
  /** The loaded snapshot's `timestamp-ms`, ISO-8601. */
  readonly snapshotTime: string | null;
  readonly lastPollTime: string | null;
  /** `unchanged`, `newer`, `same`, `older`, `refused`, `failed` or `waiting`. */
  readonly lastPollResult: string | null;
  readonly lastError: string | null;
  readonly lastErrorCode: string | null;
  /**
   * Staleness in seconds: how long this reader may have been behind the store (the time since it
   * last knew it served the store's current snapshot); null while it serves nothing.
   */
  readonly stalenessSeconds: number | null;
  /** A newer snapshot this reader knows the store has and has not loaded; null when none. */
  readonly newerSnapshotId: number | null;
  /** `ferry_max_staleness` in seconds; null when the dataset has no bound. */
  readonly maxStalenessSeconds: number | null;
}

const NOT_SERVING: ReadonlySet<string> = new Set(['starting', 'restarting', 'failed', 'stopped', 'waiting']);

function iso(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}

/** Milliseconds as seconds with millisecond precision; null stays null. */
export function seconds(ms: number | null): number | null {
  return ms === null ? null : Math.round(ms) / 1000;
}

/** True when the dataset answers queries from a loaded snapshot. */
export function isServing(info: DatasetInfo): boolean {
  return info.status?.servingSnapshotId != null && !NOT_SERVING.has(info.state);
}

/** True when the dataset has a `ferry_max_staleness` and is staler than it (or serves nothing). */
export function pastStalenessBound(info: DatasetInfo): boolean {
  return info.maxStalenessMs !== null && isStalerThan(info.stalenessMs, info.maxStalenessMs);
}

/** Why `GET /v1/ready` holds a dataset back: its state, or its staleness past its bound. */
export function notReadyReason(info: DatasetInfo): string {
  if (!isServing(info) || info.maxStalenessMs === null || info.stalenessMs === null) return info.state;
  return `stale ${formatStaleness(info.stalenessMs)} > ferry_max_staleness ${formatStaleness(info.maxStalenessMs)}`;
}

/**
 * The Spice status of a dataset: `Initializing` until its first snapshot is served (`starting`,
 * `bootstrapping`, and `waiting` for a first snapshot); `Ready` while `serving`; `Refreshing`
 * while a served dataset checks the store or swaps a newer snapshot in (`polling`, `swapping`);
 * `Error` when its configuration was refused (`failed`), its thread died (`restarting`), or it
 * serves nothing and its last attempt failed (`waiting` with an error); `ShuttingDown` once its
 * machine has stopped (the runtime is closing).
 */
export function spiceStatus(info: DatasetInfo): SpiceDatasetStatus {
  const served = info.status?.servingSnapshotId != null;
  const failing = info.status?.lastError != null;
  switch (info.state) {
    case 'serving':
      return 'Ready';
    case 'polling':
    case 'swapping':
      return served ? 'Refreshing' : failing ? 'Error' : 'Initializing';
    case 'waiting':
      return failing ? 'Error' : 'Initializing';
    case 'failed':
    case 'restarting':
      return 'Error';
    case 'stopped':
      return 'ShuttingDown';
    default:
      return 'Initializing';
  }
}

export function datasetView(
  info: DatasetInfo,
  options: { readonly status?: boolean; readonly secrets?: readonly SecretReference[] } = {},
): DatasetView {
  const status = info.status;
  const statusError = status?.lastError ?? null;
  const lastError = info.error ?? statusError?.message ?? null;
  return {
    from: info.from ?? null,
    name: info.name,
    replication_enabled: false,
    acceleration_enabled: info.state !== 'failed',
    ...(options.status === true ? { status: spiceStatus(info) } : {}),
    engine: info.engine ?? null,
    state: info.state,
    ready: isServing(info),
    paused: status?.paused ?? false,
    snapshotId: status?.servingSnapshotId ?? null,
    snapshotTime: iso(status?.servingTimestampMs),
    lastPollTime: iso(status?.lastPollAtMs),
    lastPollResult: status?.lastPollResult ?? null,
    // An error may quote a value that came from a secret: the reference is shown instead.
    lastError: lastError === null ? null : redactSecrets(lastError, options.secrets ?? []),
    lastErrorCode: info.error === undefined ? (statusError?.code ?? null) : null,
    stalenessSeconds: seconds(info.stalenessMs),
    newerSnapshotId: info.newerSnapshotId,
    maxStalenessSeconds: seconds(info.maxStalenessMs),
  };
}

/** The columns of `GET /v1/status?datasets=true`: Spice's three, then a dataset row's own. */
export const DATASET_STATUS_COLUMNS: readonly string[] = [
  'name',
  'endpoint',
  'status',
  'snapshot_id',
  'staleness_seconds',
  'newer_snapshot_id',
];

/**
 * One dataset's row in `GET /v1/status?datasets=true` (a Ferry extension; without the parameter
 * the list is Spice's): `dataset:<name>`, its location as the endpoint, its Spice status, the
 * snapshot it serves and its staleness.
 */
export function datasetStatusRow(info: DatasetInfo): Record<string, unknown> {
  return {
    name: `dataset:${info.name}`,
    endpoint: info.from ?? '',
    status: spiceStatus(info),
    snapshot_id: info.status?.servingSnapshotId ?? null,
    staleness_seconds: seconds(info.stalenessMs),
    newer_snapshot_id: info.newerSnapshotId,
  };
}
