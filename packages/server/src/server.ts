/**
 * The HTTP server, on fastify: `startServer(runtime, options)` listens (127.0.0.1:8090 by default)
 * and serves the built-in API plus any extra routes. fastify routes, caps and parses bodies and
 * validates them against the routes' JSON schemas; this file adds what Ferry needs around that:
 * the API key check (every route but public ones), the JSON error body for every failure (its
 * status from the error's code), 405 with `Allow` for a known path and a wrong method, and a close
 * that ends long-lived responses first. `createRequestHandler` is the same app without the
 * listening socket, for mounting in an existing node:http server. Neither ever closes the runtime:
 * its owner does that, after the server.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import fastifyAccepts from '@fastify/accepts';
import { redactSecrets } from '@ferry/core/base';
import { apiKeyCheck, type Logger, type Runtime } from '@ferry/runtime';
import { Ajv } from 'ajv';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { apiRoutes, type StatusEndpoint } from './api-routes.js';
import { requestKeyChecker } from './auth.js';
import { corsStep } from './cors.js';
import { MethodNotAllowedError, RouteNotFoundError, requestError, UnauthorizedError } from './errors.js';
import { queriesTakeTurns } from './host-turns.js';
import { errorResponse } from './http.js';
import { createServerMetrics } from './metrics.js';
import { extraRoutes, OpenRequests, type Route } from './route.js';

export interface ServerOptions {
  /** Interface to bind; default `127.0.0.1` (use `0.0.0.0` to accept remote clients). */
  readonly host?: string;
  /** Port; default 8090; 0 picks a free one (read it from `url`). */
  readonly port?: number;
  /**
   * A key accepted beside the spicepod's `runtime.auth.api-key` keys (which always apply): with any
   * key, every route but public ones (`/health`, `/v1/ready`) requires one, as `X-API-Key` or
   * `Authorization: Bearer <key>`.
   */
  readonly apiKey?: string;
  /** Extra routes (the inspector page, its event stream); one with a built-in's method and path replaces it. */
  readonly routes?: readonly Route[];
  /**
   * Connections the kernel holds until the server accepts them; default 4 096 (Linux caps it at
   * `net.core.somaxconn`). Node's own default, 511, drops the SYNs of a larger burst: their clients
   * retry after 1, 3 and 7 s, so a probe or a query to refuse waits seconds before it is even seen.
   */
  readonly backlog?: number;
  /** Largest request body accepted; default 1 MiB (larger: 413). */
  readonly maxBodyBytes?: number;
  /** How long `close()` waits for in-flight requests before cutting connections; default 5 000 ms. */
  readonly closeGraceMs?: number;
  /** Where unexpected (500) errors are logged; default: nowhere. */
  readonly logger?: Logger;
  /** Endpoints served beside this server (the Flight server), listed by `GET /v1/status`. */
  readonly endpoints?: readonly StatusEndpoint[];
  /**
   * Rows one `POST /v1/sql` answer may hold; default 0: no cap (answers are streamed, so a large
   * result holds no memory; the runtime's `maxStreamBytes` bounds its Arrow bytes). Past the cap the
   * answer is refused with `ERR_RESULT_TOO_LARGE` (or, once rows were sent, cut off).
   */
  readonly maxResultRows?: number;
  /** Bytes of Arrow data one `POST /v1/sql` answer may hold, likewise; default 0: no cap. */
  readonly maxResultBytes?: number;
  /**
   * Serve HTTPS with this PEM certificate chain and key (their contents, not paths). Default: the
   * spicepod's `runtime.tls` (`Runtime.tls`), else plain HTTP.
   */
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  /**
   * `createRequestHandler` only: the node:http server it is mounted in serves TLS (or sits behind
   * one that does). Required when the spicepod sets `runtime.tls`, which must never be served in
   * plaintext.
   */
  readonly externalTls?: boolean;
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
/** Connections waiting to be accepted (see `ServerOptions.backlog`). */
export const DEFAULT_BACKLOG = 4_096;
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

declare module 'fastify' {
  interface FastifyRequest {
    /** True when no key is required or the request presents one (public routes are served either way). */
    keyAccepted: boolean;
  }
  interface FastifyContextConfig {
    /** Served without the API key. */
    public?: boolean;
    /** How to send the request right, appended to messages about a malformed one. */
    hint?: string;
  }
}

