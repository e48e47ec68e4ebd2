/**
 * One SQL namespace over every DuckDB dataset: an in-memory DuckDB instance per resource class
 * (memory limit, threads), locked down (no extension loading, no file access outside the
 * generation directories, configuration locked), with each dataset's current generation ATTACHed
 * read-only behind a view named after the dataset. So `FROM orders JOIN customers` and `SELECT 1`
 * are plain DuckDB queries.
 *
 * Swaps: `setCatalog()` attaches the new generation, replaces the view and detaches the old
 * generation. A query binds its views when it starts (`startStream()`, synchronous), and queries
 * start only while no catalog change is in flight, so every dataset in a query is read at one
 * generation from start to end; DuckDB keeps a detached generation alive for the queries that
 * bound it. The generation each query read is reported with its result.
 *
 * SQLite datasets joined with DuckDB ones are read into a DuckDB table once per generation
 * (bounded in rows and bytes) and served behind a view of the same name; queries that read only
 * SQLite datasets (or that DuckDB cannot parse: SQLite's `[name]` quoting) are routed to SQLite.
 * Routing uses DuckDB's own parser (`json_serialize_sql`): the tables a statement reads, CTEs
 * excluded. Prepared statements are kept per connection (an LRU) and rebound by DuckDB when the
 * catalog changed.
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import {
  type DuckDBConnection,
  DuckDBInstance,
  type DuckDBPreparedStatement,
  type DuckDBResult,
  type DuckDBType,
} from '@duckdb/node-api';
import { FerryError, type JsonValue } from '@ferry/core';
import Database from 'better-sqlite3';
import { LRUCache } from 'lru-cache';
import { type ArrowValue, arrowSchemaOf, batchToIpc, RecordBatchBuilder } from './arrow-results.js';
import { duckDbArrowValue } from './duckdb-arrow.js';
import {
  createSpiceCatalog,
  hasShow,
  isDescribe,
  placeholderRead,
  placeholderViewSql,
  replaceTaskHistory,
  rewriteListings,
  type Staging,
  spiceTable,
  sqliteColumnsInDuckDb,
  TASK_HISTORY,
  treeJson,
  USE_SPICE,
} from './duckdb-catalog.js';
import { bindDuckDbParams } from './duckdb-engine.js';
import { duckDbTypeToArrow } from './duckdb-types.js';
import { encodeDuckDbValue } from './duckdb-values.js';
import { collectTables, DuckDbViews, spiceName } from './duckdb-views.js';
import { scalarParams, uniqueColumnNames } from './encode.js';
import { quoteIdentifier } from './engine.js';
import {
  CrossEngineLimitError,
  NamespaceTableError,
  QueryFailedError,
  QueryResourceError,
} from './errors.js';
import type {
  BatchControl,
  BatchOutcome,
  BatchSink,
  DatasetRead,
  NamespaceCatalog,
  NamespaceDataset,
  NamespaceQueryControl,
  NamespaceTaskHistory,
  NamespaceView,
  QueryRoute,
  RowsOutcome,
} from './namespace-types.js';
import { valueBytes } from './namespace-types.js';
import { checkDuckDbStatement } from './statement-check.js';

export interface DuckDbNamespaceOptions {
  /** Directories the generations live in (the only files queries may reach); each ends in `/`. */
  readonly allowedDirectories: readonly string[];
  /** This namespace's temporary directory; each instance spills into a subdirectory of it. */
  readonly tempDirectory: string;
  /** Most bytes one instance may spill to its temporary directory. */
  readonly maxTempBytes: number;
  /** The default class: for queries that read no dataset with its own limits. */
  readonly memoryLimitBytes: number;
  readonly threads: number;
  /** How messages name the settings behind the defaults (`queryMemoryLimit`, …). */
  readonly settings: { readonly memory: string; readonly threads: string; readonly temp: string };
  /** Connections per instance (concurrent queries of one class); default 8. */
  readonly connections?: number;
  /** Prepared statements kept per connection; default 64. */
  readonly statementCacheSize?: number;
  /** Bounds on an SQLite dataset read into DuckDB for a query across engines. */
  readonly crossEngine: { readonly maxRows: number; readonly maxBytes: number };
  /** Replaced by `<data dir>` in messages (with the generation paths, which name their dataset). */
  readonly privateRoots?: readonly string[];
}

/** A resource class: the limits a query runs under, and where they come from (for messages). */
interface ResourceClass {
  readonly memoryLimitBytes: number;
  readonly threads: number;
  /** `duckdb_memory_limit of dataset 'orders'`, or the runtime setting. */
  readonly memorySource: string;
}

/** A prepared statement and the catalog version it was bound against. */
interface CachedStatement {
  readonly statement: DuckDBPreparedStatement;
  readonly version: number;
  /** Its result's column names and types as rows report them (the same for every run of it). */
  columns?: { readonly names: string[]; readonly columns: { name: string; type: string }[] };
}

interface PooledConnection {
  readonly connection: DuckDBConnection;
  readonly statements: LRUCache<string, CachedStatement>;
}

