/**
 * @ferry/local-aws: a real local S3 + SQS (fauxqs, in-process) and the S3 → SQS notification bridge
 * fauxqs lacks. The quickstart runs on it; `@ferry/test-support` builds its test harness on it.
 */
export * from './local-aws.js';
export * from './notification-bridge.js';
export * from './request-log.js';
export * from './s3-events.js';
export * from './store-params.js';
