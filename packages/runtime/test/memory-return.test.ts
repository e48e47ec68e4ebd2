/**
 * The full collections after a large answer (memory-return.ts), on simulated timers: an answer of
 * at least LARGE_ANSWER_BYTES is followed by one at each step of COLLECT_AFTER_MS after it ends,
 * each one ending starts the sequence again, small ones never start one; a stream counts the bytes of the batches
 * it carried, whether read through or left early.
 */
import { type RecordBatch, tableFromArrays } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { COLLECT_AFTER_MS, LARGE_ANSWER_BYTES, MemoryReturn } from '../src/query/memory-return.js';
import { watched } from '../src/query/query-front.js';

function simulated() {
  const timers: { at: number; run: () => void }[] = [];
  let now = 0;
  let collected = 0;
  const memory = new MemoryReturn({
    collect: () => {
      collected++;
    },
    timers: {
      set: (run, ms) => {
        const timer = { at: now + ms, run };
        timers.push(timer);
        return timer;
      },
      clear: (timer) => {
        timers.splice(timers.indexOf(timer as (typeof timers)[number]), 1);
      },
    },
  });
  /** Moves the clock by `ms`, running each timer due on the way at its own time. */
  const advance = (ms: number): void => {
    const until = now + ms;
    for (;;) {
      const due = timers.filter((timer) => timer.at <= until).sort((a, b) => a.at - b.at)[0];
      if (due === undefined) break;
      timers.splice(timers.indexOf(due), 1);
      now = due.at;
      due.run();
    }
    now = until;
  };
  return { memory, advance, collected: () => collected };
}

describe('MemoryReturn', () => {
  it('collects at each step of COLLECT_AFTER_MS after a large answer ends, then stops', () => {
    const { memory, advance, collected } = simulated();
    memory.ended(LARGE_ANSWER_BYTES);
    let at = 0;
    for (const [index, step] of COLLECT_AFTER_MS.entries()) {
      advance(step - at - 1);
      expect(collected()).toBe(index);
      advance(1);
      expect(collected()).toBe(index + 1);
      at = step;
    }
    advance(10 * 60_000);
    expect(collected()).toBe(COLLECT_AFTER_MS.length);
    expect(memory.collections).toBe(COLLECT_AFTER_MS.length);
  });

  it('each large answer that ends starts the sequence again: answers close together share one', () => {
    const { memory, advance, collected } = simulated();
    const [first, second] = COLLECT_AFTER_MS as [number, number];
    memory.ended(LARGE_ANSWER_BYTES);
    advance(first - 1);
    memory.ended(LARGE_ANSWER_BYTES * 4);
    advance(first - 1);
    expect(collected()).toBe(0);
    advance(1);
    expect(collected()).toBe(1);
    // Another ends during the second step: the next collection is its first, not the second's.
    advance(second - first - 1);
    memory.ended(LARGE_ANSWER_BYTES);
    advance(1);
    expect(collected()).toBe(1);
    advance(first - 1);
    expect(collected()).toBe(2);
    advance(10 * 60_000);
    expect(collected()).toBe(1 + COLLECT_AFTER_MS.length);
  });

  it('never collects after small answers, however many', () => {
    const { memory, advance, collected } = simulated();
    for (let index = 0; index < 1_000; index++) memory.ended(LARGE_ANSWER_BYTES - 1);
    advance(10 * 60_000);
    expect(collected()).toBe(0);
  });

  it("a stream counts its batches' bytes when it ends, read through or left early", async () => {
    const { memory, advance, collected } = simulated();
    const big = tableFromArrays({ v: new Float64Array(LARGE_ANSWER_BYTES / 8) }).batches[0];
    const small = tableFromArrays({ v: new Float64Array(16) }).batches[0];
    if (big === undefined || small === undefined) throw new Error('no batch');
    async function* batches(...list: RecordBatch[]) {
      yield* list;
    }
    for await (const _ of watched(batches(small, small), undefined, undefined, memory)) void _;
    advance(COLLECT_AFTER_MS[0] as number);
    expect(collected()).toBe(0);
    for await (const _ of watched(batches(big, small), undefined, undefined, memory)) break;
    advance(COLLECT_AFTER_MS[0] as number);
    expect(collected()).toBe(1);
  });

  it("V8's own collection runs by default (gc() exposed for the call, not left on the global)", () => {
    let runs = 0;
    const memory = new MemoryReturn({
      timers: {
        set: (run) => {
          if (runs++ === 0) run();
        },
        clear: () => undefined,
      },
    });
    memory.ended(LARGE_ANSWER_BYTES);
    expect(memory.collections).toBe(1);
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
  });
});
