/**
 * The Arrow Flight / Flight SQL server: `startFlightServer(runtime, options)` binds a
 * `@grpc/grpc-js` server (127.0.0.1:50051 by default, as Spice) that answers Spice's SDKs (a plain
 * SQL command to GetFlightInfo, parameters through prepared statements) and Flight SQL drivers
 * (Any-packed commands, Basic auth handshake, metadata commands for browsing). This file holds the
 * options, the binding (TLS or plaintext) and `close()`; the RPCs are `service.ts`'s. Results
 * come from a {@link ResultSource} and stream as gRPC takes them (`results.ts`). The runtime is
 * never closed here: its owner does that, after `close()`.
 */
import { apiKeyCheck, type Logger, type Runtime } from '@ferry/runtime';
import { Server, ServerCredentials, setLogger } from '@grpc/grpc-js';
import { keyCheck } from './auth.js';
import { type FlightContext, type Pending, type Prepared, preparedBytes } from './calls.js';
import { HandleTable } from './handles.js';
import { flightServiceDefinition } from './protocol.js';
import { type ResultSource, runtimeResultSource } from './result-source.js';
import { flightService } from './service.js';

export const DEFAULT_FLIGHT_HOST = '127.0.0.1';
export const DEFAULT_FLIGHT_PORT = 50051;

export interface FlightTlsOptions {
  /** The PEM certificate chain itself (read the file first: `readFileSync(path)`). */
  readonly cert: string | Buffer;
  /** The PEM private key, likewise. */
  readonly key: string | Buffer;
}

export interface FlightServerOptions {
  /** Interface to bind; default `127.0.0.1` (use `0.0.0.0` to accept remote clients, with `apiKey` and `tls`). */
  readonly host?: string;
  /** Port; default 50051; 0 picks a free one (read it from `port` / `address`). */
  readonly port?: number;
  /**
   * A key accepted beside the spicepod's `runtime.auth.api-key` keys (which always apply): with any
   * key, every call needs one (bearer token, `x-api-key`, or the password of a Basic auth Handshake).
   */
  readonly apiKey?: string;
  /** Serve TLS (`grpc+tls://`) with this certificate and key; default: the spicepod's `runtime.tls`, else plaintext. */
  readonly tls?: FlightTlsOptions;
  /** Where results come from; default {@link runtimeResultSource} over `runtime.queryStream()`. */
  readonly source?: ResultSource;
  /** Where unexpected errors (debug: back-pressure waits) are logged; default nowhere. */
  readonly logger?: Logger;
  /**
   * How long a GetFlightInfo result waits for its DoGet; default 10 000 ms. A later DoGet runs the
   * ticket's statement again, so this only bounds what an unredeemed result holds (its query and
   * the batches waiting): behind a load balancer, the DoGet often goes elsewhere.
   */
  readonly ticketTtlMs?: number;
  /** Results waiting for their DoGet at most; default 64 (more: the oldest is dropped, and its DoGet runs it again). */
  readonly maxTickets?: number;
  /** How long an unused prepared statement stays open; default 600 000 ms. */
  readonly statementTtlMs?: number;
  /** Open prepared statements at most; default 1 024. */
  readonly maxStatements?: number;
  /**
   * Bytes the open prepared statements may hold together (their SQL and bound values; each may be
   * as large as a message); default 256 MiB. Past it a new one, or a DoPut binding larger values,
   * is refused (RESOURCE_EXHAUSTED) until some are closed or expire.
   */
  readonly maxStatementBytes?: number;
  /** How long `close()` lets running calls finish before cutting them; default 5 000 ms. */
  readonly closeGraceMs?: number;
  /**
   * Bytes a DoGet may write ahead of what gRPC has sent to its client; default 1 MiB. The stream
   * stops pulling batches beyond it, so it bounds the memory a slow client costs.
   */
  readonly writeWindowBytes?: number;
}

export const DEFAULT_WRITE_WINDOW_BYTES = 1024 * 1024;

/** The largest message a client may send when the spicepod sets no runtime.flight.max_message_size. */
const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

export interface RunningFlightServer {
  /** `host:port` as bound (the real port when 0 was asked): what a Flight client connects to. */
  readonly address: string;
  readonly host: string;
  readonly port: number;
  /** `grpc://host:port`, or `grpc+tls://host:port` with TLS. */
  readonly url: string;
  /** Stops the server (running streams are cut after the grace period); the runtime stays open. */
  close(): Promise<void>;
}

