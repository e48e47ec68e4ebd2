/**
 * Whether a dataset read with trusted keys is fresh: the defence against a freeze (an attacker who
 * can write the bucket stops the writer's updates, or replays an old but validly signed
 * metadata.json to a reader that starts fresh). Only an expiry defeats it, as TUF's timestamp role
 * and APT's `Valid-Until` do: the writer re-signs a short-lived heartbeat statement, and a reader
 * whose statement is missing, unverifiable, expired, or names a snapshot newer than the one it can
 * load counts the dataset as stale. A pure function of the verified statement and the clock.
 */
import type { HeartbeatStatement } from './statement.js';

export type Freshness =
  | { readonly stale: false; readonly validUntilMs: number; readonly snapshotId: number }
  | {
      readonly stale: true;
      readonly reason: string;
      /**
       * The last instant the writer vouched for what it then published: the statement's signing
       * time (staleness counts from there, however recently metadata.json was read: a frozen store
       * answers every read). Absent when no statement was ever verified.
       */
      readonly sinceMs?: number;
    };

export interface FreshnessInput {
  readonly dataset: string;
  /** The location metadata.json records, which the statement must name. */
  readonly location: string;
  /** The verified statement, or why there is none that can be trusted. */
  readonly statement: HeartbeatStatement | { readonly problem: string };
  readonly nowMs: number;
  /** The snapshot the dataset serves (null: nothing yet, so nothing to compare). */
  readonly servingSnapshotId: number | null;
  /**
   * The SHA-256 of the snapshot served: a statement naming its id with another digest vouches for
   * another snapshot published under the same id (metadata.json lost the served entry and the
   * writer reused its id), which this reader never loads. Absent: not compared.
   */
  readonly servingChecksum?: string | null | undefined;
  /**
   * How long a statement may name a snapshot newer than the one served before that counts: the
   * reader needs a check or two to load what the writer just published.
   */
  readonly graceMs: number;
  /**
   * The signing time of the first statement verified that named a snapshot newer than the one
   * served, since it was served: the grace counts from there, not from this statement's signing,
   * which a writer re-signing on schedule keeps recent (a reader held on an older snapshot would
   * otherwise never be stale). Absent: from this statement's.
   */
  readonly behindSinceMs?: number | undefined;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function heartbeatFreshness(input: FreshnessInput): Freshness {
  const { statement, nowMs } = input;
  if ('problem' in statement) return { stale: true, reason: statement.problem };
  if (statement.dataset !== input.dataset) {
    return { stale: true, reason: `the heartbeat statement names dataset '${statement.dataset}'` };
  }
  if (statement.location !== input.location) {
    return { stale: true, reason: `the heartbeat statement names location '${statement.location}'` };
  }
  if (nowMs > statement.validUntilMs) {
    return {
      stale: true,
      reason: `the writer's heartbeat statement expired at ${iso(statement.validUntilMs)} (signed at ${iso(statement.issuedAtMs)})`,
      sinceMs: statement.issuedAtMs,
    };
  }
  const serving = input.servingSnapshotId;
  const behindSinceMs = Math.min(input.behindSinceMs ?? statement.issuedAtMs, statement.issuedAtMs);
  if (
    namesAnotherSnapshot(statement, serving, input.servingChecksum) &&
    nowMs - behindSinceMs > input.graceMs
  ) {
    const signed = `the writer's heartbeat statement of ${iso(statement.issuedAtMs)} names snapshot ${statement.snapshotId}`;
    return {
      stale: true,
      reason:
        statement.snapshotId === serving
          ? `${signed} of SHA-256 ${statement.sha256}, but the dataset serves snapshot ${serving} of SHA-256 ${input.servingChecksum?.toLowerCase()}`
          : `${signed}, but the dataset serves snapshot ${serving}`,
      sinceMs: behindSinceMs,
    };
  }
  return { stale: false, validUntilMs: statement.validUntilMs, snapshotId: statement.snapshotId };
}

/**
 * Whether the statement vouches for a snapshot the dataset does not serve and should: a newer id,
 * or the served id with another SHA-256. Nothing served yet (bootstrapping): nothing to compare.
 */
export function namesAnotherSnapshot(
  statement: HeartbeatStatement,
  servingSnapshotId: number | null,
  servingChecksum?: string | null,
): boolean {
  if (servingSnapshotId === null) return false;
  if (statement.snapshotId > servingSnapshotId) return true;
  return (
    statement.snapshotId === servingSnapshotId &&
    typeof servingChecksum === 'string' &&
    statement.sha256 !== servingChecksum.toLowerCase()
  );
}
