/**
 * Where a query runs: the SQL guard and the routing decide which dataset it reads (remembered per
 * statement text in an LRU cache, since an application sends the same statements with new
 * parameters), then it goes straight to that dataset's thread (DuckDB) or to the SQLite read pool
 * with the dataset's current file generation — never through the coordinator.
 */
import { availableParallelism } from 'node:os';
import type { JsonValue, QueryResult } from '@ferry/core';
import { deserializeError } from '@ferry/core';
import { assertReadOnlySql } from '@ferry/engines';
import { LRUCache } from 'lru-cache';
import type { QueryOptions, RuntimeQueryResult } from './api.js';
import type { DatasetEntry, DatasetRegistry } from './dataset-registry.js';
import { DatasetFailedError, DatasetNotReadyError, ResultTooLargeError } from './errors.js';
import type { SqliteGeneration } from './protocol.js';
import { routeQuery } from './query-router.js';
import { SqliteReadPool } from './sqlite-read-pool.js';
import { threadFile } from './thread-files.js';

/** Statements whose guard + routing outcome is remembered, and the longest one remembered. */
const PLAN_CACHE_ENTRIES = 1_024;
const PLAN_CACHE_MAX_SQL = 4_096;

export interface QueryDispatchOptions {
  readonly queryTimeoutMs: number;
  readonly maxResultRows: number;
  readonly sqliteReadThreads?: number;
}

export class QueryDispatcher {
  readonly #registry: DatasetRegistry;
  readonly #options: QueryDispatchOptions;
  /** Statement text → the dataset it reads. Refusals are not remembered (rare; they keep their message). */
  readonly #plans = new LRUCache<string, string>({ max: PLAN_CACHE_ENTRIES });
  #pool: SqliteReadPool | undefined;
  #sqliteGenerations = 0;

  constructor(registry: DatasetRegistry, options: QueryDispatchOptions) {
    this.#registry = registry;
    this.#options = options;
  }

  async query(
    sql: string,
    params: readonly JsonValue[],
    options: QueryOptions,
    ready: (name: string, timeoutMs: number) => Promise<void>,
  ): Promise<RuntimeQueryResult> {
    const name = this.#plan(sql);
    const entry = this.#registry.get(name);
    if (entry.state === 'failed') {
      throw new DatasetFailedError(name, entry.error ?? 'its configuration was refused');
    }
    if (!this.#registry.serving(entry)) {
      if (options.waitForReady !== true) throw new DatasetNotReadyError(name, entry.state);
      await ready(name, options.readyTimeoutMs ?? 30_000);
    }
    const snapshotId = entry.status?.servingSnapshotId ?? null;
    // SQLite files are read by the host's pool; a dataset thread answers only for DuckDB.
    const sqlite = entry.sqlite;
    const result =
      sqlite !== null
        ? await this.#querySqlite(name, sqlite, sql, params)
        : await this.#queryThread(entry, sql, params);
    return { ...result, dataset: name, snapshotId, engine: sqlite !== null ? 'sqlite' : 'duckdb' };
  }

  /**
   * A dataset thread announced the file its SQLite reads go to. Numbered here, not by the thread:
   * a restarted thread counts from 1 again, and the read pool must still see every new file as
   * newer than the one it has open.
   */
  setSqliteGeneration(entry: DatasetEntry, current: Omit<SqliteGeneration, 'generation'> | null): void {
    entry.sqlite = current === null ? null : { ...current, generation: ++this.#sqliteGenerations };
  }

  #plan(sql: string): string {
    const known = this.#plans.get(sql);
    if (known !== undefined) return known;
    assertReadOnlySql(sql);
    const name = routeQuery(sql, this.#registry.names());
    if (sql.length <= PLAN_CACHE_MAX_SQL) this.#plans.set(sql, name);
    return name;
  }

  #queryThread(entry: DatasetEntry, sql: string, params: readonly JsonValue[]): Promise<QueryResult> {
    const rpc = entry.rpc;
    if (rpc === undefined) return Promise.reject(new DatasetNotReadyError(entry.name, entry.state));
    return rpc.request<QueryResult>({ type: 'query', id: 0, sql, params });
  }

  async #querySqlite(
    name: string,
    generation: SqliteGeneration,
    sql: string,
    params: readonly JsonValue[],
  ): Promise<QueryResult> {
    this.#pool ??= new SqliteReadPool({
      filename: threadFile('sqlite-read-task').href,
      maxThreads: this.#options.sqliteReadThreads ?? availableParallelism(),
      queryTimeoutMs: this.#options.queryTimeoutMs,
    });
    const maxRows = this.#options.maxResultRows;
    const result = await this.#pool.run(name, {
      path: generation.path,
      generation: generation.generation,
      sql,
      params,
      maxRows,
    });
    if ('error' in result) throw deserializeError(result.error);
    if ('tooLarge' in result) throw new ResultTooLargeError(name, maxRows);
    return result;
  }

  /** Ends the SQLite read workers; queued and running reads reject with `reason`. */
  async close(reason: Error): Promise<void> {
    await this.#pool?.close(reason);
  }
}
