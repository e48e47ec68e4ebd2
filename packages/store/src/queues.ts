/**
 * @ferry/store/queues: the SQS notification queue and the per-reader SQS queues subscribed to an
 * SNS topic, without the object stores. The runtime loads it (and the SQS and SNS clients) only
 * when a spicepod configures notifications.
 */
export * from './errors.js';
export * from './reader-queue.js';
export * from './sqs-queue.js';
