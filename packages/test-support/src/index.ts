/** @ferry/test-support: a real local S3/SQS (fauxqs), S3 notifications, fault injection and the fixture store for tests. */
export * from './fault-proxy.js';
export * from './fixtures.js';
export * from './local-aws.js';
export * from './notification-bridge.js';
export * from './request-log.js';
export * from './s3-events.js';
export * from './s3-faults.js';
export * from './waiting.js';
