/**
 * Pinned reads (issue 31): a request that sends `X-Ferry-Snapshot: orders=17` reads that snapshot
 * of that dataset while swaps happen, end to end over HTTP, Flight (a plain grpc-js client, call
 * metadata `x-ferry-snapshot`) and the embed API (`snapshots`), against a runtime on a local S3
 * whose datasets the real writer republishes between requests: a DuckDB dataset, an SQLite one, a
 * join across the two; the results cache never answers a pinned request from another snapshot; a
 * snapshot no longer held answers 410 `ERR_SNAPSHOT_GONE` naming the ids held, one newer than any
 * served 404, a malformed header 400 naming the header.
 */
import { type RunningServer, startServer } from '@ferry/server';
import { localStoreParams } from '@ferry/test-support';
import { publishSnapshot } from '@ferry/writer';
import { status as grpcStatus, type Metadata } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BUCKET,
  bearer,
  type FlightStub,
  flightStub,
  type Served,
  serveDatasets,
  statementWithMetadata,
} from './support.js';

const PREFIX = 'pinned/';
/** Rows that all carry `version`, so an answer shows which snapshot it read. */
const versionSql = (version: number, rows = 10) =>
  `SELECT i::BIGINT AS id, ${version}::BIGINT AS version FROM range(${rows}) t(i)`;

let served: Served;
let http: RunningServer;
let stub: FlightStub;

beforeAll(async () => {
  served = await serveDatasets(
    [
      { name: 'orders', engine: 'duckdb', sql: versionSql(1) },
      { name: 'users', engine: 'sqlite', sql: versionSql(1) },
    ],
    { prefix: PREFIX },
  );
  http = await startServer(served.runtime, { port: 0 });
  stub = flightStub(served.flight.address);
});

afterAll(async () => {
  stub?.close();
  await http?.close();
  await served?.close();
});

/** Publishes `version` of `dataset` and waits until the runtime swapped to it; its snapshot id. */
async function swapTo(dataset: string, engine: 'duckdb' | 'sqlite', version: number): Promise<number> {
  const published = await publishSnapshot({
    dataset,
    engine,
    location: `s3://${BUCKET}/${PREFIX}`,
    storeParams: localStoreParams(served.aws),
    source: { sql: versionSql(version) },
  });
  const swapped = new Promise<{ to: number }>((resolve) => {
    const off = served.runtime.on('swap', (event) => {
      if (event.dataset !== dataset) return;
      off();
      resolve(event);
    });
  });
  await served.runtime.send(dataset, 'poll.now');
  expect((await swapped).to).toBe(published.snapshotId);
  return published.snapshotId;
}

const serving = (dataset: string): number =>
  served.runtime.status(dataset).status?.servingSnapshotId as number;

