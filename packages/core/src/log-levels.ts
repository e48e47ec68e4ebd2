/**
 * The four log levels every part of Ferry logs at (the dataset machine's log lines, the notification
 * consumer's plans, the runtime's loggers and the command line's `--log-level`), lowest first.
 */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

export type LogLevel = (typeof LOG_LEVELS)[number];

/** Whether a record at `level` reaches a logger whose lowest level is `lowest`. */
export function levelWanted(level: LogLevel, lowest: LogLevel): boolean {
  return LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(lowest);
}
