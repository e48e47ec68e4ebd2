/**
 * The built-in inspector's routes, mounted with `startServer(runtime, { routes: inspectorRoutes(runtime) })`:
 *
 *   GET  /inspector                           the page (HTML; its CSS and JS under /inspector/assets/)
 *   GET  /inspector/state                     the snapshot a page starts from (JSON)
 *   GET  /inspector/events                    Server-Sent Events: `snapshot`, then `inspection` / `dataset`
 *   POST /inspector/datasets/:name/commands   `{ "command": "poll.now" | "polling.pause" | "polling.resume" }`
 *
 * Auth: the page's static files carry no data and are public, so a browser can load them from a
 * server with an API key. Every data route needs one of the runtime's keys (the spicepod's
 * `runtime.auth.api-key` keys, plus `apiKey`) as a header (the page's `fetch` sends
 * `Authorization: Bearer`). `EventSource` cannot send headers, so when a key is required the event
 * stream also accepts it as `?key=<key>`.
 */
import { apiKeyCheck, type Runtime } from '@ferry/runtime';
import { presentedKeys } from '../auth.js';
import { runCommand } from '../commands.js';
import { UnauthorizedError } from '../errors.js';
import { sendError, sendJson } from '../http.js';
import type { Route, RouteContext } from '../route.js';
import { loadAsset, sendAsset } from './assets.js';
import { type HubMessage, InspectorHub, type InspectorHubOptions } from './hub.js';

export interface InspectorRoutesOptions {
  /** The server's API key beside the spicepod's, when it has one: the event stream accepts it as `?key=`. */
  readonly apiKey?: string;
  /** How many recent events per dataset a connecting page gets, and the payload size cap. */
  readonly hub?: InspectorHubOptions;
  /** Interval of the stream's keep-alive comments; default 15 000 ms. */
  readonly heartbeatMs?: number;
  /** A page that falls this many bytes behind is disconnected (it reconnects and resyncs); default 1 MiB. */
  readonly maxBufferedBytes?: number;
  /** The stream's `retry:` hint to `EventSource`, in ms; default 1 000. */
  readonly reconnectMs?: number;
}

/** Checks a request's header key, or its `?key=` query parameter, against the runtime's keys. */
function streamKeyChecker(runtime: Runtime, apiKey: string | undefined): (context: RouteContext) => boolean {
  const keys = apiKeyCheck(runtime.config, [apiKey]);
  return ({ req, url }) => keys.accepts([...presentedKeys(req), url.searchParams.get('key') ?? undefined]);
}

function sseFrame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

function streamEvents(
  context: RouteContext,
  hub: InspectorHub,
  options: InspectorRoutesOptions,
): Promise<void> {
  const { req, res, signal } = context;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
    // One stream per connection: ending it closes the socket, so server.close() is not held up.
    connection: 'close',
  });
  if (req.method === 'HEAD' || signal.aborted) {
    res.end();
    return Promise.resolve();
  }
  const maxBuffered = options.maxBufferedBytes ?? 1024 * 1024;
  return new Promise<void>((resolve) => {
    const write = (chunk: string): void => {
      if (res.destroyed) return;
      res.write(chunk);
      if (res.writableLength > maxBuffered) res.destroy();
    };
    write(`retry: ${options.reconnectMs ?? 1_000}\n\n`);
    write(sseFrame('snapshot', hub.snapshot()));
    const unsubscribe = hub.subscribe((message: HubMessage) => {
      if (message.kind === 'inspection') write(sseFrame('inspection', message.event));
      else write(sseFrame('dataset', message.dataset));
    });
    const heartbeat = setInterval(() => write(': keep-alive\n\n'), options.heartbeatMs ?? 15_000);
    heartbeat.unref();
    const finish = (): void => {
      unsubscribe();
      clearInterval(heartbeat);
      if (!res.destroyed) res.end();
      resolve();
    };
    if (signal.aborted) finish();
    else signal.addEventListener('abort', finish, { once: true });
  });
}

async function postCommand(context: RouteContext): Promise<void> {
  const name = context.params.name as string;
  sendJson(context.res, 202, await runCommand(context.runtime, name, await context.body()));
}

/** The inspector page, its event stream and its command route, for `startServer`'s `routes`. */
export function inspectorRoutes(runtime: Runtime, options: InspectorRoutesOptions = {}): Route[] {
  const keyRequired = apiKeyCheck(runtime.config, [options.apiKey]).required;
  const html = loadAsset('index.html');
  const css = loadAsset('inspector.css');
  const js = loadAsset('inspector.js');
  const hub = new InspectorHub(runtime, options.hub);
  const streamAuthorized = keyRequired ? streamKeyChecker(runtime, options.apiKey) : undefined;
  const page = ({ req, res }: RouteContext): void => sendAsset(res, html, req.headers['if-none-match']);

  return [
    { method: 'GET', path: '/inspector', public: true, handle: page },
    { method: 'GET', path: '/inspector/', public: true, handle: page },
    {
      method: 'GET',
      path: '/inspector/assets/inspector.css',
      public: true,
      handle: ({ req, res }) => sendAsset(res, css, req.headers['if-none-match']),
    },
    {
      method: 'GET',
      path: '/inspector/assets/inspector.js',
      public: true,
      handle: ({ req, res }) => sendAsset(res, js, req.headers['if-none-match']),
    },
    {
      method: 'GET',
      path: '/inspector/state',
      handle: ({ res }) => sendJson(res, 200, hub.snapshot(), { 'cache-control': 'no-store' }),
    },
    {
      method: 'GET',
      path: '/inspector/events',
      public: streamAuthorized !== undefined,
      handle: (context) => {
        if (streamAuthorized !== undefined && !streamAuthorized(context)) {
          sendError(context.res, new UnauthorizedError(), { 'www-authenticate': 'Bearer' });
          return;
        }
        return streamEvents(context, hub, options);
      },
    },
    { method: 'POST', path: '/inspector/datasets/:name/commands', handle: postCommand },
  ];
}
