/**
 * Freshness over Flight (issue 31), with a plain grpc-js Flight SQL client against a runtime on a
 * local S3: DoGet's response metadata names the snapshot of each dataset read (`x-ferry-snapshot`),
 * and a call's `x-ferry-max-staleness` refuses a read of a dataset staler than it with
 * `UNAVAILABLE` naming `ERR_STALE` (the embed API's `maxStalenessMs` the same, as `StaleReadError`).
 */

import { localStoreParams } from '@ferry/test-support';
import { publishSnapshot } from '@ferry/writer';
import { status as grpcStatus, type Metadata } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BUCKET,
  bearer,
  call,
  collect,
  type FlightInfoMessage,
  type FlightStub,
  flightStub,
  ORDERS_SQL,
  type Served,
  serveDatasets,
  sqlCommand,
  statementWithMetadata,
  tableOf,
  USERS_SQL,
} from './support.js';

let served: Served;
let stub: FlightStub;

beforeAll(async () => {
  served = await serveDatasets(
    [
      { name: 'orders', engine: 'duckdb', sql: ORDERS_SQL },
      { name: 'users', engine: 'duckdb', sql: USERS_SQL },
    ],
    { prefix: 'freshness/' },
  );
  stub = flightStub(served.flight.address);
});

afterAll(async () => {
  stub?.close();
  await served?.close();
});

/** GetFlightInfo then DoGet with `metadata` (DoGet with `doGet` when given); the rows and DoGet's response metadata. */
async function query(sql: string, metadata: Metadata, doGet: Metadata = metadata) {
  const { table, snapshot } = await statementWithMetadata(stub, sql, metadata, doGet);
  return { rows: table.numRows, snapshot };
}

const withBound = (bound: string): Metadata => {
  const metadata = bearer();
  metadata.set('x-ferry-max-staleness', bound);
  return metadata;
};

