/**
 * One SQL namespace over every DuckDB dataset: an in-memory DuckDB instance per resource class
 * (duckdb-resources.ts), each with every dataset's current generation attached read-only behind a
 * view named after the dataset (duckdb-instance.ts). So `FROM orders JOIN customers` and
 * `SELECT 1` are plain DuckDB queries. This module is the namespace's face: it routes a statement
 * (statement-check.ts parses and checks it, duckdb-routing.ts decides where it runs), runs it on a
 * pooled connection of its class, answers JSON-safe rows or Arrow batches (duckdb-batches.ts), and
 * runs a query once more when it ran out of memory beside others.
 *
 * Swaps: `setCatalog()` applies the new catalog to every instance, where a query reads each
 * dataset at one generation from start to end (duckdb-instance.ts); the generation each query read
 * is reported with its result. SQLite datasets joined with DuckDB ones are read in
 * (duckdb-import.ts); queries that read only SQLite datasets (or that DuckDB cannot parse: SQLite's
 * `[name]` quoting) are routed to SQLite. A connection's statements are prepared again after a
 * catalog change.
 *
 * Spice's names: every dataset and spicepod view is `spice.public.<name>` (duckdb-catalog.ts); a
 * listing text (`SHOW TABLES`, `information_schema`, `duckdb_tables()`…) runs as rewritten on its
 * parse tree to show each of them once, never an internal name (worked out once per text; a text
 * that cannot be one — no such word in it — costs one regular expression test). The spicepod's
 * views are read as the datasets under them (duckdb-routing.ts); `setTaskHistory()` fills
 * `spice.runtime.task_history`.
 */
import type { DuckDBConnection, DuckDBPreparedStatement, DuckDBResult } from '@duckdb/node-api';
import type { ArrowDataType, JsonValue, QueryParam } from '@ferry/core/base';
import { BoundedCache } from './bounded-cache.js';
import { sendDuckDbBatches } from './duckdb-batches.js';
import { hasShow, isDescribe, parseTree, rewriteListings, spiceName, treeJson } from './duckdb-catalog.js';
import { asWritten, type DirectText, directText } from './duckdb-direct.js';
import { bindDuckDbParams, columnsOf, type ResultColumns } from './duckdb-engine.js';
import { datasetsPhrase, duckDbQueryError, missingDuckDbTable } from './duckdb-errors.js';
import { IMPORT_TABLE } from './duckdb-import.js';
import { DuckDbClassInstance, type PooledConnection, statementBytes } from './duckdb-instance.js';
import { type ResourceClass, resourceClassFor, resourceKey } from './duckdb-resources.js';
import {
  duckDbRoute,
  type ListingText,
  unparsedRoute,
  type ViewContext,
  viewsOfRoute,
} from './duckdb-routing.js';
import { duckDbTypeToArrow } from './duckdb-types.js';
import { encodeDuckDbValue } from './duckdb-values.js';
import { scalarParams, setEntry } from './encode.js';
import { NamespaceTableError, QueryFailedError, QueryResourceError } from './errors.js';
import {
  type BatchControl,
  type BatchOutcome,
  type BatchSink,
  capExceeded,
  type DatasetRead,
  datasetByName,
  type NamespaceCatalog,
  type NamespaceQueryControl,
  type NamespaceTaskHistory,
  PARAMETER_TYPES_METADATA,
  type PinnedGeneration,
  pinnedCatalog,
  pinsKey,
  pinsOf,
  type QueryRoute,
  type RowsOutcome,
  valueBytes,
} from './namespace-types.js';
import { SeenTexts } from './seen-texts.js';
import {
  checkDuckDbSql,
  DuckDbParseError,
  type DuckDbStatement,
  knownDuckDbStatement,
  prepareCheckedDuckDb,
  readDuckDbSql,
  SharedDuckDbParser,
} from './statement-check.js';

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
  /**
   * Connections per instance (concurrent queries of one class); default 8. The runtime gives its
   * admission bound (`maxQueriesInFlight`): a cap below it throttled DuckDB under many clients.
   * (Each DuckDB call also takes a thread of libuv's pool, 4 unless `UV_THREADPOOL_SIZE` says
   * otherwise: four long statements hold all four while they run.)
   */
  readonly connections?: number;
  /** A pinned instance unused for this long is closed; default 30 000 ms. */
  readonly pinnedIdleMs?: number;
  /** Bounds on an SQLite dataset read into DuckDB for a query across engines. */
  readonly crossEngine: { readonly maxRows: number; readonly maxBytes: number };
  /** Replaced by `<data dir>` in messages (with the generation paths, which name their dataset). */
  readonly privateRoots?: readonly string[];
}

