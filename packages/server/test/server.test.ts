/**
 * The HTTP API against a real runtime serving a copy of the fixture store (file:// and, in its
 * own block, S3 on a local fauxqs): rows, error statuses and messages, readiness, metrics, API
 * key and body cap, all over real HTTP.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { type LocalAws, startLocalAws } from '@ferry/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatasetView } from '../src/index.js';
import {
  fixtureDir,
  landFixtureIn,
  request,
  type Served,
  serve,
  serveFixtureFromS3,
  spicepod,
  sql,
} from './helpers.js';
import { parsePrometheus, sampleValue } from './prometheus-parser.js';

const DML_MESSAGE =
  "writes to accelerated table orders are not permitted when refresh_mode is 'snapshot'; the accelerator is driven exclusively from the snapshot store";

describe('server over a file:// fixture store', () => {
  let served: Served;
  let base: string;
  let storeDir: string;

  beforeAll(async () => {
    const store = await fixtureDir();
    storeDir = store.dir;
    served = await serve(spicepod({ location: store.location }), { maxBodyBytes: 64 * 1024 });
    base = served.server.url;
    await served.runtime.ready(undefined, { timeoutMs: 30_000 });
  });

  afterAll(async () => {
    await served?.close();
    await rm(storeDir, { recursive: true, force: true });
  });

  it('binds 127.0.0.1 and answers /health with ok', async () => {
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const answer = await request(`${base}/health`);
    expect(answer.status).toBe(200);
    // Spice's body, newline included (crates/runtime/src/http/routes.rs: `get(|| async { "ok\n" })`).
    expect(answer.text).toBe('ok\n');
  });

  it('keeps an idle keep-alive connection open as fastify does (72 s), not node:http’s 5 s', async () => {
    // A connection closed after 5 s idle met a client's next request on it: ECONNRESET.
    const agent = new Agent({ keepAlive: true });
    try {
      const header = await new Promise<unknown>((resolve, reject) => {
        get(`${base}/health`, { agent }, (response) => {
          response.resume();
          response.on('end', () => resolve(response.headers['keep-alive']));
        }).on('error', reject);
      });
      expect(header).toBe('timeout=72');
    } finally {
      agent.destroy();
    }
  });

  it('returns rows as a JSON array for text/plain SQL', async () => {
    const count = await sql(base, 'SELECT count(*) AS n FROM orders');
    expect(count.status).toBe(200);
    expect(count.headers.get('content-type')).toMatch(/^application\/json/);
    expect(count.json()).toEqual([{ n: 8 }]);
    expect(count.headers.get('x-ferry-dataset')).toBe('orders');
    expect(count.headers.get('x-ferry-snapshot-id')).toBe('1');

    const sum = await sql(base, 'SELECT sum(amount) AS total FROM orders');
    expect(sum.json()).toEqual([{ total: '350.00' }]);

    const users = await sql(base, 'SELECT count(*) AS n FROM users');
    expect(users.json()).toEqual([{ n: 3 }]);
  });

  it('accepts a JSON body with params', async () => {
    const answer = await request(`${base}/v1/sql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sql: 'SELECT id FROM orders WHERE id <= ? ORDER BY id', params: [2] }),
    });
    expect(answer.status).toBe(200);
    expect(answer.json()).toEqual([{ id: 1 }, { id: 2 }]);
  });

  it('refuses DML with 400 and the exact Spice message', async () => {
    const answer = await sql(base, 'INSERT INTO orders (id) VALUES (99)');
    expect(answer.status).toBe(400);
    expect(answer.json()).toEqual({ error: DML_MESSAGE, code: 'ERR_WRITE_REJECTED' });
    const after = await sql(base, 'SELECT count(*) AS n FROM orders');
    expect(after.json()).toEqual([{ n: 8 }]);
  });

  it('answers a typo in the first word with 400 ERR_SQL_SYNTAX, and still refuses writes in Spice’s words', async () => {
    const typo = await sql(base, 'SELEC 1');
    expect(typo.status).toBe(400);
    const body = typo.json<{ error: string; code: string }>();
    expect(body.code).toBe('ERR_SQL_SYNTAX');
    expect(body.error).toMatch(
      /^Syntax error: 'SELEC' does not begin any SQL statement \(.*syntax error.*\); did you mean SELECT\?$/,
    );
    expect(body.error).not.toContain('not permitted');
    const drop = await sql(base, 'DROP TABLE orders');
    expect(drop.json()).toMatchObject({ code: 'ERR_STATEMENT_REJECTED' });
    expect((await sql(base, 'DELETE FROM orders')).json()).toMatchObject({ code: 'ERR_WRITE_REJECTED' });
  });

  it('maps query errors to 400 and unknown tables to 404 listing the datasets', async () => {
    const unknown = await sql(base, 'SELECT * FROM customers');
    expect(unknown.status).toBe(404);
    const body = unknown.json<{ error: string; code: string }>();
    expect(body.code).toBe('ERR_UNKNOWN_DATASET');
    expect(body.error).toContain("'customers'");
    expect(body.error).toContain('orders, users');

    // DuckDB cannot parse it (AT is its keyword) and SQLite datasets exist, so SQLite is tried: it
    // names a DuckDB dataset, and DuckDB's own syntax error is the answer, the first time and after.
    for (let ask = 0; ask < 2; ask++) {
      const keyword = await sql(base, 'SELECT at FROM orders');
      expect(keyword.status).toBe(400);
      const refusal = keyword.json<{ error: string; code: string }>();
      expect(refusal.code).toBe('ERR_QUERY_FAILED');
      expect(refusal.error).toBe('Query failed: Parser Error: syntax error at or near "FROM"');
    }

    const bad = await sql(base, 'SELECT no_such_column FROM orders');
    expect(bad.status).toBe(400);
    expect(bad.json<{ code: string }>().code).toBe('ERR_QUERY_FAILED');

    const ddl = await sql(base, 'CREATE TABLE x (a INT)');
    expect(ddl.status).toBe(400);
    expect(ddl.json<{ code: string }>().code).toBe('ERR_STATEMENT_REJECTED');

    const empty = await sql(base, '   ');
    expect(empty.status).toBe(400);
    expect(empty.json<{ code: string }>().code).toBe('ERR_BAD_REQUEST');

    const badJson = await request(`${base}/v1/sql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"sql": ',
    });
    expect(badJson.status).toBe(400);
    expect(badJson.json<{ code: string }>().code).toBe('ERR_BAD_REQUEST');
  });

  it('caps the body size with 413', async () => {
    const big = `SELECT count(*) FROM orders -- ${'x'.repeat(70 * 1024)}`;
    const answer = await sql(base, big);
    expect(answer.status).toBe(413);
    expect(answer.json<{ code: string }>().code).toBe('ERR_BODY_TOO_LARGE');
    // The connection stays usable for the next request.
    expect((await sql(base, 'SELECT count(*) AS n FROM orders')).json()).toEqual([{ n: 8 }]);
  });

  it('refuses a compressed body with 415 naming the fix, not as SQL that is not UTF-8', async () => {
    const gzipped = await request(`${base}/v1/sql`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'content-encoding': 'gzip' },
      body: gzipSync('SELECT count(*) AS n FROM orders'),
    });
    expect(gzipped.status).toBe(415);
    expect(gzipped.json()).toEqual({
      code: 'ERR_UNSUPPORTED_CONTENT_ENCODING',
      error: expect.stringContaining('send the body uncompressed'),
    });
    // `identity` is no coding at all.
    const plain = await sql(base, 'SELECT count(*) AS n FROM orders', { 'content-encoding': 'identity' });
    expect(plain.json()).toEqual([{ n: 8 }]);
  });

  it('tells a client that sent the JSON body as text to send it as application/json', async () => {
    const body = JSON.stringify({ sql: 'SELECT count(*) AS n FROM orders' });
    // `curl -d '{"sql": …}'` sends it as a form; a client may label it text/plain.
    for (const type of ['application/x-www-form-urlencoded', 'text/plain']) {
      const answer = await request(`${base}/v1/sql`, {
        method: 'POST',
        headers: { 'content-type': type },
        body,
      });
      expect(answer.status).toBe(400);
      expect(answer.json()).toEqual({
        code: 'ERR_BAD_REQUEST',
        error: expect.stringContaining('Content-Type: application/json'),
      });
    }
    const json = await request(`${base}/v1/sql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(json.json()).toEqual([{ n: 8 }]);
    const empty = await request(`${base}/v1/sql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '',
    });
    expect(empty.json<{ error: string }>().error).toContain('holds no SQL');
  });

  it("names a fix a client can make when the table for people is past the runtime's row cap", async () => {
    // 8^6 = 262 144 rows, past the runtime's default maxResultRows (100 000), which the table
    // (text/plain) is held to; the other formats are streamed without it.
    const statement = 'SELECT a.id FROM orders a, orders b, orders c, orders d, orders e, orders f';
    const table = await sql(base, statement, { accept: 'text/plain' });
    expect(table.status).toBe(400);
    expect(table.json()).toEqual({
      code: 'ERR_RESULT_TOO_LARGE',
      error: expect.stringContaining('text/csv'),
    });
    const csv = await sql(base, statement, { accept: 'text/csv' });
    expect(csv.status).toBe(200);
    expect(csv.text.trimEnd().split('\n')).toHaveLength(262_145);
  });

  it('refuses SQL holding a NUL character, which the engines read as the end of the statement', async () => {
    // Both engines stopped at the NUL and ran the rest as a whole statement: these answered every
    // row (3 and 8) where the statement sent selects none.
    for (const table of ['users', 'orders']) {
      const answer = await sql(base, `SELECT count(*) AS n FROM ${table}\u0000 WHERE 1 = 0`);
      expect(answer.status).toBe(400);
      expect(answer.json()).toEqual({
        code: 'ERR_STATEMENT_REJECTED',
        error: expect.stringContaining('NUL character'),
      });
    }
  });

  it("answers a path the router cannot decode with the server's error body, not fastify's", async () => {
    const answer = await request(`${base}/v1/datasets/%ff/acceleration/snapshots`);
    expect(answer.status).toBe(400);
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(answer.json()).toEqual({
      code: 'ERR_BAD_REQUEST',
      error: expect.stringContaining('is not a valid url component'),
    });
  });

  it('lists datasets with state, snapshot and poll details', async () => {
    const answer = await request(`${base}/v1/datasets`);
    expect(answer.status).toBe(200);
    const views = answer.json<DatasetView[]>();
    expect(views.map((view) => view.name).sort()).toEqual(['orders', 'users']);
    const orders = views.find((view) => view.name === 'orders') as DatasetView;
    expect(orders).toMatchObject({ engine: 'duckdb', ready: true, snapshotId: 1, lastError: null });
    expect(['serving', 'polling', 'swapping']).toContain(orders.state);
    expect(orders.snapshotTime).toMatch(/^2026-11-29T09:00:00(\.000)?Z$/);
    expect(new Date(orders.lastPollTime as string).getTime()).toBeGreaterThan(0);
    const users = views.find((view) => view.name === 'users') as DatasetView;
    expect(users).toMatchObject({ engine: 'sqlite', snapshotId: 0 });
  });

  it('answers /v1/ready with 200 when every dataset serves', async () => {
    const answer = await request(`${base}/v1/ready`);
    expect(answer.status).toBe(200);
    expect(answer.text).toBe('ready');
  });

  it('exposes parseable Prometheus metrics', async () => {
    await sql(base, 'SELECT count(*) FROM users');
    const answer = await request(`${base}/metrics`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const families = await parsePrometheus(answer.text);
    expect(families.get('ferry_dataset_snapshot_id')?.type).toBe('gauge');
    expect(sampleValue(families, 'ferry_dataset_snapshot_id', { dataset: 'orders' })).toBe(1);
    expect(sampleValue(families, 'ferry_dataset_snapshot_id', { dataset: 'users' })).toBe(0);
    const staleness = sampleValue(families, 'ferry_dataset_snapshot_staleness_seconds', {
      dataset: 'orders',
    });
    expect(staleness).toBeCloseTo((Date.now() - Date.parse('2026-11-29T09:00:00Z')) / 1000, -2);
    expect(sampleValue(families, 'ferry_dataset_ready', { dataset: 'orders' })).toBe(1);
    expect(families.get('ferry_dataset_swaps_total')?.type).toBe('counter');
    expect(sampleValue(families, 'ferry_dataset_swaps_total', { dataset: 'orders' })).toBeGreaterThanOrEqual(
      0,
    );
    expect(families.get('ferry_dataset_polls_total')?.samples.length).toBe(14);
    expect(sampleValue(families, 'ferry_snapshot_downloaded_bytes_total')).toBeGreaterThan(0);
    expect(sampleValue(families, 'ferry_sqs_messages_total', { outcome: 'received' })).toBe(0);
    expect(families.get('ferry_query_duration_seconds')?.type).toBe('histogram');
    expect(
      sampleValue(families, 'ferry_query_duration_seconds_count', { outcome: 'ok' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sampleValue(families, 'ferry_query_duration_seconds_count', { outcome: 'error' }),
    ).toBeGreaterThanOrEqual(1);
  });

  it('sends dataset commands to the runtime', async () => {
    const command = (name: string, body: unknown) =>
      request(`${base}/v1/datasets/${name}/commands`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const pause = await command('orders', { command: 'polling.pause' });
    expect(pause.status).toBe(202);
    await expect
      .poll(
        async () =>
          (await request(`${base}/v1/datasets`)).json<DatasetView[]>().find((v) => v.name === 'orders')
            ?.paused,
      )
      .toBe(true);
    expect((await command('orders', { command: 'polling.resume' })).status).toBe(202);
    expect((await command('orders', { command: 'poll.now' })).status).toBe(202);

    const invalid = await command('orders', { command: 'explode' });
    expect(invalid.status).toBe(400);
    expect(invalid.json<{ code: string }>().code).toBe('ERR_INVALID_COMMAND');
    const unknown = await command('nope', { command: 'poll.now' });
    expect(unknown.status).toBe(404);
    expect(unknown.json<{ code: string }>().code).toBe('ERR_UNKNOWN_DATASET');
  });

  it('answers unknown routes with 404 and wrong methods with 405', async () => {
    const missing = await request(`${base}/v1/nothing`);
    expect(missing.status).toBe(404);
    expect(missing.json<{ code: string }>().code).toBe('ERR_NOT_FOUND');
    const wrong = await request(`${base}/v1/sql`);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
  });
});

describe('server with an API key', () => {
  let served: Served;
  let storeDir: string;

  beforeAll(async () => {
    const store = await fixtureDir();
    storeDir = store.dir;
    served = await serve(spicepod({ location: store.location, datasets: ['orders'] }), {
      apiKey: 's3cret-key',
      routes: [
        {
          method: 'GET',
          path: '/extra/:name',
          handle: ({ res, params }) => void res.end(`hello ${params.name}`),
        },
      ],
    });
    await served.runtime.ready('orders', { timeoutMs: 30_000 });
  });

  afterAll(async () => {
    await served?.close();
    await rm(storeDir, { recursive: true, force: true });
  });

  it('refuses requests without the right key with 401, except /health and /v1/ready', async () => {
    const base = served.server.url;
    const none = await sql(base, 'SELECT count(*) AS n FROM orders');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect(none.json<{ code: string }>().code).toBe('ERR_UNAUTHORIZED');
    const wrong = await sql(base, 'SELECT count(*) AS n FROM orders', { authorization: 'Bearer s3cret-kez' });
    expect(wrong.status).toBe(401);
    for (const path of ['/v1/datasets', '/metrics', '/extra/x']) {
      expect((await request(`${base}${path}`)).status, path).toBe(401);
    }
    expect((await request(`${base}/health`)).text).toBe('ok\n');
    // Open, as in Spice: 200 `ready`, or a 503 that names no dataset to a caller without the key.
    const ready = await request(`${base}/v1/ready`);
    expect([200, 503]).toContain(ready.status);
    expect(ready.text).toMatch(/^(ready|not ready)$/);

    const right = await sql(base, 'SELECT count(*) AS n FROM orders', { authorization: 'Bearer s3cret-key' });
    expect(right.status).toBe(200);
    expect(right.json()).toEqual([{ n: 8 }]);
    const spiceHeader = await sql(base, 'SELECT count(*) AS n FROM orders', { 'x-api-key': 's3cret-key' });
    expect(spiceHeader.status).toBe(200);
  });

  it('serves extra routes with path params', async () => {
    const answer = await request(`${served.server.url}/extra/world`, {
      headers: { authorization: 'Bearer s3cret-key' },
    });
    expect(answer.text).toBe('hello world');
  });
});

describe('readiness of a dataset that starts waiting', () => {
  it('answers /v1/ready 503 until the first snapshot is published, then 200', async () => {
    const storeDir = await mkdtemp(join(tmpdir(), 'ferry-empty-store-'));
    const location = pathToFileURL(`${storeDir}/`).href;
    const served = await serve(spicepod({ location, interval: '200ms' }));
    try {
      const base = served.server.url;
      const before = await request(`${base}/v1/ready`);
      expect(before.status).toBe(503);
      expect(before.text).toMatch(/^not ready: orders \(\w+\), users \(\w+\)$/);
      const query = await sql(base, 'SELECT count(*) FROM orders');
      expect(query.status).toBe(503);
      expect(query.json<{ code: string }>().code).toBe('ERR_DATASET_NOT_READY');

      await landFixtureIn(storeDir);
      await served.runtime.ready(undefined, { timeoutMs: 30_000 });

      const after = await request(`${base}/v1/ready`);
      expect(after.status).toBe(200);
      expect(after.text).toBe('ready');
      expect((await sql(base, 'SELECT count(*) AS n FROM orders')).json()).toEqual([{ n: 8 }]);
    } finally {
      await served.close();
      await rm(storeDir, { recursive: true, force: true });
    }
  });
});

describe('server over an S3 fixture store (fauxqs)', () => {
  let aws: LocalAws;
  let served: Served;

  beforeAll(async () => {
    aws = await startLocalAws();
    served = await serveFixtureFromS3(aws);
    await served.runtime.ready(undefined, { timeoutMs: 30_000 });
  });

  afterAll(async () => {
    await served?.close();
    await aws?.close();
  });

  it('serves both datasets', async () => {
    const base = served.server.url;
    expect((await sql(base, 'SELECT count(*) AS n FROM orders')).json()).toEqual([{ n: 8 }]);
    expect((await sql(base, 'SELECT sum(amount) AS total FROM orders')).json()).toEqual([
      { total: '350.00' },
    ]);
    expect((await sql(base, 'SELECT count(*) AS n FROM users')).json()).toEqual([{ n: 3 }]);
    expect((await request(`${base}/v1/ready`)).status).toBe(200);
  });
});
