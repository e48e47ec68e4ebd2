/**
 * Awaiting what a component under test says, without polling or sleeps: the next event of an
 * emitter, and log lines written to a logger that keeps them. Typed by shape only (and core's log
 * levels), so this module loads none of Ferry's packages.
 */
import type { LogLevel } from '@ferry/core/base';

/** Anything with `on(kind, listener)` returning an unsubscribe function (the runtime is one). */
export interface EventSource<E> {
  on<K extends keyof E>(kind: K, listener: (payload: E[K]) => void): () => void;
}

/**
 * Resolves with the first event of `kind` that satisfies `predicate`; rejects after `timeoutMs`.
 * TypeScript cannot infer `E` from a generic `on` method: wrap it once per event map.
 */
export function nextEventOf<E, K extends keyof E>(
  source: EventSource<E>,
  kind: K,
  predicate: (payload: E[K]) => boolean = () => true,
  timeoutMs = 30_000,
): Promise<E[K]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`no '${String(kind)}' event matched within ${timeoutMs} ms`));
    }, timeoutMs);
    const off = source.on(kind, (payload) => {
      if (!predicate(payload)) return;
      clearTimeout(timer);
      off();
      resolve(payload);
    });
  });
}

export type { LogLevel };

/** One line written to a {@link WatchedLogger}. */
export interface LoggedRecord {
  readonly level: LogLevel;
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

/** A pino-shaped logger (`logger.warn(fields, message)`) that keeps every line for the test. */
export interface WatchedLogger {
  readonly records: LoggedRecord[];
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
  /** The same sink as a `(level, message, fields)` callback, for components used in-process. */
  log(level: LogLevel, message: string, fields?: Record<string, unknown>): void;
  /** Lines logged since `mark` (a previous `records.length`). */
  since(mark: number): LoggedRecord[];
  /**
   * Resolves with the first `count` (default 1) matching lines logged since `since` (default: ever),
   * once that many have been: exactly `count`, even when more were logged before the call.
   */
  waitFor(
    predicate: (record: LoggedRecord) => boolean,
    options?: { readonly count?: number; readonly since?: number; readonly timeoutMs?: number },
  ): Promise<LoggedRecord[]>;
}

export function watchedLogger(): WatchedLogger {
  const records: LoggedRecord[] = [];
  const waiters = new Set<() => void>();
  const log = (level: LogLevel, message: string, fields: object = {}): void => {
    records.push({ level, message, fields: { ...fields } });
    for (const waiter of [...waiters]) waiter();
  };
  const at =
    (level: LogLevel) =>
    (fields: object, message: string): void =>
      log(level, message, fields);
  return {
    records,
    log,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    since: (mark) => records.slice(mark),
    waitFor(predicate, options = {}) {
      const count = options.count ?? 1;
      const since = options.since ?? 0;
      const timeoutMs = options.timeoutMs ?? 30_000;
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const matched = records.slice(since).filter(predicate);
          if (matched.length < count) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(matched.slice(0, count));
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`fewer than ${count} matching log lines within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}
