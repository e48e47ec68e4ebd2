/**
 * Errors of the HTTP server, and the HTTP status of every error a request can meet: the column of
 * `@ferry/core`'s `ERROR_STATUS` table (one table for the HTTP and the Flight server). Clients see
 * the code and the one-sentence message as `{ "error": "<message>", "code": "ERR_..." }`.
 */
import { errorCode, errorStatus, FerryError, type FerryErrorOptions, registerErrors } from '@ferry/core/base';

export { errorCode };

/** The request itself is malformed (bad JSON, empty SQL, a parameter list that is not a list). */
export class BadRequestError extends FerryError {
  constructor(message: string, options: FerryErrorOptions = {}) {
    super('ERR_BAD_REQUEST', message, options);
    this.name = 'BadRequestError';
  }
}

/** `GET …/acceleration/snapshots/<id>` for an id metadata.json does not record (Spice: 404). */
export class SnapshotNotFoundError extends FerryError {
  constructor(dataset: string, snapshotId: number, recorded: readonly number[]) {
    super(
      'ERR_SNAPSHOT_NOT_FOUND',
      `Snapshot ${snapshotId} of dataset '${dataset}' is not recorded in its metadata.json (recorded: ${recorded.length === 0 ? 'none' : recorded.join(', ')}); list them with GET /v1/datasets/${dataset}/acceleration/snapshots.`,
    );
    this.name = 'SnapshotNotFoundError';
  }
}

/**
 * `POST …/acceleration/snapshots/current` on this reader: Spice answers 400 on a snapshot reader
 * (only the writer that publishes the store may move its current snapshot).
 */
export class SnapshotsReadOnlyError extends FerryError {
  constructor(dataset: string) {
    super(
      'ERR_SNAPSHOTS_READ_ONLY',
      `Dataset '${dataset}' reads its snapshots from the store (refresh_mode: snapshot), so this reader cannot set its current snapshot; set it on the writer that publishes the store.`,
    );
    this.name = 'SnapshotsReadOnlyError';
  }
}

/** A dataset command that is not one of `poll.now`, `polling.pause`, `polling.resume`. */
export class InvalidCommandError extends FerryError {
  constructor(dataset: string, command: unknown) {
    super(
      'ERR_INVALID_COMMAND',
      `${JSON.stringify(command) ?? 'undefined'} is not a command for dataset '${dataset}'; send { "command": "poll.now" | "polling.pause" | "polling.resume" }.`,
    );
    this.name = 'InvalidCommandError';
  }
}

/** The request body is larger than the server accepts. */
export class BodyTooLargeError extends FerryError {
  readonly limit: number;

  constructor(limit: number) {
    super(
      'ERR_BODY_TOO_LARGE',
      `The request body is larger than ${limit} bytes; send a shorter statement or raise the server's maxBodyBytes.`,
    );
    this.name = 'BodyTooLargeError';
    this.limit = limit;
  }
}

/** The request body is compressed (`Content-Encoding`); bodies are read as sent. */
export class UnsupportedContentEncodingError extends FerryError {
  constructor(coding: string) {
    super(
      'ERR_UNSUPPORTED_CONTENT_ENCODING',
      `The request body is sent with Content-Encoding: ${coding}, which this server does not decode; send the body uncompressed (without Content-Encoding).`,
    );
    this.name = 'UnsupportedContentEncodingError';
  }
}

/**
 * The table for people (`text/plain`) past the runtime's `maxResultRows` / `maxResultBytes`: it is
 * built whole, so it is held to them, where the other formats are streamed at any size. The
 * runtime's message, plus the fix an HTTP client can make itself.
 */
export class TableTooLargeError extends FerryError {
  constructor(cause: Error) {
    super(
      'ERR_RESULT_TOO_LARGE',
      `${cause.message.replace(/\.$/, '')}. The table (Accept: text/plain) is built whole, so it is held to that cap; ask for text/csv or application/json instead, which are streamed at any size.`,
      { cause },
    );
    this.name = 'TableTooLargeError';
  }
}

/** The API key is missing or wrong. */
export class UnauthorizedError extends FerryError {
  constructor() {
    super(
      'ERR_UNAUTHORIZED',
      "This server requires an API key; send it as 'Authorization: Bearer <key>' (or 'X-API-Key: <key>').",
    );
    this.name = 'UnauthorizedError';
  }
}

/** No route has this path. */
export class RouteNotFoundError extends FerryError {
  constructor(method: string, path: string) {
    super('ERR_NOT_FOUND', `No route for ${method} ${path}; see the server README for the routes it serves.`);
    this.name = 'RouteNotFoundError';
  }
}

/** A route has this path, but not for this method. */
export class MethodNotAllowedError extends FerryError {
  readonly allowed: readonly string[];

  constructor(method: string, path: string, allowed: readonly string[]) {
    super('ERR_METHOD_NOT_ALLOWED', `${path} does not accept ${method}; use ${allowed.join(' or ')}.`);
    this.name = 'MethodNotAllowedError';
    this.allowed = allowed;
  }
}

interface FrameworkError {
  readonly code?: unknown;
  readonly statusCode?: unknown;
  readonly validation?: unknown;
  readonly message?: unknown;
}

/**
 * The server's own error for an error fastify raised before a handler ran (body parsing, the body
 * cap, schema validation); any other error unchanged. `hint` says how to send the request right.
 */
export function requestError(error: unknown, maxBodyBytes: number, hint?: string): unknown {
  const framework = (error ?? {}) as FrameworkError;
  const fix = hint === undefined ? '' : `; ${hint}`;
  if (framework.validation !== undefined) {
    return new BadRequestError(`The request is invalid: ${String(framework.message)}${fix}.`, {
      cause: error,
    });
  }
  switch (framework.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new BodyTooLargeError(maxBodyBytes);
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new BadRequestError(`The request body is not valid JSON${fix}.`, { cause: error });
  }
  const status = framework.statusCode;
  if (typeof framework.code === 'string' && framework.code.startsWith('FST_') && typeof status === 'number') {
    if (status >= 400 && status < 500) {
      return new BadRequestError(`The request is malformed (${String(framework.message)})${fix}.`, {
        cause: error,
      });
    }
  }
  return error;
}

/** Errors whose answer says when to retry (`retryAfterSeconds`). */
const RETRY_AFTER_CODES: ReadonlySet<string | undefined> = new Set(['ERR_QUERY_REJECTED', 'ERR_STALE']);

/**
 * Headers an error response carries: `Retry-After` (seconds) for a query refused by the runtime's
 * admission control (`ERR_QUERY_REJECTED`, 429) or past its client's staleness bound (`ERR_STALE`, 503).
 */
export function errorHeaders(error: unknown): Readonly<Record<string, string>> {
  if (!RETRY_AFTER_CODES.has(errorCode(error))) return {};
  const seconds = (error as { retryAfterSeconds?: unknown }).retryAfterSeconds;
  return { 'retry-after': String(typeof seconds === 'number' && seconds > 0 ? Math.ceil(seconds) : 1) };
}

/** The HTTP status a request failing with `error` answers with (core's `ERROR_STATUS`); 500 for anything unexpected. */
export function httpStatusFor(error: unknown): number {
  return errorStatus(error).http;
}

registerErrors({
  BadRequestError,
  SnapshotNotFoundError,
  SnapshotsReadOnlyError,
  InvalidCommandError,
  BodyTooLargeError,
  UnsupportedContentEncodingError,
  TableTooLargeError,
  UnauthorizedError,
  RouteNotFoundError,
  MethodNotAllowedError,
});
