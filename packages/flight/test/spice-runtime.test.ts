/**
 * The spicepod's views and results cache over Flight, with a plain grpc-js Flight SQL client:
 * GetTables lists the views as `VIEW` (and their columns), a view's rows stream like a table's,
 * DoGet carries Spice's results-cache metadata (`x-cache`, `results-cache-status`) and a call's
 * `cache-control: no-cache` bypasses the cache; a swap makes the next call read the new snapshot.
 * The API key is a `${secrets:…}` reference: a gRPC error never shows the value it resolved to.
 */
import { localStoreParams } from '@ferry/test-support';
import { publishSnapshot } from '@ferry/writer';
import type { Metadata } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BUCKET,
  bearer,
  call,
  collect,
  type FlightInfoMessage,
  type FlightStub,
  fetchTable,
  flightStub,
  readSchema,
  type Served,
  serveDatasets,
  sqlCommand,
  tableOf,
} from './support.js';

const ORDERS = 'SELECT i::BIGINT AS id, (i * 10)::BIGINT AS amount FROM range(6) t(i)';

const SECRET = 'flight-k3y-that-must-never-show';
/** The spicepod's reference to it, as a user writes it. */
const REFERENCE = `\${secrets:ferry_flight_redacted_key}`;
let served: Served;
let stub: FlightStub;

/** The API key as a client sends it. */
const authorized = (): Metadata => bearer(SECRET);

beforeAll(async () => {
  process.env.FERRY_FLIGHT_REDACTED_KEY = SECRET;
  served = await serveDatasets([{ name: 'orders', engine: 'duckdb', sql: ORDERS }], {
    prefix: 'spice-runtime/',
    spicepod: {
      views: [{ name: 'big_orders', sql: 'SELECT id, amount FROM orders WHERE amount >= 30' }],
      runtime: {
        caching: { sql_results: { item_ttl: '10m' } },
        auth: { 'api-key': { keys: [REFERENCE] } },
      },
    },
  });
  stub = flightStub(served.flight.address);
});

afterAll(async () => {
  delete process.env.FERRY_FLIGHT_REDACTED_KEY;
  stub?.close();
  await served?.close();
});

const cmd = (name: string, fields: Record<string, unknown> = {}) => ({
  type: 'CMD' as const,
  cmd: sqlCommand(name, fields),
});

/** GetFlightInfo then DoGet, with the DoGet's response metadata. */
async function query(sql: string, metadata = authorized()) {
  const info = await call<FlightInfoMessage>((done) =>
    stub.GetFlightInfo(cmd('CommandStatementQuery', { query: sql }), metadata, done),
  );
  const doGet = stub.DoGet({ ticket: info.endpoint[0]?.ticket.ticket as Buffer }, metadata);
  const headers = new Promise<Metadata>((resolve) => doGet.on('metadata', resolve));
  const table = tableOf(await collect(doGet));
  const received = await headers;
  return {
    rows: table.toArray().map((row) => row.toJSON()),
    xCache: received.get('x-cache')[0],
    status: received.get('results-cache-status')[0],
  };
}

describe('views and the results cache over Flight', () => {
  it('GetTables lists the view as VIEW, with its columns', async () => {
    const table = await fetchTable(stub, cmd('CommandGetTables', { includeSchema: true }), authorized());
    const rows = table.toArray().map((row) => row.toJSON());
    expect(rows.map((row) => [row.db_schema_name, row.table_name, row.table_type])).toEqual([
      ['public', 'big_orders', 'VIEW'],
      ['public', 'orders', 'TABLE'],
      ['runtime', 'task_history', 'TABLE'],
    ]);
    const view = readSchema(rows[0]?.table_schema as Uint8Array);
    expect(view.fields.map((field) => `${field.name}:${field.type}`)).toEqual(['id:Int64', 'amount:Int64']);
    const views = await fetchTable(stub, cmd('CommandGetTables', { tableTypes: ['VIEW'] }), authorized());
    expect(views.toArray().map((row) => row.table_name)).toEqual(['big_orders']);
  });

  it("a Flight query is in the task history with protocol 'flight'", async () => {
    const sql = 'SELECT count(*) AS n FROM spice.public.orders WHERE id > 0';
    await query(sql);
    const { rows } = await query(
      `SELECT labels['protocol'] AS protocol FROM spice.runtime.task_history WHERE input = '${sql}'`,
    );
    expect(rows).toEqual([{ protocol: 'flight' }]);
  });

  it('schema lookups (GetTables with schemas) leave no row in the task history, as Spice reads them from its catalog', async () => {
    await fetchTable(stub, cmd('CommandGetTables', { includeSchema: true }), authorized());
    const { rows } = await query(
      "SELECT input, error_message FROM spice.runtime.task_history WHERE input LIKE '%LIMIT 0' OR input LIKE 'SELECT * FROM spice.%'",
    );
    // Before: a 'LIMIT 0' row for each table listed (earlier still, 'The query was cancelled…').
    expect(rows).toEqual([]);
  });

  it("DoGet carries Spice's cache metadata; no-cache bypasses; a swap reads the new snapshot", async () => {
    const sql = 'SELECT id, amount FROM spice.public.big_orders ORDER BY id';
    const first = await query(sql);
    expect(first).toMatchObject({ xCache: 'Miss from spiceai', status: 'MISS' });
    expect(first.rows.map((row) => Number(row.amount))).toEqual([30, 40, 50]);
    await expect.poll(async () => (await query(sql)).status, { timeout: 10_000, interval: 50 }).toBe('HIT');
    const bypassing = authorized();
    bypassing.set('cache-control', 'no-cache');
    const bypass = await query(sql, bypassing);
    expect(bypass).toMatchObject({ xCache: undefined, status: 'BYPASS' });

    await publishSnapshot({
      dataset: 'orders',
      engine: 'duckdb',
      location: `s3://${BUCKET}/spice-runtime/`,
      storeParams: localStoreParams(served.aws),
      source: { sql: 'SELECT i::BIGINT AS id, (i * 100)::BIGINT AS amount FROM range(2) t(i)' },
    });
    const swapped = new Promise<void>((resolve) => {
      const off = served.runtime.on('swap', () => {
        off();
        resolve();
      });
    });
    await served.runtime.send('orders', 'poll.now');
    await swapped;
    const fresh = await query(sql);
    expect(fresh).toMatchObject({ status: 'MISS' });
    expect(fresh.rows.map((row) => Number(row.amount))).toEqual([100]);
  });

  it('a gRPC error never shows the value a secret reference resolved to', async () => {
    const failed = await query(`SELECT CAST('${SECRET}' AS INTEGER) AS n FROM orders`).then(
      () => undefined,
      (error: Error & { details?: string }) => error,
    );
    expect(failed?.details).toBeDefined();
    expect(failed?.details).not.toContain(SECRET);
    expect(failed?.details).toContain(REFERENCE);
    const refused = await query('SELECT 1', bearer('wrong')).then(
      () => undefined,
      (error: Error & { code?: number }) => error,
    );
    expect(refused?.code).toBe(16);
  });
});
