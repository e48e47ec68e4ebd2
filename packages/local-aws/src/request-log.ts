/**
 * A counting HTTP proxy in front of the local AWS server. fauxqs does not expose its HTTP server or
 * a per-request hook (its message spy records S3 GETs, HEADs and 304s alike as "downloaded"), so
 * tests that must prove "exactly one GET of metadata.json" or "a conditional GET sent no body" point
 * their clients at this proxy and read its log. Each request is logged before its response ends, so a
 * client that has its answer always finds the request already in the log.
 */
import { Agent, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  readonly method: string;
  /** The decoded path-style target: `bucket/key` for objects, `bucket` for buckets, `` for the root. */
  readonly target: string;
  /** The raw query string, without `?`. */
  readonly query: string;
  /** The `x-amz-target` header of JSON-protocol calls (`AmazonSQS.ReceiveMessage`), when present. */
  readonly operation?: string;
  /** Request headers, lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly status: number;
  /** Bytes of response body sent back to the client (0 for HEAD, 304 and 204). */
  readonly responseBytes: number;
}

export interface RequestFilter {
  readonly method?: string;
  readonly target?: string;
  readonly status?: number;
  readonly operation?: string;
}

export interface RequestLog {
  /** Requests whose response has ended, oldest first, optionally filtered. */
  list(filter?: RequestFilter): readonly RecordedRequest[];
  /** How many logged requests have this method and target (`GET`, `bucket/prefix/metadata.json`). */
  count(method: string, target: string): number;
  /** Sum of response body bytes of the matching requests. */
  responseBytes(filter?: RequestFilter): number;
  clear(): void;
}

export interface CountingProxy {
  readonly endpoint: string;
  readonly log: RequestLog;
  close(): Promise<void>;
}

function targetOf(url: string): { target: string; query: string } {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const query = q === -1 ? '' : url.slice(q + 1);
  let target = path.replace(/^\/+/, '');
  try {
    target = decodeURIComponent(target);
  } catch {
    // A malformed escape is logged as sent.
  }
  // Bucket-level calls (`/bucket/?list-type=2`) are logged as `bucket`.
  return { target: /^[^/]+\/$/.test(target) ? target.slice(0, -1) : target, query };
}

function matches(entry: RecordedRequest, filter: RequestFilter): boolean {
  return (
    (filter.method === undefined || entry.method === filter.method.toUpperCase()) &&
    (filter.target === undefined || entry.target === filter.target) &&
    (filter.status === undefined || entry.status === filter.status) &&
    (filter.operation === undefined || entry.operation === filter.operation)
  );
}

function flatHeaders(headers: NodeJS.Dict<string | string[]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** Start a proxy on a free loopback port that forwards every request to `upstreamPort` and logs it. */
export async function startCountingProxy(upstreamPort: number): Promise<CountingProxy> {
  const entries: RecordedRequest[] = [];
  const agent = new Agent({ keepAlive: true });
  const server = createServer((req, res) => {
    const { target, query } = targetOf(req.url ?? '/');
    const method = (req.method ?? 'GET').toUpperCase();
    const headers = flatHeaders(req.headers);
    const upstream = httpRequest(
      { host: '127.0.0.1', port: upstreamPort, method, path: req.url, headers: req.headers, agent },
      (up) => {
        let bytes = 0;
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (!res.write(chunk)) {
            up.pause();
            res.once('drain', () => up.resume());
          }
        });
        up.on('end', () => {
          const operation = headers['x-amz-target'];
          entries.push({
            method,
            target,
            query,
            headers,
            status: up.statusCode ?? 502,
            responseBytes: bytes,
            ...(operation === undefined ? {} : { operation }),
          });
          res.end();
        });
        up.on('error', () => res.destroy());
      },
    );
    upstream.on('error', (error) => {
      if (res.headersSent) res.destroy(error);
      else res.writeHead(502, { 'content-type': 'text/plain' }).end(`proxy: ${error.message}`);
    });
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;

  const log: RequestLog = {
    list: (filter = {}) => entries.filter((entry) => matches(entry, filter)),
    count: (method, target) => entries.filter((entry) => matches(entry, { method, target })).length,
    responseBytes: (filter = {}) =>
      entries.filter((entry) => matches(entry, filter)).reduce((sum, entry) => sum + entry.responseBytes, 0),
    clear: () => {
      entries.length = 0;
    },
  };

  return {
    endpoint: `http://127.0.0.1:${port}`,
    log,
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        agent.destroy();
      });
      return closed;
    },
  };
}
