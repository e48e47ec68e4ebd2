/**
 * @ferry/store/objects: `createObjectStore` (S3, file://) and parallel ranged reads, without the
 * SQS and SNS clients of the package's main entry, and without the S3 client until an `s3://`
 * store makes its first request (`createS3Store` and the S3 adapter's types are the main entry's).
 * A thread that loads a client it does not use pays its load (~0.5 s of CPU for the S3 client) and
 * its RSS (~3 MiB for the queue clients, 0.3 GiB with 100 dataset threads).
 */
export * from './block-digests.js';
export * from './errors.js';
export * from './file-store.js';
export * from './object-store.js';
export * from './read-parallel.js';
export * from './s3-config.js';
