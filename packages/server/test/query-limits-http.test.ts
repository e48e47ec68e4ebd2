/**
 * The limits of a query over HTTP, as a client meets them: a statement past the query timeout is
 * answered `504 ERR_QUERY_TIMEOUT` on every `Accept` and on both engines (never a 500, never an
 * error-level line), with one warn line naming the query; an answer whose client stops reading is
 * cut after `streamIdleTimeoutMs` — the connection ends without the body's end, so the client sees
 * an incomplete answer — with one warn line, even though nothing reads the blocked body; and
 * Ferry's internal names (generation catalogs, helper tables, DuckDB's catalog views) cannot be
 * read.
 */

import { rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { memoryLogger } from '@ferry/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SQL_MEDIA_TYPES } from '../src/index.js';
import { fixtureDir, type Served, serve, spicepod, sql } from './helpers.js';

const TIMEOUT_MS = 800;
const IDLE_MS = 1_500;
const RUNAWAY = {
  orders: 'SELECT count(*) AS n FROM orders, range(1000000000000) t(i)',
  users: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c, users',
} as const;

let served: Served;
let base: string;
let storeDir: string;
let storeLocation: string;
let logger: ReturnType<typeof memoryLogger>;

beforeAll(async () => {
  const store = await fixtureDir();
  storeDir = store.dir;
  storeLocation = store.location;
  logger = memoryLogger();
  served = await serve(
    spicepod({ location: store.location, interval: '1h' }),
    {},
    { queryTimeoutMs: TIMEOUT_MS, streamIdleTimeoutMs: IDLE_MS, logger },
  );
  base = served.server.url;
  await served.runtime.ready(undefined, { timeoutMs: 30_000 });
});

afterAll(async () => {
  await served?.close();
  await rm(storeDir, { recursive: true, force: true });
});

describe('the query timeout over HTTP', () => {
  it.each(SQL_MEDIA_TYPES)(
    '%s: a runaway statement on either engine answers 504 ERR_QUERY_TIMEOUT',
    async (accept) => {
      for (const [dataset, statement] of Object.entries(RUNAWAY)) {
        const warned = logger.records.filter((record) => record.level === 'warn').length;
        const answer = await sql(base, statement, { accept });
        expect(answer.status, `${dataset} ${accept}`).toBe(504);
        expect(answer.json()).toMatchObject({ code: 'ERR_QUERY_TIMEOUT' });
        const warnings = logger.records.filter((record) => record.level === 'warn').slice(warned);
        expect(warnings).toHaveLength(1);
        expect(warnings[0]?.message).toMatch(/^Query \d+ stopped by a limit: .*ran longer than 800 ms/);
      }
      expect(logger.records.filter((record) => record.level === 'error')).toEqual([]);
    },
  );
});

describe('a client that stops reading', () => {
  // A runtime of its own, whose query timeout does not race the idle one.
  let idle: Served;
  let idleLogger: ReturnType<typeof memoryLogger>;

  beforeAll(async () => {
    idleLogger = memoryLogger();
    idle = await serve(
      spicepod({ location: storeLocation, interval: '1h' }),
      {},
      { streamIdleTimeoutMs: IDLE_MS, logger: idleLogger },
    );
    await idle.runtime.ready(undefined, { timeoutMs: 30_000 });
  });

  afterAll(async () => {
    await idle?.close();
  });

  it('is cut after streamIdleTimeoutMs: the connection ends before the body does, with one warn line', async () => {
    const warnings = (): unknown[] => idleLogger.records.filter((record) => record.level === 'warn');
    const url = new URL(`${idle.server.url}/v1/sql`);
    const outcome = await new Promise<{ status: number; ended: 'complete' | 'cut' }>((resolve, reject) => {
      const req = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: { accept: 'text/csv' },
        },
        (res) => {
          // The headers and the first chunk came; then nothing is read until the server gives up.
          res.once('data', () => {
            res.pause();
            const idle = setInterval(() => {
              if (warnings().length > 0) {
                clearInterval(idle);
                res.resume();
              }
            }, 100);
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, ended: 'complete' }));
          res.on('error', () => resolve({ status: res.statusCode ?? 0, ended: 'cut' }));
          res.on('aborted', () => resolve({ status: res.statusCode ?? 0, ended: 'cut' }));
        },
      );
      req.on('error', reject);
      req.end("SELECT i, repeat('x', 100) AS pad FROM range(1000000000) t(i)");
    });
    expect(outcome).toEqual({ status: 200, ended: 'cut' });
    expect(warnings()).toHaveLength(1);
    expect((warnings()[0] as { message: string }).message).toMatch(
      /stopped by a limit: The result stream was not read for 1500 ms/,
    );
    expect(idleLogger.records.filter((record) => record.level === 'error')).toEqual([]);
  });
});

describe('internal names', () => {
  it.each([
    'SELECT * FROM ferry_g1.main.orders',
    'SELECT * FROM memory.main.ferry_view_names',
    'SELECT * FROM sqlite_master',
    'SELECT * FROM pg_catalog.pg_tables',
  ])('%s is refused, naming no internal object it did not name itself', async (statement) => {
    const answer = await sql(base, statement);
    expect([404, 400]).toContain(answer.status);
    expect(['ERR_UNKNOWN_DATASET', 'ERR_STATEMENT_REJECTED']).toContain(answer.json<{ code: string }>().code);
    const named = new Set(statement.match(/ferry_\w+/gi) ?? []);
    for (const internal of answer.text.match(/ferry_\w+/gi) ?? []) expect(named).toContain(internal);
  });

  it('the listings still name every dataset, and only them', async () => {
    const answer = await sql(base, 'SHOW TABLES', { accept: 'application/json' });
    expect(answer.status).toBe(200);
    const names = (answer.json() as { table_name: string }[]).map((row) => row.table_name).sort();
    expect(names).toContain('orders');
    expect(names).toContain('users');
    expect(names.some((name) => name.startsWith('ferry_'))).toBe(false);
  });
});
