/** Bounded waits, for every thread (no imports beyond Node's: dataset threads use it too). */
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

/**
 * `promise`, or a rejection as soon as `signal` aborts: `refusal(signal.reason)` (the reason itself
 * by default), after `cancel()`. The promise is left to settle unobserved (a DuckDB query is
 * interrupted in its engine by `cancel`; a request waiting for another's run just stops waiting).
 */
export function untilAborted<T>(
  promise: Promise<T>,
  signal: AbortSignal | undefined,
  refusal: (reason: unknown) => unknown = (reason) => reason,
  cancel?: () => void,
): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) {
    // Left to settle unobserved here too: its failure must not be an unhandled rejection.
    promise.catch(() => undefined);
    cancel?.();
    return Promise.reject(refusal(signal.reason));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      cancel?.();
      reject(refusal(signal.reason));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
