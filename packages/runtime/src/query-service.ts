/**
 * Where a query runs and how it is bounded. Every dataset is a table of one namespace; a
 * statement goes to the DuckDB pool when the runtime has (or may have) DuckDB datasets, and the
 * DuckDB worker's parser routes it: it runs there (DuckDB datasets, joins across engines, no
 * dataset at all), or it is re-routed to the SQLite pool (only SQLite datasets, or SQLite's
 * dialect). The route — engine and datasets read — is remembered per statement text (an LRU), so
 * a repeated statement goes straight to its engine and its datasets' readiness is checked here.
 * A dataset that serves nothing yet fails with `ERR_DATASET_NOT_READY` (or is waited for), decided
 * from the route or from the engine's own "no such table" answer, never from a tokenizer.
 *
 * Bounds: the timeout (DuckDB: interrupted; SQLite: its worker ended), the caller's signal (the
 * same), the result caps in rows and bytes (checked while reading, so an oversized result is
 * never held whole), and for streams the bytes, the engine time per batch and the consumer's
 * idleness (`result-stream.ts`).
 */
import type { ResourceLimits } from 'node:worker_threads';
import { deserializeError, type JsonValue } from '@ferry/core';
import {
  type DatasetRead,
  type DuckDbNamespaceOptions,
  type NamespaceCatalog,
  type NamespaceTaskHistory,
  needsDuckDb,
} from '@ferry/engines';
import { Table } from 'apache-arrow';
import { LRUCache } from 'lru-cache';
import type {
  DatasetInfo,
  QueryOptions,
  QueryProvenance,
  RuntimeArrowResult,
  RuntimeQueryResult,
  RuntimeQueryStream,
  StreamOptions,
} from './api.js';
import type { DatasetRegistry } from './dataset-registry.js';
import { DuckDbQueryPool, type PoolQuery, type QueryListener } from './duckdb-query-pool.js';
import {
  CrossDialectError,
  DatasetFailedError,
  DatasetNotReadyError,
  QueryCancelledError,
  QueryTimeoutError,
  ResultTooLargeError,
  UnknownDatasetError,
} from './errors.js';
import type { Logger } from './logging.js';
import type { QueryCatalog } from './query-catalog.js';
import type { QueryAnswer, QueryRequest } from './query-protocol.js';
import { ResultStream } from './result-stream.js';
import { SqliteReadPool } from './sqlite-read-pool.js';
import type { SqliteWorkerData } from './sqlite-read-task.js';
import { threadFile } from './thread-files.js';

/** Statements whose route is remembered, and the longest one remembered. */
const PLANS = 1_024;
const PLAN_MAX_SQL = 4_096;
/** Re-routes and waits one query may go through before it gives up. */
const MAX_HOPS = 6;

export interface QueryServiceOptions {
  readonly queryTimeoutMs: number;
  readonly maxResultRows: number;
  readonly maxResultBytes: number;
  readonly maxStreamBytes: number;
  readonly streamIdleTimeoutMs: number;
  readonly sqliteThreads: number;
  readonly duckdbWorkers: number;
  /** The namespace options of DuckDB worker `index`. */
  readonly duckdb: (index: number) => DuckDbNamespaceOptions;
  readonly sqlite: SqliteWorkerData;
  readonly resourceLimits?: ResourceLimits;
  /** Called before the first pool starts (create the directories it needs). */
  readonly prepare: () => Promise<void>;
}

/** Where a statement runs and what it reads (undefined: not known before it runs). */
interface Plan {
  readonly engine: 'duckdb' | 'sqlite';
  readonly datasets: readonly string[] | undefined;
}

type Answered = Exclude<QueryAnswer, { kind: 'reroute' } | { kind: 'table' }>;

function provenance(read: readonly DatasetRead[], engine: 'duckdb' | 'sqlite'): QueryProvenance {
  const single = read.length === 1 ? read[0] : undefined;
  return {
    datasets: read,
    dataset: single?.name ?? null,
    snapshotId: single?.snapshotId ?? null,
    engine,
  };
}

export class QueryService {
  readonly #registry: DatasetRegistry;
  readonly #catalog: QueryCatalog;
  readonly #options: QueryServiceOptions;
  readonly #logger: Logger;
  readonly #plans = new LRUCache<string, Plan>({ max: PLANS });
  #prepared: Promise<void> | undefined;
  #duckdb: DuckDbQueryPool | undefined;
  #sqlite: SqliteReadPool | undefined;
  #closed: Error | undefined;

