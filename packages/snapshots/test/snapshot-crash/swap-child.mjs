/**
 * Child process of snapshot-crash.test.ts: swaps one snapshot into a live file with the built
 * @ferry/engines (dist) and stops at the point named by FERRY_STOP_AT, where it tells the parent
 * over IPC and waits to be killed with SIGKILL. Points: `download` (first part written, later
 * parts held), `prepared` (validated and fsynced, not renamed), `staged` (next manifest written),
 * `renamed` (live path replaced, manifest not promoted), `promoted` (swap complete).
 */
import { createFileStore } from '@ferry/store';
import { commitSnapshot, downloadSnapshot, verifySnapshot } from '../../dist/index.js';

const stopAt = process.env.FERRY_STOP_AT;
const swap = JSON.parse(process.env.FERRY_SWAP ?? 'null');
if (swap === null || typeof process.send !== 'function') {
  throw new Error('swap-child.mjs is started by snapshot-crash.test.ts with FERRY_SWAP and an IPC channel');
}

const forever = new Promise(() => {});
// An orphan (the parent test died) must not wait forever.
process.on('disconnect', () => process.exit(70));

/** Tell the parent where this process stopped; a timer keeps it alive until the parent's SIGKILL. */
function pause(report) {
  setInterval(() => undefined, 60_000);
  process.send(report);
}

/** At `point`: pause, and never return. */
async function reached(point, detail = {}) {
  if (point !== stopAt) return;
  pause({ paused: point, ...detail });
  await forever;
}

const fileStore = createFileStore({ location: swap.location });
const store = {
  ...fileStore,
  read(key, options = {}) {
    if (stopAt !== 'download' || (options.start ?? 0) === 0) return fileStore.read(key, options);
    // Every part after the first is held, so the download stops with exactly one part written.
    return { [Symbol.asyncIterator]: () => ({ next: () => forever }) };
  },
};

const options = { ...swap.options, store };
let progressSent = false;
const downloaded = await downloadSnapshot(options, swap.target, {
  onProgress: ({ bytes }) => {
    if (stopAt === 'download' && !progressSent) {
      progressSent = true;
      pause({ paused: 'download', bytes });
    }
  },
});
const prepared = await verifySnapshot(options, downloaded, swap.recorded);
await reached('prepared', { tempPath: prepared.tempPath });
await commitSnapshot(options, prepared, { onStep: (step) => reached(step) });
await reached('promoted');
process.send({ done: true }, () => process.exit(0));
