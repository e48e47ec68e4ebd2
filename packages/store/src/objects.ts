/**
 * @ferry/store/objects: the ObjectStore adapters (S3, file://) and parallel ranged reads, without
 * the SQS and SNS clients of the package's main entry. A dataset thread reads objects only; each
 * thread that loads the queue clients too pays about 3 MiB more of RSS, 0.3 GiB with 100 datasets.
 */
export * from './block-digests.js';
export * from './errors.js';
export * from './file-store.js';
export * from './object-store.js';
export * from './read-parallel.js';
export * from './s3-store.js';
