/**
 * The workers of `threaded-server.ts`: as a piscina task, one SQLite statement's rows as JSON text;
 * as a plain worker thread, DuckDB statements posted with an id, answered with their rows' JSON on
 * one of a few connections (queued when all are busy).
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { duckDbRows } from './duckdb-rows.js';

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
  const duckdb = await duckDbRows(data.path, { threads: data.threads ?? 1 });
  port.on('message', ({ id, sql }: { id: number; sql: string }) => {
    duckdb(sql).then(
      (rows) => port.postMessage({ id, json: JSON.stringify(rows) }),
      (error: unknown) => port.postMessage({ id, error: (error as Error).message }),
    );
  });
  port.postMessage('ready');
}
