/**
 * Noticing that this process does not receive the notifications of commits it can see: the usual
 * cause is a queue shared by several readers (SQS gives each message to ONE receiver, so each reader
 * gets only some), the other a bucket notification that does not reach the queue. Spice's docs warn
 * against sharing a queue; nothing in SQS tells a consumer it has company, so this infers it.
 *
 * The evidence is exact: S3 names the object's ETag in each event (`s3.object.eTag`, EventBridge's
 * `detail.object.etag`), and every read of `metadata.json` returns the ETag of the document it read.
 * A *change* of the document seen by any read (a poll or a notification's read) is a commit; once it
 * has been seen, its own notification must arrive within a grace period. One that does not is a
 * miss. A warning needs {@link MissedCommitOptions.threshold} misses among the last
 * {@link MissedCommitOptions.window} commits checked, so a single lost or late event (S3 may send one
 * event for two writes of the same key at nearly the same time) is not enough.
 *
 * What keeps a healthy single-consumer queue from being flagged:
 * - only a change whose previous document was itself read after listening began counts, so the
 *   document current at startup, and anything written before the queue was read (or made), never do;
 * - a receive failure forgets every pending check (the events wait on the queue and arrive late),
 *   and checks restart only after a receive succeeds again, from a fresh baseline;
 * - an announcement that arrives after its grace period retracts the miss;
 * - an event without an ETag cannot be matched: the consumer then counts the document its batch read
 *   as announced (the most a notification can vouch for), which may hide a miss but never adds one.
 *
 * Limits: only changes this process happens to read are checked (with a long
 * `refresh_check_interval` and a shared queue, intermediate commits go unseen, so detection is
 * slower); it cannot tell a shared queue from notifications that do not reach the queue; and a
 * notification slower than the grace period (S3 documents seconds, "sometimes a minute or longer")
 * counts as a miss until it arrives. Pure: time is passed in.
 */
import type { PlannedLog } from './batch.js';
import type { NotificationRecord } from './parse.js';
import { commitsLocation, type NotificationLocation } from './route.js';

export interface MissedCommitOptions {
  /** The location as Spice shows it (`s3://bucket/prefix`). */
  readonly location: string;
  /** The setting that gave the queue, for the message: `s3_queue_url` or `ferry_sns_topic_arn`. */
  readonly queueKey: 's3_queue_url' | 'ferry_sns_topic_arn';
  /** How long a seen commit may wait for its notification. Default 5 minutes. */
  readonly graceMs?: number;
  /** Misses among the last `window` checked commits that make the warning. Default 2. */
  readonly threshold?: number;
  /** How many checked commits are remembered. Default 10. */
  readonly window?: number;
}

export interface MissedCommitDetector {
  /** A receive succeeded at `nowMs`: checks (re)start from the next document read after this. */
  listening(nowMs: number): void;
  /** A receive failed: pending checks are dropped, and nothing is checked until `listening` again. */
  interrupted(): void;
  /** A notification announced the document with this ETag (received at `nowMs`). */
  announced(etag: string, nowMs: number): void;
  /** A read that started at `readStartedAtMs` returned the document with this ETag. */
  observed(etag: string | undefined, readStartedAtMs: number, nowMs: number): void;
  /**
   * Settles the pending checks whose grace ended. Returns a debug line per commit settled since the
   * last call (notified or missed), then the warning when it is due (once per episode).
   */
  check(nowMs: number): PlannedLog[];
}

export const MISSED_COMMIT_GRACE_MS = 5 * 60_000;
const MAX_ANNOUNCED = 1_000;

