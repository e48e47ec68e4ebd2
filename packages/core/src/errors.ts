/**
 * Errors of the pure core. Every error Ferry raises carries a stable `code` (tests and operators
 * match on it, the README tabulates it), a one-sentence message that names the dataset, key or
 * setting and says how to fix it, and the `cause` when there is one. Errors cross threads as
 * {@link SerializedError} and are rebuilt with {@link deserializeError}.
 */

export interface FerryErrorOptions {
  readonly cause?: unknown;
}

export class FerryError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options: FerryErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'FerryError';
    this.code = code;
  }
}

/** The plain-JSON shape an error takes on a thread boundary or in a status view. */
export interface SerializedError {
  readonly name: string;
  readonly code?: string;
  readonly message: string;
  readonly stack?: string;
}

export function serializeError(error: unknown): SerializedError {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return {
      name: error.name,
      message: error.message,
      ...(typeof code === 'string' ? { code } : {}),
      ...(error.stack === undefined ? {} : { stack: error.stack }),
    };
  }
  return { name: 'Error', message: String(error) };
}

export function deserializeError(serialized: SerializedError): Error {
  const error =
    serialized.code === undefined
      ? new Error(serialized.message)
      : new FerryError(serialized.code, serialized.message);
  error.name = serialized.name;
  if (serialized.stack !== undefined) error.stack = serialized.stack;
  return error;
}
