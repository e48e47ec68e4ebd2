import { describe, expect, it } from 'vitest';
import { deserializeError, FerryError, serializeError } from '../src/errors.js';

describe('errors across threads', () => {
  it('keeps code, name and message through serialisation', () => {
    const original = new FerryError('ERR_EXAMPLE', "Dataset 'orders' is not ready.");
    const rebuilt = deserializeError(serializeError(original));
    expect(rebuilt).toBeInstanceOf(FerryError);
    expect((rebuilt as FerryError).code).toBe('ERR_EXAMPLE');
    expect(rebuilt.message).toBe("Dataset 'orders' is not ready.");
    expect(rebuilt.name).toBe('FerryError');
  });

  it('keeps the permanent flag, so a thread can tell a permanent metadata error from a passing one', () => {
    const original = Object.assign(
      new FerryError('ERR_UNSUPPORTED_FORMAT_VERSION', 'unsupported format version 2'),
      {
        permanent: true,
      },
    );
    expect((deserializeError(serializeError(original)) as { permanent?: boolean }).permanent).toBe(true);
    expect(serializeError(new FerryError('ERR_X', 'x')).permanent).toBeUndefined();
  });

  it('serialises non-errors as plain messages', () => {
    expect(serializeError('boom')).toEqual({ name: 'Error', message: 'boom' });
  });
});