/** A result being read: what `consume` gets. */
interface StartedQuery {
  readonly result: DuckDBResult;
  readonly read: readonly DatasetRead[];
  readonly cached: CachedStatement;
}

const GENERATION_ALIAS = 'ferry_g';
/** SQLite datasets read into DuckDB live in DuckDB's own catalog, never listed (see duckdb-catalog.ts). */
const IMPORT_TABLE = 'ferry_sqlite_';
const INTERNAL = 'memory.main';
const MIB = 1024 * 1024;
const ROUTES_CACHED = 1_024;

function kib(bytes: number): string {
  return `${Math.max(1, Math.floor(bytes / 1024))}KiB`;
}

function datasetsPhrase(names: readonly string[]): string | undefined {
  if (names.length === 0) return undefined;
  const quoted = names.map((name) => `'${name}'`).join(', ');
  return names.length === 1 ? `dataset ${quoted}` : `datasets ${quoted}`;
}

const byName = (catalog: NamespaceCatalog, name: string): NamespaceDataset | undefined => {
  const lower = name.toLowerCase();
  return catalog.datasets.find((dataset) => dataset.name.toLowerCase() === lower);
};

/** The statement's table references as DuckDB parses them; `undefined` when it cannot list them. */
interface ParsedTables {
  readonly tables:
    | readonly { readonly catalog: string; readonly schema: string; readonly table: string }[]
    | undefined;
  readonly ctes: ReadonlySet<string>;
  readonly parseError?: string;
  /** The statement with its listings rewritten to Spice's names (duckdb-catalog.ts), when they were. */
  readonly sql?: string;
  /** A listing or a SHOW / DESCRIBE: DuckDB's alone. */
  readonly listing?: boolean;
  /** A DESCRIBE: it reads no rows, so no dataset is read in for it. */
  readonly describe?: boolean;
}

/** One instance of a resource class, with the catalog applied to it. */
class ClassInstance {
  readonly resources: ResourceClass;
  readonly #instance: DuckDBInstance;
  readonly #admin: DuckDBConnection;
  readonly #maxConnections: number;
  readonly #statementCacheSize: number;
  readonly #idle: PooledConnection[] = [];
  readonly #busy = new Set<PooledConnection>();
  readonly #waiters: ((connection: PooledConnection) => void)[] = [];
  #opened = 0;
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
  /** The catalog as applied (views and attachments match it once `#changing` settles). */
  applied: NamespaceCatalog = { version: 0, datasets: [] };
  #changing: Promise<void> = Promise.resolve();
  /** Catalog changes queued or running (none: a query may start without waiting). */
  #changes = 0;
  #inFlight = 0;
  readonly #finished = new Set<() => void>();

  private constructor(
    resources: ResourceClass,
    instance: DuckDBInstance,
    admin: DuckDBConnection,
    connections: number,
    statementCacheSize: number,
  ) {
    this.resources = resources;
    this.#instance = instance;
    this.#admin = admin;
    this.#maxConnections = connections;
    this.#statementCacheSize = statementCacheSize;
  }

  static async create(
    resources: ResourceClass,
    options: DuckDbNamespaceOptions,
    tempDirectory: string,
  ): Promise<ClassInstance> {
    const instance = await DuckDBInstance.create(':memory:', {
      autoinstall_known_extensions: 'false',
      autoload_known_extensions: 'false',
      allow_community_extensions: 'false',
      memory_limit: kib(resources.memoryLimitBytes),
      threads: String(resources.threads),
      temp_directory: tempDirectory,
    });
    const admin = await instance.connect();
    // Spice's catalog `spice`, schema `public`, and the filtered listings (duckdb-catalog.ts).
    await createSpiceCatalog(admin);
    const allowed = options.allowedDirectories.map((dir) => `'${dir.replaceAll("'", "''")}'`).join(', ');
    // Order matters: allowed_directories and the temp cap cannot be passed at creation (the first
    // fails, the second is not enforced then); external access off and the lock come last.
    await admin.run(`SET allowed_directories = [${allowed}]`);
    await admin.run(`SET max_temp_directory_size = '${kib(options.maxTempBytes)}'`);
    await admin.run('SET enable_external_access = false');
    await admin.run('SET lock_configuration = true');
    return new ClassInstance(
      resources,
      instance,
      admin,
      options.connections ?? 8,
      options.statementCacheSize ?? 64,
    );
  }

  /** A connection of its own (not pooled): for parsing, which binds nothing. */
  connect(): Promise<DuckDBConnection> {
    return this.#instance.connect();
  }

