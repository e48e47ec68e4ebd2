/**
 * One in-memory DuckDB instance of the namespace (one per resource class): locked down
 * (duckdb-lockdown.ts), with the catalog applied to it — each DuckDB dataset's current generation
 * ATTACHed read-only behind a view named after the dataset (the text a query prepares names the
 * generation itself where it can: duckdb-direct.ts), SQLite datasets a join needs read in
 * (duckdb-import.ts) — and a pool of connections, each keeping its prepared statements. Every view
 * lives in Spice's `spice.public` (duckdb-catalog.ts), every connection uses it; an SQLite dataset
 * not read in stands there as a placeholder with its columns; the spicepod's views are created once
 * their datasets serve (duckdb-views.ts); `spice.runtime.task_history` holds the history handed in.
 *
 * Catalog changes (attach, replace views, detach; imports) run one at a time, and while one is
 * queued or running {@link DuckDbClassInstance.changing} is true: a query starts only once it is
 * false, right after checking, so what it binds is the generations of
 * {@link DuckDbClassInstance.applied} (a text that names only generations is bound on DuckDB's
 * threads; a change queued meanwhile may have detached one: duckdb-namespace.ts prepares it again).
 * DuckDB keeps a detached generation alive for the queries that bound it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { DuckDBConnection, DuckDBPreparedStatement } from '@duckdb/node-api';
import Database from 'better-sqlite3';
import { BoundedCache } from './bounded-cache.js';
import {
  createSpiceCatalog,
  GENERATION_ALIAS,
  generationTable,
  INTERNAL_SCHEMA,
  placeholderViewSql,
  replaceTaskHistory,
  spiceTable,
  TASK_HISTORY,
  USE_SPICE,
} from './duckdb-catalog.js';
import type { DirectText } from './duckdb-direct.js';
import type { ResultColumns } from './duckdb-engine.js';
import {
  type CrossEngineLimits,
  IMPORT_TABLE,
  importSqliteDataset,
  sqliteColumnsInDuckDb,
} from './duckdb-import.js';
import { DUCKDB_EXTENSIONS_OFF, duckDbSize, lockDownDuckDb } from './duckdb-lockdown.js';
import { duckdb } from './duckdb-node.js';
import type { ResourceClass } from './duckdb-resources.js';
import { DuckDbViews } from './duckdb-views.js';
import { quoteLiteral } from './engine.js';
import { NamespaceTableError } from './errors.js';
import {
  datasetByName,
  type NamespaceCatalog,
  type NamespaceDataset,
  type NamespaceTaskHistory,
  type QueryCancellation,
} from './namespace-types.js';

const { DuckDBInstance } = duckdb;
type DuckDBInstance = InstanceType<typeof DuckDBInstance>;

/** A prepared statement and the catalog version it was bound against. */
interface CachedStatement {
  readonly statement: DuckDBPreparedStatement;
  readonly version: number;
  /** Its text as written and as prepared, when it was prepared naming its generations (duckdb-direct.ts). */
  readonly direct?: DirectText;
  /** Its result's columns (the same for every run of it), once read. */
  columns?: ResultColumns;
}

export interface PooledConnection {
  readonly connection: DuckDBConnection;
  /** Prepared statements by text, bounded by entries and bytes; a statement leaving is retired. */
  readonly statements: BoundedCache<string, CachedStatement>;
  /**
   * Statements that left `statements`, destroyed once the connection is released (a statement
   * may leave while its own query runs), and then after the answer when no query waits.
   */
  readonly retired: DuckDBPreparedStatement[];
}

/** Destroys the statements `pooled` retired. */
function destroyRetired(pooled: PooledConnection): void {
  for (const statement of pooled.retired.splice(0)) statement.destroySync();
}

/** Bytes of prepared statements an instance keeps, over all its connections. */
const STATEMENT_BYTES = 128 * 2 ** 20;

/** The longest a retry keeps the next one waiting ({@link DuckDbClassInstance.oneRetryAtATime}). */
const RETRY_TURN_MS = 2_000;

