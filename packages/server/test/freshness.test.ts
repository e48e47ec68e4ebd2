/**
 * Freshness a client can hold Ferry to (issue 31), end to end over real HTTP against a real runtime
 * serving a copy of the fixture store: staleness (not age) in `/v1/datasets?status=true`,
 * `/v1/status?datasets=true`, `/metrics` and the embed API's `status()`, growing while the store
 * cannot be read and falling back once it can; `ferry_max_staleness` holding `/v1/ready` back while a
 * dataset is past it, with one warn line per crossing.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { memoryLogger, type PollEvent, type Runtime } from '@ferry/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatasetView } from '../src/index.js';
import { fixtureDir, request, type Served, serve, spicepod, sql } from './helpers.js';
import { parsePrometheus, sampleValue } from './prometheus-parser.js';

/** Resolves with the next `poll` event of `dataset` that `matches`. */
function nextPoll(
  runtime: Runtime,
  dataset: string,
  matches: (event: PollEvent) => boolean,
): Promise<PollEvent> {
  return new Promise((resolve) => {
    const off = runtime.on('poll', (event) => {
      if (event.dataset !== dataset || !matches(event)) return;
      off();
      resolve(event);
    });
  });
}

describe('staleness over HTTP and the embed API', () => {
  let served: Served;
  let base: string;
  let storeDir: string;
  let metadata: string;

  beforeAll(async () => {
    const store = await fixtureDir();
    storeDir = store.dir;
    metadata = await readFile(join(storeDir, 'metadata.json'), 'utf8');
    served = await serve(spicepod({ location: store.location, interval: '500ms' }));
    base = served.server.url;
    await served.runtime.ready(undefined, { timeoutMs: 30_000 });
  });

  afterAll(async () => {
    await served?.close();
    await rm(storeDir, { recursive: true, force: true });
  });

  const view = async (name: string) =>
    (await request(`${base}/v1/datasets?status=true`)).json<DatasetView[]>().find((v) => v.name === name);

  it('a days-old snapshot the writer has not replaced is fresh; an unreadable store makes it stale; a good check makes it fresh again', async () => {
    await nextPoll(
      served.runtime,
      'orders',
      (event) => event.result === 'unchanged' || event.result === 'same',
    );
    const fresh = await view('orders');
    expect(fresh).toMatchObject({ status: 'Ready', snapshotId: 1, newerSnapshotId: null });
    // The snapshot is days old (2026-11-29); the reader checked within the last interval or two.
    expect(Date.now() - Date.parse(fresh?.snapshotTime as string)).toBeGreaterThan(3_600_000);
    expect(fresh?.stalenessSeconds).toBeGreaterThanOrEqual(0);
    expect(fresh?.stalenessSeconds).toBeLessThan(5);

    // The store becomes unreadable: every check fails, and staleness grows past two seconds.
    await writeFile(join(storeDir, 'metadata.json'), '{ not json');
    await nextPoll(served.runtime, 'orders', (event) => event.result === 'failed');
    const stale = await new Promise<number>((resolve) => {
      const off = served.runtime.on('poll', (event) => {
        const ms = served.runtime.status('orders').stalenessMs;
        if (event.dataset === 'orders' && ms !== null && ms > 2_000) {
          off();
          resolve(ms);
        }
      });
    });
    expect(served.runtime.status('orders').stalenessMs).toBeGreaterThanOrEqual(stale);
    expect((await view('orders'))?.stalenessSeconds).toBeGreaterThan(2);
    const families = await parsePrometheus((await request(`${base}/metrics`)).text);
    expect(families.get('ferry_dataset_staleness_seconds')?.type).toBe('gauge');
    expect(sampleValue(families, 'ferry_dataset_staleness_seconds', { dataset: 'orders' })).toBeGreaterThan(
      2,
    );
    // The age gauge is still there, and still the snapshot's age.
    expect(
      sampleValue(families, 'ferry_dataset_snapshot_staleness_seconds', { dataset: 'orders' }),
    ).toBeGreaterThan(3600);
    const status = (await request(`${base}/v1/status?datasets=true`)).json<Record<string, unknown>[]>();
    const row = status.find((item) => item.name === 'dataset:orders');
    expect(row).toMatchObject({ status: 'Ready', snapshot_id: 1 });
    expect(row?.staleness_seconds as number).toBeGreaterThan(2);
    // Without the parameter, /v1/status is Spice's list of endpoints only.
    const plain = (await request(`${base}/v1/status`)).json<Record<string, unknown>[]>();
    expect(plain.every((item) => !String(item.name).startsWith('dataset:'))).toBe(true);

    // The client's bound: past it 503 ERR_STALE with Retry-After; within it, or without one, the rows.
    const statement = 'SELECT count(*) AS n FROM orders';
    const refused = await sql(base, statement, { 'x-ferry-max-staleness': '1s' });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused.json()).toMatchObject({
      code: 'ERR_STALE',
      error: expect.stringMatching(/^Dataset 'orders' is \d+(\.\d)?s stale, past the 1s this query allows/),
    });
    const within = await sql(base, statement, { 'x-ferry-max-staleness': '1h' });
    expect(within.status).toBe(200);
    expect(within.headers.get('x-ferry-snapshot')).toBe('orders=1');
    expect((await sql(base, statement)).status).toBe(200);
    const malformed = await sql(base, statement, { 'x-ferry-max-staleness': 'soon' });
    expect(malformed.status).toBe(400);
    expect(malformed.json()).toMatchObject({ code: 'ERR_INVALID_FRESHNESS_HEADER' });

    // The store is readable again: the next check finds nothing newer, and staleness drops.
    await writeFile(join(storeDir, 'metadata.json'), metadata);
    await nextPoll(
      served.runtime,
      'orders',
      (event) => event.result === 'same' || event.result === 'unchanged',
    );
    expect(served.runtime.status('orders').stalenessMs).toBeLessThan(2_000);
  });
});

