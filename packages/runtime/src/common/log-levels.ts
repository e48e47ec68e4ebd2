/**
 * Which log records a thread posts at all. Kept apart from `logging.ts` (which loads pino) so the
 * dataset threads, one per dataset, do not load a logger they never call.
 */
import { LOG_LEVELS, type LogLevel, levelWanted } from '@ferry/core/machine';
import type { Logger } from './logging.js';

export { levelWanted };

/**
 * The lowest level `logger` writes, so threads post only records it wants (three debug records per
 * poll per dataset are most of the messages an idle runtime sends): pino's `isLevelEnabled` when the
 * logger has it, else `declared` (the runtime's `logLevel` option), else every level. Read once, when
 * the runtime starts.
 */
export function lowestLevel(logger: Logger, declared: LogLevel | undefined): LogLevel {
  const isLevelEnabled = (logger as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled;
  if (typeof isLevelEnabled === 'function') {
    return LOG_LEVELS.find((level) => isLevelEnabled.call(logger, level)) ?? 'error';
  }
  return declared ?? 'debug';
}