describe('freshness over Flight', () => {
  it('DoGet names the snapshot of each dataset read; a call without a bound is not checked', async () => {
    const joined = await query('SELECT o.id FROM orders o JOIN users u ON o.id = u.id', bearer());
    expect(joined.rows).toBeGreaterThan(0);
    const orders = served.runtime.status('orders').status?.servingSnapshotId;
    const users = served.runtime.status('users').status?.servingSnapshotId;
    expect(joined.snapshot).toBe(`orders=${orders}, users=${users}`);
  });

  it('x-ferry-max-staleness: within it the rows come; past it UNAVAILABLE naming ERR_STALE, the dataset and both figures', async () => {
    // refresh_check_interval is 1h: staleness grows from the bootstrap's check.
    await expect
      .poll(() => served.runtime.status('orders').stalenessMs, { timeout: 5_000 })
      .toBeGreaterThan(5);
    expect((await query('SELECT id FROM orders', withBound('1h'))).rows).toBeGreaterThan(0);
    const refused = query('SELECT id FROM orders', withBound('1ms'));
    await expect(refused).rejects.toMatchObject({ code: grpcStatus.UNAVAILABLE });
    await expect(refused).rejects.toThrow(
      /Dataset 'orders' is \d+(\.\d)?m?s stale, past the 1ms this query allows \(X-Ferry-Max-Staleness\)/,
    );
    const malformed = query('SELECT id FROM orders', withBound('soon'));
    await expect(malformed).rejects.toMatchObject({ code: grpcStatus.INVALID_ARGUMENT });
    await expect(malformed).rejects.toThrow(
      /x-ferry-max-staleness header is not usable: 'soon' is not a duration/,
    );
  });

  it('the bound holds where it is sent: on DoGet of a ticket GetFlightInfo made without one', async () => {
    await expect
      .poll(() => served.runtime.status('orders').stalenessMs, { timeout: 5_000 })
      .toBeGreaterThan(5);
    expect((await query('SELECT id FROM orders', bearer(), withBound('1h'))).rows).toBeGreaterThan(0);
    const refused = query('SELECT id FROM orders', bearer(), withBound('1ms'));
    await expect(refused).rejects.toMatchObject({ code: grpcStatus.UNAVAILABLE });
    await expect(refused).rejects.toThrow(
      /Dataset 'orders' is \d+(\.\d)?m?s stale, past the 1ms this query allows/,
    );
  });

  it('a key sent twice is INVALID_ARGUMENT (as HTTP joins a repeated header), not its first value', async () => {
    const twice = withBound('1h');
    twice.add('x-ferry-max-staleness', '1ms');
    const repeated = query('SELECT id FROM orders', twice);
    await expect(repeated).rejects.toMatchObject({ code: grpcStatus.INVALID_ARGUMENT });
    await expect(repeated).rejects.toThrow(
      /x-ferry-max-staleness header is not usable: '1h, 1ms' names more than one bound/,
    );
  });

  it('a result read at a snapshot replaced before its DoGet is judged by that snapshot, not by the one now served', async () => {
    // orders' snapshot goes unchecked (refresh_check_interval 1h) for over 3 s.
    await expect
      .poll(() => served.runtime.status('orders').stalenessMs, { timeout: 10_000, interval: 100 })
      .toBeGreaterThan(3_000);
    const read = served.runtime.status('orders').status?.servingSnapshotId;
    const getFlightInfo = (metadata: Metadata) =>
      call<FlightInfoMessage>((done) =>
        stub.GetFlightInfo(
          { type: 'CMD', cmd: sqlCommand('CommandStatementQuery', { query: 'SELECT id FROM orders' }) },
          metadata,
          done,
        ),
      );
    const info = await getFlightInfo(bearer());
    // The same read pinned to that snapshot (on GetFlightInfo only, where the statement runs).
    const pinnedMetadata = bearer();
    pinnedMetadata.set('x-ferry-snapshot', `orders=${read}`);
    const pinned = await getFlightInfo(pinnedMetadata);
    // A newer snapshot is published and swapped in: the dataset is fresh again (its check just now).
    const published = await publishSnapshot({
      dataset: 'orders',
      engine: 'duckdb',
      location: `s3://${BUCKET}/freshness/`,
      storeParams: localStoreParams(served.aws),
      source: { sql: ORDERS_SQL },
    });
    const swapped = new Promise<void>((resolve) => {
      const off = served.runtime.on('swap', (event) => {
        if (event.dataset !== 'orders' || event.to !== published.snapshotId) return;
        off();
        resolve();
      });
    });
    await served.runtime.send('orders', 'poll.now');
    await swapped;
    expect(served.runtime.status('orders').stalenessMs).toBeLessThan(2_000);
    // The ticket's rows are the replaced snapshot's, last known current over 3 s ago: past 2 s.
    const doGet = stub.DoGet({ ticket: info.endpoint[0]?.ticket.ticket as Buffer }, withBound('2s'));
    const refused = collect(doGet);
    await expect(refused).rejects.toMatchObject({ code: grpcStatus.UNAVAILABLE });
    await expect(refused).rejects.toThrow(
      /Dataset 'orders' is \d+(\.\d)?s stale, past the 2s this query allows/,
    );
    expect(read).not.toBe(published.snapshotId);
    // A pinned read is judged as the dataset (pin and bound answer different questions).
    const pinnedRows = await collect(
      stub.DoGet({ ticket: pinned.endpoint[0]?.ticket.ticket as Buffer }, withBound('2s')),
    );
    expect(tableOf(pinnedRows).numRows).toBeGreaterThan(0);
    // Read again, the current snapshot is within the bound.
    expect((await query('SELECT id FROM orders', withBound('2s'))).snapshot).toBe(
      `orders=${published.snapshotId}`,
    );
  });

  it('the embed API: maxStalenessMs refuses with StaleReadError, names the snapshot in datasets', async () => {
    const fine = await served.runtime.query('SELECT count(*) AS n FROM orders', [], {
      maxStalenessMs: 3_600_000,
    });
    expect(fine.datasets).toEqual([
      { name: 'orders', snapshotId: served.runtime.status('orders').status?.servingSnapshotId },
    ]);
    await expect(
      served.runtime.query('SELECT count(*) AS n FROM orders', [], { maxStalenessMs: 1 }),
    ).rejects.toMatchObject({
      name: 'StaleReadError',
      code: 'ERR_STALE',
      dataset: 'orders',
      maxStalenessMs: 1,
    });
    const stream = served.runtime.queryArrow('SELECT id FROM users', [], { maxStalenessMs: 1 });
    await expect(stream).rejects.toMatchObject({ code: 'ERR_STALE', dataset: 'users' });
    // A statement that reads no dataset is never stale.
    expect((await served.runtime.query('SELECT 1 AS one', [], { maxStalenessMs: 1 })).rows).toEqual([
      { one: 1 },
    ]);
  });
});
