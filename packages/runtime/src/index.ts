/**
 * @ferry/runtime: the embed API. `createRuntime(spicepod, options)` starts a coordinator thread and
 * one thread per dataset and returns a {@link Runtime} to query, watch and drive them. Test hooks
 * (crash drills, read counts) live in the separate entry `@ferry/runtime/testing`.
 */
export * from './api.js';
export { defaultLogger, type Logger, type LogLevel, type LogRecord, memoryLogger } from './common/logging.js';
export { DATASET_COMMANDS, type DatasetCommand, type InspectionEvent } from './common/protocol.js';
export * from './errors.js';
export { type ApiKeyCheck, apiKeyCheck } from './host/api-keys.js';
export { redactingLogger } from './host/redaction.js';
export { createRuntime, POLL_RESULTS, type SpicepodSource } from './host/runtime.js';
export { sdkNoticeOnce } from './host/sdk-notice.js';
export {
  holdToStalenessBound,
  MAX_STALENESS_HEADER,
  maxStalenessOption,
  SNAPSHOT_HEADER,
  snapshotHeaderValue,
  snapshotPinsOption,
} from './host/staleness-bound.js';
export { memoryReturn } from './query/memory-return.js';
export { asksNoCache, cacheStatusFields, resultVersion } from './query/results-cache.js';
export type { RuntimeTls } from './tls.js';
