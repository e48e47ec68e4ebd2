/**
 * The CLI's logger (the runtime's `Logger` shape): pretty lines on a terminal —
 * `12:04:05.123 INFO  orders  Swapped to snapshot 3` — and JSON lines otherwise (one object a line:
 * `time`, `level`, `component`, `dataset`, `msg` and the record's other fields), so a terminal is
 * readable and a log collector gets structure. Messages pass through untouched.
 */
import type { Logger, LogLevel } from '@ferry/runtime';

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

const RANK: Readonly<Record<LogLevel, number>> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Errors become `{ type, message, code?, stack? }`; everything else is left for JSON.stringify. */
function plain(value: unknown): unknown {
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return {
      type: value.name,
      message: value.message,
      ...(typeof code === 'string' ? { code } : {}),
      ...(value.stack === undefined ? {} : { stack: value.stack }),
    };
  }
  return value;
}

function jsonLine(time: Date, level: LogLevel, fields: object, message: string): string {
  const record: Record<string, unknown> = { time: time.toISOString(), level };
  for (const [key, value] of Object.entries(fields)) record[key] = plain(value);
  record.msg = message;
  try {
    return `${JSON.stringify(record)}\n`;
  } catch {
    return `${JSON.stringify({ time: record.time, level, msg: message })}\n`;
  }
}

function pad2(value: number, width = 2): string {
  return String(value).padStart(width, '0');
}

function prettyLine(time: Date, level: LogLevel, fields: object, message: string): string {
  const clock = `${pad2(time.getHours())}:${pad2(time.getMinutes())}:${pad2(time.getSeconds())}.${pad2(time.getMilliseconds(), 3)}`;
  const { dataset, component } = fields as { dataset?: unknown; component?: unknown };
  const scope = typeof dataset === 'string' ? dataset : typeof component === 'string' ? component : '-';
  return `${clock} ${level.toUpperCase().padEnd(5)} ${scope.padEnd(12)} ${message}\n`;
}

export function createCliLogger(options: CliLoggerOptions): Logger {
  const threshold = RANK[options.level ?? 'info'];
  const now = options.now ?? (() => new Date());
  const format = options.format === 'json' ? jsonLine : prettyLine;
  const at =
    (level: LogLevel) =>
    (fields: object, message: string): void => {
      if (RANK[level] < threshold) return;
      options.sink.write(format(now(), level, fields, message));
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
