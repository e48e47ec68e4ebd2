/**
 * What every RPC handler shares: the context (the runtime, the result source, the key check, the
 * tables of waiting results and prepared statements, the calls in progress) and the two wrappers
 * that check the key and turn a failure into its gRPC status — for unary calls and for server
 * streams. A stream whose client went away (cancelled) ends quietly: the client is gone, there is
 * no one to tell; the failure is logged at debug with its cause.
 */
import { type QueryParam, redactSecrets } from '@ferry/core/base';
import { valueBytes } from '@ferry/engines/namespaces';
import { textBytes } from '@ferry/engines/sql';
import type { Logger, Runtime } from '@ferry/runtime';
import type { Metadata, ServerUnaryCall, ServerWritableStream, sendUnaryData } from '@grpc/grpc-js';
import type { KeyCheck } from './auth.js';
import { FlightUnauthenticatedError, type GrpcError, grpcErrorOf } from './errors.js';
import type { HandleTable } from './handles.js';
import type { ArrowResult, ResultSource } from './result-source.js';

/** A result GetFlightInfo ran, waiting for its DoGet. */
export interface Pending {
  readonly result: ArrowResult;
  readonly controller: AbortController;
  /** The pins (`x-ferry-snapshot`) the result was read with: a bound at DoGet judges them as datasets. */
  readonly pins?: Readonly<Record<string, number>>;
}

/** An open prepared statement and the parameters bound to it last. */
export interface Prepared {
  readonly sql: string;
  /** The statement as it runs with `params`: `sql`, its `$name` markers numbered when bound by name. */
  bound: { readonly sql: string; readonly params: readonly QueryParam[] };
}

/** What a prepared statement holds: its SQL, and its bound text (when another) and values. */
export function preparedBytes(prepared: Prepared): number {
  const { sql, bound } = prepared;
  return textBytes(sql) + (bound.sql === sql ? 0 : textBytes(bound.sql)) + valueBytes(bound.params);
}

export interface FlightContext {
  readonly runtime: Runtime;
  readonly source: ResultSource;
  readonly logger: Logger | undefined;
  /** The token a call may proceed with (see `auth.ts`), undefined when its key is refused. */
  readonly admitted: KeyCheck;
  readonly pending: HandleTable<Pending>;
  readonly statements: HandleTable<Prepared>;
  /** Server streams in progress (aborted by `close()`). */
  readonly liveCalls: Set<AbortController>;
  /** Bytes of FlightData DoGet may have written that gRPC has not yet sent (per stream). */
  readonly writeWindowBytes: number;
  /**
   * Most bytes of Arrow data one DoPut may send: its parameters are one row, a schema and one batch,
   * each a message of at most the largest size a client may send. Past it the call is refused
   * rather than buffered until the client ends it.
   */
  readonly maxPutBytes: number;
}

/** The gRPC status of `error`, logged first when it is unexpected (INTERNAL). */
export function report(context: FlightContext, error: unknown, rpc: string): GrpcError {
  const grpc = grpcErrorOf(error);
  if (grpc.internal) {
    context.logger?.error(
      { component: 'flight', rpc, err: error },
      `Flight ${rpc} failed: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  // A resolved secret never reaches a client, whatever message carried it.
  return { ...grpc, details: redactSecrets(grpc.details, context.runtime.config.secretReferences) };
}

export const authorized = (context: FlightContext, metadata: Metadata): boolean =>
  context.admitted(metadata) !== undefined;

/** A unary RPC: the key checked, the answer or the error's status sent. */
export function unary<Req, Res>(
  context: FlightContext,
  rpc: string,
  handle: (request: Req, call: ServerUnaryCall<Req, Res>) => Promise<Res>,
) {
  return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>): void => {
    if (!authorized(context, call.metadata)) {
      callback(report(context, new FlightUnauthenticatedError(), rpc));
      return;
    }
    handle(call.request, call).then(
      (response) => callback(null, response),
      (error: unknown) => callback(report(context, error, rpc)),
    );
  };
}

/** A server-streaming RPC: the key checked; `signal` aborts when the client cancels or the server closes. */
export function serverStream<Req>(
  context: FlightContext,
  rpc: string,
  handle: (request: Req, call: ServerWritableStream<Req, unknown>, signal: AbortSignal) => Promise<void>,
) {
  return (call: ServerWritableStream<Req, unknown>): void => {
    if (!authorized(context, call.metadata)) {
      call.emit('error', report(context, new FlightUnauthenticatedError(), rpc));
      return;
    }
    const controller = new AbortController();
    context.liveCalls.add(controller);
    call.on('cancelled', () => controller.abort());
    handle(call.request, call, controller.signal)
      .catch((error: unknown) => {
        if (!controller.signal.aborted) {
          call.emit('error', report(context, error, rpc));
          return;
        }
        // Cancelled by the client (or by close()): nobody is left to answer.
        context.logger?.debug(
          { component: 'flight', rpc, err: error },
          `Flight ${rpc} ended after its call was cancelled: ${error instanceof Error ? error.message : String(error)}`,
        );
      })
      .finally(() => context.liveCalls.delete(controller));
  };
}

/** Logs an error a client's half of a duplex call reported (it ended the call; nothing is lost here). */
export function clientStreamError(context: FlightContext, rpc: string): (error: Error) => void {
  return (error) =>
    context.logger?.debug(
      { component: 'flight', rpc, err: error },
      `Flight ${rpc}: the client's stream failed: ${error.message}`,
    );
}