function pem(value: string | Buffer): Buffer {
  return Buffer.isBuffer(value) ? value : Buffer.from(value);
}

/** Starts the Flight server; resolves once it listens. */
/**
 * Sends grpc-js's own log lines (`E No address added out of total 1 resolved` when the port is
 * taken, before Ferry says so itself) to `logger`, errors at warn and the rest at debug, instead of
 * plain text on stderr between the JSON lines. grpc-js keeps one logger per process: `ferry serve`
 * calls this; an embedder whose process uses grpc-js otherwise decides for itself.
 */
export function routeGrpcLogs(logger: Logger): void {
  const line = (args: unknown[]): string => args.map(String).join(' ');
  setLogger({
    error: (...args: unknown[]) => logger.warn({ component: 'grpc' }, line(args)),
    info: (...args: unknown[]) => logger.debug({ component: 'grpc' }, line(args)),
    debug: (...args: unknown[]) => logger.debug({ component: 'grpc' }, line(args)),
  } as unknown as Partial<Console>);
}

export async function startFlightServer(
  runtime: Runtime,
  options: FlightServerOptions = {},
): Promise<RunningFlightServer> {
  const keys = apiKeyCheck(runtime.config, [options.apiKey]);
  const ticketTtlMs = options.ticketTtlMs ?? 10_000;
  // The spicepod's runtime.flight.max_message_size: the largest message a client may send, and
  // the bound of the result messages sent to it (each batch is cut to under half of it).
  const maxMessage = runtime.config.flightMaxMessageBytes;
  const context: FlightContext = {
    runtime,
    source:
      options.source ??
      runtimeResultSource(
        runtime,
        maxMessage === undefined
          ? {}
          : { maxBatchBytes: Math.min(2 * 1024 * 1024, Math.floor(maxMessage / 2)) },
      ),
    logger: options.logger,
    admitted: keyCheck(keys),
    pending: new HandleTable<Pending>('ticket', ticketTtlMs, options.maxTickets ?? 64, (entry) =>
      entry.controller.abort(),
    ),
    statements: new HandleTable<Prepared>(
      'prepared statement',
      options.statementTtlMs ?? 600_000,
      options.maxStatements ?? 1_024,
      undefined,
      { bytes: options.maxStatementBytes ?? 256 * 1024 * 1024, sizeOf: preparedBytes },
    ),
    liveCalls: new Set<AbortController>(),
    writeWindowBytes: options.writeWindowBytes ?? DEFAULT_WRITE_WINDOW_BYTES,
    maxPutBytes: 2 * (maxMessage ?? DEFAULT_MAX_MESSAGE_BYTES),
  };
  const { pending, statements, liveCalls } = context;

  const server = new Server({ 'grpc.max_receive_message_length': maxMessage ?? DEFAULT_MAX_MESSAGE_BYTES });
  server.addService(flightServiceDefinition(), flightService(context));
  // The spicepod's runtime.tls unless the caller gives its own: a pod that asks for TLS never
  // serves plaintext.
  const tls = options.tls ?? runtime.tls;
  const credentials =
    tls === undefined
      ? ServerCredentials.createInsecure()
      : ServerCredentials.createSsl(null, [{ cert_chain: pem(tls.cert), private_key: pem(tls.key) }], false);
  const host = options.host ?? DEFAULT_FLIGHT_HOST;
  const bindHost = host.includes(':') ? `[${host}]` : host;
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${bindHost}:${options.port ?? DEFAULT_FLIGHT_PORT}`, credentials, (error, bound) =>
      error ? reject(error) : resolve(bound),
    );
  });
  const address = `${bindHost}:${port}`;
  const grace = options.closeGraceMs ?? 5_000;
  let closing: Promise<void> | undefined;
  return {
    address,
    host,
    port,
    url: `${tls === undefined ? 'grpc' : 'grpc+tls'}://${address}`,
    close() {
      closing ??= new Promise<void>((resolve) => {
        pending.clear();
        statements.clear();
        for (const controller of liveCalls) controller.abort();
        const timer = setTimeout(() => server.forceShutdown(), grace);
        timer.unref();
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      return closing;
    },
  };
}