  constructor(
    registry: DatasetRegistry,
    catalog: QueryCatalog,
    options: QueryServiceOptions,
    logger: Logger,
  ) {
    this.#registry = registry;
    this.#catalog = catalog;
    this.#options = options;
    this.#logger = logger;
  }

  /** A new catalog version: the DuckDB workers attach it now; SQLite tasks carry it from now on. */
  setCatalog(catalog: NamespaceCatalog): void {
    if (this.#duckdb !== undefined) this.#duckdb.setCatalog(catalog);
    else if (catalog.datasets.some((dataset) => dataset.engine === 'duckdb' && dataset.generation !== null)) {
      // The first DuckDB dataset serves: start the workers now, not on the first query.
      void this.#pools().then(
        () => this.#duckdbPool(),
        () => undefined,
      );
    }
  }

  async #pools(): Promise<void> {
    this.#prepared ??= this.#options.prepare();
    await this.#prepared;
    if (this.#closed !== undefined) throw this.#closed;
  }

  #duckdbPool(): DuckDbQueryPool {
    this.#duckdb ??= new DuckDbQueryPool(
      {
        workers: this.#options.duckdbWorkers,
        namespace: this.#options.duckdb,
        logger: this.#logger,
        ...(this.#options.resourceLimits === undefined
          ? {}
          : { resourceLimits: this.#options.resourceLimits }),
      },
      this.#catalog.current(),
    );
    return this.#duckdb;
  }