describe("a client's bound: on a revalidation (If-None-Match), and values that are not one", () => {
  let served: Served;
  let storeDir: string;

  beforeAll(async () => {
    const store = await fixtureDir();
    storeDir = store.dir;
    // One check an hour: staleness grows from the bootstrap's check.
    served = await serve(spicepod({ location: store.location, interval: '1h' }));
    await served.runtime.ready(undefined, { timeoutMs: 30_000 });
  });

  afterAll(async () => {
    await served?.close();
    await rm(storeDir, { recursive: true, force: true });
  });

  it('a client holding the answer is told it is current (304) only within its bound; past it 503 ERR_STALE; a malformed bound 400', async () => {
    const base = served.server.url;
    const statement = 'SELECT count(*) AS n FROM orders o, users u';
    const first = await sql(base, statement);
    expect(first.status).toBe(200);
    const etag = first.headers.get('etag') as string;
    expect(etag).toMatch(/^".+"$/);
    await expect.poll(() => served.runtime.status('users').stalenessMs).toBeGreaterThan(5);

    const within = await sql(base, statement, { 'if-none-match': etag, 'x-ferry-max-staleness': '1h' });
    expect(within.status).toBe(304);
    const past = await sql(base, statement, { 'if-none-match': etag, 'x-ferry-max-staleness': '5ms' });
    expect(past.status).toBe(503);
    expect(past.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(past.json()).toMatchObject({
      code: 'ERR_STALE',
      error: expect.stringMatching(
        /^Dataset 'orders' is \d+(\.\d)?m?s stale, past the 5ms this query allows/,
      ),
    });
    expect(served.runtime.resultVersion(statement, [], { maxStalenessMs: 3_600_000 })).toBe(
      etag.slice(1).split('.').slice(0, -1).join('.'),
    );
    expect(() => served.runtime.resultVersion(statement, [], { maxStalenessMs: 5 })).toThrow(
      expect.objectContaining({ code: 'ERR_STALE' }),
    );
    const malformed = await sql(base, statement, { 'if-none-match': etag, 'x-ferry-max-staleness': 'soon' });
    expect(malformed.status).toBe(400);
    expect(malformed.json()).toMatchObject({ code: 'ERR_INVALID_FRESHNESS_HEADER' });
    // 0 (any spelling of it, '0.4ms' rounded) accepts only a dataset known current this instant.
    for (const zero of ['0s', '0.4ms', '0m0s']) {
      const answer = await sql(base, statement, { 'x-ferry-max-staleness': zero });
      expect(answer.status).toBe(503);
      expect(answer.json()).toMatchObject({
        code: 'ERR_STALE',
        error: expect.stringContaining('past the 0ms this query allows'),
      });
    }
    // The header sent twice arrives as one list: 400 saying so, not "not a duration".
    const twice = new Headers({ 'content-type': 'text/plain' });
    twice.append('x-ferry-max-staleness', '1h');
    twice.append('x-ferry-max-staleness', '1ms');
    const repeated = await request(`${base}/v1/sql`, { method: 'POST', headers: twice, body: statement });
    expect(repeated.status).toBe(400);
    expect(repeated.json()).toEqual({
      code: 'ERR_INVALID_FRESHNESS_HEADER',
      error:
        "The x-ferry-max-staleness header is not usable: '1h, 1ms' names more than one bound (the header sent twice, or a list); send one duration, such as 30s.",
    });
  });

  it("the embed API's maxStalenessMs: a value that is not a number of milliseconds (0 or more) is a RangeError, not a bound that checks nothing", async () => {
    const { runtime } = served;
    const statement = 'SELECT count(*) AS n FROM orders';
    await expect.poll(() => runtime.status('orders').stalenessMs).toBeGreaterThan(5);
    for (const bad of [Number.NaN, '30s', -1, null]) {
      const options = { maxStalenessMs: bad as number };
      const message =
        /^query options: maxStalenessMs: must be a number of milliseconds, 0 or more \(30_000 for 30 s\), or left out for no bound \(got /;
      await expect(runtime.query(statement, [], options)).rejects.toThrow(message);
      await expect(runtime.queryArrow(statement, [], options)).rejects.toThrow(RangeError);
      await expect(runtime.queryJson(statement, [], options)).rejects.toThrow(RangeError);
      await expect(runtime.queryStream(statement, [], options)).rejects.toThrow(RangeError);
      expect(() => runtime.resultVersion(statement, [], options)).toThrow(RangeError);
    }
    // resultVersion takes the pins a query takes, checked the same way (a negative id matched nothing).
    expect(() => runtime.resultVersion(statement, [], { snapshots: { orders: -1 } })).toThrow(
      /^resultVersion options: snapshots\.orders: must be a whole number, 0 or more \(got -1\)\.$/,
    );
    await expect(runtime.query(statement, [], { maxStalenessMs: 5 })).rejects.toMatchObject({
      code: 'ERR_STALE',
    });
    expect((await runtime.query(statement, [], { maxStalenessMs: Number.POSITIVE_INFINITY })).rows).toEqual([
      { n: 8 },
    ]);
  });
});

describe('X-Ferry-Snapshot: which snapshot of each dataset an answer read', () => {
  let served: Served;
  let storeDir: string;

  beforeAll(async () => {
    const store = await fixtureDir();
    storeDir = store.dir;
    served = await serve(spicepod({ location: store.location }));
    await served.runtime.ready(undefined, { timeoutMs: 30_000 });
  });

  afterAll(async () => {
    await served?.close();
    await rm(storeDir, { recursive: true, force: true });
  });

  it('names every dataset read, in order, beside the two older headers; none for a statement that reads none', async () => {
    const base = served.server.url;
    const joined = await sql(base, 'SELECT count(*) AS n FROM orders o, users u');
    expect(joined.status).toBe(200);
    expect(joined.headers.get('x-ferry-snapshot')).toBe('orders=1, users=0');
    expect(joined.headers.get('x-ferry-dataset')).toBe('orders, users');
    expect(joined.headers.get('x-ferry-snapshot-id')).toBe('1, 0');
    const arrow = await sql(base, 'SELECT * FROM users', { accept: 'application/vnd.apache.arrow.stream' });
    expect(arrow.headers.get('x-ferry-snapshot')).toBe('users=0');
    expect((await sql(base, 'SELECT 1 AS one')).headers.get('x-ferry-snapshot')).toBeNull();
  });

  it("Spice's newer snapshot routes: one snapshot's entry (404 for an id metadata.json lacks); setting the current one is 400 on a reader", async () => {
    const base = served.server.url;
    const listing = (await request(`${base}/v1/datasets/orders/acceleration/snapshots`)).json<{
      snapshots: { snapshot_id: number }[];
    }>();
    const one = await request(`${base}/v1/datasets/orders/acceleration/snapshots/1`);
    expect(one.status).toBe(200);
    expect(one.json()).toEqual(listing.snapshots.find((entry) => entry.snapshot_id === 1));
    expect(one.json()).toMatchObject({ snapshot_id: 1, is_current: true, status: 'verified' });
    const missing = await request(`${base}/v1/datasets/orders/acceleration/snapshots/99`);
    expect(missing.status).toBe(404);
    expect(missing.json()).toMatchObject({
      code: 'ERR_SNAPSHOT_NOT_FOUND',
      error: expect.stringContaining("Snapshot 99 of dataset 'orders' is not recorded in its metadata.json"),
    });
    expect((await request(`${base}/v1/datasets/orders/acceleration/snapshots/x`)).status).toBe(400);
    expect((await request(`${base}/v1/datasets/nope/acceleration/snapshots/1`)).status).toBe(404);

    const set = await request(`${base}/v1/datasets/orders/acceleration/snapshots/current`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ snapshot_id: 1 }),
    });
    expect(set.status).toBe(400);
    expect(set.json()).toMatchObject({
      code: 'ERR_SNAPSHOTS_READ_ONLY',
      error: expect.stringContaining("Dataset 'orders' reads its snapshots from the store"),
    });
    const unknown = await request(`${base}/v1/datasets/nope/acceleration/snapshots/current`, {
      method: 'POST',
    });
    expect(unknown.status).toBe(404);
  });
});