/**
 * Bodies are validated strictly (a number is not a string, a scalar is not a list); query strings
 * and path params are text, so there `?limit=5` and `?status=true` are read as what the schema says.
 */
function validators(): (route: { schema: object; httpPart?: string }) => (data: unknown) => boolean {
  // No check of each schema against JSON Schema's meta-schema: compiling the meta-schema took
  // ~60 ms per instance at every start (bench/RESULTS.md). The schemas are this package's
  // constants, and compiling one still refuses an unknown keyword or type and a value of the wrong
  // type (`maxLength: 'x'`), at start, as before.
  const options = { allErrors: false, allowUnionTypes: true, validateSchema: false } as const;
  const body = new Ajv({ ...options, coerceTypes: false });
  const text = new Ajv({ ...options, coerceTypes: true, useDefaults: true });
  return ({ schema, httpPart }) => (httpPart === 'body' ? body : text).compile(schema);
}

interface Built {
  readonly app: FastifyInstance;
  readonly open: OpenRequests;
}

/** The certificate and key to serve with: the server's own, else the spicepod's `runtime.tls`. */
function tlsOf(runtime: Runtime, options: ServerOptions): ServerOptions['tls'] {
  return options.tls ?? runtime.tls;
}

/** How long an idle keep-alive connection stays open: fastify's default. */
export const KEEP_ALIVE_TIMEOUT_MS = 72_000;

function buildApp(runtime: Runtime, options: ServerOptions): Built {
  const keys = apiKeyCheck(runtime.config, [options.apiKey]);
  const tls = tlsOf(runtime, options);
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const authorized = keys.required ? requestKeyChecker(keys) : undefined;
  const logger = options.logger;
  const open = new OpenRequests();
  const app = Fastify({
    // Query requests are handled in turns of the host's time (host-turns.ts); the rest at once.
    serverFactory: (handler) => {
      const listener = queriesTakeTurns(handler);
      // fastify's own idle keep-alive time, which a server of our own does not get: node:http's
      // default (5 s) closes an idle connection while a client (or a load balancer keeping
      // connections for 60 s) may be sending its next request on it, which then fails with
      // ECONNRESET (a client busy for 5 s between two requests did).
      const options = { keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS };
      return tls === undefined
        ? createServer(options, listener)
        : (createHttpsServer({ ...options, cert: tls.cert, key: tls.key }, listener) as unknown as Server);
    },
    bodyLimit: maxBodyBytes,
    routerOptions: { maxParamLength: 1024 },
    // A path the router cannot decode (`%ff`) or too long a segment: the same error body as
    // every other failure, not fastify's own ({ error: 'Bad Request', code: 'FST_…', message }).
    frameworkErrors: (error, request, reply) => sendError(request, reply, error),
    logger: false,
  });
  app.setValidatorCompiler(validators());

  const logServerError = (request: FastifyRequest, error: unknown): void => {
    const path = request.url.split('?')[0] ?? request.url;
    logger?.error(
      { component: 'server', method: request.method, path, err: error },
      `${request.method} ${path} failed: ${error instanceof Error ? error.message : String(error)}`,
    );
  };
  const sendError = (request: FastifyRequest, reply: FastifyReply, error: unknown): FastifyReply => {
    const { status, body, headers } = errorResponse(
      requestError(error, maxBodyBytes, request.routeOptions.config.hint),
    );
    if (status === 500) logServerError(request, error);
    // No answer shows a secret the spicepod's references resolved to.
    const safe = { ...body, error: redactSecrets(body.error, runtime.config.secretReferences) };
    return reply.code(status).headers(headers).type('application/json; charset=utf-8').send(safe);
  };

  app.register(fastifyAccepts);
  app.setErrorHandler((error, request, reply) => sendError(request, reply, error));
  app.setNotFoundHandler((request, reply) =>
    sendError(request, reply, new RouteNotFoundError(request.method, request.url.split('?')[0] ?? '/')),
  );
  app.decorateRequest('keyAccepted', true);
  // The spicepod's runtime.cors: allowed origins' answers carry CORS headers; preflights need no key.
  const cors = runtime.config.cors === undefined ? undefined : corsStep(runtime.config.cors);
  // Only when there is something to check: a hook costs every request a promise and a turn.
  if (cors !== undefined || authorized !== undefined) {
    app.addHook('onRequest', async (request, reply) => {
      if (cors?.(request, reply) === true) return reply;
      if (authorized === undefined || request.is404) return;
      if (request.routeOptions.config.public === true) {
        request.keyAccepted = authorized(request.raw);
        return;
      }
      if (!authorized(request.raw)) {
        reply.header('www-authenticate', 'Bearer');
        throw new UnauthorizedError();
      }
    });
  }

  // Every method a path answers, to answer the others with 405.
  const methodsByPath = new Map<string, Set<string>>();
  let collecting = true;
  app.addHook('onRoute', (route) => {
    if (!collecting) return;
    const methods = methodsByPath.get(route.url) ?? new Set<string>();
    for (const method of [route.method].flat()) methods.add(method);
    // fastify answers HEAD for every GET route.
    if (methods.has('GET')) methods.add('HEAD');
    methodsByPath.set(route.url, methods);
  });

  const routes = options.routes ?? [];
  const extra = new Set(routes.map((route) => `${route.method} ${route.path}`));
  app.register(extraRoutes, { runtime, routes, open, onServerError: logServerError });
  app.register(apiRoutes, {
    runtime,
    metrics: createServerMetrics(runtime),
    taken: (method, path) => extra.has(`${method} ${path}`),
    endpoints: options.endpoints ?? [],
    sqlLimits: { maxRows: options.maxResultRows ?? 0, maxBytes: options.maxResultBytes ?? 0 },
    onServerError: logServerError,
  });
  app.after(() => {
    collecting = false;
    for (const [path, methods] of methodsByPath) {
      const allowed = [...methods].filter((method) => method !== 'HEAD' || !methods.has('GET'));
      const others = METHODS.filter((method) => !methods.has(method));
      if (others.length === 0) continue;
      app.route({
        method: others,
        url: path,
        config: { public: true },
        handler: (request, reply) => {
          reply.header('allow', allowed.join(', '));
          return sendError(
            request,
            reply,
            new MethodNotAllowedError(request.method, request.url.split('?')[0] ?? path, allowed),
          );
        },
      });
    }
  });
  return { app, open };
}

