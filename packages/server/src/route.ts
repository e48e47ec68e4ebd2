/**
 * Extra routes: a method, a path (exact, or with `:name` segments) and a handler that writes the
 * raw node:http response. `startServer(runtime, { routes })` mounts them on the server's fastify
 * instance next to the built-in API (the inspector page and its event stream are mounted this way),
 * behind the same API key check unless `public`. Handlers get the runtime, the parsed URL, the
 * decoded path params, the body as bytes (whatever its content type, capped at the server's
 * `maxBodyBytes`) and an AbortSignal that fires when the client goes away or the server closes
 * (long-lived responses such as SSE end on it). A thrown error becomes the JSON error response.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Runtime } from '@ferry/runtime';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sendError } from './http.js';

export interface RouteContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  /** Values of the route's `:name` segments, URL-decoded. */
  readonly params: Readonly<Record<string, string>>;
  readonly runtime: Runtime;
  /** Aborted when the client disconnects or the server is closing. */
  readonly signal: AbortSignal;
  /** The request body; a body above the server's `maxBodyBytes` was already answered with 413. */
  body(): Promise<Buffer>;
}

export interface Route {
  /** `GET` routes also answer `HEAD`. */
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** An exact path (`/v1/sql`) or one with `:name` segments (`/v1/datasets/:name/commands`). */
  readonly path: string;
  /** Served without the API key (like `/health`); default false. */
  readonly public?: boolean;
  handle(context: RouteContext): void | Promise<void>;
}

/** The signals of open requests, so closing the server can end long-lived responses. */
export class OpenRequests {
  readonly #open = new Set<AbortController>();

  /** A signal aborted when `res` closes or {@link abortAll} runs. */
  track(res: ServerResponse): AbortSignal {
    const controller = new AbortController();
    this.#open.add(controller);
    res.once('close', () => {
      this.#open.delete(controller);
      controller.abort();
    });
    return controller.signal;
  }

  abortAll(): void {
    for (const controller of this.#open) controller.abort();
  }
}

export interface ExtraRoutesOptions {
  readonly runtime: Runtime;
  readonly routes: readonly Route[];
  readonly open: OpenRequests;
  /** Called with errors that became a 500. */
  readonly onServerError: (request: FastifyRequest, error: unknown) => void;
}

/** A fastify plugin serving `routes` (their own context: every body arrives as bytes). */
export async function extraRoutes(app: FastifyInstance, options: ExtraRoutesOptions): Promise<void> {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  for (const route of options.routes) {
    app.route({
      method: route.method,
      url: route.path,
      config: { public: route.public === true },
      handler: async (request, reply) => {
        reply.hijack();
        const { raw: req } = request;
        const res = reply.raw;
        const signal = options.open.track(res);
        try {
          await route.handle({
            req,
            res,
            url: new URL(req.url ?? '/', 'http://localhost'),
            params: request.params as Record<string, string>,
            runtime: options.runtime,
            signal,
            body: async () => (Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0)),
          });
        } catch (error) {
          if (sendError(res, error) === 500) options.onServerError(request, error);
        }
      },
    });
  }
}
