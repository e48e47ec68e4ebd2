/**
 * The bound a client sets per query (`QueryOptions.maxStalenessMs`; HTTP `X-Ferry-Max-Staleness`,
 * Flight `x-ferry-max-staleness`): a query that read any dataset staler than it is answered with
 * `StaleReadError` (503 `ERR_STALE`, `Retry-After`) instead of its rows. The judgement is made on
 * the datasets the query actually read (its provenance), when its answer is ready, so a statement
 * that names a stale dataset only in a branch it did not read is not refused. Without a bound, no
 * check (the default).
 */
import {
  datasetStaleness,
  durationOrProblem,
  freshnessClock,
  isStalerThan,
  parseSnapshotPins,
} from '@ferry/core/base';
import type { DatasetInfo, QueryProvenance } from '../api.js';
import { FreshnessHeaderError, StaleReadError } from '../errors.js';

/** The request header (HTTP) and call metadata key (Flight) a client sets its bound with. */
export const MAX_STALENESS_HEADER = 'x-ferry-max-staleness';

/** The answer header (HTTP) and response metadata key (Flight) naming the snapshot of each dataset read. */
export const SNAPSHOT_HEADER = 'x-ferry-snapshot';

/**
 * The query option an `X-Ferry-Max-Staleness` value asks for (`30s`, `500ms`, `2m`; `0s` means
 * "only a dataset known current this very moment"); none without the header. A value that is not a
 * duration throws `FreshnessHeaderError` (400 / `INVALID_ARGUMENT`).
 */
export function maxStalenessOption(value: string | undefined): { maxStalenessMs?: number } {
  if (value === undefined) return {};
  const trimmed = value.trim();
  if (trimmed.includes(',')) {
    // Two headers (or metadata values) arrive joined: which bound was meant is not for Ferry to pick.
    const problem = `'${trimmed}' names more than one bound (the header sent twice, or a list); send one duration, such as 30s`;
    throw new FreshnessHeaderError(MAX_STALENESS_HEADER, problem);
  }
  const parsed = durationOrProblem(trimmed, { allowZero: true });
  if (typeof parsed === 'number') return { maxStalenessMs: parsed };
  throw new FreshnessHeaderError(MAX_STALENESS_HEADER, parsed.problem);
}

/**
 * The query option an `X-Ferry-Snapshot` request value asks for (`orders=17, users=4`: the answer
 * header's syntax): each named dataset read at that snapshot. None without the header (or with an
 * empty one). A value that cannot be read throws `FreshnessHeaderError` (400 / `INVALID_ARGUMENT`).
 */
export function snapshotPinsOption(value: string | undefined): {
  snapshots?: Readonly<Record<string, number>>;
} {
  if (value === undefined) return {};
  const parsed = parseSnapshotPins(value);
  if ('problem' in parsed) throw new FreshnessHeaderError(SNAPSHOT_HEADER_NAME, parsed.problem);
  return Object.keys(parsed.pins).length === 0 ? {} : { snapshots: parsed.pins };
}

/** How messages name the pin header (HTTP spelling; Flight's key is the same in lower case). */
const SNAPSHOT_HEADER_NAME = 'X-Ferry-Snapshot';

/** `orders=17, users=4`: the snapshot of each dataset an answer read, in the order it read them. */
export function snapshotHeaderValue(read: QueryProvenance['datasets']): string {
  return read.map((dataset) => `${dataset.name}=${dataset.snapshotId}`).join(', ');
}

/**
 * Throws `StaleReadError` for the first dataset `read` that is staler than `maxStalenessMs`. A
 * dataset is judged at the snapshot read: the one it serves, or, for an answer read while a swap
 * replaced it, the one replaced (staler: it was last known current at its last check before the
 * swap); one replaced earlier still, whose staleness nothing recorded says, is refused. A pinned dataset (`pins`) is
 * judged as the dataset it is (pin and bound answer different questions).
 */
export function holdToStalenessBound(
  read: readonly { readonly name: string; readonly snapshotId?: number }[],
  maxStalenessMs: number | undefined,
  info: (name: string) => DatasetInfo,
  pins: Readonly<Record<string, number>> = {},
  nowMs: number = freshnessClock(),
): void {
  if (maxStalenessMs === undefined) return;
  const pinned = new Set(Object.keys(pins).map((name) => name.toLowerCase()));
  for (const { name, snapshotId } of read) {
    const dataset = info(name);
    const status = dataset.status;
    const served = status === undefined ? null : datasetStaleness(status, nowMs).stalenessMs;
    const replacedSince =
      snapshotId !== undefined && snapshotId !== status?.servingSnapshotId && !pinned.has(name.toLowerCase());
    // Replaced earlier than the one replaced last: staler by an amount nothing recorded says (null).
    const staleness = !replacedSince
      ? served
      : dataset.replaced?.snapshotId === snapshotId
        ? Math.max(served ?? 0, dataset.replaced.stalenessMs)
        : null;
    if (!isStalerThan(staleness, maxStalenessMs)) continue;
    // The snapshot served now is within the bound: a retry reads it. Else staleness falls only at a
    // check: retry when the next one is due (at least a second away).
    const due = isStalerThan(served, maxStalenessMs) ? status?.nextPollDueMs : undefined;
    const retryAfterSeconds = Math.max(1, Math.ceil(((due ?? nowMs) - nowMs) / 1000));
    const replacedTwice = replacedSince && staleness === null ? snapshotId : undefined;
    throw new StaleReadError(name, staleness, maxStalenessMs, retryAfterSeconds, replacedTwice);
  }
}
