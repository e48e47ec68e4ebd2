/**
 * Backoff: how long to wait before the `attempt`-th retry of something that failed, for every
 * retry loop in Ferry (the dataset machine's `retry` mode, the SQS outage loop, dataset-thread
 * supervision, the writer's metadata commit, the inspector's WebSocket reconnects). A policy is
 * plain data, so it can be configured, shown and sent across threads; the jitter source is
 * injected, so callers on a simulated clock stay deterministic. Spice's default retry
 * (`RetryBackoffBuilder::new()`: Fibonacci, base 1 s, randomisation 0.3) is {@link SPICE_RETRY_BACKOFF};
 * its SQS outage loop (exponential, capped at 30 s) is {@link SQS_OUTAGE_BACKOFF}.
 */

export type BackoffPolicy =
  | {
      /** 1, 2, 3, 5, 8 … × `baseMs` (`fibonacci`) or 1, 2, 4, 8 … × `baseMs` (`exponential`). */
      readonly kind: 'fibonacci' | 'exponential';
      readonly baseMs: number;
      /** No delay exceeds it, jitter included. */
      readonly maxMs: number;
      /** Spread in [0, 1): the delay is the base ± `jitter` × base. Default 0 (none). */
      readonly jitter?: number;
    }
  | {
      /** Delays for attempts 1, 2, …; the last one repeats. */
      readonly kind: 'steps';
      readonly delaysMs: readonly number[];
    };

/** Spice's default retry backoff, used by `bootstrap_on_failure_behavior: retry`. */
export const SPICE_RETRY_BACKOFF = {
  kind: 'fibonacci',
  baseMs: 1_000,
  maxMs: 300_000,
  jitter: 0.3,
} as const satisfies BackoffPolicy;

/**
 * Spice's SQS outage backoff: 1 s, 2 s, 4 s … capped at 30 s, without jitter (there is one consumer
 * per queue, so no herd to spread).
 */
export const SQS_OUTAGE_BACKOFF = {
  kind: 'exponential',
  baseMs: 1_000,
  maxMs: 30_000,
} as const satisfies BackoffPolicy;

/** The un-jittered delay before retry `attempt` (1-based; below 1 means no wait). */
export function backoffBaseMs(policy: BackoffPolicy, attempt: number): number {
  if (!(attempt >= 1)) return 0;
  const n = Math.floor(attempt);
  if (policy.kind === 'steps') {
    return policy.delaysMs[Math.min(n, policy.delaysMs.length) - 1] ?? 0;
  }
  const cap = policy.maxMs;
  let factor = 1;
  if (policy.kind === 'exponential') {
    for (let i = 1; i < n && factor * policy.baseMs < cap; i++) factor *= 2;
  } else {
    let previous = 1;
    for (let i = 1; i < n && factor * policy.baseMs < cap; i++) {
      [previous, factor] = [factor, previous + factor];
    }
  }
  return Math.min(factor * policy.baseMs, cap);
}

/**
 * The delay before retry `attempt`: the base ± `jitter` (a `random()` of 0 gives −jitter, 0.5 the
 * base, towards 1 gives +jitter), capped at `maxMs` after the jitter, rounded to whole milliseconds.
 */
export function backoffDelayMs(
  policy: BackoffPolicy,
  attempt: number,
  random: () => number = () => 0.5,
): number {
  const base = backoffBaseMs(policy, attempt);
  if (policy.kind === 'steps' || (policy.jitter ?? 0) === 0) return base;
  const jittered = base * (1 + (random() * 2 - 1) * (policy.jitter ?? 0));
  return Math.max(0, Math.round(Math.min(jittered, policy.maxMs)));
}

/**
 * A supervisor's restart delays: the delay before starting again a thread that died, by how many
 * times it died in a row. A thread that ran longer than `resetAfterMs` before dying counts as
 * healthy, so its restart starts again from the shortest delay. One rule for every supervised
 * thread (the coordinator, each dataset thread); time is passed in, so it runs on any clock.
 */
export class RestartBackoff {
  readonly #policy: BackoffPolicy;
  readonly #resetAfterMs: number;
  #failures = 0;
  #startedAtMs = Number.NEGATIVE_INFINITY;

  constructor(delaysMs: readonly number[], resetAfterMs = 60_000) {
    this.#policy = { kind: 'steps', delaysMs };
    this.#resetAfterMs = resetAfterMs;
  }

  /** The thread started at `nowMs`. */
  started(nowMs: number): void {
    this.#startedAtMs = nowMs;
  }

  /** The thread died at `nowMs`: how long to wait before starting it again (ms). */
  died(nowMs: number): number {
    if (nowMs - this.#startedAtMs > this.#resetAfterMs) this.#failures = 0;
    this.#failures++;
    return backoffDelayMs(this.#policy, this.#failures);
  }

  /** Deaths in a row so far (reset by a thread that ran longer than the reset window). */
  get failures(): number {
    return this.#failures;
  }
}
