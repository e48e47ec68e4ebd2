/**
 * Errors of the Flight server and the one table that turns every error a call can meet (the
 * runtime's, the engines', this package's own) into a gRPC status. Clients see the one-sentence
 * message as the status details and the stable code in the `ferry-error-code` trailer. Local file
 * paths never reach a client: {@link publicMessage} replaces them before anything is sent.
 */
import { FerryError, type FerryErrorOptions } from '@ferry/core';
import { Metadata, status } from '@grpc/grpc-js';

/** The request itself is malformed: an unknown command, a ticket or handle this server never issued. */
export class FlightRequestError extends FerryError {
  constructor(message: string, options: FerryErrorOptions = {}) {
    super('ERR_FLIGHT_BAD_REQUEST', message, options);
    this.name = 'FlightRequestError';
  }
}

/** No or a wrong API key. */
export class FlightUnauthenticatedError extends FerryError {
  constructor() {
    super(
      'ERR_UNAUTHORIZED',
      "This Flight server requires an API key; send 'authorization: Bearer <key>' metadata (or a Basic auth handshake with the key as password).",
    );
    this.name = 'FlightUnauthenticatedError';
  }
}

/** A ticket or prepared statement handle that is unknown, used twice, or expired. */
export class FlightHandleNotFoundError extends FerryError {
  constructor(what: 'ticket' | 'prepared statement', ttlMs: number) {
    super(
      'ERR_FLIGHT_HANDLE_NOT_FOUND',
      what === 'ticket'
        ? `The ticket is unknown, already redeemed, or older than ${ttlMs} ms; call GetFlightInfo again and redeem its ticket once with DoGet.`
        : `The prepared statement handle is unknown, closed, or idle for more than ${ttlMs} ms; create the prepared statement again.`,
    );
    this.name = 'FlightHandleNotFoundError';
  }
}

/** Too many results waiting for DoGet, or too many open prepared statements. */
export class FlightCapacityError extends FerryError {
  constructor(what: string, limit: number) {
    super(
      'ERR_FLIGHT_CAPACITY',
      `More than ${limit} ${what} are open on this Flight server; redeem or close them (DoGet, ClosePreparedStatement) before opening more.`,
    );
    this.name = 'FlightCapacityError';
  }
}

/** An RPC or Flight SQL command this read-only server does not offer. */
export class FlightUnsupportedError extends FerryError {
  constructor(what: string, instead: string) {
    super('ERR_FLIGHT_UNSUPPORTED', `${what} is not supported by Ferry's Flight server; ${instead}.`);
    this.name = 'FlightUnsupportedError';
  }
}

/** A value of a result column that has no form in the column's Arrow type. */
export class ArrowConversionError extends FerryError {
  constructor(column: string, type: string, value: unknown) {
    super(
      'ERR_ARROW_CONVERSION',
      `Column '${column}' holds ${JSON.stringify(value)}, which has no ${type} form; cast it in the query (e.g. to VARCHAR).`,
    );
    this.name = 'ArrowConversionError';
  }
}

const STATUS_BY_CODE: Readonly<Record<string, status>> = {
  ERR_FLIGHT_BAD_REQUEST: status.INVALID_ARGUMENT,
  ERR_BAD_REQUEST: status.INVALID_ARGUMENT,
  ERR_WRITE_REJECTED: status.INVALID_ARGUMENT,
  ERR_STATEMENT_REJECTED: status.INVALID_ARGUMENT,
  ERR_QUERY_FAILED: status.INVALID_ARGUMENT,
  ERR_INVALID_PARAMETER: status.INVALID_ARGUMENT,
  ERR_ARROW_CONVERSION: status.INVALID_ARGUMENT,
  ERR_UNAUTHORIZED: status.UNAUTHENTICATED,
  ERR_UNKNOWN_DATASET: status.NOT_FOUND,
  ERR_TABLE_NOT_FOUND: status.NOT_FOUND,
  ERR_FLIGHT_HANDLE_NOT_FOUND: status.NOT_FOUND,
  ERR_RESULT_TOO_LARGE: status.RESOURCE_EXHAUSTED,
  ERR_QUERY_MEMORY: status.RESOURCE_EXHAUSTED,
  ERR_QUERY_TEMP_SPACE: status.RESOURCE_EXHAUSTED,
  ERR_CROSS_ENGINE_TOO_LARGE: status.RESOURCE_EXHAUSTED,
  ERR_FLIGHT_CAPACITY: status.RESOURCE_EXHAUSTED,
  ERR_QUERY_REJECTED: status.RESOURCE_EXHAUSTED,
  ERR_FLIGHT_UNSUPPORTED: status.UNIMPLEMENTED,
  ERR_DATASET_NOT_READY: status.UNAVAILABLE,
  ERR_DATASET_FAILED: status.UNAVAILABLE,
  ERR_THREAD_EXITED: status.UNAVAILABLE,
  ERR_RUNTIME_CLOSED: status.UNAVAILABLE,
  ERR_READY_TIMEOUT: status.UNAVAILABLE,
  ERR_ENGINE_CLOSED: status.UNAVAILABLE,
  ERR_QUERY_TIMEOUT: status.DEADLINE_EXCEEDED,
  ERR_FLIGHT_CANCELLED: status.CANCELLED,
  ERR_QUERY_CANCELLED: status.CANCELLED,
  ERR_STREAM_IDLE: status.DEADLINE_EXCEEDED,
};

/** The error's stable code, or undefined for errors that carry none. */
export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('ERR_') ? code : undefined;
}

// A quoted absolute path or file URL ('…'), or a bare one of two or more segments.
const QUOTED_PATH = /(['"`])(?:file:\/\/|\/|[A-Za-z]:[\\/])[^'"`]*\1/g;
const BARE_PATH = /(?:file:\/\/)?(?:\/|[A-Za-z]:[\\/])[^\s'"`,;:()]+[\\/][^\s'"`,;:()]+/g;

/** The message with local file paths replaced: a client never learns where the data lives. */
export function publicMessage(message: string): string {
  return message.replace(QUOTED_PATH, "'<snapshot file>'").replace(BARE_PATH, '<snapshot file>');
}

export interface GrpcError {
  readonly code: status;
  readonly details: string;
  readonly metadata: Metadata;
}

/**
 * The gRPC status for an error: its code's entry in the table, INTERNAL (with a generic
 * message, the original is for the log) for anything without a stable code.
 */
export function grpcErrorOf(error: unknown): GrpcError & { readonly internal: boolean } {
  const code = errorCode(error);
  const metadata = new Metadata();
  const mapped = code === undefined ? undefined : STATUS_BY_CODE[code];
  if (code === undefined || mapped === undefined) {
    metadata.set('ferry-error-code', code ?? 'ERR_INTERNAL');
    return {
      code: status.INTERNAL,
      details: 'The Flight server failed unexpectedly; the server log has the details.',
      metadata,
      internal: true,
    };
  }
  metadata.set('ferry-error-code', code);
  return {
    code: mapped,
    details: publicMessage((error as Error).message),
    metadata,
    internal: false,
  };
}
