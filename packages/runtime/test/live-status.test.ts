/**
 * The live status slots (`shared-slots.ts`) when a writer's thread ends in the middle of a write:
 * the coordinator (its parked checks) or a dataset thread (its park) ended by `terminate()`, a crash
 * or its heap limit between the two increments of the slot's sequence number. Ending a thread that
 * writes a parked slot in a loop leaves the number odd in about one death in ten (3 of 30 measured).
 * The host reads every slot on each state change (the staleness watch, `status()`, `metrics()`),
 * so a reader that waited for that write to end would stop the host for good.
 */
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { type LiveChecks, LiveStatus } from '../src/common/shared-slots.js';

const checks: LiveChecks = {
  incarnation: 1,
  polls: 12,
  lastPollAtMs: 1_700_000_000_000,
  nextPollDueMs: null,
  freshAtMs: 1_699_999_999_000,
  unposted: 7,
};

/**
 * Reads slot 0 of `buffer` in a thread of its own; 'no answer' when the read has not answered within
 * `ms`. The limit runs from the read, once the thread has started and loaded the module (a starting
 * thread on a loaded machine is no stuck reader).
 */
async function readElsewhere(buffer: SharedArrayBuffer, ms: number): Promise<unknown> {
  const worker = new Worker(
    `
    const { parentPort, workerData } = require('node:worker_threads');
    import(workerData.module).then(({ LiveStatus }) => {
      parentPort.once('message', () => {
        const read = new LiveStatus(workerData.buffer).read(0);
        parentPort.postMessage(read === undefined ? 'absent' : read);
      });
      parentPort.postMessage('ready');
    });
    `,
    {
      eval: true,
      workerData: {
        module: new URL('../src/common/shared-slots.ts', import.meta.url).href
          .replace('/src/', '/dist/')
          .replace(/\.ts$/, '.js'),
        buffer,
      },
    },
  );
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    worker.postMessage('read');
    return await Promise.race([
      new Promise((resolve) => worker.once('message', resolve)),
      new Promise((resolve) => {
        timer = setTimeout(() => resolve('no answer'), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    await worker.terminate();
  }
}

describe('a live slot whose writer ended mid-write', () => {
  it('reads as absent instead of holding its readers, and its next owner makes it readable again', async () => {
    const live = LiveStatus.create(1);
    live.park(0, 1, checks);
    // What a writer ended between the two increments of its write leaves: the number odd, for good.
    Atomics.add(new Int32Array(live.buffer, 0, 2), 0, 1);
    expect(await readElsewhere(live.buffer, 2_000)).toBe('absent');
    expect(live.read(0)).toBeUndefined();
    // The dataset thread started again writes its slot at its first park: it reads as written.
    const next = { ...checks, incarnation: 2, polls: 3 };
    live.park(0, 1, next);
    expect(live.read(0)).toEqual(next);
    expect(await readElsewhere(live.buffer, 2_000)).toEqual(next);
    // The coordinator's parked writes go on as before.
    expect(live.writeParked(0, 1, (c) => ({ ...c, polls: c.polls + 1 }))).toBe(true);
    expect(live.takeBack(0, 1)).toEqual({ ...next, polls: 4 });
  });
});