describe('ferry_max_staleness: readiness', () => {
  let served: Served;
  let base: string;
  let storeDir: string;
  let metadata: string;
  const logger = memoryLogger();

  beforeAll(async () => {
    const store = await fixtureDir();
    storeDir = store.dir;
    metadata = await readFile(join(storeDir, 'metadata.json'), 'utf8');
    const yaml = spicepod({
      location: store.location,
      interval: '500ms',
      params: { ferry_max_staleness: '2s' },
    });
    served = await serve(yaml, {}, { logger });
    base = served.server.url;
    await served.runtime.ready(undefined, { timeoutMs: 30_000 });
  });

  afterAll(async () => {
    await served?.close();
    await rm(storeDir, { recursive: true, force: true });
  });

  const crossings = () =>
    logger.records.filter((record) => (record.fields as { component?: string }).component === 'freshness');

  /** Resolves once /v1/ready answers `status` with a text `matches` takes (asked at every poll event). */
  function readyBecomes(status: number, matches: (text: string) => boolean = () => true): Promise<string> {
    return new Promise((resolve) => {
      let done = false;
      const off = served.runtime.on('poll', () => {
        void request(`${base}/v1/ready`).then(
          (answer) => {
            if (done || answer.status !== status || !matches(answer.text)) return;
            done = true;
            off();
            resolve(answer.text);
          },
          () => undefined,
        );
      });
    });
  }

  it('a dataset past its bound is not ready (503 naming it and its figure), ready again when it catches up, one warn line each way', async () => {
    expect((await request(`${base}/v1/ready`)).status).toBe(200);
    expect((await request(`${base}/v1/datasets`)).json<DatasetView[]>()[0]?.maxStalenessSeconds).toBe(2);
    expect(crossings()).toEqual([]);

    await writeFile(join(storeDir, 'metadata.json'), '{ not json');
    const text = await readyBecomes(503, (answer) => answer.includes('orders') && answer.includes('users'));
    expect(text).toMatch(/^not ready: /);
    expect(text).toMatch(/orders \(stale \d+(\.\d)?s > ferry_max_staleness 2s\)/);
    expect(text).toMatch(/users \(stale \d+(\.\d)?s > ferry_max_staleness 2s\)/);
    // Queries are still answered from the snapshot it has: staleness bounds readiness, not service.
    expect(
      (await request(`${base}/v1/sql`, { method: 'POST', body: 'SELECT 1 AS one FROM orders LIMIT 1' }))
        .status,
    ).toBe(200);

    await writeFile(join(storeDir, 'metadata.json'), metadata);
    expect(await readyBecomes(200)).toBe('ready');
    // The watch logs the crossing back within its one-second look.
    await new Promise<void>((resolve) => {
      const look = setInterval(() => {
        if (crossings().length >= 4) {
          clearInterval(look);
          resolve();
        }
      }, 50);
    });
    const lines = crossings().map((record) => [
      record.level,
      (record.fields as { dataset: string }).dataset,
      (record.fields as { ready: boolean }).ready,
    ]);
    expect(lines.filter(([, dataset]) => dataset === 'orders')).toEqual([
      ['warn', 'orders', false],
      ['warn', 'orders', true],
    ]);
    expect(lines.filter(([, dataset]) => dataset === 'users')).toEqual([
      ['warn', 'users', false],
      ['warn', 'users', true],
    ]);
    expect(crossings()[0]?.message).toMatch(/is staler than its ferry_max_staleness \(\d/);
  });
});
