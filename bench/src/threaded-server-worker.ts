/**
 * The workers of `threaded-server.ts`: as a piscina task, one SQLite statement's rows as JSON text;
 * as a plain worker thread, DuckDB statements posted with an id, answered with their rows' JSON on
 * one of a few connections (queued when all are busy).
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import Database from 'better-sqlite3';

const data = workerData as {
  readonly engine: 'sqlite' | 'duckdb';
  readonly path: string;
  readonly threads?: number;
};
if (isMainThread) throw new Error('threaded-server-worker.js runs as a worker thread.');

const sqlite =
  data.engine === 'sqlite' ? new Database(data.path, { readonly: true, fileMustExist: true }) : undefined;

/** The piscina task: an SQLite statement's rows as JSON. */
export default function query(sql: string): string {
  if (sqlite === undefined) throw new Error('this worker runs DuckDB');
  return JSON.stringify(sqlite.prepare(sql).all());
}

if (data.engine === 'duckdb' && parentPort !== null) {
  const port = parentPort;
  const instance = await DuckDBInstance.create(data.path, {
    access_mode: 'READ_ONLY',
    threads: String(data.threads ?? 1),
  });
  const idle: DuckDBConnection[] = [];
  for (let n = 0; n < 4; n++) idle.push(await instance.connect());
  const waiting: ((connection: DuckDBConnection) => void)[] = [];
  port.on('message', async ({ id, sql }: { id: number; sql: string }) => {
    const connection =
      idle.pop() ?? (await new Promise<DuckDBConnection>((resolve) => waiting.push(resolve)));
    try {
      port.postMessage({
        id,
        json: JSON.stringify((await connection.runAndReadAll(sql)).getRowObjectsJson()),
      });
    } catch (error) {
      port.postMessage({ id, error: (error as Error).message });
    } finally {
      const next = waiting.shift();
      if (next === undefined) idle.push(connection);
      else next(connection);
    }
  });
  port.postMessage('ready');
}
