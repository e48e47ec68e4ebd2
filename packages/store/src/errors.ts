/**
 * Errors of the object-store adapters. Each has a stable code the runtime branches on: a failed
 * conditional write (`ERR_PRECONDITION_FAILED`) means "read again and retry", a `StoreError`
 * carries the HTTP status and whether trying again can help.
 */
import { FerryError, type FerryErrorOptions, registerErrors } from '@ferry/core/base';

export type StoreOperation = 'get' | 'read' | 'head' | 'put' | 'list' | 'delete';

export interface StoreErrorDetails {
  readonly operation: StoreOperation;
  /** The object (or prefix) URI the operation was about. */
  readonly uri: string;
  /** HTTP status of the failed response; undefined for network and filesystem errors. */
  readonly status?: number;
  /** Whether the same request may succeed later (throttling, 5xx, network, lock contention). */
  readonly retryable: boolean;
  /** The backend's reason (S3 error code and message, errno), quoted in the message. */
  readonly reason: string;
  /** What to do, when the reason says more than "retry" or "check the location and credentials". */
  readonly fix?: string;
}

/** An object-store operation failed for a reason other than the ones with their own class. */
export class StoreError extends FerryError {
  readonly operation: StoreOperation;
  readonly uri: string;
  readonly status: number | undefined;
  readonly retryable: boolean;

  constructor(details: StoreErrorDetails, options: FerryErrorOptions = {}) {
    const status = details.status === undefined ? '' : ` with HTTP ${details.status}`;
    const fix =
      details.fix ??
      (details.retryable
        ? 'it is transient, so retry later'
        : 'check the location, the credentials and their permissions');
    super(
      'ERR_STORE',
      `Store ${details.operation} of ${details.uri} failed${status} (${details.reason}); ${fix}.`,
      options,
    );
    this.name = 'StoreError';
    this.operation = details.operation;
    this.uri = details.uri;
    this.status = details.status;
    this.retryable = details.retryable;
  }
}

/** A put with If-Match / If-None-Match lost: the object changed (or appeared) since it was read. */
export class PreconditionFailedError extends FerryError {
  readonly uri: string;
  readonly status: number | undefined;

  constructor(uri: string, condition: string, status: number | undefined, options: FerryErrorOptions = {}) {
    super(
      'ERR_PRECONDITION_FAILED',
      `Conditional put of ${uri} failed because ${condition} no longer holds; read the object again and retry the write.`,
      options,
    );
    this.name = 'PreconditionFailedError';
    this.uri = uri;
    this.status = status;
  }
}

export class ObjectNotFoundError extends FerryError {
  readonly uri: string;

  constructor(uri: string, options: FerryErrorOptions = {}) {
    super(
      'ERR_OBJECT_NOT_FOUND',
      `Object ${uri} does not exist; check that the writer uploaded it and no lifecycle rule deleted it.`,
      options,
    );
    this.name = 'ObjectNotFoundError';
    this.uri = uri;
  }
}

export class ObjectTooLargeError extends FerryError {
  readonly uri: string;
  readonly size: number;
  readonly maxBytes: number;

  constructor(uri: string, size: number, maxBytes: number, options: FerryErrorOptions = {}) {
    super(
      'ERR_OBJECT_TOO_LARGE',
      `Object ${uri} is ${size} bytes, more than the ${maxBytes} allowed; check that the location holds the right object or raise the limit.`,
      options,
    );
    this.name = 'ObjectTooLargeError';
    this.uri = uri;
    this.size = size;
    this.maxBytes = maxBytes;
  }
}

/** The store's location or parameters are unusable; the message names the setting to change. */
export class StoreConfigError extends FerryError {
  readonly setting: string;

  constructor(setting: string, message: string, options: FerryErrorOptions = {}) {
    super('ERR_STORE_CONFIG', message, options);
    this.name = 'StoreConfigError';
    this.setting = setting;
  }
}

/** Stable codes of the per-reader queue adapter (`reader-queue.ts`) and `ferry fleet gc`. */
export const ReaderQueueErrorCode = {
  create: 'ERR_READER_QUEUE_CREATE',
  subscribe: 'ERR_READER_QUEUE_SUBSCRIBE',
  heartbeat: 'ERR_READER_QUEUE_HEARTBEAT',
  remove: 'ERR_READER_QUEUE_REMOVE',
  list: 'ERR_READER_QUEUE_LIST',
} as const;
export type ReaderQueueErrorCode = (typeof ReaderQueueErrorCode)[keyof typeof ReaderQueueErrorCode];

/** Making, subscribing, refreshing, listing or removing a reader's own SQS queue failed. */
export class ReaderQueueError extends FerryError {
  constructor(code: ReaderQueueErrorCode, message: string, options: FerryErrorOptions = {}) {
    super(code, message, options);
    this.name = 'ReaderQueueError';
  }
}

/** A signing key (`ferry publish --signing-key`, the writer's `signingKey`) that cannot be used. */
export class SigningKeyError extends FerryError {
  /** Where the key came from (a file path, or the option that gave it). */
  readonly source: string;

  constructor(source: string, problem: string, options: FerryErrorOptions = {}) {
    super(
      'ERR_SIGNING_KEY',
      `The signing key ${source} ${problem}; give the private key file ferry keygen wrote (PEM, Ed25519).`,
      options,
    );
    this.name = 'SigningKeyError';
    this.source = source;
  }
}

registerErrors({
  SigningKeyError,
  StoreError,
  PreconditionFailedError,
  ObjectNotFoundError,
  ObjectTooLargeError,
  StoreConfigError,
  ReaderQueueError,
});
