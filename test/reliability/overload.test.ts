/**
 * Overload against `ferry serve` as a user runs it (a child process, its CLI, HTTP), with a small
 * admission bound set in the spicepod (`runtime.query.ferry_max_in_flight: 4`): past the bound a
 * query is refused at once — 429 `ERR_QUERY_REJECTED` with `Retry-After` — never queued, while
 * `/health` and `/v1/ready` go on answering; and a burst of heavy queries on both engines, many more
 * than the bound, ends with every query either answered whole (200) or refused (429), none failed.
 * The bound is held deterministically by answers their clients do not read (their queries stay
 * admitted until the server is done with them). Flight's `RESOURCE_EXHAUSTED` and the embed API's
 * `QueryRejectedError` at the bound are tested in packages/flight/test/admission.test.ts and
 * packages/runtime/test/admission.test.ts.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ordersAndUsersPod, publishOrdersAndUsers, type Served, serveChild } from './serve-child.js';
import { tempDir } from './support.js';

const BOUND = 4;
const ROWS = 20_000;
/** Rows each heavy query answers. */
const ANSWER_ROWS = 2_000;

let work: string;
let served: Served;

/** A whole-table scan, a sort and 2 000 rows answered; a new text each time (no cache hit). */
function heavy(n: number): string {
  const table = n % 2 === 0 ? 'orders' : 'users';
  return `SELECT id, name, amount FROM ${table} WHERE id >= ${n} ORDER BY amount DESC, id LIMIT ${ANSWER_ROWS}`;
}

interface Answer {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly code: string | undefined;
  readonly rows: number;
}

async function post(sql: string): Promise<Answer> {
  const response = await fetch(`${served.url}/v1/sql`, { method: 'POST', body: sql });
  const body = (await response.json()) as unknown;
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    code: Array.isArray(body) ? undefined : (body as { code?: string }).code,
    rows: Array.isArray(body) ? body.length : 0,
  };
}

async function probe(path: string): Promise<number> {
  const response = await fetch(`${served.url}${path}`);
  await response.arrayBuffer();
  return response.status;
}

beforeAll(async () => {
  work = await tempDir('ferry-overload-');
  const store = join(work, 'store');
  await publishOrdersAndUsers(
    store,
    `SELECT i::BIGINT AS id, 'name-' || i AS name, ((i * 7919) % 100000) / 100.0 AS amount FROM range(${ROWS}) t(i)`,
  );
  const pod = join(work, 'spicepod.yaml');
  await writeFile(pod, ordersAndUsersPod('overload', store, { ferry_max_in_flight: String(BOUND) }));
  served = await serveChild(pod, join(work, 'data'));
}, 180_000);

afterAll(async () => {
  served?.child.kill('SIGKILL');
  await served?.exited;
  await rm(work, { recursive: true, force: true });
});

describe.skipIf(process.platform !== 'linux')('overload', { timeout: 180_000 }, () => {
  it('past the bound, queries are refused at once with 429 and Retry-After while /health and /v1/ready answer', async () => {
    // The bound held: answers of millions of rows whose clients read nothing, so the server cannot
    // finish writing them.
    const holders = Array.from({ length: BOUND }, () => new AbortController());
    const held = await Promise.all(
      holders.map((holder) =>
        fetch(`${served.url}/v1/sql`, {
          method: 'POST',
          headers: { accept: 'application/vnd.apache.arrow.stream' },
          body: "SELECT i, repeat('x', 200) AS pad FROM range(20000000) t(i)",
          signal: holder.signal,
        }),
      ),
    );
    for (const response of held) expect(response.status).toBe(200);
    try {
      const refused = await Promise.all(Array.from({ length: 40 }, (_, n) => post(heavy(n))));
      for (const answer of refused) {
        expect(answer).toMatchObject({ status: 429, code: 'ERR_QUERY_REJECTED' });
        expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
      }
      expect(await probe('/health')).toBe(200);
      expect(await probe('/v1/ready')).toBe(200);
    } finally {
      for (const holder of holders) holder.abort();
    }
    // The held answers' clients went away: their queries end and free the bound, which a query
    // admitted again shows.
    for (let tries = 0; (await post('SELECT 1 AS one')).status !== 200; tries++) {
      expect(tries).toBeLessThan(600);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  it('a burst of heavy queries on both engines: each answered whole or refused, none failed, /health answering throughout', async () => {
    let settled = false;
    const probes: number[] = [];
    const probing = (async () => {
      while (!settled) probes.push(await probe('/health'));
    })();
    const answers = await Promise.all(Array.from({ length: 120 }, (_, n) => post(heavy(1_000 + n))));
    settled = true;
    await probing;
    const statuses = new Set(answers.map((answer) => answer.status));
    expect([...statuses].every((status) => status === 200 || status === 429)).toBe(true);
    const answered = answers.filter((answer) => answer.status === 200);
    const refused = answers.filter((answer) => answer.status === 429);
    // The bound was free when the burst came: the first to arrive were admitted.
    expect(answered.length).toBeGreaterThan(0);
    for (const answer of answered) expect(answer.rows).toBe(ANSWER_ROWS);
    for (const answer of refused) expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(probes.length).toBeGreaterThan(0);
    expect(probes.every((status) => status === 200)).toBe(true);
  });
});
