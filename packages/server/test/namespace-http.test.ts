/**
 * One SQL namespace over HTTP, against a runtime serving a copy of the fixture store (`orders` in
 * DuckDB, `users` in SQLite): a join across the two and a query reading no dataset as JSON (with
 * the datasets read in the headers), the same as an Arrow IPC stream (read back with apache-arrow),
 * a million rows streamed in every format by default (a small answer sent whole), the server's row cap, and the client going
 * away: its query is cancelled in the engine. A keep-alive connection's one AbortSignal keeps no listener of a query that answered.
 */
import { getEventListeners } from 'node:events';
import { rm } from 'node:fs/promises';
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { queriesInFlight } from '@ferry/runtime/testing';
import { tableFromIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ARROW_STREAM_TYPE, JSON_LINES_TYPE, startServer } from '../src/index.js';
import { fixtureDir, type Served, serve, spicepod, sql } from './helpers.js';

let served: Served;
let base: string;
let storeDir: string;

beforeAll(async () => {
  const store = await fixtureDir();
  storeDir = store.dir;
  served = await serve(spicepod({ location: store.location, interval: '1h' }));
  base = served.server.url;
  await served.runtime.ready(undefined, { timeoutMs: 30_000 });
});

afterAll(async () => {
  await served?.close();
  await rm(storeDir, { recursive: true, force: true });
});

async function arrow(
  statement: string,
): Promise<{ status: number; type: string | null; body: Uint8Array; headers: Headers }> {
  const answer = await fetch(`${base}/v1/sql`, {
    method: 'POST',
    body: statement,
    headers: { 'content-type': 'text/plain', accept: ARROW_STREAM_TYPE },
  });
  return {
    status: answer.status,
    type: answer.headers.get('content-type'),
    body: new Uint8Array(await answer.arrayBuffer()),
    headers: answer.headers,
  };
}

