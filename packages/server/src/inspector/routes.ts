/**
 * The built-in inspector's routes, mounted with `startServer(runtime, { routes: inspectorRoutes(runtime) })`:
 *
 *   GET    /inspector                          the page: the overview of every dataset
 *   GET    /inspector/datasets/:name           the page: one dataset's detail view (a linkable URL)
 *   GET    /inspector/assets/:file             the page's CSS and JS modules
 *   POST   /inspector/session                  a session cookie for a key sent as a header, a renewal, or
 *                                              whether one is needed
 *   DELETE /inspector/session                  ends the session (clears the cookie)
 *   GET    /inspector/state[?dataset=name]     the overview, or one dataset's detail, as JSON
 *   GET    /inspector/events[?dataset=name]    Server-Sent Events: `overview` then `update`s, or
 *                                              `detail` then `detail-update`s
 *   POST   /inspector/datasets/:name/commands  `{ "command": "poll.now" | "polling.pause" | "polling.resume" }`
 *
 * Auth: the page and its files carry no data and are public. When the runtime's keys (the
 * spicepod's `runtime.auth.api-key` keys, plus `apiKey`) require one, every data route takes a key
 * as a header, or the session cookie `POST /inspector/session` sets for one (see `session.ts`); a
 * command with the cookie must also be sent as `application/json`, which no other site's form can
 * send. When they require none, the data routes are the server's like any other (behind its own
 * `apiKey`, if it was given one and the inspector was not: that fails closed). A key in the URL
 * (`?key=`) is not accepted anywhere: URLs are kept by logs and browser history.
 */
import type { IncomingMessage } from 'node:http';
import { apiKeyCheck, type Runtime } from '@ferry/runtime';
import { presentedKeys } from '../auth.js';
import { runCommand } from '../commands.js';
import { sendError, sendJson, sendJsonText } from '../http.js';
import type { Route, RouteContext } from '../route.js';
import { type Asset, loadAsset, PAGE_ASSETS, sendAsset, variantOf } from './assets.js';
import { InspectorAssetNotFoundError, InspectorUnauthorizedError } from './errors.js';
import { InspectorHub, type InspectorHubOptions } from './hub.js';
import { type InspectorSessionOptions, InspectorSessions } from './session.js';
import { SseStream, type SseStreamOptions, sseFrame } from './stream.js';

export interface InspectorRoutesOptions extends SseStreamOptions {
  /** The server's API key beside the spicepod's, when it has one. */
  readonly apiKey?: string;
  /** What the hub keeps per dataset and how often it sends changes (default every 500 ms). */
  readonly hub?: InspectorHubOptions;
  /** Session cookie lifetime and maximum age. */
  readonly session?: InspectorSessionOptions;
}

/** The inspector's parts a test or an embedding app may want to look at. */
export interface InspectorRoutes extends Array<Route> {
  readonly hub: InspectorHub;
}

const NO_STORE = { 'cache-control': 'no-store' };

function isJson(req: IncomingMessage): boolean {
  return /^application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? '');
}

