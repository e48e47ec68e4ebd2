/**
 * No resolved secret in a log line: a logger that replaces every value a spicepod `${…}` reference
 * resolved to by the reference itself, in the message, in string fields and in logged errors. The
 * runtime logs through it (its threads' records included); `ferry serve` gives the servers one too.
 */
import { redactSecrets, type SecretReference } from '@ferry/core/base';
import type { Logger } from '../common/logging.js';

function redactValue(value: unknown, references: readonly SecretReference[]): unknown {
  if (typeof value === 'string') return redactSecrets(value, references);
  if (value instanceof Error) {
    const copy = new Error(redactSecrets(value.message, references));
    copy.name = value.name;
    copy.stack = redactSecrets(value.stack ?? '', references);
    const code = (value as { code?: unknown }).code;
    if (code !== undefined) Object.assign(copy, { code });
    return copy;
  }
  return value;
}

/** `logger` itself when there is no secret to hide. */
export function redactingLogger(logger: Logger, references: readonly SecretReference[]): Logger {
  if (references.length === 0) return logger;
  const at =
    (level: keyof Logger) =>
    (fields: object, message: string): void => {
      const safe: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(fields)) safe[key] = redactValue(value, references);
      logger[level](safe, redactSecrets(message, references));
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