/** A result being read: what `consume` gets. */
interface StartedQuery {
  readonly result: DuckDBResult;
  readonly read: readonly DatasetRead[];
  /** The result's columns (read once per prepared statement). */
  columns(): ResultColumns;
  /** Awaits a consumer, the connection meanwhile not counted against the instance's cap (see its `aside`). */
  aside<T>(wait: Promise<T>): Promise<T>;
  /** The prepared statement it runs (its parameters' types: {@link parameterTypesOf}). */
  readonly statement: DuckDBPreparedStatement;
}

/** Each `$n`'s type as DuckDB bound it, in Arrow's JSON form; `null` where it has none (`SELECT $1`). */
function parameterTypesOf(statement: DuckDBPreparedStatement): (ArrowDataType | null)[] {
  const types: (ArrowDataType | null)[] = [];
  for (let index = 1; index <= statement.parameterCount; index++) {
    let type: ArrowDataType | undefined;
    try {
      type = duckDbTypeToArrow(statement.parameterType(index));
    } catch {
      // DuckDB could not infer it ("Failed to get param logical type").
    }
    types.push(type ?? null);
  }
  return types;
}

/** Reads a result stopped by an interrupt to its end (the interrupt's error, at once). */
async function drain(result: DuckDBResult): Promise<void> {
  try {
    while (((await result.fetchChunk())?.rowCount ?? 0) > 0);
  } catch {
    // The interrupt: the query is over.
  }
}

/** Whether the query was cancelled (read anew after an await: the signal may have fired meanwhile). */
const isAborted = (signal: NamespaceQueryControl['signal']): boolean => signal?.aborted === true;

/** What a query needs of its route on every run, worked out once per route (and catalog version). */
interface RoutePlan {
  readonly version: number;
  readonly resources: ResourceClass;
  readonly key: string;
  readonly subject: string | undefined;
  /** Whether it reads an SQLite dataset (read into DuckDB first). */
  readonly joinsSqlite: boolean;
}

/**
 * Instances kept for pinned reads (a client's `X-Ferry-Snapshot`), each one class at one set of
 * pinned generations; past this many the least recently used goes (once no query uses it).
 */
const PINNED_INSTANCES = 4;

/**
 * A pinned instance no query has used for this long is closed (default of `pinnedIdleMs`): each
 * may cache up to its class's memory limit of the blocks it read, so four kept for good could hold
 * four times the limit beside the class's own instance. A report's queries come seconds apart; a
 * reopen costs ~27 ms (B16).
 */
const PINNED_IDLE_MS = 30_000;

/** An instance that reads some datasets at pinned generations, and the queries using it now. */
interface PinnedInstance {
  readonly pins: readonly PinnedGeneration[];
  readonly instance: Promise<DuckDbClassInstance>;
  users: number;
  /** Closes it once idle for `pinnedIdleMs` (set while no query uses it). */
  idle?: NodeJS.Timeout;
}

/** Times a query is prepared again because the catalog moved meanwhile, before it gives up. */
const MAX_PREPARES = 20;
/** How often an interrupt is repeated while a query started in one call has not begun (ms). */
const INTERRUPT_REPEAT_MS = 5;

/** A text that may name a listing (duckdb-catalog.ts); any other is none, without a parse. */
const MAY_LIST =
  /\b(?:show|describe|summarize|information_schema|duckdb_(?:tables|columns|views|schemas))\b/i;
/** A text that may name a listing and names none. */
const NO_LISTING = false;

