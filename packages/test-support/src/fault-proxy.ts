/**
 * A fault-injecting HTTP proxy on real sockets, for reliability tests. Clients under test point their
 * S3 (or SQS) endpoint at it; it forwards every request to the real local server unless a rule picks
 * it, and then answers with an S3 error (500, 503, SlowDown), holds it (client timeouts), cuts the
 * connection partway through the body (RST), ends the body early (FIN), or replaces the body. Unlike
 * SDK middleware ({@link injectS3Fault}) the faults happen on the wire, so the client's HTTP stack,
 * retries and stream handling see exactly what a flaky network or server would give them. Some
 * faults drop conditional headers before forwarding, which a server checking request signatures
 * would refuse: it is meant for the local test server (fauxqs), which does not check them.
 */
import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** What a rule does to the requests it picks. */
export type FaultAction =
  /** Answer at once with this status and an S3 XML error body (`<Error><Code>…`); nothing is forwarded. */
  | { readonly kind: 'error'; readonly status: number; readonly code: string; readonly message?: string }
  /** Wait `ms`, then forward; a client whose timeout is shorter gives up first. */
  | { readonly kind: 'delay'; readonly ms: number }
  /** Never answer (the connection stays open until the client gives up or the proxy closes). */
  | { readonly kind: 'hang' }
  /** Reset the connection at once, before any answer: the server is unreachable. */
  | { readonly kind: 'drop' }
  /**
   * Forward without conditional headers (so there is a body to cut), send the status line, headers
   * and the first `afterBytes` body bytes, then reset the connection (RST).
   */
  | { readonly kind: 'reset'; readonly afterBytes?: number }
  /** As `reset`, but send `bytes` body bytes under the original Content-Length, then close (FIN). */
  | { readonly kind: 'truncate'; readonly bytes: number }
  /**
   * Forward without conditional headers (so the server answers in full), then send `body` instead,
   * with Content-Length fixed, a fresh ETag when the server sent one, and `status` / `headers` applied
   * last (so `headers` may even claim another Content-Length, as a HEAD answer).
   */
  | {
      readonly kind: 'replace';
      readonly body: string | Uint8Array | ((original: Uint8Array) => string | Uint8Array);
      readonly status?: number;
      readonly headers?: Readonly<Record<string, string>>;
    }
  /** Forward unchanged (with `onMatch`: act while the request is held, then let it through). */
  | { readonly kind: 'pass' };

/** A request as rules see it. */
export interface FaultRequest {
  readonly method: string;
  /** The decoded path-style target: `bucket/key` for objects, `bucket` for buckets, `` for the root. */
  readonly target: string;
  /** The raw query string, without `?`. */
  readonly query: string;
  /** `x-amz-target` of JSON-protocol calls (`AmazonSQS.ReceiveMessage`), when present. */
  readonly operation?: string;
  readonly headers: Readonly<Record<string, string>>;
}

export interface FaultRule {
  /** Names the rule in {@link FaultProxy.hits}; default `rule<n>`. */
  readonly name?: string;
  /** HTTP method, any case. Default: any. */
  readonly method?: string;
  /** The whole target (`bucket/prefix/metadata.json`) or a pattern tested against it. Default: any. */
  readonly target?: string | RegExp;
  /** `x-amz-target` to match (SQS: `AmazonSQS.ReceiveMessage`). */
  readonly operation?: string;
  /** Act on the first `times` matching requests only, then let them through. Default: every one. */
  readonly times?: number;
  readonly fault: FaultAction;
  /** Awaited before the fault is applied: a test can change the world while the request is held. */
  readonly onMatch?: (request: FaultRequest) => void | Promise<void>;
}

export interface FaultRecord extends FaultRequest {
  /** The rule that acted on the request, if any. */
  readonly rule?: string;
}

export interface FaultProxy {
  readonly endpoint: string;
  /** Replace every rule. */
  setRules(rules: readonly FaultRule[]): void;
  /** Add a rule (checked after the existing ones); returns a function that removes it. */
  addRule(rule: FaultRule): () => void;
  /** Remove every rule: all requests pass again. */
  clear(): void;
  /** How many requests the named rule acted on (all rules when no name is given). */
  hits(name?: string): number;
  /** Every request received, oldest first (faulted ones carry `rule`). */
  requests(filter?: { readonly method?: string; readonly target?: string | RegExp }): readonly FaultRecord[];
  /** Resolves when a request matching `filter` arrives (or has already arrived, with `since`). */
  waitForRequest(
    filter: { readonly method?: string; readonly target?: string | RegExp; readonly rule?: string },
    options?: { readonly since?: number; readonly timeoutMs?: number },
  ): Promise<FaultRecord>;
  close(): Promise<void>;
}

/** 500 InternalError, as S3 sends it. */
export const internalError: FaultAction = {
  kind: 'error',
  status: 500,
  code: 'InternalError',
  message: 'We encountered an internal error. Please try again.',
};

