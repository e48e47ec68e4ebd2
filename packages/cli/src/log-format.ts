/**
 * The CLI's logger: pino (the runtime's logger library), writing JSON lines — one object a line:
 * `time`, `level`, `component`, `dataset`, the record's other fields (errors as plain objects) and
 * `msg` — or, on a terminal, pino-pretty lines: `12:04:05.123 INFO  orders       Swapped to snapshot 3`
 * (local time, level, dataset or component, message). A terminal is readable and a log collector
 * gets structure. Messages pass through untouched.
 */
import type { Logger, LogLevel } from '@ferry/runtime';
import { type DestinationStream, type LoggerOptions, pino } from 'pino';
import { prettyFactory } from 'pino-pretty';

export type LogFormat = 'pretty' | 'json';

export interface LogSink {
  write(text: string): unknown;
}

export interface CliLoggerOptions {
  readonly sink: LogSink;
  readonly format: LogFormat;
  readonly level?: LogLevel;
  /** Wall clock; tests pin it. */
  readonly now?: () => Date;
}

function pad(value: number, width = 2): string {
  return String(value).padStart(width, '0');
}

/** The pretty line's text: local time, level, dataset (else component, else `-`), message. */
function prettyLine(log: Record<string, unknown>): string {
  const time = new Date(String(log.time));
  const clock = `${pad(time.getHours())}:${pad(time.getMinutes())}:${pad(time.getSeconds())}.${pad(time.getMilliseconds(), 3)}`;
  const scope =
    typeof log.dataset === 'string' ? log.dataset : typeof log.component === 'string' ? log.component : '-';
  return `${clock} ${String(log.level).toUpperCase().padEnd(5)} ${scope.padEnd(12)} ${String(log.msg)}`;
}

/**
 * Errors under any field become pino's `{ type, message, stack, code… }`, as pino's own serializer
 * already makes them under `err` (which is left to it).
 */
function plainErrors(fields: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(fields)) {
    if (key !== 'err' && value instanceof Error) {
      out ??= { ...fields };
      out[key] = pino.stdSerializers.err(value);
    }
  }
  return out ?? fields;
}

export function createCliLogger(options: CliLoggerOptions): Logger {
  const now = options.now ?? (() => new Date());
  const settings: LoggerOptions = {
    level: options.level ?? 'info',
    base: null,
    timestamp: () => `,"time":"${now().toISOString()}"`,
    formatters: { level: (label) => ({ level: label }), log: plainErrors },
  };
  if (options.format === 'json') return pino(settings, options.sink as DestinationStream);
  const prettify = prettyFactory({
    colorize: false,
    // The message line carries time and level; other fields stay in the JSON format.
    ignore: 'time,level',
    hideObject: true,
    messageFormat: prettyLine,
  });
  const sink = options.sink;
  return pino(settings, { write: (line: string) => sink.write(prettify(line)) });
}
