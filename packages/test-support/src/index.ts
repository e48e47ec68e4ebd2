/**
 * @ferry/test-support: the test harness built on `@ferry/local-aws` (re-exported here, so a test has
 * one import): fault injection, the fixture store, spicepod YAML, and waiting on events and logs.
 */
export * from '@ferry/local-aws';
export * from './fault-proxy.js';
export * from './fixtures.js';
export * from './memory.js';
export * from './s3-faults.js';
export * from './spicepods.js';
export * from './waiting.js';