interface InstanceOptions {
  readonly allowedDirectories: readonly string[];
  readonly maxTempBytes: number;
  /** Connections (concurrent queries of the class); default 8. */
  readonly connections?: number;
}

/** Bytes a cached prepared statement is charged: its text (and the text it was prepared as), its columns, and DuckDB's plan (a guess). */
export function statementBytes(
  sql: string,
  known: { readonly columns?: ResultColumns; readonly direct?: DirectText },
): number {
  let bytes = 2 * sql.length + 4_096;
  // The text it was prepared as, when that names its generations (its written text is `sql`).
  if (known.direct !== undefined) bytes += 2 * known.direct.sql.length + 64 * known.direct.swaps.length;
  for (const column of known.columns?.columns ?? [])
    bytes += 2 * (column.name.length + column.type.length) + 64;
  return bytes;
}

export class DuckDbClassInstance {
  readonly resources: ResourceClass;
  readonly #instance: DuckDBInstance;
  readonly #admin: DuckDBConnection;
  readonly #options: InstanceOptions;
  readonly #idle: PooledConnection[] = [];
  readonly #busy = new Set<PooledConnection>();
  readonly #waiters: ((connection: PooledConnection) => void)[] = [];
  #opened = 0;
  /** Connections whose streams wait for their consumers ({@link aside}): not counted against the cap. */
  #aside = 0;
  /** Attached DuckDB generations (by generation id) and the generation behind each dataset's view. */
  readonly #attached = new Set<number>();
  readonly #views = new Map<string, number>();
  /** SQLite datasets read into DuckDB: the generation id and the table holding it. */
  readonly #imports = new Map<string, { readonly generation: number; readonly ready: Promise<void> }>();
  /** SQLite datasets standing as placeholders in `spice.public`, and the generation described. */
  readonly #placeholders = new Map<string, number>();
  /** The spicepod's views as created in this instance. */
  readonly #spicepodViews = new DuckDbViews();
  /** Views that could not be created at the catalog applied, and why. */
  viewFailures: ReadonlyMap<string, string> = new Map();
  #taskHistoryVersion = 0;
  #taskHistoryDropped = false;
  /** The catalog as applied (views and attachments match it once no change is in flight). */
  applied: NamespaceCatalog = { version: 0, datasets: [] };
  #changing: Promise<void> = Promise.resolve();
  /** Catalog changes queued or running (none: a query may start without waiting). */
  #changes = 0;
  /** Catalog changes queued so far (a query started in one call tells from it whether one came meanwhile). */
  #queued = 0;
  #inFlight = 0;
  #finishedCount = 0;
  readonly #finished = new Set<() => void>();
  /** The last retry's turn ({@link oneRetryAtATime}). */
  #retries: Promise<void> = Promise.resolve();

  private constructor(
    resources: ResourceClass,
    instance: DuckDBInstance,
    admin: DuckDBConnection,
    options: InstanceOptions,
  ) {
    this.resources = resources;
    this.#instance = instance;
    this.#admin = admin;
    this.#options = options;
  }

  static async create(
    resources: ResourceClass,
    options: InstanceOptions,
    tempDirectory: string,
  ): Promise<DuckDbClassInstance> {
    const instance = await DuckDBInstance.create(':memory:', {
      ...DUCKDB_EXTENSIONS_OFF,
      memory_limit: duckDbSize(resources.memoryLimitBytes),
      threads: String(resources.threads),
      temp_directory: tempDirectory,
    });
    const admin = await instance.connect();
    // Spice's catalog `spice`, schema `public`, and the filtered listings (duckdb-catalog.ts),
    // made before the lock-down.
    await createSpiceCatalog(admin);
    await lockDownDuckDb(admin, {
      allowedDirectories: options.allowedDirectories,
      maxTempBytes: options.maxTempBytes,
    });
    return new DuckDbClassInstance(resources, instance, admin, options);
  }

