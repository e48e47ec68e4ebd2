/**
 * `@ferry/core/common`: what every thread's plumbing needs of the core — errors and their
 * (de)serialisation across threads, log levels — and nothing that costs a thread's start.
 */
export {
  deserializeError,
  FerryError,
  registerErrors,
  type SerializedError,
  serializeError,
} from './errors.js';
export { LOG_LEVELS, type LogLevel, levelWanted } from './log-levels.js';
