/**
 * How an error crosses a thread: `serializeError` → structured clone (or JSON) → `deserializeError`
 * gives an instance of the registered class with its code, fields, stack and causes; what the
 * receiver does not know, or what no boundary can carry, degrades as documented. The round trip of
 * every registered class of every package is `test/architecture/errors.test.ts`.
 */
import { describe, expect, it } from 'vitest';
import {
  deserializeError,
  FerryError,
  OutsideLocationError,
  registerErrors,
  SnapshotRejectedError,
  serializeError,
} from '../src/errors.js';
import { MetadataError, UnsupportedFormatVersionError } from '../src/metadata/errors.js';

function hop(error: unknown): Error {
  return deserializeError(structuredClone(serializeError(error)));
}

describe('errors across threads', () => {
  it('rebuild with their class, code, own fields, stack and cause', () => {
    const cause = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED', errno: -111 });
    const original = new MetadataError('s3://b/p/', 'location', 'must be a string', {
      dataset: 'orders',
      cause,
    });
    const rebuilt = hop(original);
    expect(rebuilt).toBeInstanceOf(MetadataError);
    expect(rebuilt).toBeInstanceOf(FerryError);
    expect(rebuilt).toMatchObject({
      name: 'MetadataError',
      code: 'ERR_METADATA_INVALID',
      location: 's3://b/p/',
      path: 'location',
      problem: 'must be a string',
      dataset: 'orders',
      permanent: false,
    });
    expect(rebuilt.message).toBe(original.message);
    expect(rebuilt.stack).toBe(original.stack);
    expect(rebuilt.cause).toBeInstanceOf(Error);
    expect(rebuilt.cause).toMatchObject({
      message: 'connect ECONNREFUSED',
      code: 'ECONNREFUSED',
      errno: -111,
    });
  });

  it('keep `permanent`, so a dataset thread tells a permanent metadata error from a passing one', () => {
    expect(hop(new UnsupportedFormatVersionError(2, 's3://b/p/'))).toMatchObject({
      permanent: true,
      formatVersion: 2,
    });
  });

  it('keep JavaScript’s own classes, an AggregateError’s errors and a DOMException’s name', () => {
    expect(hop(new RangeError('limit'))).toBeInstanceOf(RangeError);
    const aggregate = hop(new AggregateError([new TypeError('one')], 'both'));
    expect(aggregate).toBeInstanceOf(AggregateError);
    expect((aggregate as AggregateError).errors[0]).toBeInstanceOf(TypeError);
    const abort = hop(new DOMException('This operation was aborted', 'AbortError'));
    expect(abort).toBeInstanceOf(DOMException);
    expect(abort).toMatchObject({ name: 'AbortError', code: 20 });
  });

  it('rebuild a class this thread never registered as a FerryError keeping its name, code, fields and stack', () => {
    const rebuilt = deserializeError({
      name: 'FutureError',
      message: 'from a newer package',
      code: 'ERR_FUTURE',
      fields: { dataset: 'orders' },
      stack: 'FutureError: from a newer package\n    at somewhere',
    });
    expect(rebuilt).toBeInstanceOf(FerryError);
    expect(rebuilt).toMatchObject({ name: 'FutureError', code: 'ERR_FUTURE', dataset: 'orders' });
    expect(rebuilt.stack).toBe('FutureError: from a newer package\n    at somewhere');
    expect(deserializeError({ name: 'FutureError', message: 'no code' })).toMatchObject({
      code: 'ERR_UNEXPECTED',
    });
  });

  it("rebuild an unregistered subclass with its nearest registered class, keeping the subclass's name", () => {
    class LocalRejection extends SnapshotRejectedError {}
    const original = new LocalRejection('ERR_SNAPSHOT_SIZE_MISMATCH', 'size mismatch');
    original.name = 'LocalRejection';
    const wire = serializeError(original);
    expect(wire).toMatchObject({ name: 'LocalRejection', kind: 'SnapshotRejectedError' });
    const rebuilt = deserializeError(structuredClone(wire));
    expect(rebuilt).toBeInstanceOf(SnapshotRejectedError);
    expect(rebuilt).toMatchObject({ name: 'LocalRejection', code: 'ERR_SNAPSHOT_SIZE_MISMATCH' });
  });

  it('keep what a thrown non-error says, and stop at a cause that refers back to itself', () => {
    expect(serializeError('boom')).toEqual({ name: 'Error', message: 'boom' });
    expect(hop({ reason: 'object' })).toMatchObject({ message: '{"reason":"object"}' });
    const cyclic = new FerryError('ERR_UNEXPECTED', 'loops');
    Object.defineProperty(cyclic, 'cause', { value: cyclic });
    let depth = 0;
    for (let at: unknown = hop(cyclic); at instanceof Error; at = at.cause) depth++;
    expect(depth).toBeGreaterThan(1);
    expect(depth).toBeLessThan(12);
  });

  it('leave out fields no thread boundary keeps (functions, class instances) and keep plain data', () => {
    const original = Object.assign(new FerryError('ERR_STORE', 'failed'), {
      retry: () => undefined,
      response: new Map([['a', 1]]),
      ratio: Number.NaN,
      $metadata: { httpStatusCode: 503, attempts: 3 },
    });
    const wire = serializeError(original);
    expect(wire.fields).toEqual({ $metadata: { httpStatusCode: 503, attempts: 3 } });
    expect(JSON.parse(JSON.stringify(wire))).toEqual(wire);
  });

  it('answer instanceof for an error made by a second copy of the package (a duplicate install, sources beside dist/)', async () => {
    const url = new URL('../src/errors.ts?second-copy', import.meta.url).href;
    const copy = (await import(/* @vite-ignore */ url)) as typeof import('../src/errors.js');
    expect(copy.FerryError).not.toBe(FerryError);
    class CopiedOutside extends copy.FerryError {}
    copy.registerErrors({ OutsideLocationError: CopiedOutside });
    const foreign = new CopiedOutside('ERR_OUTSIDE_LOCATION', 'from the other copy');
    expect(foreign).toBeInstanceOf(OutsideLocationError);
    expect(foreign).toBeInstanceOf(FerryError);
    expect(foreign).not.toBeInstanceOf(SnapshotRejectedError);
    expect(new OutsideLocationError('s3://b/', 's3://c/x', 'another bucket')).toBeInstanceOf(CopiedOutside);
    expect(new copy.FerryError('ERR_X', 'x')).toBeInstanceOf(FerryError);
    // An unregistered subclass answers by its prototype only.
    class Unregistered extends FerryError {}
    expect(new FerryError('ERR_X', 'x')).not.toBeInstanceOf(Unregistered);
    expect(new Unregistered('ERR_X', 'x')).toBeInstanceOf(Unregistered);
  });

  it('refuse to register a name of JavaScript’s own classes', () => {
    expect(() => registerErrors({ TypeError: class extends FerryError {} })).toThrow(/built-in/);
  });
});
