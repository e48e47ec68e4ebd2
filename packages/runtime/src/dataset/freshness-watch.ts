/**
 * A dataset with trusted keys watches its writer's heartbeat statement: every check interval it
 * reads and verifies the statement (a snapshot pool task) and asks core's `heartbeatFreshness`
 * whether the dataset is stale (no statement it can trust, an expired one, or one naming a
 * snapshot newer than the one served past the grace). It says so once per change: a warn line
 * naming the reason when the dataset turns stale, an info line when it is fresh again, and a
 * `freshness` report the host's metrics count. A read that fails keeps judging by the last
 * statement verified, so an unreachable store cannot hide an expiry.
 */
import {
  type Freshness,
  freshnessClock,
  type HeartbeatStatement,
  heartbeatFreshness,
  namesAnotherSnapshot,
} from '@ferry/core/machine';

export interface FreshnessWatchOptions {
  readonly dataset: string;
  readonly intervalMs: number;
  readonly graceMs: number;
  /** Reads and verifies the statement (or says why none can be trusted). */
  readonly read: () => Promise<HeartbeatStatement | { readonly problem: string }>;
  readonly servingSnapshotId: () => number | null;
  /** The SHA-256 of the snapshot served (null: nothing yet). */
  readonly servingChecksum: () => string | null;
  /** The location metadata.json records. */
  readonly location: () => string;
  readonly log: (level: 'info' | 'warn' | 'debug', message: string, fields: Record<string, unknown>) => void;
  readonly report: (freshness: Freshness) => void;
}

export class FreshnessWatch {
  readonly #options: FreshnessWatchOptions;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #lastVerified: HeartbeatStatement | undefined;
  /**
   * Since a statement first named a snapshot newer than the one served (kept while the same one
   * is served, however often the writer re-signs): the grace before that counts as stale.
   */
  #behind: { readonly servingSnapshotId: number; readonly sinceMs: number } | undefined;
  /** Unknown until the first check. */
  #stale: boolean | undefined;
  /** While stale: the instant staleness counts from, as last reported. */
  #sinceMs: number | undefined;

  constructor(options: FreshnessWatchOptions) {
    this.#options = options;
  }

  start(): void {
    this.#timer ??= setInterval(() => void this.#checkOnce(), this.#options.intervalMs).unref();
    void this.#checkOnce();
  }

  /** One check at a time: a tick while one runs joins it. Resolves when the check and its report are done. */
  #checkOnce(): Promise<void> {
    this.#running ??= this.#check().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  async #check(): Promise<void> {
    const options = this.#options;
    let statement: HeartbeatStatement | { readonly problem: string };
    try {
      statement = await options.read();
      if (!('problem' in statement)) this.#lastVerified = statement;
    } catch (error) {
      const problem = `the heartbeat statement could not be read (${(error as Error).message})`;
      statement = this.#lastVerified ?? { problem };
    }
    const nowMs = freshnessClock();
    const serving = options.servingSnapshotId();
    const servingChecksum = options.servingChecksum();
    if (!('problem' in statement)) {
      if (serving === null || !namesAnotherSnapshot(statement, serving, servingChecksum)) {
        this.#behind = undefined;
      } else if (this.#behind?.servingSnapshotId !== serving) {
        this.#behind = { servingSnapshotId: serving, sinceMs: statement.issuedAtMs };
      }
    }
    const judged = heartbeatFreshness({
      dataset: options.dataset,
      location: options.location(),
      statement,
      nowMs,
      servingSnapshotId: serving,
      servingChecksum,
      graceMs: options.graceMs,
      behindSinceMs: this.#behind?.sinceMs,
    });
    // No statement to judge (none verified, or a new one that fails): stale from the signing of
    // the last one verified, else from the first check that found none.
    const freshness: Freshness = judged.stale
      ? {
          ...judged,
          sinceMs:
            judged.sinceMs ??
            this.#lastVerified?.issuedAtMs ??
            (this.#stale === true ? this.#sinceMs : undefined) ??
            nowMs,
        }
      : judged;
    const sinceMs = freshness.stale ? freshness.sinceMs : undefined;
    if (freshness.stale === this.#stale && sinceMs === this.#sinceMs) return;
    const turned = freshness.stale !== this.#stale;
    const first = this.#stale === undefined;
    this.#stale = freshness.stale;
    this.#sinceMs = sinceMs;
    // The report first: whoever reads the line finds the metric already counted.
    options.report(freshness);
    if (!turned) return;
    if (freshness.stale) {
      options.log(
        'warn',
        `Dataset '${options.dataset}' is stale: ${freshness.reason}; it keeps serving, but its writer may be stopped or its store frozen by someone without the writer's key (the writer re-signs with ferry publish --heartbeat)`,
        { reason: freshness.reason },
      );
    } else {
      options.log(
        first ? 'debug' : 'info',
        `Dataset '${options.dataset}' is fresh: its writer's heartbeat statement is valid until ${new Date(freshness.validUntilMs).toISOString()}`,
        { validUntilMs: freshness.validUntilMs, snapshotId: freshness.snapshotId },
      );
    }
  }
}