/** POST /v1/sql with `headers`: status, JSON body, and the answer's headers. */
async function httpSql(sql: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${http.url}/v1/sql`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', accept: 'application/json', ...headers },
    body: sql,
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as unknown };
}

const flightSql = (sql: string, metadata: Metadata) => statementWithMetadata(stub, sql, metadata);

const pinned = (value: string): Metadata => {
  const metadata = bearer();
  metadata.set('x-ferry-snapshot', value);
  return metadata;
};

const ORDERS = 'SELECT max(version) AS v, count(*) AS n FROM orders';
const USERS = 'SELECT max(version) AS v, count(*) AS n FROM users';
const BOTH = 'SELECT (SELECT max(version) FROM orders) AS o, (SELECT max(version) FROM users) AS u';

describe('pinned reads while swaps happen', () => {
  let orders1: number;
  let users1: number;

  it('a pin reads the pinned snapshot after a swap; no pin reads the new one (embed, HTTP, Flight; DuckDB, SQLite, a join)', async () => {
    orders1 = serving('orders');
    users1 = serving('users');
    // Pinned to the current snapshot before the swap: the answer the client will page through.
    const before = await served.runtime.query(ORDERS, [], { snapshots: { orders: orders1 } });
    expect(before).toMatchObject({
      rows: [{ v: 1, n: 10 }],
      datasets: [{ name: 'orders', snapshotId: orders1 }],
    });

    const orders2 = await swapTo('orders', 'duckdb', 2);
    const users2 = await swapTo('users', 'sqlite', 2);
    expect(orders2).not.toBe(orders1);

    // The embed API.
    expect(await served.runtime.query(ORDERS, [], { snapshots: { orders: orders1 } })).toMatchObject({
      rows: [{ v: 1, n: 10 }],
      datasets: [{ name: 'orders', snapshotId: orders1 }],
    });
    expect((await served.runtime.query(ORDERS)).rows).toEqual([{ v: 2, n: 10 }]);
    expect(await served.runtime.query(USERS, [], { snapshots: { users: users1 } })).toMatchObject({
      rows: [{ v: 1, n: 10 }],
      datasets: [{ name: 'users', snapshotId: users1 }],
      engine: 'sqlite',
    });
    expect((await served.runtime.query(USERS)).rows).toEqual([{ v: 2, n: 10 }]);
    // A join across engines, one side pinned: each dataset at its own snapshot.
    const join = await served.runtime.query(BOTH, [], { snapshots: { orders: orders1 } });
    expect(join.rows).toEqual([{ o: 1, u: 2 }]);
    expect(join.datasets).toEqual(
      expect.arrayContaining([
        { name: 'orders', snapshotId: orders1 },
        { name: 'users', snapshotId: users2 },
      ]),
    );
    const both = await served.runtime.query(BOTH, [], { snapshots: { orders: orders1, users: users1 } });
    expect(both.rows).toEqual([{ o: 1, u: 1 }]);
    // A stream, pinned.
    const stream = await served.runtime.queryStream('SELECT version FROM orders', [], {
      snapshots: { orders: orders1 },
    });
    const versions: number[] = [];
    for await (const batch of stream.batches) {
      for (const row of batch) versions.push(Number(row?.version));
    }
    expect(new Set(versions)).toEqual(new Set([1]));
    expect(stream.datasets).toEqual([{ name: 'orders', snapshotId: orders1 }]);

    // HTTP: the request header in the answer header's syntax; the answer says what it read.
    const pinnedHttp = await httpSql(ORDERS, { 'x-ferry-snapshot': `orders=${orders1}` });
    expect(pinnedHttp.status).toBe(200);
    expect(pinnedHttp.body).toEqual([{ v: 1, n: 10 }]);
    expect(pinnedHttp.headers.get('x-ferry-snapshot')).toBe(`orders=${orders1}`);
    const sqliteHttp = await httpSql(USERS, { 'x-ferry-snapshot': `users=${users1}, orders=${orders2}` });
    expect(sqliteHttp.body).toEqual([{ v: 1, n: 10 }]);
    expect(sqliteHttp.headers.get('x-ferry-snapshot')).toBe(`users=${users1}`);
    const plainHttp = await httpSql(ORDERS);
    expect(plainHttp.body).toEqual([{ v: 2, n: 10 }]);
    expect(plainHttp.headers.get('x-ferry-snapshot')).toBe(`orders=${orders2}`);

    // Flight: call metadata.
    const flight = await flightSql('SELECT version FROM orders', pinned(`orders=${orders1}`));
    expect(flight.snapshot).toBe(`orders=${orders1}`);
    expect(new Set(flight.table.getChild('version')?.toArray() as BigInt64Array)).toEqual(new Set([1n]));
    const flightUsers = await flightSql('SELECT version FROM users', pinned(`users=${users1}`));
    expect(flightUsers.snapshot).toBe(`users=${users1}`);
    expect(new Set(flightUsers.table.getChild('version')?.toArray() as BigInt64Array)).toEqual(new Set([1n]));
    const flightPlain = await flightSql('SELECT version FROM orders', bearer());
    expect(flightPlain.snapshot).toBe(`orders=${orders2}`);
  });

  it('the results cache never answers a pinned request from another snapshot', async () => {
    const sql = 'SELECT max(version) AS v FROM orders WHERE id >= ?';
    const current = serving('orders');
    expect((await served.runtime.query(sql, [0])).rows).toEqual([{ v: 2 }]);
    await new Promise((resolve) => setImmediate(resolve));
    expect((await served.runtime.query(sql, [0])).cache).toBe('hit');
    // The same statement pinned to the earlier snapshot: run there, never the cached answer.
    const early = await served.runtime.query(sql, [0], { snapshots: { orders: orders1 } });
    expect(early).toMatchObject({ rows: [{ v: 1 }], datasets: [{ name: 'orders', snapshotId: orders1 }] });
    expect(early.cache).not.toBe('hit');
    // Pinned to the current snapshot, the cached answer is that snapshot's: it may answer.
    const now = await served.runtime.query(sql, [0], { snapshots: { orders: current } });
    expect(now).toMatchObject({ rows: [{ v: 2 }], cache: 'hit' });
    // Over HTTP too: the cached answer is not the pinned one's, nor is its ETag.
    const plain = await httpSql('SELECT max(version) AS v FROM orders WHERE id >= 0');
    const again = await httpSql('SELECT max(version) AS v FROM orders WHERE id >= 0', {
      'x-ferry-snapshot': `orders=${orders1}`,
      'if-none-match': plain.headers.get('etag') ?? '',
    });
    expect(again.status).toBe(200);
    expect(again.body).toEqual([{ v: 1 }]);
    expect(again.headers.get('etag')).not.toBe(plain.headers.get('etag'));
  });

  it('a snapshot no longer held answers 410 naming the ids held; one never served 404; a malformed header 400', async () => {
    // Three more swaps: the first snapshot is no longer held (ferry_retain_snapshots' default
    // holds the current one and the one before).
    for (const version of [3, 4, 5]) await swapTo('orders', 'duckdb', version);
    const newest = serving('orders');
    const gone = await served.runtime.query(ORDERS, [], { snapshots: { orders: orders1 } }).then(
      (answer) => answer as unknown as { held: number[] },
      (error: { held: number[] }) => error,
    );
    expect(gone).toMatchObject({ name: 'SnapshotGoneError', dataset: 'orders', snapshotId: orders1 });
    const held = (gone as { held: number[] }).held;
    expect(held).toEqual([newest, newest - 1]);
    // Every snapshot it says it holds answers.
    for (const id of held) {
      const read = await served.runtime.query(ORDERS, [], { snapshots: { orders: id } });
      expect(read.datasets).toEqual([{ name: 'orders', snapshotId: id }]);
    }

    const goneHttp = await httpSql(ORDERS, { 'x-ferry-snapshot': `orders=${orders1}` });
    expect(goneHttp.status).toBe(410);
    expect(goneHttp.body).toMatchObject({
      code: 'ERR_SNAPSHOT_GONE',
      error: expect.stringContaining(
        `Snapshot ${orders1} of dataset 'orders' is no longer held by this reader (it holds ${held.join(', ')})`,
      ),
    });
    const goneFlight = flightSql('SELECT version FROM orders', pinned(`orders=${orders1}`));
    await expect(goneFlight).rejects.toMatchObject({ code: grpcStatus.FAILED_PRECONDITION });
    await expect(goneFlight).rejects.toThrow(/is no longer held by this reader/);

    const never = await httpSql(ORDERS, { 'x-ferry-snapshot': `orders=${newest + 1000}` });
    expect(never.status).toBe(404);
    expect(never.body).toMatchObject({ code: 'ERR_SNAPSHOT_NOT_FOUND' });
    await expect(
      served.runtime.query(ORDERS, [], { snapshots: { orders: newest + 1000 } }),
    ).rejects.toMatchObject({ name: 'PinnedSnapshotUnknownError', code: 'ERR_SNAPSHOT_NOT_FOUND' });
    await expect(
      flightSql('SELECT version FROM orders', pinned(`orders=${newest + 1000}`)),
    ).rejects.toMatchObject({
      code: grpcStatus.NOT_FOUND,
    });

    const unknown = await httpSql(ORDERS, { 'x-ferry-snapshot': 'nope=1' });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ code: 'ERR_UNKNOWN_DATASET' });

    const malformed = await httpSql(ORDERS, { 'x-ferry-snapshot': 'orders' });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({
      code: 'ERR_INVALID_FRESHNESS_HEADER',
      error: expect.stringMatching(
        /^The X-Ferry-Snapshot header is not usable: 'orders' names no snapshot; send 'dataset=snapshotId' pairs/,
      ),
    });
    const malformedFlight = flightSql('SELECT version FROM orders', pinned('orders=latest'));
    await expect(malformedFlight).rejects.toMatchObject({ code: grpcStatus.INVALID_ARGUMENT });
    await expect(malformedFlight).rejects.toThrow(/X-Ferry-Snapshot header is not usable/);

    // The listing marks the snapshots this reader holds.
    const listing = (await (await fetch(`${http.url}/v1/datasets/orders/acceleration/snapshots`)).json()) as {
      snapshots: { snapshot_id: number; held: boolean }[];
    };
    expect(listing.snapshots.filter((entry) => entry.held).map((entry) => entry.snapshot_id)).toEqual(
      expect.arrayContaining(held),
    );
    expect(listing.snapshots.filter((entry) => entry.held)).toHaveLength(2);

    // No header: today's answer (what Spice's SDK sends).
    const plain = await httpSql(ORDERS);
    expect(plain).toMatchObject({ status: 200, body: [{ v: 5, n: 10 }] });
  });
});
