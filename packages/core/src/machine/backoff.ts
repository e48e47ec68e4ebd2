/**
 * The retry-mode backoff: Fibonacci seconds (1, 2, 3, 5, 8, …) per consecutive failure, ±30 %
 * jitter from an injected random source, never more than the cap (300 s by default).
 */

export const DEFAULT_MAX_BACKOFF_MS = 300_000;
export const BACKOFF_JITTER = 0.3;

/** The un-jittered delay of the `attempt`-th consecutive failure (1-based), capped. */
export function backoffBaseMs(attempt: number, maxMs: number = DEFAULT_MAX_BACKOFF_MS): number {
  let previous = 1;
  let current = 1;
  for (let i = 1; i < attempt && current * 1000 < maxMs; i++) {
    [previous, current] = [current, previous + current];
  }
  return Math.min(current * 1000, maxMs);
}

/**
 * The delay before retry `attempt`: the base ±30 % (`random()` of 0 gives -30 %, 0.5 the base,
 * towards 1 gives +30 %), capped at `maxMs` after the jitter.
 */
export function retryBackoffMs(
  attempt: number,
  random: () => number,
  maxMs: number = DEFAULT_MAX_BACKOFF_MS,
): number {
  const base = backoffBaseMs(attempt, maxMs);
  const jittered = base * (1 + (random() * 2 - 1) * BACKOFF_JITTER);
  return Math.max(0, Math.round(Math.min(jittered, maxMs)));
}
