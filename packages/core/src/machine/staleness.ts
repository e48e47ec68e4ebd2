/**
 * Staleness, not age: how long a reader may have been behind its store. A snapshot's age (now minus
 * its `timestamp-ms`) says how old the data is; an hours-old snapshot the writer has not replaced is
 * still the store's current one, and a reader serving it is fresh. Staleness is measured from what
 * the reader knows (rqlite's "time since it last heard from the leader"): the time since it last
 * knew it served the store's current snapshot — a check that read the store and found nothing newer,
 * or the load of the current one (the machine's `freshAtMs`). A reader whose store is unreachable,
 * or that knows of a newer snapshot it has not loaded (refused, failed, fell back), grows stale.
 *
 * A notification queue does not count as a check: a quiet queue proves nothing (a missing bucket
 * notification, a filter or a subscription gone wrong are silent), so only a read of metadata.json
 * moves `freshAtMs`. A notification speeds freshness up only by starting such a read.
 *
 * Pure: the clock is an argument. `ferry_max_staleness` (readiness) and `X-Ferry-Max-Staleness`
 * (per query) are judged with {@link isStalerThan}; the readiness crossings with {@link staleCrossings}.
 */

/**
 * The clock every freshness instant is taken on (a check's start, a read's start, staleness "now"),
 * in milliseconds since the epoch: the process's monotonic clock, its time origin plus
 * `performance.now()`. Every thread of the process reads the same one (a worker shares the
 * process's time origin), and a step of the wall clock (NTP, a clock set by hand) moves none of it:
 * on `Date.now()`, a step back stamped checks in the future and froze staleness at 0 while checks
 * failed. Like any monotonic clock it does not count time the machine spends suspended: a reader
 * resumed after a sleep reads as fresh as when it slept until its next check (its timers wait on
 * the same clock), which a notification or a query's wait for a check shortens.
 */
export function freshnessClock(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * Whether a check that read the store makes the reader fresh: it serves the store's current
 * snapshot or a newer one. A store that names no current snapshot (no metadata.json, no entry, no
 * current id: `storeSnapshotId` null) vouches for nothing.
 */
export function storeVouchesFor(
  servingSnapshotId: number | undefined,
  storeSnapshotId: number | null,
): boolean {
  return servingSnapshotId !== undefined && storeSnapshotId !== null && storeSnapshotId <= servingSnapshotId;
}

/** The facts staleness is computed from; any `DatasetStatus` fits. */
export interface StalenessFacts {
  readonly servingSnapshotId: number | null;
  readonly servingTimestampMs: number | null;
  readonly freshAtMs: number | null;
  readonly storeSnapshotId: number | null;
  readonly announcedSnapshotId?: number | null;
  /**
   * A hook for other checks of the store (issue 33's signed heartbeat): the instant from which such
   * a check says this reader can no longer vouch for its snapshot. Staleness is then at least
   * now − `staleSinceMs`. Null or absent: no such check.
   */
  readonly staleSinceMs?: number | null;
}

export interface Staleness {
  /** Milliseconds this reader may have been behind the store; null while it serves nothing. */
  readonly stalenessMs: number | null;
  /** The instant staleness is measured from; null while it serves nothing. */
  readonly sinceMs: number | null;
  /** The newest snapshot id this reader knows of beyond the one it serves; null when none. */
  readonly newerSnapshotId: number | null;
}

/**
 * The staleness of a dataset at `nowMs`. Before its first check that read the store (a snapshot
 * restored from the live file), a reader knows only that the snapshot was current when it was
 * written, so staleness is then its age.
 */
export function datasetStaleness(facts: StalenessFacts, nowMs: number): Staleness {
  const serving = facts.servingSnapshotId;
  const known = Math.max(facts.storeSnapshotId ?? -1, facts.announcedSnapshotId ?? -1);
  const newerSnapshotId = serving !== null && known > serving ? known : null;
  if (serving === null) return { stalenessMs: null, sinceMs: null, newerSnapshotId: null };
  const own = facts.freshAtMs ?? facts.servingTimestampMs ?? nowMs;
  const sinceMs = facts.staleSinceMs == null ? own : Math.min(own, facts.staleSinceMs);
  return { stalenessMs: Math.max(0, nowMs - sinceMs), sinceMs, newerSnapshotId };
}

/** True when the dataset serves nothing (`stalenessMs` null) or is staler than `boundMs`. */
export function isStalerThan(stalenessMs: number | null, boundMs: number): boolean {
  return stalenessMs === null || stalenessMs > boundMs;
}

/** One dataset's staleness against its `ferry_max_staleness`, for {@link staleCrossings}. */
export interface BoundedStaleness {
  readonly dataset: string;
  /** Null while it serves nothing (readiness already says so; no crossing is reported). */
  readonly stalenessMs: number | null;
  readonly maxStalenessMs: number;
}

export interface StaleCrossing {
  readonly dataset: string;
  /** `stale`: it went past its bound; `fresh`: it came back within it. */
  readonly direction: 'stale' | 'fresh';
  readonly stalenessMs: number;
  readonly maxStalenessMs: number;
}

/**
 * The datasets past their bound now, and the crossings since `previous` (the set this returned
 * last time): one per dataset and direction, so a caller logs one line per crossing. A dataset that
 * serves nothing keeps its previous side.
 */
export function staleCrossings(
  previous: ReadonlySet<string>,
  datasets: readonly BoundedStaleness[],
): { readonly stale: ReadonlySet<string>; readonly crossings: readonly StaleCrossing[] } {
  const stale = new Set<string>();
  const crossings: StaleCrossing[] = [];
  for (const { dataset, stalenessMs, maxStalenessMs } of datasets) {
    const was = previous.has(dataset);
    if (stalenessMs === null) {
      if (was) stale.add(dataset);
      continue;
    }
    const is = stalenessMs > maxStalenessMs;
    if (is) stale.add(dataset);
    if (is !== was)
      crossings.push({ dataset, direction: is ? 'stale' : 'fresh', stalenessMs, maxStalenessMs });
  }
  return { stale, crossings };
}

/**
 * Milliseconds from `nowMs` until the first fresh dataset of `datasets` goes past its bound if
 * nothing changes (staleness grows with the clock), or undefined when none will: when to look next.
 */
export function nextStaleCrossingMs(datasets: readonly BoundedStaleness[]): number | undefined {
  let next: number | undefined;
  for (const { stalenessMs, maxStalenessMs } of datasets) {
    if (stalenessMs === null || stalenessMs > maxStalenessMs) continue;
    const wait = maxStalenessMs - stalenessMs + 1;
    next = next === undefined ? wait : Math.min(next, wait);
  }
  return next;
}

/** A staleness or a bound for messages: `45.2s`, `30s`; under a second in ms (`250ms`). */
export function formatStaleness(ms: number): string {
  return ms < 1_000 ? `${Math.round(ms)}ms` : `${Math.round(ms / 100) / 10}s`;
}

/** The warn line of one readiness crossing (one per crossing, each way). */
export function staleCrossingMessage(crossing: StaleCrossing): string {
  const figures = `${formatStaleness(crossing.stalenessMs)}, ferry_max_staleness ${formatStaleness(crossing.maxStalenessMs)}`;
  return crossing.direction === 'stale'
    ? `Dataset '${crossing.dataset}' is staler than its ferry_max_staleness (${figures}): it is not ready until a check of its store finds it current; see its lastError for why checks fail`
    : `Dataset '${crossing.dataset}' caught up with its store (${figures}): it is ready again`;
}
