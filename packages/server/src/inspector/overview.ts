/**
 * The overview's model: one small row per dataset, built from what the runtime already reports —
 * `runtime.datasets()` / `status()` — so a page can show a thousand datasets without a single
 * inspection event or `poll` listener. Besides the machine's status a row says how the served
 * snapshot compares with the store's current one, which the status carries: the id the last read
 * of metadata.json named (`storeSnapshotId`, kept by a 304, including the checks the runtime made
 * while the dataset was parked); `waiting` means the store has none.
 */
import { type DatasetStatus, datasetStaleness, type PollResult } from '@ferry/core/base';
import type { DatasetInfo } from '@ferry/runtime';
import { isServing } from '../dataset-view.js';

/** The served snapshot against the store's current one. */
export type StoreSync = 'current' | 'behind' | 'ahead' | 'empty' | 'unknown';

/**
 * How a row is doing, in the order "failures first" sorts: `error` (refused config, a dead thread,
 * or no snapshot and an error), `warn` (serving, but its last check failed or was refused, or it
 * is not on the store's current snapshot), `pending` (starting, waiting, bootstrapping), `ok`,
 * `stopped`.
 */
export type RowHealth = 'error' | 'warn' | 'pending' | 'ok' | 'stopped';

export interface OverviewRow {
  readonly name: string;
  readonly engine: string | null;
  /** The machine's state (`serving`, `polling`, …) or the runtime's (`starting`, `restarting`, `failed`). */
  readonly state: string;
  /** Queries are answered from a loaded snapshot. */
  readonly ready: boolean;
  readonly paused: boolean;
  readonly health: RowHealth;
  readonly snapshotId: number | null;
  /** When the served snapshot was taken (the writer's timestamp). */
  readonly snapshotAtMs: number | null;
  /**
   * Lag: the instant this reader last knew it served the store's current snapshot (staleness is
   * now minus this; see `datasetStaleness` in @ferry/core); null while it serves nothing.
   */
  readonly freshSinceMs: number | null;
  /** A newer snapshot this reader knows the store has and has not loaded; null when none. */
  readonly newerSnapshotId: number | null;
  /** The store's current snapshot id as last learned; null when unknown or the store has none. */
  readonly storeSnapshotId: number | null;
  readonly sync: StoreSync;
  readonly lastPollAtMs: number | null;
  readonly lastPollResult: PollResult | null;
  /** On the server's clock; null while checking or paused. */
  readonly nextPollDueMs: number | null;
  readonly polls: number;
  readonly swaps: number;
  readonly failures: number;
  readonly refusals: number;
  /** Why the dataset cannot run, or its machine's last error (`CODE: message`). */
  readonly error: string | null;
}

/** The header's numbers: every dataset, the serving ones, the others by state, and those needing a look. */
export interface OverviewCounts {
  readonly total: number;
  /** Ready datasets (serving, or checking / swapping while serving). */
  readonly serving: number;
  /** Datasets that are not ready, by state (`failed`, `restarting`, `waiting`, …). */
  readonly byState: Readonly<Record<string, number>>;
  /** Rows whose health is `error` or `warn`. */
  readonly attention: number;
  readonly errors: number;
  readonly warnings: number;
  readonly paused: number;
}

const FAILED_CHECKS: ReadonlySet<PollResult> = new Set(['failed', 'refused']);

/**
 * The store's current snapshot id as the dataset's status tells it: the id its last read named (a
 * 304 keeps it), `null` when the store has none, `undefined` when no check has read it yet.
 */
export function storeSnapshotOf(status: DatasetStatus | undefined): number | null | undefined {
  if (status === undefined) return undefined;
  if (status.storeSnapshotId !== null) return status.storeSnapshotId;
  if (status.lastPollResult === 'waiting') return null;
  return undefined;
}

export function storeSync(servingId: number | null, storeId: number | null | undefined): StoreSync {
  if (storeId === undefined) return 'unknown';
  if (storeId === null) return 'empty';
  if (servingId === null || storeId > servingId) return 'behind';
  return storeId === servingId ? 'current' : 'ahead';
}

function health(info: DatasetInfo, ready: boolean, sync: StoreSync, error: string | null): RowHealth {
  const state = info.state;
  if (state === 'failed' || state === 'restarting') return 'error';
  if (state === 'stopped') return 'stopped';
  if (!ready) return error === null ? 'pending' : 'error';
  const result = info.status?.lastPollResult ?? null;
  if ((result !== null && FAILED_CHECKS.has(result)) || sync === 'behind' || sync === 'ahead') return 'warn';
  return 'ok';
}

/** One dataset's row. */
export function overviewRow(info: DatasetInfo): OverviewRow {
  const status = info.status;
  const ready = isServing(info);
  const snapshotId = status?.servingSnapshotId ?? null;
  const store = storeSnapshotOf(status);
  const sync = storeSync(snapshotId, store);
  const lastError = status?.lastError;
  const error = info.error ?? (lastError == null ? null : `${lastError.code}: ${lastError.message}`);
  const counters = status?.counters;
  return {
    name: info.name,
    engine: info.engine ?? null,
    state: info.state,
    ready,
    paused: status?.paused === true,
    health: health(info, ready, sync, error),
    snapshotId,
    snapshotAtMs: status?.servingTimestampMs ?? null,
    freshSinceMs: status === undefined || !ready ? null : datasetStaleness(status, 0).sinceMs,
    newerSnapshotId: info.newerSnapshotId,
    storeSnapshotId: store ?? null,
    sync,
    lastPollAtMs: status?.lastPollAtMs ?? null,
    lastPollResult: status?.lastPollResult ?? null,
    nextPollDueMs: status?.nextPollDueMs ?? null,
    polls: counters?.polls ?? 0,
    swaps: counters?.swaps ?? 0,
    failures: counters?.failures ?? 0,
    refusals: counters?.refusals ?? 0,
    error,
  };
}

/** The header counts of `rows`. */
export function overviewCounts(rows: Iterable<OverviewRow>): OverviewCounts {
  let total = 0;
  let serving = 0;
  let errors = 0;
  let warnings = 0;
  let paused = 0;
  const byState: Record<string, number> = {};
  for (const row of rows) {
    total++;
    if (row.ready) serving++;
    else byState[row.state] = (byState[row.state] ?? 0) + 1;
    if (row.health === 'error') errors++;
    else if (row.health === 'warn') warnings++;
    if (row.paused) paused++;
  }
  return { total, serving, byState, attention: errors + warnings, errors, warnings, paused };
}

/** True when two rows show the same thing. */
export function sameRow(a: OverviewRow, b: OverviewRow): boolean {
  for (const key of Object.keys(a) as (keyof OverviewRow)[]) {
    if (a[key] !== b[key]) return false;
  }
  return true;
}
