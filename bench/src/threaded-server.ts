/**
 * B9's second baseline: the plain server of `plain-server.ts` in the thread shape Ferry's design
 * fixes (docs/threads.md) and nothing else — `node:http` on the main thread, SQLite statements on
 * a piscina pool of one better-sqlite3 worker per core (`prepare(text).all()`), DuckDB statements
 * on one worker thread holding the instance (`runAndReadAll(text)` on a few connections, DuckDB's
 * own threads one per core as Ferry sets them). Each worker answers the rows as their JSON text; the
 * main thread writes it. No cache, no limits, no history, no Arrow: what it costs is the floor of a
 * server with that shape. Run as a child process: `node threaded-server.js <duckdb file> <sqlite
 * file> <sqlite table>`; it prints `Listening on http://HOST:PORT` once it accepts requests.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { serveSql } from './sql-server.js';

const [duckdbPath, sqlitePath, sqliteTable] = process.argv.slice(2);
if (duckdbPath === undefined || sqlitePath === undefined || sqliteTable === undefined) {
  throw new Error('usage: threaded-server.js <duckdb file> <sqlite file> <sqlite table>');
}
const workerFile = new URL('./threaded-server-worker.js', import.meta.url);

const sqlite = new Piscina<string, string>({
  filename: workerFile.href,
  workerData: { engine: 'sqlite', path: sqlitePath },
  minThreads: availableParallelism(),
  maxThreads: availableParallelism(),
});

type Reply = { readonly id: number; readonly json?: string; readonly error?: string };
const duckdb = new Worker(workerFile, {
  workerData: { engine: 'duckdb', path: duckdbPath, threads: availableParallelism() },
});
const pending = new Map<number, (reply: Reply) => void>();
let ids = 0;
// The worker's first message says its connections are open.
await new Promise((resolve, reject) => {
  duckdb.once('message', resolve);
  duckdb.once('error', reject);
});
duckdb.on('message', (reply: Reply) => {
  pending.get(reply.id)?.(reply);
  pending.delete(reply.id);
});

function inDuckDb(sql: string): Promise<string> {
  const id = ++ids;
  duckdb.postMessage({ id, sql });
  return new Promise((resolve, reject) =>
    pending.set(id, (reply) =>
      reply.json === undefined ? reject(new Error(reply.error)) : resolve(reply.json),
    ),
  );
}

serveSql((sql) => (sql.includes(sqliteTable) ? sqlite.run(sql) : inDuckDb(sql)));
