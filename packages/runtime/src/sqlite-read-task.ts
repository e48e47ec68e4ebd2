/**
 * The piscina task that runs SQLite reads. Stateless as far as the pool is concerned: each task
 * names the dataset's live file and its generation; the worker keeps one read-only connection per
 * file and reopens it when the generation moves (the live path then names the new snapshot, while
 * the old one stays readable by whoever still holds it; a task of an older generation simply reads
 * the newer file, which is still one whole snapshot). A query cut off by a timeout is aborted by
 * the pool, which ends this worker and so every handle it held. The task says when it starts
 * (`started`), so the timeout counts the query, not a wait for a worker that is still booting.
 */
import { isMainThread, type MessagePort } from 'node:worker_threads';
import { type JsonValue, type QueryResult, type SerializedError, serializeError } from '@ferry/core';
import { openSqliteSync, type SqliteEngine } from '@ferry/engines';

if (isMainThread) {
  throw new Error('sqlite-read-task.js runs in the SQLite read pool; it is started by createRuntime().');
}

export interface SqliteReadTask {
  readonly path: string;
  readonly generation: number;
  readonly sql: string;
  readonly params: readonly JsonValue[];
  readonly maxRows: number;
  /** Told (one message) when the query starts running in a worker. */
  readonly started?: MessagePort;
}

/**
 * The rows, or why not. Errors come back as data: an error thrown here would reach the host as a
 * plain `Error` without its `code` (the pool clones it), and callers branch on the code.
 */
export type SqliteReadResult =
  | QueryResult
  | { readonly tooLarge: true }
  | { readonly error: SerializedError };

const open = new Map<string, { generation: number; engine: SqliteEngine }>();

export default function run(task: SqliteReadTask): SqliteReadResult {
  task.started?.postMessage(null);
  task.started?.close();
  try {
    let entry = open.get(task.path);
    if (entry === undefined || task.generation > entry.generation) {
      void entry?.engine.close();
      entry = { generation: task.generation, engine: openSqliteSync(task.path) };
      open.set(task.path, entry);
    }
    const result = entry.engine.querySync(task.sql, task.params);
    if (task.maxRows > 0 && result.rows.length > task.maxRows) return { tooLarge: true };
    return result;
  } catch (error) {
    return { error: serializeError(error) };
  }
}
