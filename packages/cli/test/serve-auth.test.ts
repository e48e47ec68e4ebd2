/**
 * `ferry serve` on a spicepod protected the way Spice documents it (`runtime.auth.api-key`): every
 * endpoint but `/health` and `/v1/ready` needs one of its keys, over HTTP (Spice's `X-API-Key` or
 * `Authorization: Bearer`) and Flight (bearer, the Basic-auth handshake), with several keys for
 * rotation, a `${secrets:NAME}` key from the environment, and `--api-key-env` beside them. Both
 * endpoints serve TLS (Spice's SDKs send a key only over TLS). Clients: node's https and Spice's JS
 * SDK (Flight); no key value ever reaches the logs.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { copyFixtureStore, spicepodYaml, TLS_FIXTURE } from '@ferry/test-support';
import { SpiceClient } from '@spiceai/spice';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpsAnswer, httpsFetch, type Running, startFerry } from './helpers.js';

const SECRET_KEY = 'k3y-from-a-secret';
const LITERAL_KEY = 'rotated-in-k3y';
const ENV_KEY = 'k3y-from-api-key-env';

describe('ferry serve with runtime.auth.api-key in the spicepod', () => {
  let dir: string;
  let serve: Running;
  let base: string;
  let flight: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ferry-serve-auth-'));
    const { location } = await copyFixtureStore({ kind: 'dir', dir: join(dir, 'store') });
    const pod = `${spicepodYaml({
      name: 'auth-test',
      location,
      datasets: [
        { name: 'orders', engine: 'duckdb' },
        { name: 'users', engine: 'sqlite' },
      ],
    })}runtime:
  auth:
    api-key:
      enabled: true
      keys:
        - \${ secrets:FERRY_TEST_SECRET_KEY }
        - ${LITERAL_KEY}:rw
`;
    await writeFile(join(dir, 'spicepod.yaml'), pod);
    serve = startFerry(
      [
        'serve',
        join(dir, 'spicepod.yaml'),
        '--http',
        '127.0.0.1:0',
        '--flight',
        '127.0.0.1:0',
        '--api-key-env',
        'FERRY_TEST_ENV_KEY',
        '--tls-cert',
        TLS_FIXTURE.cert,
        '--tls-key',
        TLS_FIXTURE.key,
        '--data-dir',
        join(dir, 'data'),
      ],
      { env: { FERRY_TEST_SECRET_KEY: SECRET_KEY, FERRY_TEST_ENV_KEY: ENV_KEY } },
    );
    flight = (await serve.waitForStdout(/^Flight on grpc\+tls:\/\/(127\.0\.0\.1:\d+)$/m))[1] as string;
    base = (await serve.waitForStdout(/^Listening on (https:\/\/\S+)$/m))[1] as string;
  });

  afterAll(async () => {
    if (serve !== undefined && serve.child.exitCode === null) serve.child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  const get = (path: string, headers: Record<string, string> = {}): Promise<HttpsAnswer> =>
    httpsFetch(`${base}${path}`, { headers });
  const sql = (headers: Record<string, string>): Promise<HttpsAnswer> =>
    httpsFetch(`${base}/v1/sql`, { method: 'POST', headers, body: 'SELECT count(*) AS n FROM orders' });

  it('refuses POST /v1/sql without a key or with a wrong one (401), as Spice does', async () => {
    const none = await sql({});
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Bearer');
    expect((await sql({ 'x-api-key': 'not-a-key' })).status).toBe(401);
    expect((await sql({ authorization: 'Bearer not-a-key' })).status).toBe(401);
    // The ':rw' suffix is Spice's access marker, not part of the key.
    expect((await sql({ 'x-api-key': `${LITERAL_KEY}:rw` })).status).toBe(401);
  });

  it('answers with any configured key, as X-API-Key or a bearer token, and with --api-key-env', async () => {
    // Readiness needs no key, as in Spice.
    await expect
      .poll(async () => (await get('/v1/ready')).status, { timeout: 30_000, interval: 200 })
      .toBe(200);
    for (const headers of [
      { 'x-api-key': SECRET_KEY },
      { authorization: `Bearer ${LITERAL_KEY}` },
      { 'x-api-key': LITERAL_KEY },
      { authorization: `Bearer ${ENV_KEY}` },
    ]) {
      const response = await sql(headers);
      expect(response.status).toBe(200);
      expect(JSON.parse(await response.text())).toEqual([{ n: 8 }]);
    }
  });

  it('keeps /health and /v1/ready open (naming no dataset without a key) and everything else closed', async () => {
    expect((await get('/health')).status).toBe(200);
    const ready = await get('/v1/ready');
    expect(ready.status).toBe(200);
    expect(await ready.text()).toBe('ready');
    for (const path of ['/metrics', '/v1/datasets', '/v1/status', '/inspector/state', '/inspector/events']) {
      const refused = await get(path);
      expect(refused.status, path).toBe(401);
      const answered = await get(path, { 'x-api-key': SECRET_KEY });
      expect(answered.status, path).toBe(200);
      answered.close();
    }
    // The inspector's page carries no data. Its event stream takes no key in the URL: the page
    // sends the key once as a header for a session cookie (Secure, over TLS), which the stream takes.
    expect((await get('/inspector')).status).toBe(200);
    expect((await get('/inspector/assets/inspector.css')).status).toBe(200);
    const inUrl = await get(`/inspector/events?key=${encodeURIComponent(LITERAL_KEY)}`);
    expect(inUrl.status).toBe(401);
    inUrl.close();
    const session = await httpsFetch(`${base}/inspector/session`, {
      method: 'POST',
      headers: { authorization: `Bearer ${LITERAL_KEY}` },
    });
    expect(session.status).toBe(200);
    const setCookie = String(session.headers['set-cookie'] ?? '');
    expect(setCookie).toMatch(/; Path=\/inspector; Max-Age=600; HttpOnly; SameSite=Strict; Secure$/);
    const stream = await get('/inspector/events', { cookie: setCookie.split(';')[0] ?? '' });
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    stream.close();
    const refresh = await httpsFetch(`${base}/v1/datasets/orders/acceleration/refresh`, { method: 'POST' });
    expect(refresh.status).toBe(401);
  });

  it("serves Spice's JS SDK over Flight with any key, and refuses it without one", async () => {
    const client = (apiKey?: string): SpiceClient => {
      const created = new SpiceClient({
        flightUrl: flight,
        flightOnly: true,
        flightTlsEnabled: true,
        tlsRootCertFile: TLS_FIXTURE.cert,
        httpUrl: 'http://127.0.0.1:9',
        ...(apiKey === undefined ? {} : { apiKey }),
        logging: false,
      });
      // A refusal is an answer here, not something to retry with backoff.
      created.setMaxRetries(0);
      return created;
    };
    const table = await client(SECRET_KEY).sql('SELECT count(*) AS n FROM users');
    expect(Number(table.toArray()[0]?.n)).toBe(3);
    const rotated = await client(ENV_KEY).sql('SELECT count(*) AS n FROM orders');
    expect(Number(rotated.toArray()[0]?.n)).toBe(8);
    await expect(client().sql('SELECT 1 AS n')).rejects.toThrow();
    await expect(client('not-a-key').sql('SELECT 1 AS n')).rejects.toThrow();
    const third = await client(LITERAL_KEY).sql('SELECT count(*) AS n FROM orders');
    expect(Number(third.toArray()[0]?.n)).toBe(8);
  });

  it('logs that three keys protect the server, and never a key', async () => {
    serve.child.kill('SIGTERM');
    const finished = await serve.exited;
    expect(finished.code).toBe(0);
    const serving = finished.stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((record) => typeof record.msg === 'string' && record.msg.startsWith('Serving '));
    expect(serving).toMatchObject({ auth: true, apiKeys: 3 });
    for (const key of [SECRET_KEY, LITERAL_KEY, ENV_KEY]) expect(finished.stderr).not.toContain(key);
  });
});