/** The inspector page, its data, its event stream and its command route, for `startServer`'s `routes`. */
export function inspectorRoutes(runtime: Runtime, options: InspectorRoutesOptions = {}): InspectorRoutes {
  const keys = apiKeyCheck(runtime.config, [options.apiKey]);
  const sessions = new InspectorSessions(options.session);
  // The page says whether it may read at once (no key, or a session), so it opens its stream or
  // asks for the key without a request first.
  const html = loadAsset('index.html');
  const pages = {
    open: html,
    session: variantOf(html, (text) => text.replace('data-auth="open"', 'data-auth="session"')),
    required: variantOf(html, (text) => text.replace('data-auth="open"', 'data-auth="required"')),
  };
  const assets = new Map<string, Asset>(PAGE_ASSETS.map((file) => [file, loadAsset(file)]));
  const hub = new InspectorHub(runtime, options.hub);

  const headerKey = (req: IncomingMessage): boolean => keys.accepts(presentedKeys(req));
  /** True when a header presents a key, or (where allowed) the request carries a session cookie. */
  const authorized = (req: IncomingMessage, cookie: boolean): boolean =>
    headerKey(req) || (cookie && sessions.fromRequest(req) !== undefined);
  /**
   * A data route: with keys, public to the server and checked here (header or cookie); without,
   * left to the server's own check.
   */
  const data = (
    method: Route['method'],
    path: string,
    handle: (context: RouteContext) => void | Promise<void>,
    cookie: (req: IncomingMessage) => boolean = () => true,
  ): Route => {
    if (!keys.required) return { method, path, handle };
    return {
      method,
      path,
      public: true,
      handle: (context) => {
        if (!authorized(context.req, cookie(context.req))) {
          sendError(context.res, new InspectorUnauthorizedError(), { 'www-authenticate': 'Bearer' });
          return;
        }
        return handle(context);
      },
    };
  };

  const page = ({ req, res }: RouteContext): void => {
    const auth = !keys.required ? 'open' : sessions.fromRequest(req) === undefined ? 'required' : 'session';
    sendAsset(res, pages[auth], req.headers['if-none-match']);
  };

  /**
   * With a key as a header: a new session (401 for a wrong key). With only the cookie: a renewal.
   * With neither (or an expired cookie): 200 `{ authenticated: false }`, so the page can ask for the
   * key without a failed request.
   */
  const session = ({ req, res }: RouteContext): void => {
    if (!keys.required) {
      sendJson(res, 200, { required: false, authenticated: true }, NO_STORE);
      return;
    }
    const now = Date.now();
    const presented = presentedKeys(req).some((key) => key !== undefined);
    let issued: ReturnType<InspectorSessions['issue']>;
    if (presented) {
      if (!headerKey(req)) {
        sendError(res, new InspectorUnauthorizedError(), { 'www-authenticate': 'Bearer', ...NO_STORE });
        return;
      }
      issued = sessions.issue(now);
    } else {
      const current = sessions.fromRequest(req, now);
      issued = current === undefined ? undefined : sessions.issue(now, current);
    }
    if (issued === undefined) {
      sendJson(res, 200, { required: true, authenticated: false, serverTimeMs: now }, NO_STORE);
      return;
    }
    sendJson(
      res,
      200,
      {
        required: true,
        authenticated: true,
        expiresAtMs: issued.session.expiresAtMs,
        ttlMs: sessions.ttlMs,
        serverTimeMs: now,
      },
      { ...NO_STORE, 'set-cookie': sessions.setCookie(req, issued.token, issued.session, now) },
    );
  };

  const state = ({ res, url }: RouteContext): void => {
    const dataset = url.searchParams.get('dataset');
    sendJsonText(res, 200, hub.json(dataset === null ? hub.overview() : hub.detail(dataset)), NO_STORE);
  };

  const events = (context: RouteContext): Promise<void> => {
    const { req, res, url, signal } = context;
    const dataset = url.searchParams.get('dataset');
    // An unknown dataset is answered (404) before the stream starts.
    if (dataset !== null) runtime.status(dataset);
    if (req.method === 'HEAD' || signal.aborted) {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', ...NO_STORE });
      res.end();
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      let stream: SseStream;
      let unsubscribe: () => void;
      if (dataset === null) {
        const snapshot = (): string => sseFrame('overview', hub.json(hub.overview()));
        stream = new SseStream(res, options, snapshot);
        stream.sendAlways(snapshot());
        unsubscribe = hub.subscribeOverview((_update, json) => stream.send(sseFrame('update', json)));
      } else {
        const snapshot = (): string => sseFrame('detail', hub.json(hub.detail(dataset)));
        stream = new SseStream(res, options, snapshot);
        unsubscribe = hub.subscribeDetail(dataset, (_update, json) =>
          stream.send(sseFrame('detail-update', json)),
        );
        stream.sendAlways(snapshot());
      }
      const finish = (): void => {
        unsubscribe();
        stream.close();
        resolve();
      };
      if (signal.aborted) finish();
      else signal.addEventListener('abort', finish, { once: true });
    });
  };

  const command = async (context: RouteContext): Promise<void> => {
    const name = context.params.name as string;
    const accepted = await runCommand(context.runtime, name, await context.body());
    hub.touch(name);
    sendJson(context.res, 202, accepted);
  };

  const routes: Route[] = [
    { method: 'GET', path: '/inspector', public: true, handle: page },
    { method: 'GET', path: '/inspector/', public: true, handle: page },
    { method: 'GET', path: '/inspector/datasets/:name', public: true, handle: page },
    {
      method: 'GET',
      path: '/inspector/assets/:file',
      public: true,
      handle: ({ req, res, params }) => {
        const asset = assets.get(params.file as string);
        if (asset === undefined) throw new InspectorAssetNotFoundError(params.file as string);
        sendAsset(res, asset, req.headers['if-none-match']);
      },
    },
    { method: 'POST', path: '/inspector/session', public: true, handle: session },
    {
      method: 'DELETE',
      path: '/inspector/session',
      public: true,
      handle: ({ req, res }) => {
        res.writeHead(204, { ...NO_STORE, 'set-cookie': sessions.clearCookie(req) });
        res.end();
      },
    },
    data('GET', '/inspector/state', state),
    data('GET', '/inspector/events', events),
    data('POST', '/inspector/datasets/:name/commands', command, isJson),
  ];
  return Object.assign(routes, { hub });
}
