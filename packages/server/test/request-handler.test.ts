/**
 * `createRequestHandler`: the same app mounted in a node:http server the caller owns — the API
 * answers (a request that arrives before the app is ready waits for it), extra routes get their
 * raw body and a signal, and `abortAll()` ends a long-lived response.
 */
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TLS_FIXTURE } from '@ferry/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRequestHandler, type RequestHandler, type Route } from '../src/index.js';
import { fixtureDir, request, type Served, serve, spicepod, sql } from './helpers.js';

describe('createRequestHandler in a server the caller owns', () => {
  let served: Served;
  let storeDir: string;
  let server: Server;
  let handler: RequestHandler;
  let base: string;
  let streamStarted: () => void = () => {};
  const started = new Promise<void>((resolve) => {
    streamStarted = resolve;
  });

  const routes: Route[] = [
    {
      method: 'POST',
      path: '/echo/:word',
      handle: async ({ res, params, body, req }) => {
        const bytes = await body();
        res.end(`${params.word}:${req.headers['content-type']}:${bytes.toString('utf8')}`);
      },
    },
    {
      method: 'GET',
      path: '/stream',
      handle: ({ res, signal }) =>
        new Promise<void>((resolve) => {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.write('open\n');
          streamStarted();
          signal.addEventListener('abort', () => {
            res.end('closed\n');
            resolve();
          });
        }),
    },
  ];

  beforeAll(async () => {
    const store = await fixtureDir();
    storeDir = store.dir;
    served = await serve(spicepod({ location: store.location, interval: '1h' }));
    handler = createRequestHandler(served.runtime, { routes, maxBodyBytes: 1024 });
    server = createServer(handler);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await served.runtime.ready(undefined, { timeoutMs: 30_000 });
  });

  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await served?.close();
    await rm(storeDir, { recursive: true, force: true });
  });

  it('serves the API, the status of its own address, and the body cap', async () => {
    expect((await sql(base, 'SELECT count(*) AS n FROM users')).json()).toEqual([{ n: 3 }]);
    const status = (await request(`${base}/v1/status`)).json<{ endpoint: string }[]>();
    expect(status[0]?.endpoint).toBe(base.replace('http://', ''));
    const big = await sql(base, `SELECT 1 FROM users -- ${'x'.repeat(2048)}`);
    expect(big.status).toBe(413);
    expect(big.json<{ code: string }>().code).toBe('ERR_BODY_TOO_LARGE');
  });

  it('hands extra routes the raw body whatever its content type', async () => {
    for (const type of ['application/json', 'text/plain', 'application/octet-stream']) {
      const answer = await request(`${base}/echo/hi`, {
        method: 'POST',
        headers: { 'content-type': type },
        body: '{"not": "parsed"',
      });
      expect(answer.text, type).toBe(`hi:${type}:{"not": "parsed"`);
    }
  });

  it('ends long-lived responses on abortAll()', async () => {
    const response = await fetch(`${base}/stream`);
    await started;
    handler.abortAll();
    expect(await response.text()).toBe('open\nclosed\n');
  });
});

describe('a spicepod with runtime.tls', () => {
  let served: Served;
  let storeDir: string;

  beforeAll(async () => {
    const store = await fixtureDir();
    storeDir = store.dir;
    const tls = `runtime:\n  tls:\n    enabled: true\n    certificate_file: ${TLS_FIXTURE.cert}\n    key_file: ${TLS_FIXTURE.key}\n`;
    served = await serve(`${spicepod({ location: store.location, interval: '1h' })}${tls}`);
  });

  afterAll(async () => {
    await served?.close();
    await rm(storeDir, { recursive: true, force: true });
  });

  it('is served over HTTPS by startServer with no tls option, never plaintext', async () => {
    expect(served.runtime.tls?.cert.toString()).toContain('BEGIN CERTIFICATE');
    expect(served.server.url).toMatch(/^https:\/\//);
    await expect(fetch(`${served.server.url.replace('https:', 'http:')}/health`)).rejects.toThrow();
  });

  it('is not mounted by createRequestHandler unless the caller says its server has TLS', () => {
    expect(() => createRequestHandler(served.runtime)).toThrow(
      'The spicepod sets runtime.tls, so its API must not be served in plaintext, and createRequestHandler cannot add TLS to a server it does not own; mount the handler in an https server (or behind one) and pass { externalTls: true }, or serve it with startServer().',
    );
    expect(typeof createRequestHandler(served.runtime, { externalTls: true })).toBe('function');
  });
});