export class DuckDbNamespace {
  readonly #options: DuckDbNamespaceOptions;
  readonly #instances = new Map<string, Promise<DuckDbClassInstance>>();
  /** The instances created so far, to be taken without an await. */
  readonly #created = new Map<string, DuckDbClassInstance>();
  readonly #default: DuckDbClassInstance;
  readonly #parser: SharedDuckDbParser;
  /** The texts run before: a text's prepared statement is kept from its second run on. */
  readonly #seen = new SeenTexts();
  /** Each checked statement's route at the catalog version it was made for. */
  readonly #routes = new WeakMap<DuckDbStatement, { readonly version: number; readonly route: QueryRoute }>();
  readonly #plans = new WeakMap<QueryRoute, RoutePlan>();
  /** A connection for the full parse trees a listing's rewrite needs (json_deserialize_sql's). */
  readonly #treeParser: DuckDBConnection;
  /** What each text that may name a listing runs as (per text: the rewrite keeps its literals). */
  readonly #listings = new BoundedCache<string, ListingText | typeof NO_LISTING>({
    entries: 1_024,
    bytes: 8 * 1024 * 1024,
  });
  /** What the spicepod views' SQL reads (by text), for routing queries of them. */
  readonly #viewReads = new Map<string, Pick<DuckDbStatement, 'tables' | 'ctes'>>();
  /** Instances for pinned reads, by class and pins, least recently used first. */
  readonly #pinned = new Map<string, PinnedInstance>();
  #taskHistory: NamespaceTaskHistory = { version: 0, rows: [] };
  #catalog: NamespaceCatalog = { version: 0, datasets: [] };
  #nextTemp = 0;

  private constructor(
    options: DuckDbNamespaceOptions,
    first: DuckDbClassInstance,
    parser: SharedDuckDbParser,
    treeParser: DuckDBConnection,
  ) {
    this.#options = options;
    this.#default = first;
    this.#parser = parser;
    this.#treeParser = treeParser;
    this.#instances.set(resourceKey(first.resources), Promise.resolve(first));
    this.#created.set(resourceKey(first.resources), first);
  }

  static async create(options: DuckDbNamespaceOptions): Promise<DuckDbNamespace> {
    const resources: ResourceClass = {
      memoryLimitBytes: options.memoryLimitBytes,
      threads: options.threads,
      memorySource: `the runtime's ${options.settings.memory}`,
    };
    const first = await DuckDbClassInstance.create(resources, options, `${options.tempDirectory}/class-0`);
    return new DuckDbNamespace(
      options,
      first,
      new SharedDuckDbParser(await first.connect()),
      await first.connect(),
    );
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
    await this.#readViews(catalog);
    this.#catalog = catalog;
    const instances = await Promise.all(this.#instances.values());
    await Promise.all([
      ...instances.map((instance) => instance.apply(catalog)),
      ...[...this.#pinned.values()].map(async (pinned) =>
        (await pinned.instance).apply(pinnedCatalog(catalog, pinned.pins)),
      ),
    ]);
  }

  /**
   * The instance of class `resources` that reads `pins` at their generations (created on first use,
   * the least recently used one let go past {@link PINNED_INSTANCES}); counted as used until the
   * caller's `done`.
   */
  async #pinnedInstance(
    resources: ResourceClass,
    pins: readonly PinnedGeneration[],
  ): Promise<{ readonly instance: DuckDbClassInstance; readonly done: () => void }> {
    const key = `${resourceKey(resources)}|${pinsKey(pins)}`;
    let pinned = this.#pinned.get(key);
    if (pinned === undefined) {
      const instance = this.#newInstance(resources, () => pinnedCatalog(this.#catalog, pins));
      pinned = { pins, instance, users: 0 };
      instance.catch(() => this.#pinned.delete(key));
      this.#pinned.set(key, pinned);
      for (const [oldKey, old] of this.#pinned) {
        if (this.#pinned.size <= PINNED_INSTANCES) break;
        this.#pinned.delete(oldKey);
        this.#closePinned(old);
      }
    } else {
      this.#pinned.delete(key);
      this.#pinned.set(key, pinned);
    }
    const entry = pinned;
    entry.users++;
    clearTimeout(entry.idle);
    let released = false;
    const done = (): void => {
      if (released) return;
      released = true;
      entry.users--;
      // Let go while this query used it (the key may name a newer instance by now): close it.
      if (this.#pinned.get(key) !== entry) this.#closePinned(entry);
      else if (entry.users === 0) {
        entry.idle = setTimeout(() => {
          if (this.#pinned.get(key) !== entry || entry.users > 0) return;
          this.#pinned.delete(key);
          this.#closePinned(entry);
        }, this.#options.pinnedIdleMs ?? PINNED_IDLE_MS);
        entry.idle.unref();
      }
    };
    try {
      return { instance: await entry.instance, done };
    } catch (error) {
      done();
      throw error;
    }
  }

  /** Pinned instances open now (each class at one set of pins). */
  get pinnedInstances(): number {
    return this.#pinned.size;
  }

  /** Closes a pinned instance taken out of the map, once no query uses it. */
  #closePinned(pinned: PinnedInstance): void {
    clearTimeout(pinned.idle);
    if (pinned.users > 0) return;
    pinned.instance.then(
      async (instance) => {
        await instance.settled();
        instance.close();
      },
      () => undefined,
    );
  }

  /**
   * The route of a statement checked before (by text or by `shapeKey`, its shape's key), at the
   * current catalog, without asking DuckDB; undefined when it must be checked first ({@link route}).
   */
  knownRoute(sql: string, shapeKey?: string): QueryRoute | undefined {
    const statement = knownDuckDbStatement(sql, shapeKey);
    if (statement === undefined) return undefined;
    // A listing is rewritten per text: one not seen yet is parsed first (route()).
    if (MAY_LIST.test(sql) && this.#listings.get(sql) === undefined) return undefined;
    return this.#routeOf(statement, sql);
  }

  /**
   * Which engine runs `sql` and which datasets it reads, by DuckDB's parser (each text, or each
   * shape, is parsed and checked once). A refused statement rejects with its refusal; a text DuckDB
   * cannot parse goes to SQLite when there are SQLite datasets.
   */
  async route(sql: string, shapeKey?: string): Promise<QueryRoute> {
    let statement: DuckDbStatement;
    try {
      statement = await readDuckDbSql(this.#parser, sql, shapeKey);
    } catch (error) {
      if (error instanceof DuckDbParseError) return unparsedRoute(error, this.#catalog, sql);
      throw error;
    }
    if (MAY_LIST.test(sql) && this.#listings.get(sql) === undefined) {
      this.#listings.set(sql, await this.#listingOf(sql), 2 * sql.length + 256);
    }
    return this.#routeOf(statement, sql);
  }

  /** A statement's route at the current catalog; DuckDB's refusal of it when it runs in DuckDB. */
  #routeOf(statement: DuckDbStatement, sql: string): QueryRoute {
    const catalog = this.#catalog;
    const listing = MAY_LIST.test(sql) ? this.#listings.get(sql) : undefined;
    let route: QueryRoute;
    if (listing !== undefined && listing !== NO_LISTING) {
      // Per text, never kept by statement (a statement may stand for every text of its shape).
      route = duckDbRoute(statement, catalog, this.#viewContext(), listing);
    } else {
      const known = this.#routes.get(statement);
      if (known?.version === catalog.version) route = known.route;
      else {
        route = duckDbRoute(statement, catalog, this.#viewContext());
        this.#routes.set(statement, { version: catalog.version, route });
      }
      // A view that could not be created since the route was made is answered with its reason.
      const views = viewsOfRoute.get(route);
      if (views !== undefined) {
        for (const view of views) {
          const failure = this.#default.viewFailures.get(view);
          if (failure !== undefined) throw new QueryFailedError(`view '${view}'`, failure);
        }
      }
    }
    if (route.engine === 'duckdb' && statement.refusal !== undefined) throw statement.refusal();
    return route;
  }

  #viewContext(): ViewContext | undefined {
    if (this.#catalog.views === undefined || this.#catalog.views.length === 0) return undefined;
    return { reads: this.#viewReads, failures: this.#default.viewFailures };
  }

  /** Reads what the views' SQL reads (once per text), for routing queries of them. */
  async #readViews(catalog: NamespaceCatalog): Promise<void> {
    for (const view of catalog.views ?? []) {
      if (this.#viewReads.has(view.sql)) continue;
      try {
        const statement = await readDuckDbSql(this.#parser, view.sql);
        this.#viewReads.set(view.sql, { tables: statement.tables, ctes: statement.ctes });
      } catch {
        // A view DuckDB cannot read is answered with its reason when it is created (duckdb-views.ts).
        this.#viewReads.set(view.sql, { tables: undefined, ctes: new Set() });
      }
    }
  }

  /**
   * What a text that may name a listing runs as: the listings of its parse tree rewritten to Spice's
   * names (duckdb-catalog.ts), or {@link NO_LISTING}.
   */
  async #listingOf(sql: string): Promise<ListingText | typeof NO_LISTING> {
    const tree = await parseTree(this.#treeParser, sql);
    if (tree.error === true) return NO_LISTING;
    const rewritten = rewriteListings(tree);
    const describe = isDescribe(tree);
    if (rewritten === undefined) return hasShow(tree.statements) ? { describe } : NO_LISTING;
    const back = await this.#treeParser.runAndReadAll('SELECT json_deserialize_sql($1::JSON)', [
      treeJson(rewritten),
    ]);
    return { describe, sql: String(back.getRows()[0]?.[0] ?? sql) };
  }

  /** A new instance of class `resources`, with `catalog()` as it is once made and the task history. */
  async #newInstance(
    resources: ResourceClass,
    catalog: () => NamespaceCatalog,
  ): Promise<DuckDbClassInstance> {
    const temp = `${this.#options.tempDirectory}/class-${++this.#nextTemp}`;
    const created = await DuckDbClassInstance.create(resources, this.#options, temp);
    await created.apply(catalog());
    await created.applyTaskHistory(this.#taskHistory);
    return created;
  }

  async #instanceFor(resources: ResourceClass): Promise<DuckDbClassInstance> {
    const key = resourceKey(resources);
    let instance = this.#instances.get(key);
    if (instance === undefined) {
      instance = this.#newInstance(resources, () => this.#catalog).then((created) => {
        this.#created.set(key, created);
        return created;
      });
      this.#instances.set(key, instance);
      // A class whose instance could not be made is made again by its next query (this one fails).
      instance.catch(() => this.#instances.delete(key));
    }
    return instance;
  }

  /** Runs `sql` and answers JSON-safe rows (route it first; a route to SQLite is not run here). */
  rows(
    sql: string,
    params: readonly QueryParam[],
    route: QueryRoute,
    control: NamespaceQueryControl = {},
  ): Promise<RowsOutcome> {
    return this.#run(sql, params, route, control, async (started, stop) => {
      const { result, read } = started;
      const { names, columns } = started.columns();
      const types = result.columnTypes();
      const rows: Record<string, JsonValue>[] = [];
      let bytes = 0;
      for (;;) {
        const chunk = await result.fetchChunk();
        if (chunk === null || chunk.rowCount === 0) break;
        for (const values of chunk.getRows()) {
          const record: Record<string, JsonValue> = {};
          for (let index = 0; index < values.length; index++) {
            const encoded = encodeDuckDbValue(values[index] as never, types[index]);
            bytes += valueBytes(encoded);
            setEntry(record, names[index] as string, encoded);
          }
          rows.push(record);
        }
        const limit = capExceeded(rows.length, bytes, control);
        if (limit !== undefined) {
          stop();
          return { kind: 'too-large', limit, read, bytes };
        }
      }
      return route.engine === 'duckdb' && route.statement?.shared === true
        ? { kind: 'rows', columns, rows, read, shared: true }
        : { kind: 'rows', columns, rows, read };
    });
  }

  /** Runs `sql` and hands its result to `sink` as Arrow batches, waiting for the sink between batches. */
  batches(
    sql: string,
    params: readonly QueryParam[],
    route: QueryRoute,
    sink: BatchSink,
    control: BatchControl = {},
  ): Promise<BatchOutcome> {
    return this.#run(sql, params, route, control, ({ result, read, aside, statement }, stop, emitted) => {
      const metadata =
        control.parameterTypes === true
          ? new Map([[PARAMETER_TYPES_METADATA, JSON.stringify(parameterTypesOf(statement))]])
          : undefined;
      return sendDuckDbBatches(result, read, sink, control, stop, emitted, aside, metadata);
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
    params: readonly QueryParam[],
    route: QueryRoute,
    control: NamespaceQueryControl,
    consume: (started: StartedQuery, stop: () => void, emitted: () => void) => Promise<T>,
  ): Promise<T> {
    let emitted = false;
    const attempt = () =>
      this.#attempt(sql, params, route, control, (started, stop) =>
        consume(started, stop, () => {
          emitted = true;
        }),
      );
    const first = await attempt();
    if (!('retry' in first)) return first.value;
    if (emitted) throw first.error;
    // The queries that ran out of an instance together try again one at a time, each after its
    // wait (started only now, once its connection is let go: its own end is not the neighbour's it
    // waits for). The query that exhausted the instance fails again on its own; the others are
    // answered. Two retrying at once had the bomb's neighbour fail again beside it (hostile-sql
    // over HTTP, a CI run on Node 24).
    const again = await first.instance.oneRetryAtATime(async () => {
      await first.retry();
      return attempt();
    });
    if ('retry' in again) throw again.error;
    return again.value;
  }

  async #attempt<T>(
    asked: string,
    params: readonly QueryParam[],
    route: QueryRoute,
    control: NamespaceQueryControl,
    consume: (started: StartedQuery, stop: () => void) => Promise<T>,
  ): Promise<
    | { readonly value: T }
    | { readonly retry: () => Promise<void>; readonly error: unknown; readonly instance: DuckDbClassInstance }
  > {
    // A listing runs as rewritten to Spice's names (duckdb-catalog.ts).
    const sql = (route.engine === 'duckdb' ? route.sql : undefined) ?? asked;
    const values = scalarParams(params);
    const { signal } = control;
    if (signal?.aborted === true) throw signal.reason;
    const datasets = route.datasets ?? [];
    const { resources, key, subject, joinsSqlite } = this.#planOf(route, datasets);
    // A query pinned to generations runs on an instance that serves them (however often the
    // others swap); every other one on its class's instance.
    const pins = pinsOf(control.pins, datasets);
    const pinned = pins === undefined ? undefined : await this.#pinnedInstance(resources, pins);
    // The hot path takes no await before the engine when it can: a hop through the event loop per
    // step costs more than the bookkeeping it waits for.
    let instance: DuckDbClassInstance;
    let pooled: PooledConnection;
    try {
      instance = pinned?.instance ?? this.#created.get(key) ?? (await this.#instanceFor(resources));
      pooled = instance.tryAcquire() ?? (await instance.acquire(signal));
    } catch (error) {
      pinned?.done();
      throw error;
    }
    const { connection, statements } = pooled;
    // Others that finish while this runs may be what exhausted the instance (see the retry below).
    const finishedBefore = instance.finishedCount;
    // The text as written and as prepared, when it names its datasets' generations.
    let prepared: DirectText | undefined;
    // A start in one call (below) may wait for a thread of libuv's pool before DuckDB begins its
    // query, and DuckDB forgets an interrupt that came before it began one: while such a start is
    // pending, an interrupt is repeated until it settles.
    let starting = false;
    let repeating: NodeJS.Timeout | undefined;
    const interrupt = (): void => {
      connection.interrupt();
      if (starting) repeating ??= setInterval(() => connection.interrupt(), INTERRUPT_REPEAT_MS);
    };
    signal?.addEventListener('abort', interrupt, { once: true });
    try {
      for (let attempt = 0; ; attempt++) {
        // A join across engines reads its SQLite datasets into DuckDB first (once per generation).
        if (joinsSqlite) {
          for (const name of datasets) {
            const dataset = datasetByName(pinned === undefined ? this.#catalog : instance.applied, name);
            if (dataset?.engine === 'sqlite')
              await instance.ensureImported(dataset, this.#options.crossEngine);
          }
        }
        // A statement is bound to the generations attached when it was prepared (DuckDB refuses
        // to run it once one is detached): prepared again after every catalog change.
        let cached = statements.get(sql);
        if (cached !== undefined && cached.version !== instance.applied.version) {
          statements.delete(sql);
          cached = undefined;
        }
        if (cached === undefined) {
          const version = instance.applied.version;
          let statement: DuckDBPreparedStatement;
          let direct: DirectText | undefined;
          try {
            const checked =
              (route.engine === 'duckdb' ? route.statement : undefined) ??
              (await checkDuckDbSql(this.#parser, sql));
            // The datasets named by their generations, not through their views (duckdb-direct.ts);
            // a text so rewritten that DuckDB refuses is prepared as written.
            direct =
              route.engine === 'duckdb' && route.sql === undefined
                ? directText(sql, checked, instance.applied)
                : undefined;
            const named =
              direct === undefined
                ? undefined
                : await prepareCheckedDuckDb(connection, direct.sql, checked).catch(() => undefined);
            if (named === undefined) direct = undefined;
            statement = named ?? (await prepareCheckedDuckDb(connection, sql, checked));
          } catch (error) {
            // A swap dropped an SQLite dataset's import between its import and the prepare: import
            // it again (its new generation) rather than take the query for SQLite's.
            if (attempt < MAX_PREPARES && this.#importDropped(datasets, error)) continue;
            throw error;
          }
          cached = direct === undefined ? { statement, version } : { statement, version, direct };
          // Kept from a text's second run on (seen-texts.ts); else destroyed once released.
          if (this.#seen.again(sql)) statements.set(sql, cached, statementBytes(sql, cached));
          else pooled.retired.push(statement);
        }
        if (instance.changing) await instance.settled();
        if (isAborted(signal)) throw signal?.reason;
        // The catalog moved while it was prepared: prepare it again on the new one.
        if (cached.version !== instance.applied.version) {
          if (attempt > MAX_PREPARES)
            throw new QueryFailedError(
              subject,
              'the catalog kept changing while the query was prepared; retry it.',
            );
          continue;
        }
        prepared = cached.direct;
        const statement = cached.statement;
        // From here to the start nothing awaits: no catalog change can slip in, so the views it
        // binds (or the generations it names) are the generations of `instance.applied`.
        const applied = instance.applied;
        const read: DatasetRead[] = [];
        for (const name of datasets) {
          const dataset = datasetByName(applied, name);
          const generation = dataset?.generation;
          if (!generation) throw new NamespaceTableError(name, 'not-serving');
          read.push({ name: dataset?.name ?? name, snapshotId: generation.snapshotId });
        }
        bindDuckDbParams(statement, values);
        // A text that names only generations starts in one call, bound and run on DuckDB's threads:
        // 90-650 µs faster for a new text than binding here first (bench/RESULTS.md). It
        // may bind after a catalog change queued meanwhile: one that detached its generation fails
        // it, and it is prepared again on the new catalog. Any other text binds views, and binds
        // here, before anything can change them.
        const inOneCall = prepared?.whole === true;
        const changes = instance.changesQueued;
        let result: DuckDBResult;
        starting = inOneCall;
        try {
          result = inOneCall ? await statement.stream() : await statement.startStream().getResult();
        } catch (error) {
          if (inOneCall && instance.changesQueued !== changes && attempt < MAX_PREPARES) continue;
          // An SQLite table of a join was dropped by a swap between its import and the start.
          if (attempt < 2 && this.#importDropped(datasets, error)) continue;
          throw error;
        } finally {
          starting = false;
          clearInterval(repeating);
          repeating = undefined;
        }
        const known = cached;
        const columns = (): ResultColumns => {
          if (known.columns === undefined) {
            known.columns = columnsOf(result);
            // Charged again with its columns (a statement's column names may be long).
            if (statements.get(sql) === known) statements.set(sql, known, statementBytes(sql, known));
          }
          return known.columns;
        };
        const aside = <W>(wait: Promise<W>): Promise<W> => instance.aside(wait);
        let stopped = false;
        const stop = (): void => {
          stopped = true;
          interrupt();
        };
        try {
          return { value: await consume({ result, read, columns, aside, statement }, stop) };
        } finally {
          // A result left mid-way keeps its query open in DuckDB, and with it the generations it
          // read (unlinked after a swap, their space held), until the connection's next query:
          // read it to its end, the interrupt's error, before the connection is let go.
          if (stopped) await drain(result);
        }
      }
    } catch (thrown) {
      if (isAborted(signal)) throw signal?.reason;
      const error = prepared === undefined ? thrown : asWritten(thrown, prepared);
      const options = this.#options;
      const failure = duckDbQueryError(error, {
        subject,
        resources: instance.resources,
        catalog: this.#catalog,
        redaction: {
          roots: [...(options.privateRoots ?? []), ...options.allowedDirectories, options.tempDirectory],
          tablePrefixes: [IMPORT_TABLE],
        },
        temp: { bytes: options.maxTempBytes, setting: options.settings.temp },
        viewDataset: (name) => this.#viewDataset(name),
        ...(route.engine === 'duckdb' && route.statement !== undefined ? { statement: route.statement } : {}),
      });
      // Others share the instance: wait for one of them to end (one that ended after this one's own
      // release, below), then try again (see #run). One that shared it and has ended already (the
      // query that exhausted it fails fast) counts too: try again at once.
      if (failure instanceof QueryResourceError) {
        const ownEnd = instance.finishedCount + 1;
        if (instance.inFlight > 1) {
          const retry = () => (instance.finishedCount > ownEnd ? Promise.resolve() : instance.quieter(2_000));
          return { retry, error: failure, instance };
        }
        if (instance.finishedCount !== finishedBefore)
          return { retry: () => Promise.resolve(), error: failure, instance };
      }
      throw failure;
    } finally {
      signal?.removeEventListener('abort', interrupt);
      instance.release(pooled);
      pinned?.done();
    }
  }

  #planOf(route: QueryRoute, datasets: readonly string[]): RoutePlan {
    const catalog = this.#catalog;
    const known = this.#plans.get(route);
    if (known?.version === catalog.version) return known;
    const resources = resourceClassFor(this.#default.resources, catalog, datasets);
    const plan: RoutePlan = {
      version: catalog.version,
      resources,
      key: resourceKey(resources),
      subject: datasetsPhrase(datasets),
      joinsSqlite: datasets.some((name) => datasetByName(catalog, name)?.engine === 'sqlite'),
    };
    this.#plans.set(route, plan);
    return plan;
  }

  /** The first table a spicepod view of this name reads, by its Spice name (undefined: no such view). */
  #viewDataset(name: string): string | undefined {
    const lower = name.toLowerCase();
    const view = this.#catalog.views?.find((known) => known.name.toLowerCase() === lower);
    const under = view === undefined ? undefined : this.#viewReads.get(view.sql)?.tables?.[0];
    return under === undefined ? undefined : (spiceName(under, new Set()) ?? under.table);
  }

  /** Whether `error` is DuckDB's of a missing table that is an SQLite dataset read in for this query. */
  #importDropped(datasets: readonly string[], error: unknown): boolean {
    const missing = missingDuckDbTable(error);
    const dataset = missing === undefined ? undefined : datasetByName(this.#catalog, missing);
    return dataset?.engine === 'sqlite' && datasets.includes(dataset.name);
  }

  /** Every instance made: one per class, and those for pinned reads (those that failed left out). */
  async #everyInstance(): Promise<DuckDbClassInstance[]> {
    const outcomes = await Promise.allSettled([
      ...this.#instances.values(),
      ...[...this.#pinned.values()].map((pinned) => pinned.instance),
    ]);
    return outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
  }

  /** Interrupts every running query of every instance and waits until none runs. */
  async cancelAll(): Promise<void> {
    await Promise.all((await this.#everyInstance()).map((instance) => instance.cancelAll()));
  }

  /** Queries running now, over every instance. */
  async inFlight(): Promise<number> {
    return (await this.#everyInstance()).reduce((sum, instance) => sum + instance.inFlight, 0);
  }

  async close(): Promise<void> {
    for (const pinned of this.#pinned.values()) clearTimeout(pinned.idle);
    await this.cancelAll();
    const instances = await this.#everyInstance();
    this.#treeParser.closeSync();
    for (const instance of instances) {
      // Not under a catalog change in flight: DuckDB would not return from closing then.
      await instance.settled();
      instance.close();
    }
  }
}
