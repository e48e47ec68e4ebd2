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
  /** Set on errors that retrying cannot fix (an unsupported metadata format version). */
  readonly permanent?: boolean;
}

export function serializeError(error: unknown): SerializedError {
  if (error instanceof Error) {
    const { code, permanent } = error as { code?: unknown; permanent?: unknown };
    return {
      name: error.name,
      message: error.message,
      ...(typeof code === 'string' ? { code } : {}),
      ...(permanent === true ? { permanent } : {}),
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
  if (serialized.permanent === true) Object.assign(error, { permanent: true });
  return error;
}

/**
 * Codes of the errors a snapshot can fail validation with. The dataset machine's `fallback`
 * behaviour moves on to the next candidate for these (integrity and schema failures) and stops on
 * anything else (network, disk, permissions).
 */
export const SnapshotRejectionCode = {
  engineMismatch: 'ERR_SNAPSHOT_ENGINE_MISMATCH',
  schemaMismatch: 'ERR_SNAPSHOT_SCHEMA_MISMATCH',
  sizeMismatch: 'ERR_SNAPSHOT_SIZE_MISMATCH',
  checksumMismatch: 'ERR_SNAPSHOT_CHECKSUM_MISMATCH',
  unsupportedChecksumAlgorithm: 'ERR_SNAPSHOT_CHECKSUM_ALGORITHM',
  notADatabase: 'ERR_SNAPSHOT_NOT_A_DATABASE',
  missingTable: 'ERR_SNAPSHOT_MISSING_TABLE',
  objectMissing: 'ERR_SNAPSHOT_OBJECT_MISSING',
} as const;
export type SnapshotRejectionCode = (typeof SnapshotRejectionCode)[keyof typeof SnapshotRejectionCode];

const rejectionCodes: ReadonlySet<string> = new Set(Object.values(SnapshotRejectionCode));

/** A snapshot refused by validation (engine, schema, size, checksum, file content). */
export class SnapshotRejectedError extends FerryError {
  constructor(code: SnapshotRejectionCode, message: string, options: FerryErrorOptions = {}) {
    super(code, message, options);
    this.name = 'SnapshotRejectedError';
  }
}

/** True for integrity and schema failures: the snapshot is bad, not the path to it. */
export function isSnapshotRejection(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && rejectionCodes.has(code);
}

/**
 * A snapshot URI (recorded in metadata.json) or an object key that does not name an object under
 * the location: another bucket or scheme, outside the prefix, or an escape (`..`, `%2e%2e`, `\`).
 */
export class OutsideLocationError extends FerryError {
  readonly location: string;
  /** The URI or key refused, as given. */
  readonly uri: string;
  readonly reason: string;

  constructor(location: string, uri: string, reason: string, what: 'uri' | 'key' = 'uri') {
    super(
      'ERR_OUTSIDE_LOCATION',
      what === 'uri'
        ? `Snapshot URI '${uri}' is outside location '${location}' (${reason}); record snapshot URIs as absolute URIs under the location.`
        : `Object key '${uri}' is outside location '${location}' (${reason}); use a relative key under the location.`,
    );
    this.name = 'OutsideLocationError';
    this.location = location;
    this.uri = uri;
    this.reason = reason;
  }
}
