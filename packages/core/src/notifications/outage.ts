/**
 * What to log while the notification queue cannot be reached, so an outage shows up as three lines
 * (it started, it is long, it is over) instead of one per failed receive; the retry delay comes from `backoff.ts`.
 * Time is passed in (`nowMs`), never read, so tests run on simulated timestamps. The description
 * names the queue without its URL ("the SQS queue"): URLs carry account ids and stay out of logs.
 */
import type { PlannedLog } from './batch.js';

export interface OutageTrackerOptions {
  /** How messages name the queue; never its URL. Default `the SQS queue`. */
  readonly description?: string;
  /** How long an outage lasts before the (single) error. Default 5 minutes. */
  readonly errorAfterMs?: number;
}

export interface OutageTracker {
  /** A receive (or delete) failed at `nowMs`. Returns the line to log, if any. */
  failure(nowMs: number, error?: string): PlannedLog | undefined;
  /** A call succeeded at `nowMs`. Returns the recovery line when an outage just ended. */
  success(nowMs: number): PlannedLog | undefined;
  /** Failures since the last success: the `attempt` to pass to `backoffDelayMs(SQS_OUTAGE_BACKOFF, attempt)`. */
  readonly consecutiveFailures: number;
}

/** `4_200` → `4 s`, `300_000` → `5 min`, `312_000` → `5 min 12 s`. */
export function formatOutageDuration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  const rest = seconds % 60;
  return rest === 0 ? `${minutes} min` : `${minutes} min ${rest} s`;
}

export function createOutageTracker(options: OutageTrackerOptions = {}): OutageTracker {
  const description = options.description ?? 'the SQS queue';
  const errorAfterMs = options.errorAfterMs ?? 5 * 60_000;
  let startedAtMs: number | undefined;
  let reported = false;
  let failures = 0;

  return {
    get consecutiveFailures() {
      return failures;
    },
    failure(nowMs, error) {
      failures += 1;
      const errorField = error === undefined ? {} : { error };
      if (startedAtMs === undefined) {
        startedAtMs = nowMs;
        return {
          level: 'warn',
          message: `Cannot reach ${description}; retrying with backoff`,
          fields: { ...errorField },
        };
      }
      const outageMs = nowMs - startedAtMs;
      if (!reported && outageMs >= errorAfterMs) {
        reported = true;
        return {
          level: 'error',
          message:
            `Still cannot reach ${description} after ${formatOutageDuration(errorAfterMs)}; ` +
            'new snapshots are not noticed until it recovers',
          fields: { outageMs, ...errorField },
        };
      }
      return undefined;
    },
    success(nowMs) {
      failures = 0;
      if (startedAtMs === undefined) return undefined;
      const outageMs = nowMs - startedAtMs;
      startedAtMs = undefined;
      reported = false;
      return {
        level: 'info',
        message: `Reached ${description} again after an outage of ${formatOutageDuration(outageMs)}`,
        fields: { outageMs },
      };
    },
  };
}
