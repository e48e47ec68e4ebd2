/**
 * The SQLite read pool's batching policy, as pure functions: no worker, no clock. The pool's own
 * test (`sqlite-read-pool.test.ts`) runs the same rules on real threads.
 */
import { describe, expect, it } from 'vitest';
import {
  EXPENSIVE_MS,
  isExpensive,
  nextBatch,
  nextCost,
  type PoolLoad,
} from '../src/query/sqlite-batching.js';

/** A queue written as letters: `c` a cheap query, `E` an expensive one. */
function batchOf(queue: string, load: Partial<PoolLoad> = {}): readonly number[] {
  return nextBatch(queue.length, (index) => queue[index] === 'E', {
    threads: 2,
    inFlight: 0,
    expensiveInFlight: 0,
    maxBatch: 64,
    ...load,
  });
}

describe('nextBatch', () => {
  it('takes nothing from an empty queue', () => {
    expect(batchOf('')).toEqual([]);
  });

  it('shares cheap queries evenly among the idle workers', () => {
    expect(batchOf('ccccc')).toEqual([0, 1, 2]);
    expect(batchOf('ccccc', { inFlight: 1 })).toEqual([0, 1, 2, 3, 4]);
    expect(batchOf('ccccc', { threads: 4 })).toEqual([0, 1]);
    expect(batchOf('c')).toEqual([0]);
  });

  it('takes at most maxBatch', () => {
    expect(batchOf('cccccccc', { threads: 1, maxBatch: 3 })).toEqual([0, 1, 2]);
  });

  it('stops a cheap batch before the first expensive query behind it', () => {
    expect(batchOf('ccEcc', { threads: 1 })).toEqual([0, 1]);
  });

  it('sends an expensive query alone', () => {
    expect(batchOf('Ecccc', { threads: 1 })).toEqual([0]);
    expect(batchOf('EEcc')).toEqual([0]);
  });

  it('keeps the last worker for cheap queries while every other runs an expensive one', () => {
    // Two workers, one busy with an expensive query: the cheap ones queued go first, in order.
    expect(batchOf('EEcEc', { inFlight: 1, expensiveInFlight: 1 })).toEqual([2, 4]);
    // Three workers, two busy with expensive queries.
    expect(batchOf('Ec', { threads: 3, inFlight: 2, expensiveInFlight: 2 })).toEqual([1]);
    // Only one busy with an expensive query of three: the expensive one takes a worker.
    expect(batchOf('Ec', { threads: 3, inFlight: 1, expensiveInFlight: 1 })).toEqual([0]);
  });

  it('sends the expensive query when no cheap one waits, and never keeps the only worker', () => {
    expect(batchOf('EE', { inFlight: 1, expensiveInFlight: 1 })).toEqual([0]);
    expect(batchOf('Ec', { threads: 1 })).toEqual([0]);
  });

  it('takes at most the even share of cheap queries for the kept worker', () => {
    expect(batchOf('Ecccc', { inFlight: 1, expensiveInFlight: 1, maxBatch: 2 })).toEqual([1, 2]);
  });

  it('asks about the queue front only, unless the cheap worker is kept', () => {
    const asked: number[] = [];
    const load = { threads: 2, inFlight: 0, expensiveInFlight: 0, maxBatch: 64 };
    nextBatch(
      10_000,
      (index) => {
        asked.push(index);
        return index === 3;
      },
      load,
    );
    expect(asked).toEqual([0, 1, 2, 3]);
  });
});

describe('statement costs', () => {
  it('calls a statement expensive only after two slow runs', () => {
    const first = nextCost(undefined, 50);
    expect(first).toEqual({ ms: 50, runs: 1 });
    expect(isExpensive(first)).toBe(false);
    expect(isExpensive(nextCost(first, 50))).toBe(true);
    expect(isExpensive(undefined)).toBe(false);
  });

  it('believes a faster run at once', () => {
    // A first run that attached and prepared (40 ms) and a second that only ran (0.05 ms).
    const cost = nextCost(nextCost(undefined, 40), 0.05);
    expect(cost).toEqual({ ms: 0.05, runs: 2 });
    expect(isExpensive(cost)).toBe(false);
  });

  it('raises the estimate by a tenth of it at most for a slower run', () => {
    const cheap = nextCost(nextCost(undefined, 0.1), 0.1);
    const after = nextCost(cheap, 1_000);
    expect(after.ms).toBeCloseTo(0.11, 10);
    // It takes many slow runs for a cheap statement to become expensive.
    let cost = after;
    let runs = 0;
    while (!isExpensive(cost)) {
      cost = nextCost(cost, 1_000);
      runs++;
    }
    expect(cost.ms).toBeGreaterThanOrEqual(EXPENSIVE_MS);
    expect(runs).toBeGreaterThan(20);
  });
});
