/**
 * Admission control over HTTP: with the runtime's `maxQueriesInFlight` queries admitted (streams
 * held open and unread), `POST /v1/sql` is answered at once with 429, `ERR_QUERY_REJECTED` and a
 * `Retry-After` header in whole seconds, for JSON and Arrow alike; once those queries end, the same
 * request is answered 200.
 */
import { rm } from 'node:fs/promises';
import type { RuntimeQueryStream } from '@ferry/runtime';
import { queriesInFlight, queryAdmission } from '@ferry/runtime/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARROW_STREAM_TYPE } from '../src/index.js';
import { fixtureDir, type Served, serve, spicepod, sql } from './helpers.js';

const CAP = 2;
let served: Served;
let base: string;
let storeDir: string;

beforeAll(async () => {
  const store = await fixtureDir();
  storeDir = store.dir;
  served = await serve(
    spicepod({ location: store.location, interval: '1h' }),
    {},
    { maxQueriesInFlight: CAP },
  );
  base = served.server.url;
  await served.runtime.ready(undefined, { timeoutMs: 30_000 });
});

afterAll(async () => {
  await served?.close();
  await rm(storeDir, { recursive: true, force: true });
});

async function drained(): Promise<void> {
  const started = performance.now();
  while (queriesInFlight(served.runtime) > 0 || queryAdmission(served.runtime).inFlight > 0) {
    if (performance.now() - started > 15_000) throw new Error('a query still runs');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('admission over HTTP', () => {
  it('answers 429 with Retry-After past the cap, at once, and 200 again once the queries end', async () => {
    const streams: RuntimeQueryStream[] = [];
    for (let n = 0; n < CAP; n++) {
      streams.push(
        await served.runtime.queryStream('SELECT * FROM range(100000000) t(i)', [], { batchRows: 1024 }),
      );
    }
    try {
      for (const accept of ['application/json', ARROW_STREAM_TYPE]) {
        const began = performance.now();
        const refused = await sql(base, 'SELECT count(*) AS n FROM orders', { accept });
        expect(performance.now() - began).toBeLessThan(2_000);
        expect(refused.status).toBe(429);
        expect(refused.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
        expect(refused.json()).toEqual({
          code: 'ERR_QUERY_REJECTED',
          error: expect.stringMatching(
            /already has 2 queries in flight.*retry in \d+ s, or raise maxQueriesInFlight\./,
          ),
        });
      }
    } finally {
      for (const stream of streams) stream.cancel();
    }
    await drained();
    const answered = await sql(base, 'SELECT count(*) AS n FROM orders');
    expect(answered.status).toBe(200);
    expect(answered.headers.get('retry-after')).toBeNull();
  });
});
