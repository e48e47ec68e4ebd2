/**
 * The JSON shape of one dataset in `GET /v1/datasets`, built from the runtime's `DatasetInfo`:
 * times as ISO-8601 strings, `null` where there is nothing to report. `ferry status` reads it.
 */
import type { DatasetInfo } from '@ferry/runtime';

export interface DatasetView {
  readonly name: string;
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
}

const NOT_SERVING: ReadonlySet<string> = new Set(['starting', 'restarting', 'failed', 'stopped', 'waiting']);

function iso(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}

/** True when the dataset answers queries from a loaded snapshot. */
export function isServing(info: DatasetInfo): boolean {
  return info.status?.servingSnapshotId != null && !NOT_SERVING.has(info.state);
}

export function datasetView(info: DatasetInfo): DatasetView {
  const status = info.status;
  const statusError = status?.lastError ?? null;
  return {
    name: info.name,
    engine: info.engine ?? null,
    state: info.state,
    ready: isServing(info),
    paused: status?.paused ?? false,
    snapshotId: status?.servingSnapshotId ?? null,
    snapshotTime: iso(status?.servingTimestampMs),
    lastPollTime: iso(status?.lastPollAtMs),
    lastPollResult: status?.lastPollResult ?? null,
    lastError: info.error ?? statusError?.message ?? null,
    lastErrorCode: info.error === undefined ? (statusError?.code ?? null) : null,
  };
}