  #sqlitePool(): SqliteReadPool {
    this.#sqlite ??= new SqliteReadPool({
      filename: threadFile('sqlite-read-task').href,
      maxThreads: this.#options.sqliteThreads,
      queryTimeoutMs: this.#options.queryTimeoutMs,
      catalog: () => this.#catalog.shared(),
      workerData: this.#options.sqlite,
      ...(this.#options.resourceLimits === undefined ? {} : { resourceLimits: this.#options.resourceLimits }),
    });
    return this.#sqlite;
  }

  /**
   * Statements go to DuckDB first unless every dataset is known to be SQLite — and then too when
   * only DuckDB can answer them (a listing, a view, the runtime's tables: spice-names.ts).
   */
  #firstEngine(sql: string): 'duckdb' | 'sqlite' {
    const engines = [...this.#registry.entries()].map((entry) => this.#catalog.engineOf(entry));
    const sqlite = engines.length > 0 && engines.every((engine) => engine === 'sqlite');
    if (!sqlite) return 'duckdb';
    return needsDuckDb(
      sql,
      this.#catalog.views.map((view) => view.name),
    )
      ? 'duckdb'
      : 'sqlite';
  }

  /**
   * Fails (or waits) unless every dataset in `names` serves now. A failure names the state the
   * dataset was in when the query was asked (`asked`), since an engine's answer comes later.
   */
  async #ensureServing(
    names: readonly string[],
    options: QueryOptions,
    asked: ReadonlyMap<string, DatasetInfo['state']>,
  ): Promise<void> {
    for (const name of names) {
      const entry = this.#registry.find(name);
      if (entry === undefined) throw new UnknownDatasetError(name, this.#registry.names());
      if (entry.state === 'failed') {
        throw new DatasetFailedError(name, entry.error ?? 'its configuration was refused');
      }
      if (this.#registry.serving(entry)) continue;
      if (options.waitForReady !== true) throw new DatasetNotReadyError(name, asked.get(name) ?? entry.state);
      await this.#registry.ready(name, options.readyTimeoutMs ?? 30_000);
    }
  }

  #remember(sql: string, plan: Plan): void {
    if (sql.length <= PLAN_MAX_SQL) this.#plans.set(sql, plan);
  }

  /**
   * Runs the statement where its route says, following re-routes and waiting for datasets as the
   * engines answer, until an engine answers for good.
   */
  async #execute<T>(
    sql: string,
    options: QueryOptions,
    run: (
      engine: 'duckdb' | 'sqlite',
      datasets: readonly string[],
    ) => Promise<QueryAnswer | { kind: 'started'; value: T }>,
  ): Promise<{ engine: 'duckdb' | 'sqlite'; answer: Answered | { kind: 'started'; value: T } }> {
    const asked = this.#registry.states();
    await this.#pools();
    let waited = false;
    for (let hop = 0; ; hop++) {
      const plan = this.#plans.get(sql);
      if (plan?.datasets !== undefined) await this.#ensureServing(plan.datasets, options, asked);
      const engine = plan?.engine ?? this.#firstEngine(sql);
      const answer = await run(engine, plan?.datasets ?? []);
      if (answer.kind === 'reroute') {
        this.#remember(sql, { engine: 'sqlite', datasets: answer.datasets });
      } else if (answer.kind === 'table') {
        if (answer.reason === 'unknown') throw new UnknownDatasetError(answer.table, this.#registry.names());
        if (answer.reason === 'duckdb') throw new CrossDialectError(answer.table);
        if (answer.reason === 'sqlite') this.#remember(sql, { engine: 'sqlite', datasets: undefined });
        else {
          const entry = this.#registry.find(answer.table);
          // The registry says it serves but the engine has not attached it yet: a swap in flight.
          if (entry !== undefined && this.#registry.serving(entry) && waited) {
            throw new DatasetNotReadyError(answer.table, entry.state);
          }
          await this.#ensureServing([answer.table], options, asked);
          waited = true;
        }
      } else {
        if (answer.kind !== 'started' && answer.kind !== 'error') {
          this.#remember(sql, { engine, datasets: answer.read.map((read) => read.name) });
        }
        return { engine, answer };
      }
      if (hop >= MAX_HOPS && answer.kind === 'table') {
        throw new DatasetNotReadyError(
          answer.table,
          this.#registry.find(answer.table)?.state ?? 'unavailable',
        );
      }
    }
  }

  /** The error of an `error` / `too-large` answer (logging the engine's own words if paths were hidden). */
  #failure(
    answer: Answered,
    rowsSetting: string,
    bytesSetting: string,
    maxRows: number,
    maxBytes: number,
  ): Error {
    if (answer.kind === 'too-large') {
      const names = answer.read.map((read) => read.name);
      return answer.limit === 'rows'
        ? new ResultTooLargeError(names, maxRows, 'rows', rowsSetting)
        : new ResultTooLargeError(names, maxBytes, 'bytes', bytesSetting);
    }
    if (answer.kind === 'error') {
      if (answer.detail !== undefined) {
        this.#logger.warn(
          { component: 'query', code: answer.error.code },
          `A query failed: ${answer.detail}`,
        );
      }
      return deserializeError(answer.error);
    }
    return new Error(`Unexpected answer ${answer.kind}`);
  }

  /**
   * Runs one DuckDB query under the timeout and the caller's signal (both interrupt it in its
   * engine). The clock starts when the worker starts it (a worker still starting is not counted,
   * as in the SQLite pool); DuckDB says then which datasets it reads, for the timeout's message.
   * A statement that ran before (`known`: the datasets it read) on a worker that is up is timed
   * from when it is sent, without that message.
   */
  #bounded(
    start: (listener: QueryListener) => PoolQuery,
    options: QueryOptions,
    known: readonly string[] | undefined,
  ): Promise<QueryAnswer> {
    const { signal } = options;
    const timeoutMs = this.#options.queryTimeoutMs;
    return new Promise<QueryAnswer>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const finish = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const query = start({
        ...(known === undefined ? {} : { known }),
        routed: (datasets) => {
          if (timeoutMs <= 0) return;
          timer = setTimeout(() => {
            query.cancel();
            finish();
            reject(new QueryTimeoutError(datasets ?? [], timeoutMs));
          }, timeoutMs);
        },
      });
      const onAbort = (): void => {
        query.cancel();
        finish();
        reject(new QueryCancelledError(signal?.reason));
      };
      if (signal?.aborted === true) {
        onAbort();
        return;
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      query.answer.then(
        (answer) => {
          finish();
          resolve(answer);
        },
        (error: unknown) => {
          finish();
          reject(error);
        },
      );
    });
  }

  #request(sql: string, params: readonly JsonValue[], maxRows: number, maxBytes: number): QueryRequest {
    return { sql, params, maxRows, maxBytes };
  }

  async query(sql: string, params: readonly JsonValue[], options: QueryOptions): Promise<RuntimeQueryResult> {
    const { maxResultRows: maxRows, maxResultBytes: maxBytes } = this.#options;
    const request = this.#request(sql, params, maxRows, maxBytes);
    const { engine, answer } = await this.#execute<never>(sql, options, (where, datasets) =>
      where === 'duckdb'
        ? this.#bounded(
            (listener) => this.#duckdbPool().run(request, 'rows', listener),
            options,
            this.#plans.get(sql)?.datasets,
          )
        : this.#sqlitePool().run(datasets, request, options.signal),
    );
    if (answer.kind !== 'rows')
      throw this.#failure(answer as Answered, 'maxResultRows', 'maxResultBytes', maxRows, maxBytes);
    return { columns: answer.columns, rows: answer.rows, ...provenance(answer.read, engine) };
  }

  async queryArrow(
    sql: string,
    params: readonly JsonValue[],
    options: QueryOptions,
  ): Promise<RuntimeArrowResult> {
    const { maxResultRows: maxRows, maxResultBytes: maxBytes } = this.#options;
    const stream = await this.#stream(sql, options, this.#request(sql, params, maxRows, maxBytes), {
      rows: 'maxResultRows',
      bytes: 'maxResultBytes',
    });
    const batches = [];
    for await (const batch of stream.batches) batches.push(batch);
    const { datasets, dataset, snapshotId, engine } = stream;
    return { table: new Table(stream.schema, batches), datasets, dataset, snapshotId, engine };
  }

  queryStream(
    sql: string,
    params: readonly JsonValue[],
    options: StreamOptions,
  ): Promise<RuntimeQueryStream> {
    const maxBytes = options.maxBytes ?? this.#options.maxStreamBytes;
    return this.#stream(sql, options, this.#request(sql, params, 0, maxBytes), {
      rows: 'maxResultRows',
      bytes: options.maxBytes === undefined ? 'maxStreamBytes' : 'the maxBytes of queryStream',
    });
  }

  async #stream(
    sql: string,
    options: StreamOptions,
    request: QueryRequest,
    settings: { readonly rows: string; readonly bytes: string },
  ): Promise<RuntimeQueryStream> {
    const { engine, answer } = await this.#execute(sql, options, async (where, datasets) => {
      const stream = new ResultStream({
        timeoutMs: this.#options.queryTimeoutMs,
        idleTimeoutMs: options.idleTimeoutMs ?? this.#options.streamIdleTimeoutMs,
        datasets,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      });
      const query =
        where === 'duckdb'
          ? this.#duckdbPool().run(request, 'batches', stream, options.batchRows)
          : this.#sqlitePool().stream(request, stream, options.batchRows);
      stream.attach(query);
      const answered = query.answer.then(
        (outcome) => ({ outcome }),
        (error: unknown) => ({ error }),
      );
      // The schema comes first, as its own message; an answer before it means no stream started —
      // unless the schema arrived in the same turn (a small result answered at once).
      const raced = await Promise.race([stream.schemaReady(), answered]);
      const first = raced !== undefined && 'fields' in raced ? raced : stream.receivedSchema;
      if (first === undefined) {
        const settled = await answered;
        stream.dispose();
        if ('error' in settled) throw settled.error;
        return settled.outcome;
      }
      void answered.then((settled) => {
        if ('error' in settled) stream.fail(settled.error);
        else if (settled.outcome.kind === 'done') stream.end();
        else {
          stream.fail(
            this.#failure(
              settled.outcome as Answered,
              settings.rows,
              settings.bytes,
              request.maxRows,
              request.maxBytes,
            ),
          );
        }
      });
      return { kind: 'started' as const, value: { stream, schema: first } };
    });
    if (answer.kind !== 'started') {
      throw this.#failure(answer, settings.rows, settings.bytes, request.maxRows, request.maxBytes);
    }
    const { stream, schema } = answer.value;
    return {
      schema,
      batches: { [Symbol.asyncIterator]: () => stream.batches() },
      cancel: () => stream.fail(new QueryCancelledError('cancel() was called')),
      ...provenance(stream.read, engine),
    };
  }

  /** Hands the DuckDB workers the task history as it is now (a query after this reads it). */
  async setTaskHistory(history: NamespaceTaskHistory): Promise<void> {
    await this.#pools();
    this.#duckdbPool().setTaskHistory(history);
  }

  /** Queries the pools have not answered yet. */
  get inFlight(): number {
    return (this.#duckdb?.inFlight ?? 0) + (this.#sqlite?.inFlight ?? 0);
  }

  async close(reason: Error): Promise<void> {
    this.#closed ??= reason;
    await Promise.all([this.#duckdb?.close(), this.#sqlite?.close(reason)]);
  }
}
