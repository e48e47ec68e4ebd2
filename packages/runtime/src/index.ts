/**
 * @ferry/runtime: the embed API. `createRuntime(spicepod, options)` starts a coordinator thread and
 * one thread per dataset and returns a {@link Runtime} to query, watch and drive them. Test hooks
 * (crash drills, read counts) live in the separate entry `@ferry/runtime/testing`.
 */
export * from './api.js';
export { type ApiKeyCheck, apiKeyCheck } from './api-keys.js';
export * from './errors.js';
export { defaultLogger, type Logger, type LogLevel, type LogRecord, memoryLogger } from './logging.js';
export { memoryReturn } from './memory-return.js';
export type { DatasetCommand, InspectionEvent } from './protocol.js';
export { redactingLogger } from './redaction.js';
export { asksNoCache, cacheStatusFields, resultVersion } from './results-cache.js';
export { createRuntime, POLL_RESULTS, type SpicepodSource } from './runtime.js';
export { sdkNoticeOnce } from './sdk-notice.js';
export {
  MAX_STALENESS_HEADER,
  maxStalenessOption,
  SNAPSHOT_HEADER,
  snapshotHeaderValue,
  snapshotPinsOption,
} from './staleness-bound.js';
export type { RuntimeTls } from './tls.js';