/** Waits until the runtime's pools have answered every query. */
async function drained(): Promise<void> {
  const started = performance.now();
  while (queriesInFlight(served.runtime) > 0) {
    if (performance.now() - started > 15_000) throw new Error('a query still runs');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('one namespace over HTTP', () => {
  it('a join across DuckDB and SQLite, with the datasets read in the headers', async () => {
    const answer = await sql(
      base,
      'SELECT count(*) AS n, min(o.customer) AS c FROM orders o JOIN users u ON o.id = u.id',
    );
    expect(answer.status).toBe(200);
    expect(answer.json<{ n: number }[]>()[0]?.n).toBeGreaterThan(0);
    expect(answer.headers.get('x-ferry-dataset')).toBe('orders, users');
    expect(answer.headers.get('x-ferry-snapshot-id')).toMatch(/^\d+, \d+$/);
  });

  it('a query that reads no dataset answers without dataset headers', async () => {
    const answer = await sql(base, 'SELECT 1 AS one, 40 + 2 AS answer');
    expect(answer.status).toBe(200);
    expect(answer.json()).toEqual([{ one: 1, answer: 42 }]);
    expect(answer.headers.get('x-ferry-dataset')).toBeNull();
    // A small answer goes out whole: its length said, not chunked.
    expect([answer.headers.get('content-length'), answer.headers.get('transfer-encoding')]).toEqual([
      String(Buffer.byteLength(answer.text)),
      null,
    ]);
  });

  it('Accept: application/vnd.apache.arrow.stream answers an Arrow IPC stream, empty results included', async () => {
    const joined = await arrow(
      'SELECT o.id, o.amount, o.placed_at, u.name FROM orders o JOIN users u ON o.id = u.id ORDER BY o.id',
    );
    expect([joined.status, joined.type]).toEqual([200, ARROW_STREAM_TYPE]);
    const table = tableFromIPC(joined.body);
    expect(table.schema.fields.map((field) => `${field.name}:${field.type}`)).toEqual([
      'id:Int64',
      'amount:Decimal[18e+2]',
      'placed_at:Timestamp<MICROSECOND>',
      'name:Utf8',
    ]);
    const json = await sql(base, 'SELECT o.id FROM orders o JOIN users u ON o.id = u.id ORDER BY o.id');
    expect(table.numRows).toBe(json.json<unknown[]>().length);
    // A small Arrow answer goes out whole too: its length said, not chunked.
    expect([joined.headers.get('content-length'), joined.headers.get('transfer-encoding')]).toEqual([
      String(joined.body.byteLength),
      null,
    ]);
    const emptyAnswer = await arrow('SELECT id FROM orders WHERE id < 0');
    const empty = tableFromIPC(emptyAnswer.body);
    expect([empty.numRows, empty.schema.fields.map((field) => field.name)]).toEqual([0, ['id']]);
    expect(emptyAnswer.headers.get('content-length')).toBe(String(emptyAnswer.body.byteLength));
    const sqlite = tableFromIPC((await arrow('SELECT name, score FROM users ORDER BY id')).body);
    expect(sqlite.schema.fields.map((field) => `${field.name}:${field.type}`)).toEqual([
      'name:Utf8',
      'score:Float64',
    ]);
  });

  it('a small JSON answer is made where it ran, byte for byte the text its batches give', async () => {
    // DuckDB: the value kinds its JSON writes differently, and names a JS object would reorder. Its
    // small answers are written from its rows; a column named `__proto__` (no row object holds it)
    // is built as a batch first: both ways are checked.
    const kinds = `SELECT 1::TINYINT AS "1", 9007199254740993::BIGINT AS "0", 170141183460469231731687303715884105727::HUGEINT AS huge,
         'NaN'::DOUBLE AS nan, '-Infinity'::FLOAT AS ninf, 1.5e300 AS big, -0.0 AS nzero, 12.340::DECIMAL(10,3) AS dec,
         DATE '2026-12-04' AS d, TIMESTAMP '2026-12-04 01:02:03.456789' AS ts, TIMESTAMPTZ '2026-12-04 01:02:03+05' AS tz,
         TIME '01:02:03' AS t, INTERVAL 3 DAY AS iv, '\\x00\\xff'::BLOB AS b, [1, NULL, 3] AS l,
         {'a': 1, 'b': [true]} AS st, MAP {'k': 2} AS m, 'quote " back \\ slash ✓ \n' AS s,
         NULL AS nothing, uuid '00000000-0000-0000-0000-000000000001' AS u, 'a'::ENUM('a', 'b') AS en,
         '101'::BIT AS bit, union_value(k := 2)::UNION(k INT, s VARCHAR) AS un, [1, 2]::INT[2] AS arr,
         TIMETZ '01:02:03+05' AS ttz, TIMESTAMP_NS '2026-01-01 00:00:00.123456789' AS tns,
         340282366920938463463374607431768211455::UHUGEINT AS uh, '{"a":[1,2]}'::JSON AS js,
         'infinity'::DATE AS dinf, 0.1::FLOAT AS f, 1e21::DOUBLE AS e21, 1 AS x, 2 AS x`;
    const statements = [
      kinds,
      `${kinds}, 1 AS "__proto__"`,
      'SELECT * FROM orders ORDER BY id',
      'SELECT id, customer FROM orders WHERE id < 0',
      // SQLite: its dynamic types, blobs, large integers and names of its own (written from its
      // rows: every value is its column's type itself), and columns mixing kinds, which the batch
      // types as text or reals (built as a batch first).
      'SELECT *, x\'00ff\' AS b, 4611686018427387904 AS big, 1.0 / 3 AS third, NULL AS nil, 2 AS "1", 1 AS "0" FROM users ORDER BY id',
      'SELECT id, CASE WHEN id % 2 = 0 THEN name ELSE id END AS mixed, CASE WHEN id % 2 = 0 THEN 1.5 ELSE id END AS num FROM users ORDER BY id',
      'SELECT name FROM users WHERE id = -1',
    ];
    for (const statement of statements) {
      // What the runtime answers for a writer of JSON: the text, not a stream.
      const answer = await served.runtime.queryJson(statement, [], { noCache: true });
      expect('json' in answer, statement).toBe(true);
      const whole = await sql(base, statement, { 'cache-control': 'no-cache' });
      expect(whole.status, statement).toBe(200);
      expect(whole.headers.get('content-length'), statement).toBe(String(Buffer.byteLength(whole.text)));
      // The same rows streamed as batches and written at the edge (JSON Lines: one object a line).
      const lines = await sql(base, statement, { accept: JSON_LINES_TYPE, 'cache-control': 'no-cache' });
      const objects = lines.text === '' ? [] : lines.text.trimEnd().split('\n');
      expect(whole.text, statement).toBe(`[${objects.join(',')}]`);
    }
  });

  it('a column or struct field named __proto__ keeps its value in every format, on both engines', async () => {
    // A plain object takes `__proto__` as its prototype: a row or struct built by assignment loses it.
    const struct = `{'__proto__': 2, 'b': 3}`;
    const cases = [
      [
        `SELECT 1 AS "__proto__", ${struct} AS st, 4 AS "constructor" FROM orders LIMIT 1`,
        '{"__proto__":1,"st":{"__proto__":2,"b":3},"constructor":4}',
        '1,"{""__proto__"":2,""b"":3}",4',
      ],
      [
        `SELECT ${struct} AS st FROM orders LIMIT 1`,
        '{"st":{"__proto__":2,"b":3}}',
        '"{""__proto__"":2,""b"":3}"',
      ],
      [
        'SELECT 1 AS "__proto__", 4 AS "constructor" FROM orders LIMIT 1',
        '{"__proto__":1,"constructor":4}',
        '1,4',
      ],
      [
        'SELECT 1 AS "__proto__", 4 AS "constructor" FROM users LIMIT 1',
        '{"__proto__":1,"constructor":4}',
        '1,4',
      ],
    ] as const;
    const noCache = { 'cache-control': 'no-cache' };
    for (const [statement, row, csv] of cases) {
      expect((await sql(base, statement, noCache)).text, statement).toBe(`[${row}]`);
      expect((await sql(base, statement, { ...noCache, accept: JSON_LINES_TYPE })).text, statement).toBe(
        `${row}\n`,
      );
      expect(
        (await sql(base, statement, { ...noCache, accept: 'text/csv' })).text.split('\n')[1],
        statement,
      ).toBe(csv);
      if (statement.includes("'__proto__'")) continue; // rows (query(), the table) hold node-api's STRUCT objects
      const table = (await sql(base, statement, { ...noCache, accept: 'text/plain' })).text.split('\n')[3];
      expect(table, statement).toMatch(/^\| 1 +\| 4 +\|$/);
      const { rows } = await served.runtime.query(statement, [], { noCache: true });
      expect(JSON.stringify(rows), statement).toBe(`[${row}]`);
    }
  });

  it('a JSON answer past one batch is streamed: the same text as its JSON Lines, and a stream to the runtime', async () => {
    for (const statement of [
      "SELECT i, 'row ' || i AS label FROM range(20000) t(i) ORDER BY i",
      'WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 20000) SELECT c.i, u.name FROM c, users u WHERE u.id = 1 ORDER BY c.i',
    ]) {
      const first = await sql(base, statement, { 'cache-control': 'no-cache' });
      const again = await sql(base, statement, { 'cache-control': 'no-cache' });
      expect([first.status, again.status], statement).toEqual([200, 200]);
      expect(first.headers.get('transfer-encoding'), statement).toBe('chunked');
      expect(again.text, statement).toBe(first.text);
      const lines = await sql(base, statement, { accept: JSON_LINES_TYPE, 'cache-control': 'no-cache' });
      expect(first.text, statement).toBe(`[${lines.text.trimEnd().split('\n').join(',')}]`);
      expect(first.json<unknown[]>().length, statement).toBeGreaterThan(1_000);
      const answer = await served.runtime.queryJson(statement, [], { noCache: true });
      expect('json' in answer, statement).toBe(false);
      if (!('json' in answer)) answer.cancel();
    }
    await drained();
  });

  it('a small JSON answer is cached as its text: the hit answers the same bytes', async () => {
    const statement = 'SELECT id, name FROM users WHERE id BETWEEN 1 AND 3 ORDER BY id';
    const miss = await sql(base, statement);
    const hit = await sql(base, statement);
    expect([miss.headers.get('results-cache-status'), hit.headers.get('results-cache-status')]).toEqual([
      'MISS',
      'HIT',
    ]);
    expect(hit.text).toBe(miss.text);
    expect(hit.json<unknown[]>().length).toBe(3);
  });

  it('identical requests arriving together run once: one MISS, the others HIT with its bytes', async () => {
    const shape = (id: number) => `SELECT id, name FROM users WHERE id BETWEEN 1 AND ${id} ORDER BY id`;
    // The shape ran: the datasets its texts read are known before they run.
    expect((await sql(base, shape(2))).status).toBe(200);
    const answers = await Promise.all(Array.from({ length: 8 }, () => sql(base, shape(4))));
    expect(answers.map((answer) => answer.headers.get('results-cache-status')).sort()).toEqual([
      ...Array(7).fill('HIT'),
      'MISS',
    ]);
    expect(new Set(answers.map((answer) => answer.text)).size).toBe(1);
    const ran = await sql(base, shape(4), { 'cache-control': 'no-cache' });
    expect([ran.headers.get('results-cache-status'), answers[0]?.text]).toEqual(['BYPASS', ran.text]);
    expect(ran.json<unknown[]>().length).toBeGreaterThan(1);
    // An answer streamed (past one batch) is its request's own: each runs.
    const large = (n: number) =>
      `SELECT t.i, o.n FROM range(${n}) t(i), (SELECT count(*) AS n FROM orders) o`;
    expect((await sql(base, large(30_000))).status).toBe(200);
    const streams = await Promise.all([0, 1, 2].map(() => sql(base, large(20_000))));
    expect(streams.map((answer) => answer.headers.get('results-cache-status'))).toEqual([
      'MISS',
      'MISS',
      'MISS',
    ]);
    expect(streams.map((answer) => answer.headers.get('transfer-encoding'))).toEqual(
      Array(3).fill('chunked'),
    );
    expect(streams.map((answer) => answer.json<unknown[]>().length)).toEqual([20_000, 20_000, 20_000]);
    // Its text can be keyed (the next one is answered from the stream kept once read through).
    expect((await sql(base, large(20_000))).headers.get('results-cache-status')).toBe('HIT');
  });

  it('a million rows arrive by default in every format, streamed (no row cap)', async () => {
    const statement = "SELECT i, i % 7 = 0 AS sevens, 'row ' || i AS label FROM range(1000000) t(i)";
    const { status, body, headers } = await arrow(statement);
    expect(status).toBe(200);
    expect([headers.get('content-length'), headers.get('transfer-encoding')]).toEqual([null, 'chunked']);
    const table = tableFromIPC(body);
    expect([table.numRows, table.getChild('i')?.get(999_999)]).toEqual([1_000_000, 999_999n]);
    const json = await sql(base, statement);
    expect(json.status).toBe(200);
    // A large one is streamed as it is read.
    expect([json.headers.get('content-length'), json.headers.get('transfer-encoding')]).toEqual([
      null,
      'chunked',
    ]);
    const rows = json.json<{ i: number; sevens: boolean; label: string }[]>();
    expect([rows.length, rows[999_999]]).toEqual([
      1_000_000,
      { i: 999_999, sevens: true, label: 'row 999999' },
    ]);
    const lines = await sql(base, statement, { accept: JSON_LINES_TYPE });
    expect(lines.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const objects = lines.text.trimEnd().split('\n');
    expect([objects.length, JSON.parse(objects[7] as string)]).toEqual([
      1_000_000,
      { i: 7, sevens: true, label: 'row 7' },
    ]);
    const csv = await sql(base, statement, { accept: 'text/csv' });
    const records = csv.text.trimEnd().split('\n');
    expect([records.length, records[0], records[1_000_000]]).toEqual([
      1_000_001,
      'i,sevens,label',
      '999999,true,row 999999',
    ]);
    const spice = await sql(base, statement, { accept: 'application/vnd.spiceai.sql.v1+json' });
    const answer = spice.json<{
      row_count: number;
      data: unknown[];
      schema: { fields: { name: string }[] };
    }>();
    expect([answer.row_count, answer.data.length, answer.schema.fields.map((field) => field.name)]).toEqual([
      1_000_000,
      1_000_000,
      ['i', 'sevens', 'label'],
    ]);
  });

  it('the server’s byte cap counts an answer’s Arrow bytes, small JSON answers too', async () => {
    const capped = await startServer(served.runtime, { port: 0, maxResultBytes: 4_096 });
    try {
      // 200 INTEGERs: ~1 KiB as Arrow, ~7 KiB as JSON text. Within the cap.
      const narrow = await sql(capped.url, 'SELECT 1 AS a_rather_long_column_name_here FROM range(200)');
      expect([narrow.status, narrow.json<unknown[]>().length]).toEqual([200, 200]);
      const wide = await sql(capped.url, 'SELECT i FROM range(1000) t(i)');
      expect(wide.status).toBe(400);
      expect(wide.json()).toMatchObject({
        code: 'ERR_RESULT_TOO_LARGE',
        error: expect.stringContaining('raise the HTTP server’s maxResultBytes'),
      });
    } finally {
      await capped.close();
    }
  });

  it('the server’s row cap refuses a result over it before any row, and cuts one that passes it later', async () => {
    const capped = await startServer(served.runtime, { port: 0, maxResultRows: 1_000 });
    const later = await startServer(served.runtime, { port: 0, maxResultRows: 100_000 });
    try {
      const refused = await sql(capped.url, 'SELECT i FROM range(1000000) t(i)');
      expect(refused.status).toBe(400);
      expect(refused.json()).toMatchObject({
        code: 'ERR_RESULT_TOO_LARGE',
        error: expect.stringContaining(
          'returned more than 1000 rows; add a LIMIT or raise the HTTP server’s maxResultRows',
        ),
      });
      expect((await sql(capped.url, 'SELECT i FROM range(1000) t(i)')).json<unknown[]>().length).toBe(1_000);
      // Past the cap after the first batches went out: the body ends early and the client sees an error.
      const response = await fetch(`${later.url}/v1/sql`, {
        method: 'POST',
        body: 'SELECT i FROM range(1000000) t(i)',
        headers: { 'content-type': 'text/plain' },
      });
      expect(response.status).toBe(200);
      await expect(response.text()).rejects.toThrow();
      await drained();
    } finally {
      await capped.close();
      await later.close();
    }
  });

  it('the one AbortSignal of a keep-alive connection keeps no listener of its queries once they answered', async () => {
    // One connection for every request: they share its signal, seen as the runtime is handed it.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const signals = new Set<AbortSignal>();
    const seen = (options: { signal?: AbortSignal } | undefined): void => {
      if (options?.signal !== undefined) signals.add(options.signal);
    };
    const { runtime } = served;
    const query = vi.spyOn(runtime, 'query');
    const queryJson = vi.spyOn(runtime, 'queryJson');
    const queryStream = vi.spyOn(runtime, 'queryStream');
    const post = (statement: string, headers: Record<string, string> = {}) =>
      new Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
        const call = httpRequest(`${base}/v1/sql`, {
          method: 'POST',
          agent,
          headers: { 'content-type': 'text/plain', ...headers },
        });
        call.on('error', reject);
        call.on('response', (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              headers: response.headers,
              body: Buffer.concat(chunks),
            }),
          );
          response.on('error', reject);
        });
        call.end(statement);
      });
    try {
      const large = 'SELECT t.i, o.n FROM range(30000) t(i), (SELECT count(*) AS n FROM orders) o';
      const asked: [string, Record<string, string>, number][] = [];
      for (const table of ['orders', 'users']) {
        const small = `SELECT * FROM ${table} ORDER BY id`;
        asked.push(
          [small, {}, 200],
          [small, {}, 200], // a hit
          [small, { 'cache-control': 'no-cache' }, 200],
          [small, { accept: 'text/plain' }, 200],
          [small, { accept: 'text/csv', 'cache-control': 'no-cache' }, 200],
          [small, { accept: JSON_LINES_TYPE, 'cache-control': 'no-cache' }, 200],
          [small, { accept: ARROW_STREAM_TYPE, 'cache-control': 'no-cache' }, 200],
          [`SELECT nope FROM ${table}`, {}, 400],
          // Refused by the client's staleness bound: small (inline) and streamed answers.
          [small, { 'x-ferry-max-staleness': '0s', 'cache-control': 'no-cache' }, 503],
          [small, { 'x-ferry-max-staleness': '0s', accept: ARROW_STREAM_TYPE }, 503], // a hit
          [
            small,
            { 'x-ferry-max-staleness': '0s', accept: ARROW_STREAM_TYPE, 'cache-control': 'no-cache' },
            503,
          ],
          [
            small,
            { 'x-ferry-max-staleness': '0s', accept: JSON_LINES_TYPE, 'cache-control': 'no-cache' },
            503,
          ],
        );
      }
      asked.push(
        [large, { 'cache-control': 'no-cache' }, 200],
        [large, { accept: ARROW_STREAM_TYPE, 'cache-control': 'no-cache' }, 200],
        [large, { 'x-ferry-max-staleness': '0s', 'cache-control': 'no-cache' }, 503],
      );
      for (const [statement, headers, status] of asked) {
        expect((await post(statement, headers)).status, `${statement} ${JSON.stringify(headers)}`).toBe(
          status,
        );
      }
      // A 304: the answer the client holds is still the answer.
      const cached = await post('SELECT * FROM users ORDER BY id');
      const etag = String(cached.headers.etag);
      expect((await post('SELECT * FROM users ORDER BY id', { 'if-none-match': etag })).status).toBe(304);
      await drained();
      for (const spy of [query, queryJson, queryStream]) for (const call of spy.mock.calls) seen(call[2]);
      expect(signals.size).toBe(1);
      const [signal] = signals;
      expect(signal?.aborted).toBe(false);
      expect(getEventListeners(signal as AbortSignal, 'abort')).toHaveLength(0);
    } finally {
      query.mockRestore();
      queryJson.mockRestore();
      queryStream.mockRestore();
      agent.destroy();
    }
  });

  it('a client that goes away has its query cancelled in the engine (JSON and Arrow)', async () => {
    for (const accept of ['application/json', ARROW_STREAM_TYPE]) {
      const statement =
        accept === ARROW_STREAM_TYPE
          ? 'SELECT * FROM range(1000000000000)'
          : 'SELECT count(*) FROM orders, range(1000000000000)';
      await new Promise<void>((resolve, reject) => {
        const call = httpRequest(`${base}/v1/sql`, {
          method: 'POST',
          headers: { 'content-type': 'text/plain', accept },
        });
        call.on('error', () => resolve());
        call.on('response', (response) => {
          // Arrow: the stream started; read a first chunk, then hang up.
          response.once('data', () => {
            call.destroy();
            resolve();
          });
        });
        call.end(statement);
        if (accept === 'application/json') {
          // JSON answers only at the end: hang up once the query runs.
          const wait = (): void => {
            if (queriesInFlight(served.runtime) > 0) {
              call.destroy();
              resolve();
            } else setTimeout(wait, 10);
          };
          setTimeout(wait, 10);
        }
        setTimeout(() => reject(new Error('the request never started')), 15_000).unref();
      });
      await drained();
    }
    expect((await sql(base, 'SELECT count(*) AS n FROM orders')).json()).toEqual([{ n: 8 }]);
  });
});
