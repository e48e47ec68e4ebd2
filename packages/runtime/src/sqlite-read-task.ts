/**
 * A piscina worker of the SQLite read pool: runs a batch of read-only queries on the snapshot
 * files of SQLite datasets. Each worker keeps one read-only connection per live file and reopens it
 * when the generation moves (the live path then names the new snapshot, while the old one stays
 * readable by whoever still holds it; a query of an older generation simply reads the newer file,
 * which is still one whole snapshot). The host batches queries (`sqlite-read-pool.ts`); this
 * worker records which query of the batch it is running and since when in `progress`, so the host
 * can time each query out on its own. A timed-out query is stopped by ending this worker, and so
 * every handle it held.
 */
import { isMainThread } from 'node:worker_threads';
import { type JsonValue, type QueryResult, type SerializedError, serializeError } from '@ferry/core';
import { openSqliteSync, type SqliteEngine } from '@ferry/engines';

if (isMainThread) {
  throw new Error('sqlite-read-task runs only as a worker of the SQLite read pool.');
}

export interface SqliteReadQuery {
  readonly path: string;
  readonly generation: number;
  readonly sql: string;
  readonly params: readonly JsonValue[];
  readonly maxRows: number;
}

export interface SqliteReadBatch {
  readonly queries: readonly SqliteReadQuery[];
  /**
   * `[index, startedAtMs]` of the query running now (`Date.now()` clock; the index is -1 before the
   * first). Absent when queries have no timeout.
   */
  readonly progress?: BigInt64Array;
}

/**
 * The rows, or why not. Errors come back as data: an error thrown here would reach the host as a
 * plain `Error` without its `code` (the pool clones it), and callers branch on the code; and one
 * query's error must not fail its batch.
 */
export type SqliteReadResult =
  | QueryResult
  | { readonly tooLarge: true }
  | { readonly error: SerializedError };

const open = new Map<string, { generation: number; engine: SqliteEngine }>();

function runOne(query: SqliteReadQuery): SqliteReadResult {
  try {
    let entry = open.get(query.path);
    if (entry === undefined || query.generation > entry.generation) {
      void entry?.engine.close();
      entry = { generation: query.generation, engine: openSqliteSync(query.path) };
      open.set(query.path, entry);
    }
    const result = entry.engine.querySync(query.sql, query.params);
    if (query.maxRows > 0 && result.rows.length > query.maxRows) return { tooLarge: true };
    return result;
  } catch (error) {
    return { error: serializeError(error) };
  }
}

/**
 * A batch answers early once it has run this long: cheap queries still share one hop, while the
 * ones queued behind an expensive query go back to the host's queue (and to whichever worker is
 * free first) instead of waiting for it.
 */
const BATCH_BUDGET_MS = 4;

/** Runs the batch's queries in order; returns the results of those it ran (a prefix of the batch). */
export default function run(batch: SqliteReadBatch): SqliteReadResult[] {
  const { queries, progress } = batch;
  const results: SqliteReadResult[] = [];
  const started = performance.now();
  for (const [index, query] of queries.entries()) {
    if (index > 0 && performance.now() - started >= BATCH_BUDGET_MS) break;
    if (progress !== undefined) {
      // Start time first, then the index (the host reads them in the other order).
      Atomics.store(progress, 1, BigInt(Date.now()));
      Atomics.store(progress, 0, BigInt(index));
    }
    results.push(runOne(query));
  }
  return results;
}
