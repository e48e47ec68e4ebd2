/**
 * Spice's HTTP surface over real HTTP (fetch) against a real runtime serving a copy of the fixture
 * store from S3 on a local fauxqs: the `/v1/sql` formats `Accept` picks and its parameters (list,
 * named object, Ferry's `params`), the dataset listing with Spice's fields, statuses and CSV, the
 * forced refresh, the snapshot listing checked against the store, `/v1/status`, Spice's snapshot
 * metrics and the API key on the new routes; then the status of datasets that serve nothing.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DatasetInfo, RuntimeEvents } from '@ferry/runtime';
import { type LocalAws, nextEventOf, startLocalAws } from '@ferry/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DatasetView, type SpiceSnapshotSummary, spiceStatus } from '../src/index.js';
import { type Answer, request, type Served, serve, serveFixtureFromS3, spicepod } from './helpers.js';
import { parsePrometheus, sampleValue } from './prometheus-parser.js';

const KEY = 'spice-key';
const BUCKET = 'example-bucket';
const PREFIX = 'snapshots/';

interface ArrowFieldJson {
  readonly name: string;
  readonly data_type: unknown;
}

interface MetadataJson {
  readonly [dataset: string]: {
    readonly schemas: readonly { readonly schema: { readonly fields: readonly ArrowFieldJson[] } }[];
    readonly snapshots: readonly { readonly 'snapshot-id': number; readonly snapshot: string }[];
  };
}

describe('Spice HTTP surface over an S3 fixture store (fauxqs)', () => {
  let aws: LocalAws;
  let served: Served;
  let base: string;
  let metadata: MetadataJson;
  const auth = { authorization: `Bearer ${KEY}` };
  const get = (path: string, headers: Record<string, string> = {}): Promise<Answer> =>
    request(`${base}${path}`, { headers: { ...auth, ...headers } });
  const post = (path: string, body: string, headers: Record<string, string> = {}): Promise<Answer> =>
    request(`${base}${path}`, { method: 'POST', body, headers: { ...auth, ...headers } });
  const query = (body: unknown, accept?: string): Promise<Answer> =>
    post(
      '/v1/sql',
      typeof body === 'string' ? body : JSON.stringify(body),
      typeof body === 'string'
        ? { 'content-type': 'text/plain', ...(accept === undefined ? {} : { accept }) }
        : { 'content-type': 'application/json', ...(accept === undefined ? {} : { accept }) },
    );
  const nextEvent = <K extends keyof RuntimeEvents>(
    kind: K,
    predicate: (payload: RuntimeEvents[K]) => boolean,
  ): Promise<RuntimeEvents[K]> => nextEventOf<RuntimeEvents, K>(served.runtime, kind, predicate);

  beforeAll(async () => {
    aws = await startLocalAws();
    // No scheduled poll while the tests run: every poll here is one a test asked for.
    served = await serveFixtureFromS3(aws, { interval: '1h', server: { apiKey: KEY } });
    base = served.server.url;
    await served.runtime.ready(undefined, { timeoutMs: 30_000 });
    const text = new TextDecoder().decode(await aws.getObject(BUCKET, `${PREFIX}metadata.json`));
    metadata = JSON.parse(text) as MetadataJson;
  });

  afterAll(async () => {
    await served?.close();
    await aws?.close();
  });

  it('answers JSON rows by default, for application/json and for an Accept it does not offer', async () => {
    for (const accept of [undefined, 'application/json', 'application/xml', '*/*']) {
      const answer = await query('SELECT count(*) AS n, sum(amount) AS total FROM orders', accept);
      expect(answer.status, accept).toBe(200);
      expect(answer.headers.get('content-type'), accept).toMatch(/^application\/json/);
      expect(answer.json(), accept).toEqual([{ n: 8, total: '350.00' }]);
    }
  });

  it('answers application/vnd.spiceai.sql.v1+json with the result Arrow schema', async () => {
    const answer = await query(
      'SELECT count(*) AS n, sum(amount) AS total, max(placed_at) AS last, bool_or(shipped) AS any, min(day) AS first FROM orders',
      'application/vnd.spiceai.sql.v1+json',
    );
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^application\/vnd\.spiceai\.sql\.v1\+json/);
    const body = answer.json<{ row_count: number; schema: { fields: unknown[] }; data: unknown[] }>();
    expect(body.row_count).toBe(1);
    expect(body.data).toEqual([
      { n: 8, total: '350.00', last: '2026-11-27T10:00:07.000000', any: true, first: '2026-11-20' },
    ]);
    const field = (name: string, data_type: unknown) => ({
      name,
      data_type,
      nullable: true,
      dict_id: 0,
      dict_is_ordered: false,
      metadata: {},
    });
    expect(body.schema.fields).toEqual([
      field('n', 'Int64'),
      field('total', { Decimal128: [38, 2] }),
      field('last', { Timestamp: ['Microsecond', null] }),
      field('any', 'Boolean'),
      field('first', 'Date32'),
    ]);
  });

  it('gives SELECT * the types metadata.json records for both engines', async () => {
    for (const dataset of ['orders', 'users']) {
      const answer = await query(`SELECT * FROM ${dataset} LIMIT 1`, 'application/vnd.spiceai.sql.v1+json');
      const fields = answer.json<{ schema: { fields: ArrowFieldJson[] } }>().schema.fields;
      const recorded = metadata[dataset]?.schemas[0]?.schema.fields ?? [];
      expect(recorded.length, dataset).toBeGreaterThan(0);
      expect(
        fields.map((f) => [f.name, f.data_type]),
        dataset,
      ).toEqual(recorded.map((f) => [f.name, f.data_type]));
    }
  });

  it('answers text/csv with a header row and RFC 4180 quoting', async () => {
    const answer = await query(
      `SELECT id, 'a,b' AS comma, 'say "hi"' AS quote, 'two' || chr(10) || 'lines' AS nl, NULL AS nothing, shipped FROM orders WHERE id <= 2 ORDER BY id`,
      'text/csv',
    );
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(answer.text).toBe(
      'id,comma,quote,nl,nothing,shipped\n1,"a,b","say ""hi""","two\nlines",,true\n2,"a,b","say ""hi""","two\nlines",,false\n',
    );
  });

  it('answers text/plain with a table for people', async () => {
    const answer = await query('SELECT id, name, score FROM users ORDER BY id', 'text/plain');
    expect(answer.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(answer.text).toBe(
      [
        '+----+-------+-------+',
        '| id | name  | score |',
        '+----+-------+-------+',
        '| 1  | ada   | 9.5   |',
        '| 2  | grace | 8.25  |',
        '| 3  |       |       |',
        '+----+-------+-------+',
        '',
      ].join('\n'),
    );
  });

  it('binds parameters as a list ($1, ?), as named values, and as Ferry params, on both engines', async () => {
    const ids = (answer: Answer) => answer.json<{ id: number }[]>().map((row) => row.id);
    expect(
      ids(
        await query({
          sql: 'SELECT id FROM orders WHERE id > $1 AND id < $2 ORDER BY id',
          parameters: [2, 5],
        }),
      ),
    ).toEqual([3, 4]);
    expect(
      ids(await query({ sql: 'SELECT id FROM users WHERE id > $1 ORDER BY id', parameters: [1] })),
    ).toEqual([2, 3]);
    expect(ids(await query({ sql: 'SELECT id FROM users WHERE id = ?', parameters: [2] }))).toEqual([2]);
    expect(
      ids(
        await query({
          sql: 'SELECT id FROM orders WHERE customer = $who AND id > $after ORDER BY id',
          parameters: { who: 'customer-1', after: 1 },
        }),
      ),
    ).toEqual([6]);
    expect(
      ids(
        await query({
          sql: "SELECT id FROM users WHERE name = $name OR name = '$name'",
          parameters: { name: 'grace' },
        }),
      ),
    ).toEqual([2]);
    expect(ids(await query({ sql: 'SELECT id FROM orders WHERE id <= ? ORDER BY id', params: [2] }))).toEqual(
      [1, 2],
    );

    const missing = await query({ sql: 'SELECT id FROM users WHERE id = $id', parameters: { other: 1 } });
    expect(missing.status).toBe(400);
    expect(missing.json()).toMatchObject({
      code: 'ERR_INVALID_PARAMETER',
      error: expect.stringContaining('$id'),
    });
    const both = await query({ sql: 'SELECT 1 FROM users', parameters: [], params: [] });
    expect(both.status).toBe(400);
    expect(both.json<{ code: string }>().code).toBe('ERR_BAD_REQUEST');
    const wrongType = await query({ sql: 'SELECT 1 FROM users', parameters: 'x' });
    expect(wrongType.status).toBe(400);
    expect(wrongType.json<{ error: string }>().error).toContain('parameters');
  });

  it('binds a JSON parameter integer a JSON number cannot carry exactly as sent, not its neighbour', async () => {
    const json = (body: string) => post('/v1/sql', body, { 'content-type': 'application/json' });
    // 9007199254740993 reads as 9007199254740992 in JSON.parse: bound so, it selected other rows
    // (Spice's serde reads it exactly). On DuckDB and on SQLite, positional and named.
    const duckdb = await json(
      '{"sql": "SELECT $1::BIGINT AS a, $1::BIGINT - 9007199254740992 AS d, $2::HUGEINT AS h", "parameters": [9007199254740993, -12345678901234567891]}',
    );
    expect([duckdb.status, duckdb.text]).toEqual([
      200,
      '[{"a":"9007199254740993","d":1,"h":"-12345678901234567891"}]',
    ]);
    const sqlite = await json(
      '{"sql": "SELECT count(*) AS n FROM users WHERE id < $big AND $big - 9007199254740992 = 1", "parameters": {"big": 9007199254740993}}',
    );
    expect([sqlite.status, sqlite.json()]).toEqual([200, [{ n: expect.any(Number) }]]);
    expect(sqlite.json<{ n: number }[]>()[0]?.n).toBeGreaterThan(0);
    // Digits in strings, keys and the SQL are left as they are; a float and an exact integer too.
    const exact = await json(
      '{"sql": "SELECT $1::BIGINT AS a, $2::BIGINT AS b, $3 AS c, $4 AS d, \'12345678901234567891\' AS e", "parameters": ["9007199254740993", 9007199254740992, 1e300, "12345678901234567891"]}',
    );
    expect([exact.status, exact.text]).toEqual([
      200,
      '[{"a":"9007199254740993","b":"9007199254740992","c":1e+300,"d":"12345678901234567891","e":"12345678901234567891"}]',
    ]);
    // Alone in arithmetic it is the integer it is, as a small one is (before, DuckDB asked for a
    // cast and SQLite's abs() answered 9007199254740992): BIGINT, HUGEINT past int64 (DuckDB).
    const spice = { 'content-type': 'application/json', accept: 'application/vnd.spiceai.sql.v1+json' };
    for (const [table, no] of [
      ['orders', false],
      ['users', 0],
    ] as const) {
      const alone = await post(
        '/v1/sql',
        `{"sql": "SELECT $1 + 1 AS a, $1 * 2 AS b, abs($2) AS c, $1 = id AS d FROM ${table} ORDER BY id LIMIT 1", "parameters": [9007199254740993, -9007199254740993]}`,
        spice,
      );
      expect(alone.status, `${table}: ${alone.text}`).toBe(200);
      const body = alone.json<{
        data: unknown[];
        schema: { fields: { name: string; data_type: unknown }[] };
      }>();
      expect(body.data, table).toEqual([
        { a: '9007199254740994', b: '18014398509481986', c: '9007199254740993', d: no },
      ]);
      expect(body.schema.fields.slice(0, 3).map((field) => field.data_type)).toEqual([
        'Int64',
        'Int64',
        'Int64',
      ]);
      // A string of digits stays a string, in the same request and in the results cache's key.
      const kinds = `{"sql": "SELECT typeof($1) AS t FROM ${table} LIMIT 1", "parameters": [X]}`;
      const number = await json(kinds.replace('X', '9007199254740993'));
      const text = await json(kinds.replace('X', '"9007199254740993"'));
      expect([number.json(), text.json()], table).toEqual(
        table === 'orders' ? [[{ t: 'BIGINT' }], [{ t: 'VARCHAR' }]] : [[{ t: 'integer' }], [{ t: 'text' }]],
      );
    }
    const huge = await json(
      '{"sql": "SELECT $1 + 1 AS h, typeof($1) AS t FROM orders LIMIT 1", "parameters": [-12345678901234567891]}',
    );
    expect([huge.status, huge.text]).toEqual([200, '[{"h":"-12345678901234567890","t":"HUGEINT"}]']);
  });

  it("records an HTTP query in the task history with protocol 'http'", async () => {
    const sql = 'SELECT count(*) AS n FROM users WHERE id > 0';
    expect((await query(sql)).status).toBe(200);
    const recorded = await query(
      `SELECT labels['protocol'] AS protocol FROM spice.runtime.task_history WHERE input = '${sql}'`,
    );
    expect(recorded.json()).toEqual([{ protocol: 'http' }]);
  });

  it('refuses a body that is not UTF-8, as Spice does, instead of running the SQL with its bytes replaced', async () => {
    // 'café' in Latin-1: run with U+FFFD in place of the é, it matched nothing and answered [].
    const latin1 = Buffer.from("SELECT id FROM users WHERE name = 'caf\xe9'", 'latin1');
    for (const type of ['text/plain', 'application/json']) {
      const body =
        type === 'text/plain' ? latin1 : Buffer.from(`{"sql":"${latin1.toString('latin1')}"}`, 'latin1');
      const answer = await request(`${base}/v1/sql`, {
        method: 'POST',
        body,
        headers: { ...auth, 'content-type': type },
      });
      expect(answer.status, type).toBe(400);
      expect(answer.json(), type).toEqual({
        code: 'ERR_BAD_REQUEST',
        error: 'The request body is not valid UTF-8 (invalid UTF-8 sequence); send the SQL encoded as UTF-8.',
      });
    }
  });

  it('lists datasets with Spice fields, Spice statuses and as CSV', async () => {
    const plain = (await get('/v1/datasets')).json<DatasetView[]>();
    expect(
      plain.map((view) => [view.name, view.from, view.replication_enabled, view.acceleration_enabled]),
    ).toEqual([
      ['orders', 'postgres:public.orders', false, true],
      ['users', 'postgres:public.users', false, true],
    ]);
    expect(plain.every((view) => view.status === undefined)).toBe(true);
    // Ferry's own fields stay.
    expect(plain[0]).toMatchObject({ engine: 'duckdb', ready: true, snapshotId: 1 });

    const withStatus = (await get('/v1/datasets?status=true')).json<DatasetView[]>();
    expect(withStatus.map((view) => [view.name, view.status])).toEqual([
      ['orders', 'Ready'],
      ['users', 'Ready'],
    ]);
    expect((await get('/v1/datasets?source=postgres')).json<DatasetView[]>()).toHaveLength(2);
    expect((await get('/v1/datasets?source=s3')).json<DatasetView[]>()).toEqual([]);

    const csv = await get('/v1/datasets?format=csv&status=true');
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    const [header, orders] = csv.text.split('\n');
    expect(header).toMatch(/^from,name,replication_enabled,acceleration_enabled,status,engine,state,/);
    expect(orders).toMatch(/^postgres:public\.orders,orders,false,true,Ready,duckdb,serving,true,/);

    const bad = await get('/v1/datasets?format=xml');
    expect(bad.status).toBe(400);
    expect(bad.json<{ code: string }>().code).toBe('ERR_BAD_REQUEST');
  });

  it("lists a dataset's snapshots in Spice's SnapshotSummary shape, checked against the store", async () => {
    const answer = await get('/v1/datasets/orders/acceleration/snapshots');
    expect(answer.status).toBe(200);
    const summary = answer.json<SpiceSnapshotSummary>();
    const recorded = metadata.orders?.snapshots ?? [];
    expect(summary).toMatchObject({
      dataset_name: 'orders',
      location: `s3://${BUCKET}/${PREFIX}`,
      last_updated_ms: 1795944600000,
      engine: 'duckdb',
      current_snapshot_id: 1,
    });
    expect(summary.snapshots.map((s) => [s.snapshot_id, s.location, s.is_current, s.status])).toEqual(
      recorded.map((s) => [s['snapshot-id'], s.snapshot, s['snapshot-id'] === 1, 'verified']),
    );
    expect(summary.snapshots[1]).toMatchObject({
      timestamp_ms: 1795942800000,
      checksum_algorithm: 'SHA256',
      size_bytes: 536576,
      engine: 'duckdb',
      row_count: 8,
      checksum: expect.stringMatching(/^[0-9a-f]{64}$/),
    });

    const last = (
      await get('/v1/datasets/orders/acceleration/snapshots?limit=1')
    ).json<SpiceSnapshotSummary>();
    expect(last.snapshots.map((s) => s.snapshot_id)).toEqual([1]);

    // An object whose size no longer matches its entry is unverified; the others stay verified.
    const older = recorded[0]?.snapshot as string;
    await aws.putObject(BUCKET, older.slice(`s3://${BUCKET}/`.length), 'not the snapshot');
    const after = (await get('/v1/datasets/orders/acceleration/snapshots')).json<SpiceSnapshotSummary>();
    expect(after.snapshots.map((s) => [s.snapshot_id, s.status])).toEqual([
      [0, 'unverified'],
      [1, 'verified'],
    ]);
    await aws.deleteObject(BUCKET, older.slice(`s3://${BUCKET}/`.length));
    const gone = (await get('/v1/datasets/orders/acceleration/snapshots')).json<SpiceSnapshotSummary>();
    expect(gone.snapshots[0]?.status).toBe('unverified');

    const unknown = await get('/v1/datasets/nope/acceleration/snapshots');
    expect(unknown.status).toBe(404);
    expect(unknown.json<{ code: string }>().code).toBe('ERR_UNKNOWN_DATASET');
    expect((await get('/v1/datasets/orders/acceleration/snapshots?limit=0')).status).toBe(400);
    // A limit past what a number holds exactly is the client's mistake (it was a 500, logged as
    // the server's own failure).
    const huge = await get('/v1/datasets/orders/acceleration/snapshots?limit=99999999999999999999');
    expect(huge.status).toBe(400);
    expect(huge.json<{ error: string }>().error).toContain('limit is a positive integer');
  });

  it('lists the endpoints it serves', async () => {
    const endpoint = `127.0.0.1:${served.server.port}`;
    const answer = await get('/v1/status');
    expect(answer.status).toBe(200);
    expect(answer.json()).toEqual([
      { name: 'http', endpoint, status: 'Ready' },
      { name: 'metrics', endpoint, status: 'Ready' },
    ]);
    const csv = await get('/v1/status?format=csv');
    expect(csv.text).toBe(`name,endpoint,status\nhttp,${endpoint},Ready\nmetrics,${endpoint},Ready\n`);
  });

  it("exports the SQL results cache under Spice's names (its cache metrics test's list)", async () => {
    // spiceai/spiceai's runtime metrics test, EXPECTED_RESULTS_CACHE_METRICS, and its observability docs.
    const sql = 'SELECT count(*) AS n FROM orders WHERE amount > 1';
    expect((await query(sql)).status).toBe(200);
    expect((await query(sql)).headers.get('results-cache-status')).toBe('HIT');
    const families = await parsePrometheus((await get('/metrics')).text);
    const types = Object.fromEntries(
      [
        'results_cache_requests',
        'results_cache_hits',
        'results_cache_misses',
        'results_cache_evictions',
        'results_cache_items_count',
        'results_cache_size_bytes',
        'results_cache_max_size_bytes',
      ].map((name) => [name, families.get(name)?.type]),
    );
    expect(types).toEqual({
      results_cache_requests: 'counter',
      results_cache_hits: 'counter',
      results_cache_misses: 'counter',
      results_cache_evictions: 'counter',
      results_cache_items_count: 'gauge',
      results_cache_size_bytes: 'gauge',
      results_cache_max_size_bytes: 'gauge',
    });
    const value = (name: string): number => sampleValue(families, name) ?? Number.NaN;
    expect(value('results_cache_hits')).toBeGreaterThanOrEqual(1);
    expect(value('results_cache_requests')).toBe(value('results_cache_hits') + value('results_cache_misses'));
    expect(value('results_cache_items_count')).toBeGreaterThanOrEqual(1);
    expect(value('results_cache_size_bytes')).toBeGreaterThan(0);
    expect(value('results_cache_max_size_bytes')).toBe(128 * 2 ** 20);
  });

  it("exports each dataset's Spice status as Spice's dataset_load_state gauge", async () => {
    // Spice's observability docs: 0=Initializing, 1=Ready, 2=Disabled, 3=Error, 4=Refreshing, 5=ShuttingDown.
    const families = await parsePrometheus((await get('/metrics')).text);
    expect(families.get('dataset_load_state')?.type).toBe('gauge');
    for (const dataset of ['orders', 'users']) {
      expect(sampleValue(families, 'dataset_load_state', { dataset }), dataset).toBe(1);
    }
  });

  it("exports Spice's snapshot metrics from what the runtime recorded", async () => {
    const families = await parsePrometheus((await get('/metrics')).text);
    const current = (await get('/v1/datasets/users/acceleration/snapshots')).json<SpiceSnapshotSummary>()
      .snapshots[0];
    expect(families.get('dataset_acceleration_snapshot_bootstrap_duration_ms')?.type).toBe('counter');
    for (const dataset of ['orders', 'users']) {
      expect(
        sampleValue(families, 'dataset_acceleration_snapshot_bootstrap_duration_ms', { dataset }),
        dataset,
      ).toBeGreaterThan(0);
      expect(sampleValue(families, 'dataset_acceleration_snapshot_failure_count', { dataset }), dataset).toBe(
        0,
      );
    }
    expect(
      sampleValue(families, 'dataset_acceleration_snapshot_bootstrap_bytes', { dataset: 'orders' }),
    ).toBe(536576);
    expect(sampleValue(families, 'dataset_acceleration_snapshot_bootstrap_bytes', { dataset: 'users' })).toBe(
      current?.size_bytes,
    );
    expect(
      sampleValue(families, 'dataset_acceleration_snapshot_bootstrap_checksum', {
        dataset: 'users',
        checksum: current?.checksum as string,
      }),
    ).toBe(1);
  });

  it('forces a poll on POST /v1/datasets/:name/acceleration/refresh, as Spice answers it', async () => {
    const polled = nextEvent('poll', (event) => event.dataset === 'users');
    const answer = await post('/v1/datasets/users/acceleration/refresh', '{}', {
      'content-type': 'application/json',
    });
    expect(answer.status).toBe(201);
    expect(answer.json()).toEqual({ message: 'Dataset refresh triggered for users.' });
    expect((await polled).result).toBe('unchanged');

    const bare = nextEvent('poll', (event) => event.dataset === 'orders');
    expect((await post('/v1/datasets/orders/acceleration/refresh', '')).status).toBe(201);
    await bare;
    // No body, labelled JSON (a client that sets the JSON type on every request): still no body.
    const unlabelled = nextEvent('poll', (event) => event.dataset === 'orders');
    const typed = await post('/v1/datasets/orders/acceleration/refresh', '', {
      'content-type': 'application/json',
    });
    expect(typed.status).toBe(201);
    await unlabelled;

    const unknown = await post('/v1/datasets/nope/acceleration/refresh', '{}', {
      'content-type': 'application/json',
    });
    expect(unknown.status).toBe(404);
    expect(unknown.json<{ code: string }>().code).toBe('ERR_UNKNOWN_DATASET');
    const overridden = await post('/v1/datasets/users/acceleration/refresh', '{"refresh_sql":"SELECT 1"}', {
      'content-type': 'application/json',
    });
    expect(overridden.status).toBe(400);
    expect(overridden.json<{ error: string }>().error).toContain('refresh_sql');
  });

  it('keeps every new route behind the API key', async () => {
    for (const [method, path] of [
      ['GET', '/v1/status'],
      ['GET', '/v1/datasets/orders/acceleration/snapshots'],
      ['POST', '/v1/datasets/orders/acceleration/refresh'],
    ] as const) {
      const answer = await request(`${base}${path}`, { method });
      expect(answer.status, path).toBe(401);
      expect(answer.headers.get('www-authenticate'), path).toBe('Bearer');
    }
    expect((await request(`${base}/health`)).text).toBe('ok\n');
  });
});