/** The server as a plain node:http request listener (requests wait until it is ready). */
export function createRequestHandler(runtime: Runtime, options: ServerOptions = {}): RequestHandler {
  if (runtime.tls !== undefined && options.externalTls !== true) {
    throw new TypeError(
      'The spicepod sets runtime.tls, so its API must not be served in plaintext, and createRequestHandler cannot add TLS to a server it does not own; mount the handler in an https server (or behind one) and pass { externalTls: true }, or serve it with startServer().',
    );
  }
  const { app, open } = buildApp(runtime, options);
  const ready = Promise.resolve(app.ready());
  ready.catch((error: unknown) => {
    options.logger?.error(
      { component: 'server', err: error },
      `The request handler could not start: ${error instanceof Error ? error.message : String(error)}`,
    );
  });
  const route = queriesTakeTurns((req, res) => app.routing(req, res));
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    ready.then(
      () => route(req, res),
      () => {
        res.statusCode = 500;
        res.end();
      },
    );
  };
  return Object.assign(listener, { abortAll: () => open.abortAll() });
}

/** Starts the HTTP server; resolves once it listens. */
export async function startServer(runtime: Runtime, options: ServerOptions = {}): Promise<RunningServer> {
  const { app, open } = buildApp(runtime, options);
  const host = options.host ?? DEFAULT_HOST;
  await app.listen({ port: options.port ?? DEFAULT_PORT, host, backlog: options.backlog ?? DEFAULT_BACKLOG });
  const server = app.server;
  const address = server.address() as AddressInfo;
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const grace = options.closeGraceMs ?? 5_000;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      const timer = setTimeout(() => server.closeAllConnections(), grace);
      timer.unref();
      open.abortAll();
      try {
        await app.close();
      } finally {
        clearTimeout(timer);
      }
    })();
    return closing;
  };
  return {
    url: `${tlsOf(runtime, options) === undefined ? 'http' : 'https'}://${urlHost}:${address.port}`,
    host: address.address,
    port: address.port,
    server,
    close,
  };
}
