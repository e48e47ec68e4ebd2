/**
 * The HTTP server: `startServer(runtime, options)` binds node:http (127.0.0.1:8090 by default) and
 * serves the built-in API plus any extra routes. `createRequestHandler` is the same router without
 * the listening socket, for mounting in an existing server. `close()` stops accepting, aborts
 * long-lived responses, lets in-flight requests finish (up to a grace period) and never closes the
 * runtime: its owner does that, after the server.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger, Runtime } from '@ferry/runtime';
import { apiRoutes } from './api-routes.js';
import { apiKeyChecker } from './auth.js';
import { MethodNotAllowedError, RouteNotFoundError, UnauthorizedError } from './errors.js';
import { readBody, sendError } from './http.js';
import { Histogram } from './prometheus.js';
import { matchRoute, type Route } from './router.js';

export interface ServerOptions {
  /** Interface to bind; default `127.0.0.1` (use `0.0.0.0` to accept remote clients). */
  readonly host?: string;
  /** Port; default 8090; 0 picks a free one (read it from `url`). */
  readonly port?: number;
  /** When set, every route but public ones (`/health`) requires `Authorization: Bearer <apiKey>`. */
  readonly apiKey?: string;
  /** Extra routes (the inspector page, its event stream); matched before the built-in ones. */
  readonly routes?: readonly Route[];
  /** Largest request body accepted; default 1 MiB (larger: 413). */
  readonly maxBodyBytes?: number;
  /** How long `close()` waits for in-flight requests before cutting connections; default 5 000 ms. */
  readonly closeGraceMs?: number;
  /** Where unexpected (500) errors are logged; default: nowhere. */
  readonly logger?: Logger;
}

export interface RequestHandler {
  (req: IncomingMessage, res: ServerResponse): void;
  /** Aborts the signal of every open request (ends SSE streams). */
  abortAll(): void;
}

export interface RunningServer {
  /** `http://host:port` as bound (the real port when 0 was asked). */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly server: Server;
  /** Stops the server; the runtime stays open. Harmless to call twice. */
  close(): Promise<void>;
}

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 8090;
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** The router as a plain node:http request listener. */
export function createRequestHandler(runtime: Runtime, options: ServerOptions = {}): RequestHandler {
  if (options.apiKey === '') {
    throw new TypeError('apiKey is empty; pass a non-empty key or leave apiKey unset to serve without one.');
  }
  const latency = new Histogram();
  const routes: readonly Route[] = [...(options.routes ?? []), ...apiRoutes(runtime, latency)];
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const authorized = options.apiKey === undefined ? undefined : apiKeyChecker(options.apiKey);
  const open = new Set<AbortController>();
  const logger = options.logger;

  const handle = async (
    req: IncomingMessage,
    res: ServerResponse,
    controller: AbortController,
  ): Promise<void> => {
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://localhost');
    try {
      const match = matchRoute(routes, method, url.pathname);
      if (match.kind === 'none') throw new RouteNotFoundError(method, url.pathname);
      if (match.kind === 'method') {
        const error = new MethodNotAllowedError(method, url.pathname, match.allowed);
        sendError(res, error, { allow: match.allowed.join(', ') });
        return;
      }
      if (authorized !== undefined && match.route.public !== true && !authorized(req)) {
        req.resume();
        sendError(res, new UnauthorizedError(), { 'www-authenticate': 'Bearer' });
        return;
      }
      await match.route.handle({
        req,
        res,
        url,
        params: match.params,
        runtime,
        signal: controller.signal,
        body: () => readBody(req, maxBodyBytes),
      });
    } catch (error) {
      const status = sendError(res, error);
      if (status === 500) {
        logger?.error(
          { component: 'server', method, path: url.pathname, err: error },
          `${method} ${url.pathname} failed: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
  };

  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    const controller = new AbortController();
    open.add(controller);
    res.on('close', () => {
      open.delete(controller);
      controller.abort();
    });
    void handle(req, res, controller);
  };
  return Object.assign(listener, {
    abortAll(): void {
      for (const controller of open) controller.abort();
    },
  });
}

/** Starts the HTTP server; resolves once it listens. */
export async function startServer(runtime: Runtime, options: ServerOptions = {}): Promise<RunningServer> {
  const handler = createRequestHandler(runtime, options);
  const server = createServer(handler);
  const host = options.host ?? DEFAULT_HOST;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? DEFAULT_PORT, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const grace = options.closeGraceMs ?? 5_000;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve) => {
      const timer = setTimeout(() => server.closeAllConnections(), grace);
      timer.unref();
      server.close(() => {
        clearTimeout(timer);
        resolve();
      });
      server.closeIdleConnections();
      handler.abortAll();
    });
    return closing;
  };
  return {
    url: `http://${urlHost}:${address.port}`,
    host: address.address,
    port: address.port,
    server,
    close,
  };
}
