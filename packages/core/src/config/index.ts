/**
 * The spicepod configuration model: the values a spicepod holds and the rules for them. The loader
 * (`loadSpicepod`, which parses YAML) is the main entry's alone (`../index.ts`).
 */
export { parseByteSize } from './byte-size.js';
export {
  DEFAULT_REFRESH_CHECK_INTERVAL_MS,
  DEFAULT_RETAIN_SNAPSHOTS,
  FILE_FORMAT_PARAMS,
  MAX_RETAIN_SNAPSHOTS,
  RETAIN_DISK_BUDGET_PARAM,
  RETAIN_SNAPSHOTS_PARAM,
  retentionOf,
} from './dataset.js';
export { durationOrProblem, MAX_DURATION_MS, parseDuration } from './duration.js';
export { ConfigError, closest, editDistance } from './issues.js';
export { type ParsedQueueUrl, parseEndpoint, parseQueueUrl, QUEUE_URL_FORM } from './queue-url.js';
export { DEFAULT_RESULTS_CACHE, DEFAULT_TASK_HISTORY, pemProblem } from './runtime-section.js';
export { S3_PARAM_KEYS } from './s3-params.js';
export { parseDotenv, redactSecrets } from './secrets.js';
export { MAX_TAG_VALUE_LENGTH, type ParsedTopicArn, parseTopicArn, TOPIC_ARN_FORM } from './sns-topic.js';
export { TRUSTED_KEYS_PARAM } from './trusted-keys.js';
export type * from './types.js';
