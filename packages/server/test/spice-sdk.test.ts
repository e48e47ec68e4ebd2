/**
 * Spice's own JS SDK (`@spiceai/spice`) as a Ferry client, over HTTP only, against a real runtime
 * serving the fixture store from S3 on a local fauxqs, behind an API key (the SDK sends
 * `X-API-Key`). `httpOnly: true` is the SDK's public switch that keeps it off Arrow Flight: without
 * it the Node build first tries gRPC (and, when its bundled Flight.proto does not load, downloads
 * one), and only falls back to HTTP after a Flight error. Public API only: `sql` (Arrow tables,
 * positional and named parameters), `sqlJson` (rows with the Arrow schema), `refreshAcceleration`,
 * `isSpiceReady` and `isSpiceHealthy`.
 */
import type { RuntimeEvents } from '@ferry/runtime';
import { type LocalAws, nextEventOf, startLocalAws } from '@ferry/test-support';
import { SpiceClient } from '@spiceai/spice';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Served, serveFixtureFromS3 } from './helpers.js';

const KEY = 'sdk-key';

describe('the Spice JS SDK against ferry over HTTP', () => {
  let aws: LocalAws;
  let served: Served;
  let client: SpiceClient;
  const nextEvent = <K extends keyof RuntimeEvents>(
    kind: K,
    predicate: (payload: RuntimeEvents[K]) => boolean,
  ): Promise<RuntimeEvents[K]> => nextEventOf<RuntimeEvents, K>(served.runtime, kind, predicate);
  const sdk = (options: { apiKey?: string } = {}): SpiceClient => {
    const created = new SpiceClient({
      httpUrl: served.server.url,
      httpOnly: true,
      logging: false,
      ...options,
    });
    // An error is an answer here, not something to retry with backoff.
    created.setMaxRetries(0);
    return created;
  };

  beforeAll(async () => {
    aws = await startLocalAws();
    // No scheduled poll while the tests run: every poll here is one a test asked for.
    served = await serveFixtureFromS3(aws, { interval: '1h', server: { apiKey: KEY } });
    client = sdk({ apiKey: KEY });
  });

  afterAll(async () => {
    await served?.close();
    await aws?.close();
  });

  it('sees the runtime healthy at once and ready once both datasets serve', async () => {
    expect(await client.isSpiceHealthy()).toBe(true);
    await served.runtime.ready(undefined, { timeoutMs: 30_000 });
    expect(await client.isSpiceReady()).toBe(true);
    // Health and readiness are open without the key, as in Spice (probes carry none).
    const anonymous = sdk();
    expect(await anonymous.isSpiceHealthy()).toBe(true);
    expect(await anonymous.isSpiceReady()).toBe(true);
    await expect(anonymous.sqlJson('SELECT 1 AS n')).rejects.toThrow();
  });

  it('runs queries and returns Arrow tables', async () => {
    const table = await client.sql('SELECT count(*) AS n FROM orders');
    expect(table.numRows).toBe(1);
    expect(table.schema.fields.map((field) => field.name)).toEqual(['n']);
    expect(table.toArray().map((row) => row.toJSON())).toEqual([{ n: 8 }]);

    const users = await client.sql('SELECT id, name FROM users ORDER BY id');
    expect(users.toArray().map((row) => row.toJSON())).toEqual([
      { id: 1, name: 'ada' },
      { id: 2, name: 'grace' },
      { id: 3, name: null },
    ]);
  });

  it('binds positional $1 parameters on both engines, and named ones', async () => {
    const orders = await client.sql(
      'SELECT id, customer FROM orders WHERE id > $1 AND id <= $2 ORDER BY id',
      {
        parameters: [5, 7],
      },
    );
    expect(orders.toArray().map((row) => row.toJSON())).toEqual([
      { id: 6, customer: 'customer-1' },
      { id: 7, customer: 'customer-2' },
    ]);
    const users = await client.sql('SELECT name FROM users WHERE id = $1', { parameters: [2] });
    expect(users.toArray().map((row) => row.toJSON())).toEqual([{ name: 'grace' }]);
    const named = await client.sql('SELECT id FROM users WHERE name = $who', { parameters: { who: 'ada' } });
    expect(named.toArray().map((row) => row.toJSON())).toEqual([{ id: 1 }]);
  });

  it('returns sqlJson rows with the Arrow schema of the result', async () => {
    const result = await client.sqlJson('SELECT id, amount, shipped FROM orders WHERE id <= 2 ORDER BY id');
    expect(result.row_count).toBe(2);
    expect(result.schema.fields.map((field) => [field.name, field.data_type, field.dict_id])).toEqual([
      ['id', 'Int64', 0],
      ['amount', { Decimal128: [18, 2] }, 0],
      ['shipped', 'Boolean', 0],
    ]);
    expect(result.data).toEqual([
      { id: 1, amount: '0.00', shipped: true },
      { id: 2, amount: '12.50', shipped: false },
    ]);
    expect(result.execution_time_ms).toBeGreaterThanOrEqual(0);
  });

  it('forces a refresh with refreshAcceleration', async () => {
    const polled = nextEvent('poll', (event) => event.dataset === 'orders');
    expect(await client.refreshAcceleration('orders')).toEqual({
      message: 'Dataset refresh triggered for orders.',
    });
    // The store still holds the snapshot the dataset serves.
    expect((await polled).result).toBe('unchanged');
    await expect(client.refreshAcceleration('nope')).rejects.toThrow(/'nope': 404/);
  });

  it("surfaces Ferry's errors with their status", async () => {
    await expect(client.sql('SELECT * FROM customers')).rejects.toThrow(
      /HTTP query failed with status 404: .*ERR_UNKNOWN_DATASET/,
    );
    await expect(client.sql('DELETE FROM orders')).rejects.toThrow(/status 400: .*ERR_WRITE_REJECTED/);
    await expect(sdk().sql('SELECT count(*) FROM orders')).rejects.toThrow(/status 401/);
  });
});