  /** A connection of its own (not pooled): for parsing, which binds nothing. */
  connect(): Promise<DuckDBConnection> {
    return this.#instance.connect();
  }

  /** Queries that finished on this instance so far. */
  get finishedCount(): number {
    return this.#finishedCount;
  }

  /** Queries running on this instance now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Runs `change` once the previous catalog change is done; queries do not start meanwhile. */
  #serialize(change: () => Promise<void>): Promise<void> {
    this.#changes++;
    this.#queued++;
    const next = this.#changing.then(change).finally(() => {
      this.#changes--;
    });
    // The chain only orders changes: each one's outcome is its caller's (`next`), so the next
    // change runs after a failed one too.
    this.#changing = next.catch(() => undefined);
    return next;
  }

  /** Whether a catalog change is queued or running (then queries wait for {@link settled}). */
  get changing(): boolean {
    return this.#changes > 0;
  }

  /** Catalog changes queued since the instance was made: a query compares it before and after it starts. */
  get changesQueued(): number {
    return this.#queued;
  }

  /** Resolves once no catalog change is in flight. */
  async settled(): Promise<void> {
    let current: Promise<void>;
    do {
      current = this.#changing;
      await current;
    } while (current !== this.#changing);
  }

  /** Attach what is new, point views at it, detach and drop what is gone. */
  apply(catalog: NamespaceCatalog): Promise<void> {
    return this.#serialize(async () => {
      const current = new Map<string, number>();
      for (const dataset of catalog.datasets) {
        if (dataset.engine !== 'duckdb' || dataset.generation === null) continue;
        const { id, path } = dataset.generation;
        current.set(dataset.name, id);
        if (!this.#attached.has(id)) {
          await this.#admin.run(`ATTACH ${quoteLiteral(path)} AS ${GENERATION_ALIAS}${id} (READ_ONLY)`);
          this.#attached.add(id);
        }
        if (this.#views.get(dataset.name) !== id) {
          await this.#admin.run(
            `CREATE OR REPLACE VIEW ${spiceTable(dataset.name)} AS SELECT * FROM ${generationTable(id, dataset.name)}`,
          );
          this.#views.set(dataset.name, id);
        }
      }
      for (const name of [...this.#views.keys()]) {
        if (current.has(name)) continue;
        await this.#admin.run(`DROP VIEW IF EXISTS ${spiceTable(name)}`);
        this.#views.delete(name);
      }
      // A query that bound a detached generation keeps reading it; DuckDB releases it after.
      const live = new Set(current.values());
      for (const id of [...this.#attached]) {
        if (live.has(id)) continue;
        await this.#admin.run(`DETACH ${GENERATION_ALIAS}${id}`);
        this.#attached.delete(id);
      }
      for (const [name, imported] of [...this.#imports]) {
        const dataset = datasetByName(catalog, name);
        if (dataset?.generation?.id === imported.generation) continue;
        this.#imports.delete(name);
        // Only its end matters here: a failed import was reported to the query that asked for it
        // (ensureImported's promise), and it left no table of this generation to drop but its own.
        await imported.ready.catch(() => undefined);
        await this.#admin.run(`DROP VIEW IF EXISTS ${spiceTable(name)}`);
        await this.#admin.run(
          `DROP TABLE IF EXISTS ${INTERNAL_SCHEMA}.${IMPORT_TABLE}${imported.generation}`,
        );
      }
      await this.#applyPlaceholders(catalog);
      if (catalog.taskHistory === false && !this.#taskHistoryDropped) {
        await this.#admin.run(`DROP TABLE IF EXISTS ${TASK_HISTORY}`);
        this.#taskHistoryDropped = true;
      }
      this.viewFailures = await this.#spicepodViews.apply(this.#admin, catalog);
      this.applied = catalog;
    });
  }

  /**
   * Every SQLite dataset that serves and is not read into DuckDB stands in `spice.public` as a
   * placeholder with its columns (see duckdb-catalog.ts): listed and described like the others.
   */
  async #applyPlaceholders(catalog: NamespaceCatalog): Promise<void> {
    for (const dataset of catalog.datasets) {
      const generation = dataset.engine === 'sqlite' ? dataset.generation : null;
      if (generation === null) {
        if (this.#placeholders.delete(dataset.name)) {
          await this.#admin.run(`DROP VIEW IF EXISTS ${spiceTable(dataset.name)}`);
        }
        continue;
      }
      if (this.#imports.has(dataset.name) || this.#placeholders.get(dataset.name) === generation.id) continue;
      let db: Database.Database | undefined;
      try {
        db = new Database(generation.path, { readonly: true, fileMustExist: true });
        await this.#admin.run(placeholderViewSql(dataset.name, sqliteColumnsInDuckDb(db, dataset)));
        this.#placeholders.set(dataset.name, generation.id);
      } catch {
        // A file that cannot be opened now is not listed; its queries run in SQLite all the same.
      } finally {
        db?.close();
      }
    }
  }

  /** Makes `spice.runtime.task_history` hold this version of the history (between catalog changes). */
  applyTaskHistory(history: NamespaceTaskHistory): Promise<void> {
    return this.#serialize(async () => {
      if (history.version === this.#taskHistoryVersion) return;
      await replaceTaskHistory(this.#admin, history.rows);
      this.#taskHistoryVersion = history.version;
    });
  }

  /** The SQLite dataset's current generation as a DuckDB table behind a view of its name (once). */
  ensureImported(dataset: NamespaceDataset, limits: CrossEngineLimits): Promise<void> {
    const generation = dataset.generation;
    if (generation === null) throw new NamespaceTableError(dataset.name, 'not-serving');
    const known = this.#imports.get(dataset.name);
    if (known?.generation === generation.id) return known.ready;
    const ready = this.#serialize(async () => {
      await importSqliteDataset(this.#admin, dataset, limits);
      // The import replaced the dataset's placeholder.
      this.#placeholders.delete(dataset.name);
    });
    this.#imports.set(dataset.name, { generation: generation.id, ready });
    // A failed import is forgotten, so the next query tries again; its error is the caller's.
    ready.catch(() => {
      if (this.#imports.get(dataset.name)?.ready === ready) this.#imports.delete(dataset.name);
    });
    return ready;
  }

  /** An idle connection, taken at once (no await), or undefined when none is idle. */
  tryAcquire(): PooledConnection | undefined {
    const pooled = this.#idle.pop();
    return pooled === undefined ? undefined : this.#take(pooled);
  }

  #take(pooled: PooledConnection): PooledConnection {
    this.#busy.add(pooled);
    this.#inFlight++;
    return pooled;
  }

  /**
   * A connection, waiting for one while every connection is busy; `signal` ends the wait (the
   * promise rejects with its reason).
   */
  async acquire(signal?: QueryCancellation): Promise<PooledConnection> {
    const pooled = this.#idle.pop() ?? (this.#room() ? await this.#open() : undefined);
    // A connection another query lets go comes taken (release()): counted once.
    if (pooled === undefined) return this.#wait(signal);
    return this.#take(pooled);
  }

  get #cap(): number {
    return this.#options.connections ?? 8;
  }

  /** Whether another connection may be opened: the cap counts the connections that run queries. */
  #room(): boolean {
    return this.#opened - this.#aside < this.#cap;
  }

  async #open(): Promise<PooledConnection> {
    this.#opened++;
    try {
      const connection = await this.#instance.connect();
      // Unqualified names resolve in spice.public, as in Spice.
      await connection.run(USE_SPICE);
      const retired: DuckDBPreparedStatement[] = [];
      return {
        connection,
        statements: new BoundedCache<string, CachedStatement>({
          // Prepared statements kept per connection: 128 MiB over the instance's connections
          // (16 MiB each at 8), 1 MiB each at least.
          entries: 64,
          bytes: Math.max(2 ** 20, Math.floor(STATEMENT_BYTES / this.#cap)),
          dispose: (cached) => retired.push(cached.statement),
        }),
        retired,
      };
    } catch (error) {
      this.#opened--;
      throw error;
    }
  }

  /**
   * Awaits `wait` — a stream handing a batch to a consumer that may not take it for long (a Flight
   * result waiting for its DoGet, a client that stopped reading) — with its connection not counted
   * against the cap, which bounds the queries that run: a query waiting for a connection gets a new
   * one meanwhile. Before, as many stalled streams as the cap made every other query of the instance
   * wait until they idled out (60 s), past its own timeout. The streams themselves stay bounded by
   * the runtime's admission (`maxQueriesInFlight`); a connection over the cap is closed when let go.
   */
  async aside<T>(wait: Promise<T>): Promise<T> {
    this.#aside++;
    try {
      while (this.#waiters.length > 0 && this.#room()) {
        const opened = await this.#open().catch(() => undefined);
        if (opened === undefined) break;
        const waiter = this.#waiters.shift();
        if (waiter === undefined) this.#idle.push(opened);
        else waiter(this.#take(opened));
      }
      return await wait;
    } finally {
      this.#aside--;
    }
  }

  /**
   * Waits for a connection another query lets go. A query cancelled meanwhile leaves the queue at
   * once (its caller has stopped waiting for it): it does not wait for a busy connection only to fail.
   */
  #wait(signal: QueryCancellation | undefined): Promise<PooledConnection> {
    if (signal?.aborted === true) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        const index = this.#waiters.indexOf(waiter);
        if (index < 0) return;
        this.#waiters.splice(index, 1);
        reject(signal?.reason);
      };
      const waiter = (pooled: PooledConnection): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve(pooled);
      };
      this.#waiters.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Runs `retry` once the retries started before it on this instance have had their turn: queries
   * that ran out of its memory or temporary space together try again one after another. A turn
   * ends when its retry settles, or after {@link RETRY_TURN_MS} (a stream read slowly settles late).
   */
  oneRetryAtATime<T>(retry: () => Promise<T>): Promise<T> {
    const previous = this.#retries;
    const turn = previous.then(retry);
    this.#retries = previous.then(
      () =>
        new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, RETRY_TURN_MS);
          timer.unref();
          const done = (): void => {
            clearTimeout(timer);
            resolve();
          };
          turn.then(done, done);
        }),
    );
    return turn;
  }

  /** Resolves once a query of this instance finished (or after `ms`). */
  quieter(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#finished.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#finished.add(done);
    });
  }

  release(pooled: PooledConnection): void {
    if (this.#finished.size > 0) for (const done of [...this.#finished]) done();
    this.#busy.delete(pooled);
    this.#inFlight--;
    this.#finishedCount++;
    const waiter = this.#waiters.shift();
    if (waiter === undefined && this.#opened - this.#aside > this.#cap) {
      // Opened while others' streams waited for their consumers (aside): over the cap, not kept.
      this.#opened--;
      pooled.statements.clear();
      destroyRetired(pooled);
      pooled.connection.closeSync();
    } else if (waiter === undefined) {
      this.#idle.push(pooled);
      // Off the answer's path (a destroy costs ~100 µs); a connection taken meanwhile destroys
      // them at its own release.
      if (pooled.retired.length > 0) {
        setImmediate(() => {
          if (!this.#busy.has(pooled)) destroyRetired(pooled);
        });
      }
    } else {
      destroyRetired(pooled);
      waiter(this.#take(pooled));
    }
  }

  /** Interrupts every running query until none runs (before the worker ends), for at most 5 s. */
  async cancelAll(): Promise<void> {
    const started = performance.now();
    while (this.#busy.size > 0 && performance.now() - started < 5_000) {
      for (const pooled of this.#busy) pooled.connection.interrupt();
      await sleep(20);
    }
  }

  close(): void {
    for (const pooled of this.#idle.splice(0)) {
      pooled.statements.clear();
      destroyRetired(pooled);
      pooled.connection.closeSync();
    }
    this.#admin.closeSync();
    this.#instance.closeSync();
  }
}