/** Resolves once `check()` holds, checking again on every state, poll and error event. */
function when(runtime: Served['runtime'], check: () => boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const offs = (['state', 'poll', 'error'] as const).map((kind) =>
      runtime.on(kind, () => {
        if (check()) finish();
      }),
    );
    const timer = setTimeout(() => {
      stop();
      reject(new Error('the runtime did not get there within 30 s'));
    }, 30_000);
    const stop = (): void => {
      clearTimeout(timer);
      for (const off of offs) off();
    };
    const finish = (): void => {
      stop();
      resolve();
    };
    if (check()) finish();
  });
}

describe('the Spice status of datasets that serve nothing', () => {
  const dirs: string[] = [];
  const servers: Served[] = [];

  /** A runtime serving `orders` from a fresh directory that `prepare` fills. */
  async function serveDir(prepare: (dir: string) => Promise<void>): Promise<Served> {
    const dir = await mkdtemp(join(tmpdir(), 'ferry-nothing-'));
    dirs.push(dir);
    await prepare(dir);
    const served = await serve(
      spicepod({ location: pathToFileURL(`${dir}/`).href, datasets: ['orders'], interval: '1h' }),
    );
    servers.push(served);
    return served;
  }

  const status = async (served: Served) =>
    (await request(`${served.server.url}/v1/datasets?status=true`)).json<DatasetView[]>()[0]?.status;

  afterAll(async () => {
    for (const served of servers) await served.close();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('is Initializing while the store has no snapshot yet', async () => {
    const served = await serveDir(async () => {});
    await when(served.runtime, () => served.runtime.status('orders').status?.lastPollResult === 'waiting');
    expect(served.runtime.status('orders').state).toBe('waiting');
    expect(await status(served)).toBe('Initializing');
    const listing = (
      await request(`${served.server.url}/v1/datasets/orders/acceleration/snapshots`)
    ).json<SpiceSnapshotSummary>();
    expect(listing).toEqual({
      dataset_name: 'orders',
      location: pathToFileURL(`${dirs.at(-1)}/`).href,
      last_updated_ms: null,
      snapshots: [],
    });
  });

  it('is Error when its metadata.json cannot be read, and counts the failures', async () => {
    const served = await serveDir((dir) => writeFile(join(dir, 'metadata.json'), '{ this is not JSON'));
    await when(served.runtime, () => (served.runtime.metrics().failures.orders ?? 0) >= 1);
    expect(await status(served)).toBe('Error');
    const families = await parsePrometheus((await request(`${served.server.url}/metrics`)).text);
    expect(sampleValue(families, 'dataset_load_state', { dataset: 'orders' })).toBe(3);
    expect(
      sampleValue(families, 'dataset_acceleration_snapshot_failure_count', { dataset: 'orders' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sampleValue(families, 'dataset_acceleration_snapshot_bootstrap_bytes', { dataset: 'orders' }),
    ).toBeUndefined();
    const listing = await request(`${served.server.url}/v1/datasets/orders/acceleration/snapshots`);
    expect(listing.status).toBe(502);
    expect(listing.json<{ code: string }>().code).toBe('ERR_METADATA_INVALID');
  });
});

describe('spiceStatus', () => {
  const info = (state: DatasetInfo['state'], served: boolean, failing = false): DatasetInfo => ({
    name: 'd',
    engine: 'duckdb',
    state,
    error: undefined,
    stalenessMs: null,
    newerSnapshotId: null,
    maxStalenessMs: null,
    status:
      state === 'starting' || state === 'failed'
        ? undefined
        : {
            dataset: 'd',
            state: state === 'restarting' ? 'serving' : state,
            paused: false,
            snapshotsMode: 'enabled',
            servingSnapshotId: served ? 1 : null,
            servingTimestampMs: served ? 0 : null,
            schemaId: served ? 0 : null,
            etag: null,
            lastPollAtMs: null,
            lastPollResult: null,
            nextPollDueMs: null,
            freshAtMs: null,
            storeSnapshotId: null,
            announcedSnapshotId: null,
            lastError: failing ? { code: 'ERR_X', message: 'x' } : null,
            counters: { polls: 0, swaps: 0, refusals: 0, failures: 0 } as never,
          },
  });

  it('maps every runtime state to a Spice status', () => {
    expect(spiceStatus(info('starting', false))).toBe('Initializing');
    expect(spiceStatus(info('bootstrapping', false))).toBe('Initializing');
    expect(spiceStatus(info('waiting', false))).toBe('Initializing');
    expect(spiceStatus(info('waiting', false, true))).toBe('Error');
    expect(spiceStatus(info('serving', true))).toBe('Ready');
    expect(spiceStatus(info('serving', true, true))).toBe('Ready');
    expect(spiceStatus(info('polling', true))).toBe('Refreshing');
    expect(spiceStatus(info('swapping', true))).toBe('Refreshing');
    expect(spiceStatus(info('polling', false))).toBe('Initializing');
    expect(spiceStatus(info('polling', false, true))).toBe('Error');
    expect(spiceStatus(info('restarting', true))).toBe('Error');
    expect(spiceStatus(info('failed', false))).toBe('Error');
    expect(spiceStatus(info('stopped', true))).toBe('ShuttingDown');
  });
});
