/** @ferry/store: the S3 and file:// adapters of the ObjectStore port, and parallel ranged reads. */
export * from './errors.js';
export * from './file-store.js';
export * from './object-store.js';
export * from './read-parallel.js';
export * from './s3-store.js';
export * from './sqs-queue.js';
