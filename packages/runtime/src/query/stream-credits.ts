/**
 * Flow control of a result stream, one mechanism for both query pools: a shared `[credits,
 * cancelled]` pair of counters. The producer (a pool worker) takes a credit before it sends each
 * batch; the host gives one back each time its consumer takes a batch, so at most the window's
 * batches wait between them and a consumer that stops reading stops the producer. Both pools'
 * workers await `Atomics.waitAsync`, serving their other queries meanwhile. Cancelling sets the flag
 * and wakes the producer; the pools also interrupt the query in its engine.
 */
import { registerErrors } from '@ferry/core/base';
import { STREAM_WINDOW } from './query-protocol.js';

const CREDITS = 0;
const CANCELLED = 1;

/** `Atomics.waitAsync` (Node 16+; in TypeScript's ES2024 library, past this project's target). */
const waitAsync = (
  Atomics as unknown as {
    waitAsync(
      array: Int32Array,
      index: number,
      value: number,
      timeoutMs: number,
    ): { readonly async: boolean; readonly value: Promise<string> | string };
  }
).waitAsync;

/** The host's side: made per stream, its `control` sent with the stream's task. */
export class StreamCredits {
  readonly control: Int32Array;

  constructor(window = STREAM_WINDOW) {
    this.control = new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));
    this.control[CREDITS] = window;
  }

  /** The consumer took a batch: one more may come. */
  credit(): void {
    Atomics.add(this.control, CREDITS, 1);
    Atomics.notify(this.control, CREDITS);
  }

  /** Nothing more is wanted: the producer stops before its next batch. */
  cancel(): void {
    Atomics.store(this.control, CANCELLED, 1);
    Atomics.notify(this.control, CREDITS);
  }
}

/** The producer was cancelled while it waited for a credit (or before). */
export class StreamCancelledError extends Error {
  constructor() {
    super('The result stream was cancelled by its consumer.');
    this.name = 'StreamCancelledError';
  }
}

registerErrors({ StreamCancelledError });

/**
 * Takes a credit if there is one (false: wait for the count to leave 0, then try again; a credit
 * another taker won meanwhile leaves it above 0, so the wait returns at once); throws once the
 * stream is cancelled, or `stopped`.
 */
function take(control: Int32Array, stopped: boolean): boolean {
  if (Atomics.load(control, CANCELLED) === 1 || stopped) throw new StreamCancelledError();
  const credits = Atomics.load(control, CREDITS);
  return credits > 0 && Atomics.compareExchange(control, CREDITS, credits, credits - 1) === credits;
}

/**
 * Takes a credit, awaiting one without blocking the thread; throws once the stream is cancelled
 * (by the host, or by `stop` — the query's own, if it has one).
 */
export async function takeCredit(control: Int32Array, stop?: { readonly aborted: boolean }): Promise<void> {
  while (!take(control, stop?.aborted === true)) {
    const waited = waitAsync(control, CREDITS, 0, 1_000);
    if (waited.async) await waited.value;
  }
}
