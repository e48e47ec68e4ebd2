/**
 * S3 event notifications, pure: parse an SQS body, route it against the configured locations, plan
 * a received batch, pick the datasets to tell, and decide what to log during a queue outage.
 */
export * from './batch.js';
export * from './diff.js';
export * from './messages.js';
export * from './missed-commits.js';
export * from './outage.js';
export * from './parse.js';
export * from './route.js';