  /** Queries running on this instance now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Runs `change` once the previous catalog change is done; queries do not start meanwhile. */
  #serialize(change: () => Promise<void>): Promise<void> {
    this.#changes++;
    const next = this.#changing.then(change).finally(() => {
      this.#changes--;
    });
    this.#changing = next.catch(() => undefined);
    return next;
  }

  /** Whether a catalog change is queued or running (then queries wait for {@link settled}). */
  get changing(): boolean {
    return this.#changes > 0;
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
          await this.#admin.run(
            `ATTACH '${path.replaceAll("'", "''")}' AS ${GENERATION_ALIAS}${id} (READ_ONLY)`,
          );
          this.#attached.add(id);
        }
        if (this.#views.get(dataset.name) !== id) {
          await this.#admin.run(
            `CREATE OR REPLACE VIEW ${spiceTable(dataset.name)} AS SELECT * FROM ${GENERATION_ALIAS}${id}.main.${quoteIdentifier(dataset.name)}`,
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
      for (const id of [...this.#attached]) {
        if ([...current.values()].includes(id)) continue;
        await this.#admin.run(`DETACH ${GENERATION_ALIAS}${id}`);
        this.#attached.delete(id);
      }
      for (const [name, imported] of [...this.#imports]) {
        const dataset = byName(catalog, name);
        if (dataset?.generation?.id === imported.generation) continue;
        this.#imports.delete(name);
        await imported.ready.catch(() => undefined);
        await this.#admin.run(`DROP VIEW IF EXISTS ${spiceTable(name)}`);
        await this.#admin.run(`DROP TABLE IF EXISTS ${INTERNAL}.${IMPORT_TABLE}${imported.generation}`);
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
  ensureImported(dataset: NamespaceDataset, limits: DuckDbNamespaceOptions['crossEngine']): Promise<void> {
    const generation = dataset.generation;
    if (generation === null) throw new NamespaceTableError(dataset.name, 'not-serving');
    const known = this.#imports.get(dataset.name);
    if (known?.generation === generation.id) return known.ready;
    const ready = this.#serialize(() => this.#import(dataset, limits));
    this.#imports.set(dataset.name, { generation: generation.id, ready });
    ready.catch(() => {
      if (this.#imports.get(dataset.name)?.ready === ready) this.#imports.delete(dataset.name);
    });
    return ready;
  }

  async #import(dataset: NamespaceDataset, limits: DuckDbNamespaceOptions['crossEngine']): Promise<void> {
    const generation = dataset.generation;
    if (generation === null) return;
    const stageName = `ferry_stage_${generation.id}`;
    const stage = `${INTERNAL}.${stageName}`;
    const target = `${INTERNAL}.${IMPORT_TABLE}${generation.id}`;
    const db = new Database(generation.path, { readonly: true, fileMustExist: true });
    try {
      const columns = sqliteColumnsInDuckDb(db, dataset);
      await this.#admin.run(
        `CREATE OR REPLACE TABLE ${stage} (${columns.map((column) => `${quoteIdentifier(column.name)} ${column.staging}`).join(', ')})`,
      );
      const appender = await this.#admin.createAppender(stageName, 'main', 'memory');
      let rows = 0;
      let bytes = 0;
      try {
        const statement = db
          .prepare(`SELECT * FROM ${quoteIdentifier(dataset.name)}`)
          .raw(true)
          .safeIntegers(true);
        for (const row of statement.iterate() as IterableIterator<unknown[]>) {
          rows++;
          if (rows > limits.maxRows) {
            throw new CrossEngineLimitError(dataset.name, 'rows', limits.maxRows);
          }
          for (const [index, column] of columns.entries()) {
            const value = row[index];
            bytes += valueBytes(value);
            appendStaging(appender, column.staging, value, dataset.name, column.name);
          }
          appender.endRow();
          if (bytes > limits.maxBytes) {
            throw new CrossEngineLimitError(dataset.name, 'bytes', limits.maxBytes);
          }
          // Other queries of this worker keep going while a large table is read in.
          if (rows % 10_000 === 0) {
            appender.flushSync();
            await yieldToLoop();
          }
        }
        appender.flushSync();
      } finally {
        appender.closeSync();
      }
      const casts = columns
        .map(
          (column) =>
            `CAST(${quoteIdentifier(column.name)} AS ${column.type}) AS ${quoteIdentifier(column.name)}`,
        )
        .join(', ');
      await this.#admin.run(`CREATE OR REPLACE TABLE ${target} AS SELECT ${casts} FROM ${stage}`);
      await this.#admin.run(`CREATE OR REPLACE VIEW ${spiceTable(dataset.name)} AS SELECT * FROM ${target}`);
      // The import replaced the dataset's placeholder.
      this.#placeholders.delete(dataset.name);
    } finally {
      db.close();
      await this.#admin.run(`DROP TABLE IF EXISTS ${stage}`).catch(() => undefined);
    }
  }

  /** An idle connection, taken at once (no await), or undefined when none is idle. */
  tryAcquire(): PooledConnection | undefined {
    const pooled = this.#idle.pop();
    if (pooled === undefined) return undefined;
    this.#busy.add(pooled);
    this.#inFlight++;
    return pooled;
  }

  async acquire(): Promise<PooledConnection> {
    let pooled = this.#idle.pop();
    if (pooled === undefined && this.#opened < this.#maxConnections) {
      this.#opened++;
      try {
        const connection = await this.#instance.connect();
        // Unqualified names resolve in spice.public, as in Spice.
        await connection.run(USE_SPICE);
        pooled = {
          connection,
          statements: new LRUCache<string, CachedStatement>({
            max: this.#statementCacheSize,
            dispose: (cached) => cached.statement.destroySync(),
          }),
        };
      } catch (error) {
        this.#opened--;
        throw error;
      }
    }
    pooled ??= await new Promise<PooledConnection>((resolve) => this.#waiters.push(resolve));
    this.#busy.add(pooled);
    this.#inFlight++;
    return pooled;
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
    for (const done of [...this.#finished]) done();
    this.#busy.delete(pooled);
    this.#inFlight--;
    const waiter = this.#waiters.shift();
    if (waiter === undefined) this.#idle.push(pooled);
    else {
      this.#busy.add(pooled);
      this.#inFlight++;
      waiter(pooled);
    }
  }

  /** Interrupts every running query until none runs (before the worker ends), for at most `limitMs`. */
  async cancelAll(limitMs = 5_000): Promise<void> {
    const started = performance.now();
    while (this.#busy.size > 0 && performance.now() - started < limitMs) {
      for (const pooled of this.#busy) pooled.connection.interrupt();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  close(): void {
    for (const pooled of this.#idle.splice(0)) {
      pooled.statements.clear();
      pooled.connection.closeSync();
    }
    this.#admin.closeSync();
    this.#instance.closeSync();
  }
}

function appendStaging(
  appender: import('@duckdb/node-api').DuckDBAppender,
  staging: Staging,
  value: unknown,
  dataset: string,
  column: string,
): void {
  if (value === null || value === undefined) {
    appender.appendNull();
    return;
  }
  switch (staging) {
    case 'BIGINT':
      if (typeof value === 'bigint') appender.appendBigInt(value);
      else if (typeof value === 'number' && Number.isInteger(value)) appender.appendBigInt(BigInt(value));
      else throw mismatch(dataset, column, 'INTEGER', value);
      return;
    case 'DOUBLE':
      if (typeof value === 'number') appender.appendDouble(value);
      else if (typeof value === 'bigint') appender.appendDouble(Number(value));
      else throw mismatch(dataset, column, 'REAL', value);
      return;
    case 'BLOB':
      if (value instanceof Uint8Array) appender.appendBlob(value);
      else appender.appendBlob(new TextEncoder().encode(String(value)));
      return;
    default:
      appender.appendVarchar(
        value instanceof Uint8Array ? Buffer.from(value).toString('base64') : String(value),
      );
  }
}

function mismatch(dataset: string, column: string, affinity: string, value: unknown): QueryFailedError {
  return new QueryFailedError(
    `dataset '${dataset}'`,
    `column '${column}' (${affinity}) holds a ${typeof value === 'string' ? 'TEXT' : typeof value} value, which DuckDB cannot take in a join across engines; cast the column in a query of its own.`,
  );
}

export class DuckDbNamespace {
  readonly #options: DuckDbNamespaceOptions;
  readonly #instances = new Map<string, Promise<ClassInstance>>();
  /** The instances created so far, to be taken without an await. */
  readonly #created = new Map<string, ClassInstance>();
  readonly #default: ClassInstance;
  readonly #parser: DuckDBConnection;
  readonly #routes = new LRUCache<string, ParsedTables>({ max: ROUTES_CACHED });
  /** The spicepod views' SQL, parsed (by text). */
  readonly #viewTables = new Map<string, ParsedTables>();
  #taskHistory: NamespaceTaskHistory = { version: 0, rows: [] };
  #catalog: NamespaceCatalog = { version: 0, datasets: [] };
  #nextTemp = 0;

  private constructor(options: DuckDbNamespaceOptions, first: ClassInstance, parser: DuckDBConnection) {
    this.#options = options;
    this.#default = first;
    this.#parser = parser;
    this.#instances.set(DuckDbNamespace.#key(first.resources), Promise.resolve(first));
    this.#created.set(DuckDbNamespace.#key(first.resources), first);
  }

  static async create(options: DuckDbNamespaceOptions): Promise<DuckDbNamespace> {
    const resources: ResourceClass = {
      memoryLimitBytes: options.memoryLimitBytes,
      threads: options.threads,
      memorySource: `the runtime's ${options.settings.memory}`,
    };
    const first = await ClassInstance.create(resources, options, `${options.tempDirectory}/class-0`);
    return new DuckDbNamespace(options, first, await first.connect());
  }

  static #key(resources: Pick<ResourceClass, 'memoryLimitBytes' | 'threads'>): string {
    return `${resources.memoryLimitBytes}:${resources.threads}`;
  }

  get catalog(): NamespaceCatalog {
    return this.#catalog;
  }

  /** Makes `spice.runtime.task_history` hold `history` in every instance (queries after it see it). */
  async setTaskHistory(history: NamespaceTaskHistory): Promise<void> {
    if (history.version <= this.#taskHistory.version) return;
    this.#taskHistory = history;
    const instances = await Promise.all(this.#instances.values());
    await Promise.all(instances.map((instance) => instance.applyTaskHistory(history)));
  }

  /** Makes `catalog` current in every instance (attach, views, detach); queries see it once resolved. */
  async setCatalog(catalog: NamespaceCatalog): Promise<void> {
    await this.#parseViews(catalog);
    this.#catalog = catalog;
    const instances = await Promise.all(this.#instances.values());
    await Promise.all(instances.map((instance) => instance.apply(catalog)));
  }

  /** Which engine runs `sql` and which datasets it reads, by DuckDB's parser (remembered per text). */
  async route(sql: string): Promise<QueryRoute> {
    let parsed = this.#routes.get(sql);
    if (parsed === undefined) {
      parsed = await this.#parse(sql);
      if (parsed.parseError === undefined) this.#routes.set(sql, parsed);
    }
    const catalog = this.#catalog;
    const hasSqlite = catalog.datasets.some((dataset) => dataset.engine === 'sqlite');
    if (parsed.parseError !== undefined) {
      if (hasSqlite) return { engine: 'sqlite', datasets: undefined };
      throw new QueryFailedError(undefined, parsed.parseError);
    }
    if (parsed.tables === undefined) return { engine: 'duckdb', datasets: undefined };
    const names: string[] = [];
    // A view is read as the datasets under it, and runs here (views are DuckDB's).
    let viaView = false;
    const visit = (refs: NonNullable<ParsedTables['tables']>, ctes: ReadonlySet<string>, seen: string[]) => {
      for (const ref of refs) {
        const view = this.#viewOf(ref, ctes);
        if (view !== undefined) {
          viaView = true;
          const failure = this.#default.viewFailures.get(view.name);
          if (failure !== undefined) throw new QueryFailedError(`view '${view.name}'`, failure);
          const parsedView = this.#viewTables.get(view.sql);
          if (parsedView?.tables !== undefined && !seen.includes(view.name)) {
            visit(parsedView.tables, parsedView.ctes, [...seen, view.name]);
          }
          continue;
        }
        const name = this.#datasetOf(ref, ctes);
        if (name !== undefined && !names.includes(name)) names.push(name);
      }
    };
    visit(parsed.tables, parsed.ctes, []);
    const engines = names.map((name) => byName(catalog, name)?.engine);
    const sqliteOnly =
      names.length > 0 &&
      !viaView &&
      parsed.listing !== true &&
      engines.every((engine) => engine === 'sqlite');
    if (sqliteOnly) return { engine: 'sqlite', datasets: names };
    // A DESCRIBE reads no rows: the datasets' views (an SQLite one's placeholder) describe them.
    const datasets = parsed.describe === true ? [] : names;
    return { engine: 'duckdb', datasets, ...(parsed.sql === undefined ? {} : { sql: parsed.sql }) };
  }

  /** The spicepod view a table reference names, if any. */
  #viewOf(
    ref: { catalog: string; schema: string; table: string },
    ctes: ReadonlySet<string>,
  ): NamespaceView | undefined {
    const name = spiceName(ref, ctes)?.toLowerCase();
    return name === undefined
      ? undefined
      : this.#catalog.views?.find((view) => view.name.toLowerCase() === name);
  }

  /** Parses the views' SQL (once per text), for routing queries of them. */
  async #parseViews(catalog: NamespaceCatalog): Promise<void> {
    for (const view of catalog.views ?? []) {
      if (!this.#viewTables.has(view.sql)) this.#viewTables.set(view.sql, await this.#parse(view.sql));
    }
  }

  async #parse(sql: string): Promise<ParsedTables> {
    const reader = await this.#parser.runAndReadAll('SELECT json_serialize_sql($1::VARCHAR)', [sql]);
    const tree = JSON.parse(String(reader.getRows()[0]?.[0] ?? '{}')) as {
      error?: boolean;
      error_type?: string;
      error_message?: string;
      statements?: unknown[];
    };
    const ctes = new Set<string>();
    if (tree.error === true) {
      // Not a SELECT (EXPLAIN, PRAGMA): the engine's catalog errors say what it reads.
      if (tree.error_type === 'parser')
        return { tables: undefined, ctes, parseError: `Parser Error: ${tree.error_message}` };
      return { tables: undefined, ctes };
    }
    const tables: { catalog: string; schema: string; table: string }[] = [];
    collectTables(tree.statements, tables, ctes);
    const rewritten = rewriteListings(tree);
    const shows = hasShow(tree.statements);
    const flags = { ...(shows ? { listing: true } : {}), ...(isDescribe(tree) ? { describe: true } : {}) };
    if (rewritten === undefined) return { tables, ctes, ...flags };
    const back = await this.#parser.runAndReadAll('SELECT json_deserialize_sql($1::JSON)', [
      treeJson(rewritten),
    ]);
    return { tables, ctes, ...flags, listing: true, sql: String(back.getRows()[0]?.[0] ?? sql) };
  }

  /** The configured dataset a table reference names, if any. */
  #datasetOf(
    ref: { catalog: string; schema: string; table: string },
    ctes: ReadonlySet<string>,
  ): string | undefined {
    const catalog = this.#catalog;
    // `orders`, `public.orders`, `spice.public.orders` (Spice's names; CTEs excluded).
    const plain = spiceName(ref, ctes);
    if (plain !== undefined) return byName(catalog, plain)?.name;
    if (ref.catalog === '' && ref.schema === '' && ctes.has(ref.table.toLowerCase())) return undefined;
    // SQLite's `dataset.table`: the schema is the attached dataset.
    if (ref.catalog === '') {
      const dataset = byName(catalog, ref.schema);
      if (dataset?.engine === 'sqlite') return dataset.name;
    }
    return undefined;
  }

  /** The resource class a query reading `datasets` runs in: the strictest of theirs and the default. */
  #classFor(datasets: readonly string[]): ResourceClass {
    let resources: ResourceClass = this.#default.resources;
    let memoryOwner: string | undefined;
    let threads = resources.threads;
    let memory = resources.memoryLimitBytes;
    for (const name of datasets) {
      const dataset = byName(this.#catalog, name);
      if (dataset?.memoryLimitBytes !== undefined && dataset.memoryLimitBytes < memory) {
        memory = dataset.memoryLimitBytes;
        memoryOwner = dataset.name;
      }
      if (dataset?.threads !== undefined && dataset.threads < threads) threads = dataset.threads;
    }
    if (memoryOwner !== undefined || threads !== resources.threads) {
      resources = {
        memoryLimitBytes: memory,
        threads,
        memorySource:
          memoryOwner === undefined
            ? resources.memorySource
            : `duckdb_memory_limit of dataset '${memoryOwner}'`,
      };
    }
    return resources;
  }

  async #instanceFor(resources: ResourceClass): Promise<ClassInstance> {
    const key = DuckDbNamespace.#key(resources);
    let instance = this.#instances.get(key);
    if (instance === undefined) {
      const temp = `${this.#options.tempDirectory}/class-${++this.#nextTemp}`;
      instance = ClassInstance.create(resources, this.#options, temp).then(async (created) => {
        await created.apply(this.#catalog);
        await created.applyTaskHistory(this.#taskHistory);
        this.#created.set(key, created);
        return created;
      });
      this.#instances.set(key, instance);
      instance.catch(() => this.#instances.delete(key));
    }
    return instance;
  }

  /** Runs `sql` and answers JSON-safe rows (route it first; a route to SQLite is not run here). */
  rows(
    sql: string,
    params: readonly JsonValue[],
    route: QueryRoute,
    control: NamespaceQueryControl = {},
  ): Promise<RowsOutcome> {
    return this.#run(sql, params, route, control, async ({ result, read, cached }, stop) => {
      cached.columns ??= columnsOf(result);
      const { names, columns } = cached.columns;
      const rows: Record<string, JsonValue>[] = [];
      let bytes = 0;
      for (;;) {
        const chunk = await result.fetchChunk();
        if (chunk === null || chunk.rowCount === 0) break;
        for (const values of chunk.getRows()) {
          const record: Record<string, JsonValue> = {};
          for (const [index, value] of values.entries()) {
            const encoded = encodeDuckDbValue(value);
            bytes += valueBytes(encoded);
            record[names[index] as string] = encoded;
          }
          rows.push(record);
        }
        const limit = exceeded(rows.length, bytes, control);
        if (limit !== undefined) {
          stop();
          return { kind: 'too-large', limit, read };
        }
      }
      return { kind: 'rows', columns, rows, read };
    });
  }

  /** Runs `sql` and hands its result to `sink` as Arrow batches, waiting for the sink between batches. */
  batches(
    sql: string,
    params: readonly JsonValue[],
    route: QueryRoute,
    sink: BatchSink,
    control: BatchControl = {},
  ): Promise<BatchOutcome> {
    return this.#run(sql, params, route, control, async ({ result, read }, stop, emitted) => {
      const names = uniqueColumnNames(result.columnNames());
      const types = result.columnTypes();
      const schema = arrowSchemaOf(
        types.map((type: DuckDBType, index) => ({
          name: names[index] as string,
          type: duckDbTypeToArrow(type) ?? 'Utf8',
          typeName: type.toString(),
        })),
      );
      const fieldTypes = schema.fields.map((field) => field.type);
      sink.schema(batchToIpc(schema), read);
      emitted();
      const builder = new RecordBatchBuilder(schema);
      const batchRows = control.batchRows ?? 65_536;
      const batchBytes = control.batchBytes ?? 4 * MIB;
      let rows = 0;
      let bytes = 0;
      const send = async (): Promise<'rows' | 'bytes' | undefined> => {
        const count = builder.rows;
        const ipc = batchToIpc(schema, builder.flush());
        rows += count;
        bytes += ipc.byteLength;
        const limit = exceeded(rows, bytes, control);
        if (limit !== undefined) return limit;
        await sink.batch(ipc, count);
        return undefined;
      };
      for (;;) {
        const chunk = await result.fetchChunk();
        if (chunk === null || chunk.rowCount === 0) break;
        for (const values of chunk.getRows()) {
          builder.appendRow(
            values.map((value, index): ArrowValue => duckDbArrowValue(value, fieldTypes[index] as never)),
          );
          // A batch ends at batchRows rows, or (checked every 256 rows) at about batchBytes.
          const full = builder.rows >= batchRows || (builder.rows % 256 === 0 && builder.bytes >= batchBytes);
          if (!full) continue;
          const limit = await send();
          if (limit !== undefined) {
            stop();
            return { kind: 'too-large', limit, read };
          }
        }
      }
      if (builder.rows > 0) {
        const limit = await send();
        if (limit !== undefined) return { kind: 'too-large', limit, read };
      }
      return { kind: 'done', read, rows, bytes };
    });
  }

  /**
   * Runs a query; if it runs out of memory or temporary space while other queries share its
   * instance, and has handed nothing to its caller yet, it runs once more after one of them ended:
   * the query that exhausted the instance is then usually gone (it fails fast), and the one that
   * merely needed a page meanwhile is answered.
   */
  async #run<T>(
    sql: string,
    params: readonly JsonValue[],
    route: QueryRoute,
    control: NamespaceQueryControl,
    consume: (started: StartedQuery, stop: () => void, emitted: () => void) => Promise<T>,
  ): Promise<T> {
    let emitted = false;
    for (let attempt = 0; ; attempt++) {
      const outcome = await this.#attempt(sql, params, route, control, (started, stop) =>
        consume(started, stop, () => {
          emitted = true;
        }),
      );
      if (!('retry' in outcome)) return outcome.value;
      if (emitted || attempt > 0) throw outcome.error;
      await outcome.retry;
    }
  }

  async #attempt<T>(
    asked: string,
    params: readonly JsonValue[],
    route: QueryRoute,
    control: NamespaceQueryControl,
    consume: (started: StartedQuery, stop: () => void) => Promise<T>,
  ): Promise<{ readonly value: T } | { readonly retry: Promise<void>; readonly error: unknown }> {
    // A listing runs as rewritten to Spice's names (duckdb-catalog.ts).
    const sql = (route.engine === 'duckdb' ? route.sql : undefined) ?? asked;
    const values = scalarParams(params);
    const { signal } = control;
    signal?.throwIfAborted();
    const datasets = route.datasets ?? [];
    const resources = this.#classFor(datasets);
    // The hot path takes no await before the engine: a hop through the event loop per step costs
    // more than the bookkeeping it waits for.
    const instance =
      this.#created.get(DuckDbNamespace.#key(resources)) ?? (await this.#instanceFor(resources));
    const subject = datasetsPhrase(datasets);
    const pooled = instance.tryAcquire() ?? (await instance.acquire());
    const { connection } = pooled;
    const interrupt = (): void => connection.interrupt();
    signal?.addEventListener('abort', interrupt, { once: true });
    try {
      for (let attempt = 0; ; attempt++) {
        // A join across engines reads its SQLite datasets into DuckDB first (once per generation).
        for (const name of datasets) {
          const dataset = byName(this.#catalog, name);
          if (dataset?.engine === 'sqlite') await instance.ensureImported(dataset, this.#options.crossEngine);
        }
        // A statement is bound to the generations attached when it was prepared (DuckDB refuses
        // to run it once one is detached): prepared again after every catalog change.
        let cached = pooled.statements.get(sql);
        if (cached !== undefined && cached.version !== instance.applied.version) {
          pooled.statements.delete(sql);
          cached = undefined;
        }
        if (cached === undefined) {
          const version = instance.applied.version;
          let statement: DuckDBPreparedStatement;
          try {
            statement = await checkDuckDbStatement(connection, sql);
          } catch (error) {
            // A swap dropped an SQLite dataset's import between its import and the prepare: import
            // it again (its new generation) rather than take the query for SQLite's.
            const missing = missingTable(error);
            if (attempt < 20 && missing !== undefined && this.#importedBy(datasets, missing)) continue;
            throw error;
          }
          cached = { statement, version };
          pooled.statements.set(sql, cached);
        }
        if (instance.changing) await instance.settled();
        signal?.throwIfAborted();
        // The catalog moved while it was prepared: prepare it again on the new one.
        if (cached.version !== instance.applied.version) {
          if (attempt > 20)
            throw new QueryFailedError(
              subject,
              'the catalog kept changing while the query was prepared; retry it.',
            );
          continue;
        }
        const prepared = cached.statement;
        // From here to startStream() nothing awaits: no catalog change can slip in, so the views
        // it binds are the generations of `instance.applied`.
        const applied = instance.applied;
        const read: DatasetRead[] = [];
        for (const name of datasets) {
          const generation = byName(applied, name)?.generation;
          if (generation === undefined || generation === null)
            throw new NamespaceTableError(name, 'not-serving');
          read.push({ name: byName(applied, name)?.name ?? name, snapshotId: generation.snapshotId });
        }
        bindDuckDbParams(prepared, values);
        let result: DuckDBResult;
        try {
          const pending = prepared.startStream();
          result = await pending.getResult();
        } catch (error) {
          // An SQLite table of a join was dropped by a swap between its import and the start.
          const missing = missingTable(error);
          if (attempt < 2 && missing !== undefined && this.#importedBy(datasets, missing)) continue;
          throw error;
        }
        return { value: await consume({ result, read, cached }, interrupt) };
      }
    } catch (error) {
      if (signal?.aborted === true) throw signal.reason;
      const failure = this.#engineError(error, subject, instance.resources);
      // Others share the instance: wait for one of them to end, then try again (see #run).
      if (failure instanceof QueryResourceError && instance.inFlight > 1) {
        return { retry: instance.quieter(2_000), error: failure };
      }
      throw failure;
    } finally {
      signal?.removeEventListener('abort', interrupt);
      instance.release(pooled);
    }
  }

  /** Whether `table` is an SQLite dataset among `datasets`, read into DuckDB for this query. */
  #importedBy(datasets: readonly string[], table: string): boolean {
    const dataset = byName(this.#catalog, table);
    return dataset?.engine === 'sqlite' && datasets.includes(dataset.name);
  }

  /** The error a caller sees: the dataset named for a missing table, limits named, no local path. */
  #engineError(error: unknown, subject: string | undefined, resources: ResourceClass): unknown {
    if (error instanceof FerryError) return error;
    const message = error instanceof Error ? error.message : String(error);
    // An SQLite dataset DuckDB was not asked to read in (its placeholder was read): SQLite's.
    const placeholder = placeholderRead(error);
    if (placeholder !== undefined) return new NamespaceTableError(placeholder, 'sqlite');
    const missing = missingTable(error);
    if (missing !== undefined) {
      const dataset = byName(this.#catalog, missing);
      const view = this.#catalog.views?.find((v) => v.name.toLowerCase() === missing.toLowerCase());
      // A view not created yet: its datasets have just begun to serve (the catalog is on its way).
      const under = view === undefined ? undefined : this.#viewTables.get(view.sql)?.tables?.[0];
      if (under !== undefined)
        return new NamespaceTableError(spiceName(under, new Set()) ?? under.table, 'not-serving');
      if (dataset === undefined) return new NamespaceTableError(missing, 'unknown');
      return new NamespaceTableError(dataset.name, dataset.engine === 'sqlite' ? 'sqlite' : 'not-serving');
    }
    if (message.startsWith('Out of Memory Error')) {
      const temp = message.includes('max_temp_directory_size');
      return new QueryResourceError(
        temp ? 'temp' : 'memory',
        subject,
        temp ? this.#options.maxTempBytes : resources.memoryLimitBytes,
        temp ? `the runtime's ${this.#options.settings.temp}` : resources.memorySource,
        { cause: error },
      );
    }
    return new QueryFailedError(subject, this.redact(message), { cause: error });
  }

  /** `message` with generation paths named by dataset, other local paths and internal names hidden. */
  redact(message: string): string {
    let text = message;
    for (const dataset of this.#catalog.datasets) {
      const generation = dataset.generation;
      if (generation === null) continue;
      text = text
        .replaceAll(generation.path, `<dataset ${dataset.name}>`)
        .replaceAll(`${GENERATION_ALIAS}${generation.id}`, dataset.name)
        .replaceAll(`${IMPORT_TABLE}${generation.id}`, dataset.name);
    }
    const roots = [
      ...(this.#options.privateRoots ?? []),
      ...this.#options.allowedDirectories,
      this.#options.tempDirectory,
    ]
      .map((root) => root.replace(/\/+$/, ''))
      .sort((a, b) => b.length - a.length);
    for (const root of roots) {
      text = text.replace(new RegExp(`${escapeRegExp(root)}[^\\s'"]*`, 'g'), '<data dir>');
    }
    return text;
  }

  /** Interrupts every running query of every instance and waits until none runs. */
  async cancelAll(): Promise<void> {
    const instances = await Promise.allSettled(this.#instances.values());
    await Promise.all(
      instances.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value.cancelAll()] : [])),
    );
  }

  /** Queries running now, over every instance. */
  async inFlight(): Promise<number> {
    const instances = await Promise.all(this.#instances.values());
    return instances.reduce((sum, instance) => sum + instance.inFlight, 0);
  }

  async close(): Promise<void> {
    await this.cancelAll();
    const instances = await Promise.allSettled(this.#instances.values());
    for (const outcome of instances) {
      if (outcome.status !== 'fulfilled') continue;
      // Not under a catalog change in flight: DuckDB would not return from closing then.
      await outcome.value.settled();
      outcome.value.close();
    }
  }
}

/** A result's column names (made unique) and types, as rows report them. */
function columnsOf(result: DuckDBResult): NonNullable<CachedStatement['columns']> {
  const names = uniqueColumnNames(result.columnNames());
  const columns = result
    .columnTypes()
    .map((type, index) => ({ name: names[index] as string, type: type.toString() }));
  return { names, columns };
}

function exceeded(rows: number, bytes: number, control: NamespaceQueryControl): 'rows' | 'bytes' | undefined {
  if (control.maxRows !== undefined && control.maxRows > 0 && rows > control.maxRows) return 'rows';
  if (control.maxBytes !== undefined && control.maxBytes > 0 && bytes > control.maxBytes) return 'bytes';
  return undefined;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The table a DuckDB "Table with name X does not exist" error names. */
function missingTable(error: unknown): string | undefined {
  const message = error instanceof Error ? error.message : String(error);
  return /^Catalog Error: Table with name (.+?) does not exist/.exec(message)?.[1];
}
