/**
 * Routing: a route is a method, a path (exact, or with `:name` segments) and a handler. The
 * built-in API is a list of routes like any other, and `startServer(runtime, { routes })` adds
 * more (the inspector page and its event stream are mounted this way). Handlers get the runtime,
 * the parsed URL, the path params, a capped body reader and an AbortSignal that fires when the
 * client goes away or the server closes (long-lived responses such as SSE end on it).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Runtime } from '@ferry/runtime';

export interface RouteContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  /** Values of the route's `:name` segments, URL-decoded. */
  readonly params: Readonly<Record<string, string>>;
  readonly runtime: Runtime;
  /** Aborted when the client disconnects or the server is closing. */
  readonly signal: AbortSignal;
  /** The request body; rejects with `ERR_BODY_TOO_LARGE` above the server's `maxBodyBytes`. */
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

export type RouteMatch =
  | { readonly kind: 'found'; readonly route: Route; readonly params: Record<string, string> }
  | { readonly kind: 'method'; readonly allowed: readonly string[] }
  | { readonly kind: 'none' };

function matchPath(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split('/');
  const got = path.split('/');
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const segment = want[i] as string;
    const value = got[i] as string;
    if (segment.startsWith(':')) {
      if (value === '') return undefined;
      try {
        params[segment.slice(1)] = decodeURIComponent(value);
      } catch {
        return undefined;
      }
    } else if (segment !== value) {
      return undefined;
    }
  }
  return params;
}

/** The first route matching method and path; earlier routes win. */
export function matchRoute(routes: readonly Route[], method: string, path: string): RouteMatch {
  const allowed = new Set<string>();
  for (const route of routes) {
    const params = matchPath(route.path, path);
    if (params === undefined) continue;
    if (route.method === method || (method === 'HEAD' && route.method === 'GET')) {
      return { kind: 'found', route, params };
    }
    allowed.add(route.method);
  }
  return allowed.size === 0 ? { kind: 'none' } : { kind: 'method', allowed: [...allowed] };
}
