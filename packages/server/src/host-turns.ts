/**
 * Host time for answers, shared fairly with everything else the event loop does. Turning a result
 * batch into its answer's bytes (JSON, CSV, JSON Lines, an Arrow message) is synchronous work on
 * the host thread, a few milliseconds a batch; hundreds of answers in flight each wanting it at
 * once would otherwise run back to back, and a probe (`/health`, `/v1/ready`), a new connection or
 * a query to refuse (429) would wait behind all of them (B15 measured `/health` at p99 10 s under
 * 2 000 heavy queries). Each batch's encoding therefore waits for {@link hostTurn}: turns are given
 * in arrival order from a `setImmediate` callback (after the loop has polled for I/O), one after
 * another while the callback has run less than {@link SLICE_MS}, then the rest wait for the next
 * loop iteration — so between two polls for I/O the answers take at most about one slice.
 */

/** Host time answers may take between two polls for I/O (ms). */
export const SLICE_MS = 10;

const waiting: (() => void)[] = [];
let scheduled = false;
let sliceStart = 0;

/** Resolves when the caller may take the host for one batch's encoding (do it synchronously then). */
export function hostTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (!scheduled) {
      scheduled = true;
      setImmediate(grant);
    }
  });
}

function grant(): void {
  scheduled = false;
  sliceStart = performance.now();
  next();
}

/**
 * Gives the next waiter its turn; queued as a microtask after it, so it runs once that waiter's
 * synchronous work (up to its next `await`) is done, and measures the slice with it.
 */
function next(): void {
  if (waiting.length === 0) return;
  if (performance.now() - sliceStart >= SLICE_MS) {
    if (!scheduled) {
      scheduled = true;
      setImmediate(grant);
    }
    return;
  }
  (waiting.shift() as () => void)();
  queueMicrotask(next);
}