/** ETags as equal strings: quotes and a weak marker dropped, lower case (S3 events carry them bare). */
export function normalizeEtag(etag: string): string {
  return etag
    .trim()
    .replace(/^W\//, '')
    .replace(/^"(.*)"$/, '$1')
    .toLowerCase();
}

/**
 * What one message tells about commits of `location`: the ETags its `metadata.json` creations name,
 * and whether one of them named none. Undefined when the message does not commit the location.
 */
export function announcedCommits(
  records: readonly NotificationRecord[],
  location: NotificationLocation,
): { readonly etags: readonly string[]; readonly unnamed: boolean } | undefined {
  const commits = records.filter((record) => commitsLocation(location, record));
  if (commits.length === 0) return undefined;
  const etags = commits.flatMap((record) => (record.eTag === undefined ? [] : [normalizeEtag(record.eTag)]));
  return { etags, unnamed: etags.length < commits.length };
}

function formatGrace(ms: number): string {
  return ms >= 60_000 && ms % 60_000 === 0 ? `${ms / 60_000}m` : `${Math.round(ms / 1000)}s`;
}

/** The debug line for each commit checked. */
export const MissedCommitLogMessage = {
  notified: 'A metadata.json commit seen by a read was notified on the queue',
  missed: 'A metadata.json commit seen by a read was not notified on the queue within the grace period',
} as const;

export const MissedCommitMessages = {
  missed: (
    location: string,
    queueKey: MissedCommitOptions['queueKey'],
    misses: number,
    checked: number,
    graceMs: number,
  ): string =>
    `Snapshot location '${location}' saw ${misses} of its last ${checked} metadata.json commits without receiving their S3 event notifications within ${formatGrace(graceMs)} ` +
    (queueKey === 's3_queue_url'
      ? "on the SQS queue in `s3_queue_url`. Another process probably reads the same queue: SQS delivers each message to one receiver, so readers that share a queue each see only some notifications. Give each reader process its own queue subscribed to the bucket notifications' SNS topic (or set `snapshots.params.ferry_sns_topic_arn` and let each reader make its own), or check that every notification reaches the queue. "
      : 'on the queue this process made and subscribed to the topic in `ferry_sns_topic_arn`. Check that the bucket sends every notification of the location to that topic. ') +
    'Datasets still reload every `refresh_check_interval`.',
} as const;

export function createMissedCommitDetector(options: MissedCommitOptions): MissedCommitDetector {
  const graceMs = options.graceMs ?? MISSED_COMMIT_GRACE_MS;
  const threshold = options.threshold ?? 2;
  const window = options.window ?? 10;
  let listeningSinceMs: number | undefined;
  let last: { readonly etag: string; readonly readAtMs: number } | undefined;
  const announced = new Map<string, number>();
  /** ETag → when its change was first seen. */
  const pending = new Map<string, number>();
  /** The last `window` checked commits, oldest first. */
  const outcomes: { etag: string; missed: boolean }[] = [];
  let warned = false;

  const settledLines: PlannedLog[] = [];
  const settle = (etag: string, missed: boolean): void => {
    outcomes.push({ etag, missed });
    if (outcomes.length > window) outcomes.shift();
    settledLines.push({
      level: 'debug',
      message: missed ? MissedCommitLogMessage.missed : MissedCommitLogMessage.notified,
      fields: { etag },
    });
  };

  return {
    listening(nowMs) {
      listeningSinceMs ??= nowMs;
    },
    interrupted() {
      listeningSinceMs = undefined;
      pending.clear();
    },
    announced(raw, nowMs) {
      const etag = normalizeEtag(raw);
      announced.delete(etag);
      announced.set(etag, nowMs);
      if (announced.size > MAX_ANNOUNCED) {
        const oldest = announced.keys().next().value;
        if (oldest !== undefined) announced.delete(oldest);
      }
      if (pending.delete(etag)) settle(etag, false);
      for (const outcome of outcomes) if (outcome.etag === etag) outcome.missed = false;
    },
    observed(raw, readStartedAtMs, nowMs) {
      if (raw === undefined) return;
      const etag = normalizeEtag(raw);
      if (last?.etag === etag) {
        // Read again: still current at this later read.
        last = { etag, readAtMs: Math.max(last.readAtMs, readStartedAtMs) };
        return;
      }
      const previous = last;
      last = { etag, readAtMs: readStartedAtMs };
      const checkable =
        listeningSinceMs !== undefined && previous !== undefined && previous.readAtMs >= listeningSinceMs;
      if (!checkable || pending.has(etag) || outcomes.some((outcome) => outcome.etag === etag)) return;
      if (announced.has(etag)) settle(etag, false);
      else pending.set(etag, nowMs);
    },
    check(nowMs) {
      for (const [etag, seenAtMs] of pending) {
        if (nowMs - seenAtMs >= graceMs) {
          pending.delete(etag);
          settle(etag, true);
        }
      }
      const lines = settledLines.splice(0);
      const misses = outcomes.filter((outcome) => outcome.missed).length;
      if (misses === 0) warned = false;
      if (warned || misses < threshold) return lines;
      warned = true;
      lines.push({
        level: 'warn',
        message: MissedCommitMessages.missed(
          options.location,
          options.queueKey,
          misses,
          outcomes.length,
          graceMs,
        ),
        fields: { misses, checked: outcomes.length, graceMs },
      });
      return lines;
    },
  };
}
