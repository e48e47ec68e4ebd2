/**
 * Which log records a thread posts at all: the level the host hands each thread, which compares
 * against it with core's `levelWanted` (threads import core, not this file or pino's `logging.ts`).
 */
import { LOG_LEVELS, type LogLevel } from '@ferry/core/common';
import type { Logger } from './logging.js';

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
