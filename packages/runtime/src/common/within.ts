/** A bounded wait, for every thread (no imports beyond Node's: dataset threads use it too). */
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Waits for `work` to settle, for at most `ms`: 'done' (whether it resolved or failed) or
 * 'timeout'. The timer ends with the wait, so it keeps the process alive no longer than the work.
 */
export async function within(work: PromiseLike<unknown>, ms: number): Promise<'done' | 'timeout'> {
  const timer = new AbortController();
  try {
    return await Promise.race([
      Promise.resolve(work).then(
        () => 'done' as const,
        () => 'done' as const,
      ),
      sleep(ms, 'timeout' as const, { signal: timer.signal }),
    ]);
  } finally {
    timer.abort();
  }
}
