/**
 * B15's heavy queries and how one is sent (`burst-client.ts` sends a burst of them from a process
 * of its own; the scenario warms the server with a few).
 */
import { type Agent, request } from 'node:http';

export const DUCK = 'o_duck';
export const LITE = 'o_lite';
/** Rows each heavy query answers (as JSON, the default `Accept`). */
export const ANSWER_ROWS = 1_000;

/**
 * A heavy query: a scan of the whole table, a sort, and 1 000 rows answered as JSON; every text new
 * (its literals), so none is answered from the results cache. DuckDB and SQLite in turn.
 */
export function heavy(n: number): string {
  const table = n % 2 === 0 ? DUCK : LITE;
  return `SELECT id, category, amount, note FROM ${table} WHERE qty <> ${n % 7} AND id >= ${n} ORDER BY amount DESC, id LIMIT ${ANSWER_ROWS}`;
}

export interface Answer {
  readonly status: number;
  readonly retryAfter: string | undefined;
  readonly ms: number;
  readonly error?: string;
}

/**
 * `POST /v1/sql` with a text body, on a connection of its own unless `agent` keeps them; the body is
 * read whole (and dropped). Never rejects: a failed request answers status 0 with its error.
 */
export function post(base: URL, sql: string, agent: Agent | false = false): Promise<Answer> {
  const began = performance.now();
  return new Promise((resolve) => {
    const req = request(
      {
        agent,
        host: base.hostname,
        port: base.port,
        path: '/v1/sql',
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(sql) },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          const retry = res.headers['retry-after'];
          resolve({ status: res.statusCode ?? 0, retryAfter: retry, ms: performance.now() - began });
        });
        res.on('error', (error) =>
          resolve({ status: 0, retryAfter: undefined, ms: performance.now() - began, error: error.message }),
        );
      },
    );
    req.on('error', (error) =>
      resolve({ status: 0, retryAfter: undefined, ms: performance.now() - began, error: error.message }),
    );
    req.end(sql);
  });
}
