/**
 * The SQLite read pool's batching policy, as pure functions of its queue and its load (as piscina
 * keeps its own policy a function of the task and the workers): which queued queries leave together
 * for the next free worker, and what a statement is believed to cost. `sqlite-read-pool.ts` owns
 * the queue, the workers and the clock; it asks these which queries to send and tells them what
 * each run took.
 *
 * The rules: what is queued is shared evenly among the idle workers (a batch of at most
 * `maxBatch`); a statement known to be expensive goes in a batch of its own, and a batch of cheap
 * ones stops before the first expensive one behind them; while every worker but one runs an
 * expensive statement, the last one takes the cheap queries queued (in their order), so a point
 * lookup never waits for aggregates on every thread.
 */

/** A statement whose runs take this long (ms) is expensive. */
export const EXPENSIVE_MS = 1;

/** What a statement's runs took, as a moving estimate (ms), and how many runs it has seen. */
export interface StatementCost {
  readonly ms: number;
  readonly runs: number;
}

/** Whether a statement with `cost` is expensive: it ran slowly, twice (a first run also sets it up). */
export function isExpensive(cost: StatementCost | undefined): boolean {
  return cost !== undefined && cost.runs > 1 && cost.ms >= EXPENSIVE_MS;
}

/**
 * The estimate after a run of `ms`: a faster run is believed at once, a slower one raises the
 * estimate by a tenth of it at most (a statement's first run on a worker also attaches, prepares
 * and explains it, and must not make a cheap statement look expensive).
 */
export function nextCost(known: StatementCost | undefined, ms: number): StatementCost {
  if (known === undefined) return { ms, runs: 1 };
  return {
    ms: ms < known.ms ? ms : known.ms + 0.1 * Math.min(ms - known.ms, known.ms),
    runs: known.runs + 1,
  };
}

/** The pool as a batch leaves: its workers, the batches they have, and how many are expensive. */
export interface PoolLoad {
  readonly threads: number;
  readonly inFlight: number;
  readonly expensiveInFlight: number;
  readonly maxBatch: number;
}

/**
 * The positions in the queue (ascending) of the queries the next batch takes, for a worker that is
 * free now (`load.inFlight < load.threads`); empty when the queue is. `expensiveAt(i)` says whether
 * the query at position `i` is known to be expensive; it is asked only for the positions the
 * choice looks at (the queue's front, or every position when the cheap worker is kept).
 */
export function nextBatch(
  queueLength: number,
  expensiveAt: (index: number) => boolean,
  load: PoolLoad,
): readonly number[] {
  if (queueLength === 0) return [];
  const idle = Math.max(1, load.threads - load.inFlight);
  const size = Math.min(load.maxBatch, Math.ceil(queueLength / idle));
  if (expensiveAt(0)) {
    if (load.threads > 1 && load.expensiveInFlight >= load.threads - 1) {
      const cheap: number[] = [];
      for (let index = 1; index < queueLength && cheap.length < size; index++) {
        if (!expensiveAt(index)) cheap.push(index);
      }
      if (cheap.length > 0) return cheap;
    }
    return [0];
  }
  const take = [0];
  while (take.length < size && take.length < queueLength && !expensiveAt(take.length)) take.push(take.length);
  return take;
}