/** 503 ServiceUnavailable. */
export const serviceUnavailable: FaultAction = {
  kind: 'error',
  status: 503,
  code: 'ServiceUnavailable',
  message: 'Service is unable to handle request.',
};

/** 503 SlowDown: S3's throttling answer. */
export const slowDown: FaultAction = {
  kind: 'error',
  status: 503,
  code: 'SlowDown',
  message: 'Please reduce your request rate.',
};

function escapeXml(s: string): string {
  return s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

function s3ErrorBody(code: string, message: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${escapeXml(code)}</Code><Message>${escapeXml(message)}</Message><RequestId>FAULTPROXY</RequestId><HostId>ferry-fault-proxy</HostId></Error>`;
}

function describeRequest(req: IncomingMessage): FaultRequest {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  let target = path.replace(/^\/+/, '');
  try {
    target = decodeURIComponent(target);
  } catch {
    // A malformed escape is matched as sent.
  }
  if (/^[^/]+\/$/.test(target)) target = target.slice(0, -1);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  const operation = headers['x-amz-target'];
  return {
    method: (req.method ?? 'GET').toUpperCase(),
    target,
    query: q === -1 ? '' : url.slice(q + 1),
    ...(operation === undefined ? {} : { operation }),
    headers,
  };
}

function targetMatches(pattern: string | RegExp | undefined, target: string): boolean {
  if (pattern === undefined) return true;
  return typeof pattern === 'string' ? pattern === target : pattern.test(target);
}

function upstreamOf(target: string | number): { host: string; port: number } {
  if (typeof target === 'number') return { host: '127.0.0.1', port: target };
  const url = new URL(target);
  return { host: url.hostname, port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)) };
}

/** Start the proxy on a free loopback port in front of `target` (`http://127.0.0.1:PORT` or a port). */
export async function startFaultProxy(
  target: string | number,
  initialRules: readonly FaultRule[] = [],
): Promise<FaultProxy> {
  const upstream = upstreamOf(target);
  const agent = new Agent({ keepAlive: true });
  interface ActiveRule {
    readonly rule: FaultRule;
    readonly name: string;
    used: number;
  }
  let ruleCounter = 0;
  let rules: ActiveRule[] = [];
  const hitCounts = new Map<string, number>();
  const records: FaultRecord[] = [];
  const waiters = new Set<() => void>();
  const sockets = new Set<Socket>();

  const activate = (rule: FaultRule): ActiveRule => ({
    rule,
    name: rule.name ?? `rule${++ruleCounter}`,
    used: 0,
  });
  rules = initialRules.map(activate);

  function pick(request: FaultRequest): ActiveRule | undefined {
    return rules.find(
      ({ rule, used }) =>
        (rule.method === undefined || rule.method.toUpperCase() === request.method) &&
        (rule.operation === undefined || rule.operation === request.operation) &&
        targetMatches(rule.target, request.target) &&
        used < (rule.times ?? Number.POSITIVE_INFINITY),
    );
  }

  function forward(
    req: IncomingMessage,
    res: ServerResponse,
    options: { readonly unconditional?: boolean },
    onResponse: (up: IncomingMessage) => void,
  ): void {
    const headers = { ...req.headers };
    if (options.unconditional === true) {
      delete headers['if-none-match'];
      delete headers['if-modified-since'];
    }
    const outgoing = httpRequest(
      { host: upstream.host, port: upstream.port, method: req.method, path: req.url, headers, agent },
      onResponse,
    );
    outgoing.on('error', (error) => {
      if (res.headersSent) res.destroy(error);
      else res.writeHead(502, { 'content-type': 'text/plain' }).end(`fault proxy: ${error.message}`);
    });
    res.on('close', () => {
      if (!res.writableFinished) outgoing.destroy();
    });
    req.pipe(outgoing);
  }

  function pipeThrough(req: IncomingMessage, res: ServerResponse, unconditional = false): void {
    forward(req, res, { unconditional }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
      up.on('error', () => res.destroy());
    });
  }

  /** Forward, then send headers and at most `limit` body bytes before cutting the socket. */
  function cutShort(req: IncomingMessage, res: ServerResponse, limit: number, how: 'reset' | 'fin'): void {
    forward(req, res, { unconditional: true }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      // Headers go out with the first body write; flush them now in case the cut comes first.
      res.flushHeaders();
      let sent = 0;
      let cut = false;
      const finish = (): void => {
        if (cut) return;
        cut = true;
        up.destroy();
        const socket = res.socket;
        if (socket === null) return;
        if (how === 'reset') {
          // Let what was written reach the client, then reset the connection.
          setImmediate(() => socket.resetAndDestroy());
        } else {
          socket.end();
        }
      };
      up.on('data', (chunk: Buffer) => {
        if (cut) return;
        const take = Math.min(chunk.length, limit - sent);
        if (take > 0) {
          sent += take;
          res.write(chunk.subarray(0, take));
        }
        if (sent >= limit) finish();
      });
      up.on('end', finish);
      up.on('error', finish);
      if (limit === 0) finish();
    });
  }

  function replaceBody(
    req: IncomingMessage,
    res: ServerResponse,
    action: Extract<FaultAction, { kind: 'replace' }>,
    serial: number,
  ): void {
    forward(req, res, { unconditional: true }, (up) => {
      const chunks: Buffer[] = [];
      up.on('data', (chunk: Buffer) => chunks.push(chunk));
      up.on('error', () => res.destroy());
      up.on('end', () => {
        const original = new Uint8Array(Buffer.concat(chunks));
        const produced = typeof action.body === 'function' ? action.body(original) : action.body;
        const body = typeof produced === 'string' ? Buffer.from(produced) : Buffer.from(produced);
        const headers: Record<string, string | string[]> = {};
        for (const [name, value] of Object.entries(up.headers)) {
          if (value !== undefined && name !== 'transfer-encoding') headers[name] = value;
        }
        // A new body is a new object version: never let a client confuse it with the real one.
        if (headers.etag !== undefined) headers.etag = `"fault-proxy-${serial}"`;
        delete headers['content-md5'];
        for (const name of Object.keys(headers)) {
          if (name.startsWith('x-amz-checksum-')) delete headers[name];
        }
        headers['content-length'] = String(body.byteLength);
        // Given headers win, Content-Length included (a HEAD can claim any size).
        Object.assign(headers, action.headers ?? {});
        res.writeHead(action.status ?? up.statusCode ?? 200, headers);
        res.end(body);
      });
    });
  }

  let replacements = 0;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const request = describeRequest(req);
    const active = pick(request);
    if (active !== undefined) {
      active.used++;
      hitCounts.set(active.name, (hitCounts.get(active.name) ?? 0) + 1);
    }
    records.push(active === undefined ? request : { ...request, rule: active.name });
    for (const waiter of [...waiters]) waiter();
    if (active === undefined) {
      pipeThrough(req, res);
      return;
    }
    // Hold the request body until the rule decides; `pause` keeps it from being read early.
    req.pause();
    await active.rule.onMatch?.(request);
    const fault = active.rule.fault;
    switch (fault.kind) {
      case 'pass':
        pipeThrough(req, res);
        return;
      case 'error': {
        req.resume();
        const body = s3ErrorBody(fault.code, fault.message ?? `Injected ${fault.code}`);
        res.writeHead(fault.status, {
          'content-type': 'application/xml',
          'content-length': String(Buffer.byteLength(body)),
          'x-amz-request-id': 'FAULTPROXY',
        });
        res.end(body);
        return;
      }
      case 'delay': {
        const timer = setTimeout(() => pipeThrough(req, res), fault.ms);
        res.on('close', () => clearTimeout(timer));
        return;
      }
      case 'hang':
        req.resume();
        return;
      case 'drop':
        req.socket.resetAndDestroy();
        return;
      case 'reset':
        cutShort(req, res, fault.afterBytes ?? 0, 'reset');
        return;
      case 'truncate':
        cutShort(req, res, fault.bytes, 'fin');
        return;
      case 'replace':
        replaceBody(req, res, fault, ++replacements);
        return;
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) res.destroy();
      else res.writeHead(500, { 'content-type': 'text/plain' }).end(`fault proxy: ${String(error)}`);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;

  const matchesFilter = (
    record: FaultRecord,
    filter: { readonly method?: string; readonly target?: string | RegExp; readonly rule?: string },
  ): boolean =>
    (filter.method === undefined || filter.method.toUpperCase() === record.method) &&
    targetMatches(filter.target, record.target) &&
    (filter.rule === undefined || filter.rule === record.rule);

  return {
    endpoint: `http://127.0.0.1:${port}`,
    setRules(next) {
      rules = next.map(activate);
    },
    addRule(rule) {
      const active = activate(rule);
      rules.push(active);
      return () => {
        rules = rules.filter((r) => r !== active);
      };
    },
    clear() {
      rules = [];
    },
    hits(name) {
      if (name !== undefined) return hitCounts.get(name) ?? 0;
      let total = 0;
      for (const count of hitCounts.values()) total += count;
      return total;
    },
    requests(filter = {}) {
      return records.filter((record) => matchesFilter(record, filter));
    },
    waitForRequest(filter, options = {}) {
      const since = options.since ?? records.length;
      const timeoutMs = options.timeoutMs ?? 30_000;
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const found = records.slice(since).find((record) => matchesFilter(record, filter));
          if (found === undefined) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(found);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`fault proxy: no matching request within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
        agent.destroy();
      });
      return closing;
    },
  };
}
