/**
 * Logging. Threads never write logs themselves: they post `LogRecord`s to the host, and the host
 * hands them to one logger — pino (JSON lines on stderr, so an application's own stdout stays its
 * own) unless the embedding app passes its own (a pino instance, or anything of {@link Logger}'s shape).
 * Every record carries `component` and, where it has one, `dataset`; messages the spec quotes are
 * passed through untouched so operators can grep for them.
 */
import type { LogLevel } from '@ferry/core/base';
import { pino } from 'pino';

export type { LogLevel };

export interface LogRecord {
  readonly level: LogLevel;
  readonly message: string;
  readonly component: string;
  readonly dataset?: string | undefined;
  readonly fields?: Readonly<Record<string, unknown>> | undefined;
}

/** The logger an embedding app may pass: pino's shape (`logger.warn(fields, message)`). */
export interface Logger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/** pino writing JSON lines to stderr (synchronously: nothing is lost when the process exits). */
export function defaultLogger(level: LogLevel = 'info'): Logger {
  return pino(
    { level, base: null, timestamp: pino.stdTimeFunctions.isoTime },
    pino.destination({ dest: 2, sync: true }),
  );
}

export function writeLog(logger: Logger, record: LogRecord): void {
  const fields = {
    component: record.component,
    ...(record.dataset === undefined ? {} : { dataset: record.dataset }),
    ...record.fields,
  };
  logger[record.level](fields, record.message);
}

/** A logger that keeps records in memory: for tests and for `status()` of the last error. */
export function memoryLogger(): Logger & {
  readonly records: { level: LogLevel; fields: object; message: string }[];
} {
  const records: { level: LogLevel; fields: object; message: string }[] = [];
  const at =
    (level: LogLevel) =>
    (fields: object, message: string): void => {
      records.push({ level, fields, message });
    };
  return { records, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
