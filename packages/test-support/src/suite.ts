/**
 * `@ferry/test-support/suite`: the local AWS of a test file, started before its tests and stopped
 * after them (vitest's `beforeAll` / `afterAll` of the file that calls it). A separate entry from
 * the package's main one, which benchmarks and scripts load outside vitest.
 *
 *   const { aws, proxy } = useLocalAws({ buckets: [BUCKET], faultProxy: true });
 *
 * `aws` and `proxy` stand for the started objects from the first hook on (a test or hook reads
 * them as the real ones: `aws.endpoint`, `publish(aws, …)`); reading them at the top level of the
 * file, before `beforeAll` ran, throws an error that says so.
 */
import type { LocalAws } from '@ferry/local-aws';
import { startLocalAws } from '@ferry/local-aws';
import { afterAll, beforeAll } from 'vitest';
import { type FaultProxy, startFaultProxy } from './fault-proxy.js';

export interface LocalAwsSuiteOptions {
  /** Buckets made once the server is up. */
  readonly buckets?: readonly string[];
  /** Start a {@link FaultProxy} in front of the server too (closed before it). */
  readonly faultProxy?: boolean;
}

export interface LocalAwsSuite {
  readonly aws: LocalAws;
  /** Throws when read in a suite started without `faultProxy: true`. */
  readonly proxy: FaultProxy;
}

/** An object that forwards every property to `current()`, once there is one (methods bound to it). */
function standIn<T extends object>(what: string, current: () => T | undefined): T {
  const target = (): T => {
    const value = current();
    if (value === undefined) {
      throw new Error(
        `useLocalAws: ${what} is started in beforeAll; read it inside a test or a hook, not at the top level of the file.`,
      );
    }
    return value;
  };
  return new Proxy({} as T, {
    get(_, key) {
      const value = Reflect.get(target(), key);
      return typeof value === 'function' ? value.bind(target()) : value;
    },
    has: (_, key) => Reflect.has(target(), key),
    ownKeys: () => Reflect.ownKeys(target()),
    getOwnPropertyDescriptor: (_, key) => {
      const descriptor = Reflect.getOwnPropertyDescriptor(target(), key);
      return descriptor === undefined ? undefined : { ...descriptor, configurable: true };
    },
  });
}

/** Starts the local S3 + SQS (and the fault proxy) for this file's tests; see the module comment. */
export function useLocalAws(options: LocalAwsSuiteOptions = {}): LocalAwsSuite {
  let aws: LocalAws | undefined;
  let proxy: FaultProxy | undefined;
  beforeAll(async () => {
    aws = await startLocalAws();
    for (const bucket of options.buckets ?? []) await aws.createBucket(bucket);
    if (options.faultProxy === true) proxy = await startFaultProxy(aws.endpoint);
  });
  afterAll(async () => {
    await proxy?.close();
    await aws?.close();
  });
  return {
    aws: standIn('the local AWS', () => aws),
    proxy: standIn(
      options.faultProxy === true ? 'the fault proxy' : 'the fault proxy (pass faultProxy: true)',
      () => proxy,
    ),
  };
}
