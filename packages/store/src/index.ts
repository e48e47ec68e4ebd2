/**
 * @ferry/store: the S3 and file:// adapters of the ObjectStore port, parallel ranged reads, the SQS
 * notification queue, and per-reader SQS queues subscribed to an SNS topic.
 */
export * from './block-digests.js';
export * from './errors.js';
export { isAlive as isProcessAlive } from './file-lock.js';
export * from './file-store.js';
export * from './object-store.js';
export * from './read-parallel.js';
export * from './reader-queue.js';
export * from './s3-store.js';
export * from './signing.js';
export * from './sqs-queue.js';
