/**
 * Errors of the Flight server, and the gRPC status of every error a call can meet: the column of
 * `@ferry/core`'s `ERROR_STATUS` table (one table for the HTTP and the Flight server). Clients see
 * the one-sentence message as the status details and the stable code in the `ferry-error-code`
 * trailer. Local file paths never reach a client: {@link publicMessage} replaces them before
 * anything is sent.
 */
import { errorCode, errorStatus, FerryError, type FerryErrorOptions, registerErrors } from '@ferry/core/base';
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

// A quoted absolute path or file URL ('…'), or a bare one of two or more segments. A path starts
// where no word goes on (a slash after a letter, digit or `%` is a date's, a division's, a LIKE
// pattern's: '2026/13/01', a/b/c, '%/a/%').
const QUOTED_PATH = /(['"`])(?:file:\/\/|\/|[A-Za-z]:[\\/])[^'"`]*\1/g;
const BARE_PATH = /(?<![\w%])(?:file:\/\/)?(?:\/|[A-Za-z]:[\\/])[^\s'"`,;:()]+[\\/][^\s'"`,;:()]+/g;

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
 * The gRPC status for an error: its code's row in core's `ERROR_STATUS` (one table for the HTTP and
 * the Flight server); INTERNAL, with a generic message (the original is for the log), for an error
 * whose row says INTERNAL or that has no code or no row.
 */
export function grpcErrorOf(error: unknown): GrpcError & { readonly internal: boolean } {
  const code = errorCode(error);
  const mapped = errorStatus(error).grpc;
  const metadata = new Metadata();
  metadata.set('ferry-error-code', code ?? 'ERR_INTERNAL');
  if (mapped === 'INTERNAL') {
    return {
      code: status.INTERNAL,
      details: 'The Flight server failed unexpectedly; the server log has the details.',
      metadata,
      internal: true,
    };
  }
  return {
    code: status[mapped],
    details: publicMessage((error as Error).message),
    metadata,
    internal: false,
  };
}

registerErrors({
  FlightRequestError,
  FlightUnauthenticatedError,
  FlightHandleNotFoundError,
  FlightCapacityError,
  FlightUnsupportedError,
  ArrowConversionError,
});
