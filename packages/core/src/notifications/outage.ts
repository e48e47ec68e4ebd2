/**
 * What to log while the notification queue cannot be reached, as Spice logs it: a warning when the
 * outage starts, one error once it has lasted five minutes, debug lines in between, and an info line
 * with its duration when it recovers — instead of one warning per failed receive. The retry delay
 * comes from `backoff.ts` (`SQS_OUTAGE_BACKOFF`). Time is passed in (`nowMs`), never read, so tests
 * run on simulated timestamps. Messages name the location, never the queue URL.
 */
import type { PlannedLog } from './batch.js';
import { NotificationMessages, type QueueFailure } from './messages.js';

export interface OutageTrackerOptions {
  /** The location as Spice shows it (`s3://bucket/prefix`). */
  readonly location: string;
  /** How long an outage lasts before the (single) error. Default 5 minutes. */
  readonly errorAfterMs?: number;
}

export interface OutageTracker {
  /** A receive failed at `nowMs` (`connect`: credentials or the connection; `receive`: the queue). */
  failure(nowMs: number, cause: string, failure?: QueueFailure): PlannedLog;
  /** A receive succeeded at `nowMs`. Returns the recovery line when an outage just ended. */
  success(nowMs: number): PlannedLog | undefined;
  /** Failures since the last success: the `attempt` to pass to `backoffDelayMs(SQS_OUTAGE_BACKOFF, attempt)`. */
  readonly consecutiveFailures: number;
}

/** Spice's `SQS_OUTAGE_ERROR_AFTER`. */
export const OUTAGE_ERROR_AFTER_MS = 5 * 60_000;

export function createOutageTracker(options: OutageTrackerOptions): OutageTracker {
  const { location } = options;
  const errorAfterMs = options.errorAfterMs ?? OUTAGE_ERROR_AFTER_MS;
  let startedAtMs: number | undefined;
  let reported = false;
  let failures = 0;

  return {
    get consecutiveFailures() {
      return failures;
    },
    failure(nowMs, cause, failure = 'receive') {
      failures += 1;
      if (startedAtMs === undefined) {
        startedAtMs = nowMs;
        return { level: 'warn', message: NotificationMessages.outage(failure, location, cause), fields: {} };
      }
      const outageMs = nowMs - startedAtMs;
      const message = NotificationMessages.outage(failure, location, cause, outageMs);
      if (!reported && outageMs >= errorAfterMs) {
        reported = true;
        return { level: 'error', message, fields: { outageMs } };
      }
      return { level: 'debug', message, fields: { outageMs } };
    },
    success(nowMs) {
      failures = 0;
      if (startedAtMs === undefined) return undefined;
      const outageMs = nowMs - startedAtMs;
      startedAtMs = undefined;
      reported = false;
      return {
        level: 'info',
        message: NotificationMessages.recovered(location, outageMs),
        fields: { outageMs },
      };
    },
  };
}
