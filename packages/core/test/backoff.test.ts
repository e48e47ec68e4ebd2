/** The one backoff rule: Spice's Fibonacci retry, Spice's SQS outage loop, steps, jitter and caps. */
import { describe, expect, it } from 'vitest';
import {
  backoffBaseMs,
  backoffDelayMs,
  RestartBackoff,
  SPICE_RETRY_BACKOFF,
  SQS_OUTAGE_BACKOFF,
} from '../src/backoff.js';

describe('Spice retry backoff (bootstrap_on_failure_behavior: retry)', () => {
  it('Fibonacci 1, 2, 3, 5, 8 … s, capped at 300 s', () => {
    const bases = Array.from({ length: 15 }, (_, i) => backoffBaseMs(SPICE_RETRY_BACKOFF, i + 1));
    expect(bases).toEqual([
      1000, 2000, 3000, 5000, 8000, 13_000, 21_000, 34_000, 55_000, 89_000, 144_000, 233_000, 300_000,
      300_000, 300_000,
    ]);
    expect(backoffBaseMs(SPICE_RETRY_BACKOFF, 1000)).toBe(300_000);
  });

  it('±30 % jitter from the injected source, never above the cap', () => {
    expect(SPICE_RETRY_BACKOFF.jitter).toBe(0.3);
    expect(backoffDelayMs(SPICE_RETRY_BACKOFF, 4, () => 0.5)).toBe(5000);
    expect(backoffDelayMs(SPICE_RETRY_BACKOFF, 4, () => 0)).toBe(3500);
    expect(backoffDelayMs(SPICE_RETRY_BACKOFF, 4, () => 0.999_999)).toBe(6500);
    expect(backoffDelayMs(SPICE_RETRY_BACKOFF, 12, () => 0.999_999)).toBe(300_000);
    expect(backoffDelayMs(SPICE_RETRY_BACKOFF, 13, () => 0)).toBe(210_000);
  });

  it('a lower cap applies before and after the jitter', () => {
    const policy = { ...SPICE_RETRY_BACKOFF, maxMs: 4_000 };
    expect(backoffBaseMs(policy, 4)).toBe(4_000);
    expect(backoffDelayMs(policy, 4, () => 0.999_999)).toBe(4_000);
    expect(backoffDelayMs(policy, 4, () => 0)).toBe(2_800);
  });
});

describe('SQS outage backoff', () => {
  it.each([
    [0, 0],
    [1, 1_000],
    [2, 2_000],
    [3, 4_000],
    [5, 16_000],
    [6, 30_000],
    [7, 30_000],
    [1_000, 30_000],
  ])('attempt %i waits %i ms', (attempt, expected) => {
    expect(backoffDelayMs(SQS_OUTAGE_BACKOFF, attempt)).toBe(expected);
  });

  it('takes a base and a cap', () => {
    expect(backoffDelayMs({ ...SQS_OUTAGE_BACKOFF, baseMs: 100, maxMs: 250 }, 3)).toBe(250);
    expect(backoffDelayMs({ ...SQS_OUTAGE_BACKOFF, baseMs: 100, maxMs: 250 }, 2)).toBe(200);
  });
});

describe('steps', () => {
  it('walks the list and repeats its last delay', () => {
    const policy = { kind: 'steps', delaysMs: [50, 200, 1_000] } as const;
    expect([1, 2, 3, 4, 9].map((attempt) => backoffDelayMs(policy, attempt))).toEqual([
      50, 200, 1_000, 1_000, 1_000,
    ]);
    expect(backoffDelayMs(policy, 0)).toBe(0);
  });
});

describe('a supervisor’s restarts (RestartBackoff)', () => {
  it('waits longer for each death in a row, and the last delay repeats', () => {
    const restarts = new RestartBackoff([1_000, 2_000, 5_000], 60_000);
    let now = 0;
    const delays: number[] = [];
    for (let death = 0; death < 5; death++) {
      restarts.started(now);
      now += 500; // died half a second after starting
      const delay = restarts.died(now);
      delays.push(delay);
      now += delay;
    }
    expect(delays).toEqual([1_000, 2_000, 5_000, 5_000, 5_000]);
    expect(restarts.failures).toBe(5);
  });

  it('starts again from the shortest delay after a thread ran past the reset window', () => {
    const restarts = new RestartBackoff([1_000, 2_000, 5_000], 60_000);
    restarts.started(0);
    expect(restarts.died(10)).toBe(1_000);
    restarts.started(1_010);
    expect(restarts.died(1_020)).toBe(2_000);
    restarts.started(3_020);
    // Ran exactly the window: still a death in a row.
    expect(restarts.died(63_020)).toBe(5_000);
    restarts.started(68_020);
    // Ran longer than the window: healthy, so the count starts again.
    expect(restarts.died(128_021)).toBe(1_000);
    expect(restarts.failures).toBe(1);
  });
});
