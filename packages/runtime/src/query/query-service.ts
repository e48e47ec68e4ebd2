/**
 * Where a query runs and how it is bounded. Every dataset is a table of one namespace; a
 * statement seen for the first time goes where its tokens say (`firstEngine`: SQLite when it
 * reads only SQLite datasets, DuckDB otherwise), and that engine's parser confirms it: DuckDB runs
 * what reads DuckDB datasets, joins across engines or reads no dataset, and re-routes to SQLite
 * what its parse finds reads only SQLite datasets (a text whose words merely share a DuckDB
 * dataset's name, or SQLite's dialect). The route — engine and datasets read — is remembered per
 * statement text and per shape (its text with plain literals replaced, when the engines said what
 * they learned holds for the shape), so a repeated statement, or the same statement with new
 * literals, goes straight to its engine and its datasets' readiness is checked here. A dataset that serves nothing yet fails with
 * `ERR_DATASET_NOT_READY` (or is waited for), decided from the route or from the engine's own "no
 * such table" answer, never from a tokenizer.
 *
 * Bounds: admission (at most `maxQueriesInFlight` queries admitted at once, running or queued;
 * past it a query is refused at once: admission.ts), the timeout (DuckDB: interrupted; SQLite: its
 * worker ended), the caller's signal (the same), the result caps in rows and bytes (checked while
 * reading, so an oversized result is never held whole), and for streams the bytes, the engine time
 * per batch and the consumer's idleness (`result-stream.ts`).
 */
import { deserializeError, type QueryParam, retentionOf } from '@ferry/core/base';
import type { DatasetRead, NamespaceCatalog, NamespaceTaskHistory, PinnedGeneration } from '@ferry/engines';
import {
  BoundedCache,
  type FirstEngine,
  firstEngine,
  QueryFailedError,
  StatementRejectedError,
  statementShape,
} from '@ferry/engines/sql';
import { type Schema, Table } from 'apache-arrow';
import type {
  DatasetInfo,
  QueryOptions,
  QueryProvenance,
  RuntimeArrowResult,
  RuntimeJsonRows,
  RuntimeQueryResult,
  RuntimeQueryStream,
  StreamOptions,
} from '../api.js';
import type { Logger } from '../common/logging.js';
import type { ThreadYoungGeneration } from '../common/test-hooks.js';
import { untilAborted } from '../common/within.js';
import {
  CrossDialectError,
  DatasetNotReadyError,
  PinnedSnapshotUnknownError,
  QueryCancelledError,
  ResultTooLargeError,
  SnapshotGoneError,
  UnknownDatasetError,
} from '../errors.js';
import type { DatasetRegistry } from '../host/dataset-registry.js';
import { QueryAdmission } from './admission.js';
import { DuckDbQueryPool, type DuckDbQueryPoolOptions } from './duckdb-query-pool.js';
import type { QueryCatalog } from './query-catalog.js';
import type { QueryAnswer, QueryRequest } from './query-protocol.js';
import { ResultStream } from './result-stream.js';
import { SqliteReadPool, type SqliteReadPoolOptions } from './sqlite-read-pool.js';

/** Re-routes and waits one query may go through before it gives up. */
const MAX_HOPS = 6;

export interface QueryServiceOptions {
  readonly queryTimeoutMs: number;
  readonly maxResultRows: number;
  readonly maxResultBytes: number;
  readonly maxStreamBytes: number;
  readonly streamIdleTimeoutMs: number;
  /** Queries admitted at once (running or queued in the pools); 0: no cap. */
  readonly maxQueriesInFlight: number;
  /** The DuckDB query pool's (started by the first DuckDB dataset to serve, or the first query). */
  readonly duckdbPool: DuckDbQueryPoolOptions;
  /** The SQLite read pool's (started by the first query it runs), but the catalog: the service's. */
  readonly sqlitePool: Omit<SqliteReadPoolOptions, 'catalog'>;
  /** Called before the first pool starts (create the directories it needs). */
  readonly prepare: () => Promise<void>;
}

/** Where a statement runs and what it reads (undefined: not known before it runs). */
interface Plan {
  readonly engine: 'duckdb' | 'sqlite';
  readonly datasets: readonly string[] | undefined;
  /** In SQLite because DuckDB could not parse it: DuckDB's message, the answer if it reads a DuckDB dataset. */
  readonly duckdbError?: string;
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

/** `answer`, which is a stream: it was asked for without `inline`. */
export function streamed(answer: RuntimeQueryStream | RuntimeJsonRows): RuntimeQueryStream {
  if ('json' in answer) throw new Error('A stream asked for without inline answered inline');
  return answer;
}

/** A cancelled query's error (for {@link untilAborted}). */
export const cancelled = (reason: unknown): QueryCancelledError => new QueryCancelledError(reason);

/** Bytes a remembered plan is charged: its key and what it names. */
function planBytes(key: string, plan: Plan): number {
  return 2 * key.length + 96 + (plan.datasets ?? []).reduce((sum, name) => sum + 2 * name.length + 32, 0);
}

/** Whether `plan` already says that the statement runs in `engine` and reads `read` (nothing to remember). */
function samePlan(plan: Plan | undefined, engine: Plan['engine'], read: readonly DatasetRead[]): boolean {
  const datasets = plan?.datasets;
  if (plan?.engine !== engine || datasets === undefined || datasets.length !== read.length) return false;
  for (let index = 0; index < read.length; index++) if (datasets[index] !== read[index]?.name) return false;
  return true;
}

/** A stream that started: the stream, its schema, and what it reads (known with its schema). */
interface Started {
  readonly kind: 'started';
  readonly stream: ResultStream;
  readonly schema: Schema;
  readonly read: readonly DatasetRead[];
}

export class QueryService {
  readonly #registry: DatasetRegistry;
  readonly #catalog: QueryCatalog;
  readonly #options: QueryServiceOptions;
  readonly #logger: Logger;
  readonly #admission: QueryAdmission;
  /** Plans by statement text and by shape key, each bounded by entries and bytes. */
  readonly #plans = new BoundedCache<string, Plan>({ entries: 1_024, bytes: 8 * 1024 * 1024 });
  readonly #shapePlans = new BoundedCache<string, Plan>({ entries: 1_024, bytes: 8 * 1024 * 1024 });
  /** Statements (by shape, else text) whose result was too large to answer inline. */
  readonly #largerResults = new BoundedCache<string, true>({ entries: 1_024, bytes: 1024 * 1024 });
  #prepared: Promise<void> | undefined;
  #ready = false;
  #duckdb: DuckDbQueryPool | undefined;
  #sqlite: SqliteReadPool | undefined;
  #closed: Error | undefined;
  readonly #sent = { duckdb: 0, sqlite: 0 };
  #lastShape: { readonly sql: string; readonly key: string | undefined } | undefined;

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
    this.#admission = new QueryAdmission({ maxInFlight: options.maxQueriesInFlight });
  }

  /** A new catalog version: the DuckDB workers attach it now; SQLite tasks carry it from now on. */
  setCatalog(catalog: NamespaceCatalog): void {
    if (this.#duckdb !== undefined) this.#duckdb.setCatalog(catalog);
    else if (catalog.datasets.some((dataset) => dataset.engine === 'duckdb' && dataset.generation !== null)) {
      // The first DuckDB dataset serves: start the workers now, not on the first query. A failure
      // to prepare is the first query's to report (#pools() rethrows it to every caller).
      this.#pools().then(
        () => this.#duckdbPool(),
        () => undefined,
      );
    }
  }

  async #pools(): Promise<void> {
    this.#prepared ??= this.#options.prepare().then(() => {
      this.#ready = true;
    });
    await this.#prepared;
    if (this.#closed !== undefined) throw this.#closed;
  }

  #duckdbPool(): DuckDbQueryPool {
    this.#duckdb ??= new DuckDbQueryPool(this.#options.duckdbPool, this.#catalog.current());
    return this.#duckdb;
  }

  #sqlitePool(): SqliteReadPool {
    this.#sqlite ??= new SqliteReadPool({
      ...this.#options.sqlitePool,
      catalog: () => this.#catalog.shared(),
    });
    return this.#sqlite;
  }

  /**
   * The engine a statement with no plan yet goes to: SQLite when it reads SQLite datasets only as
   * its tokens tell, DuckDB otherwise (spice-names.ts `firstEngine`); the engine's parser confirms.
   */
  #firstEngine(sql: string): FirstEngine {
    const datasets = [...this.#registry.entries()].map((entry) => ({
      name: entry.name,
      engine: this.#catalog.engineOf(entry),
    }));
    return firstEngine(
      sql,
      datasets,
      this.#catalog.views.map((view) => view.name),
    );
  }

  /**
   * Fails (or waits) unless every dataset in `names` serves now. A failure names the state the
   * dataset was in when the query was asked (`asked`), since an engine's answer comes later.
   */
  #ensureServing(
    names: readonly string[],
    options: QueryOptions,
    asked: ReadonlyMap<string, DatasetInfo['state']>,
  ): Promise<void> | undefined {
    const waits: Promise<void>[] = [];
    for (const name of names) {
      const entry = this.#registry.get(name);
      if (entry.state === 'failed') throw this.#registry.failure(entry);
      if (this.#registry.serving(entry)) continue;
      if (options.waitForReady !== true) throw new DatasetNotReadyError(name, asked.get(name) ?? entry.state);
      waits.push(this.#registry.ready(name, options.readyTimeoutMs ?? 30_000));
    }
    // The caller may leave while it waits: it stops waiting (and leaves admission) at once.
    return waits.length === 0
      ? undefined
      : untilAborted(Promise.all(waits), options.signal, cancelled).then(() => undefined);
  }

  /**
   * The generations a query's pins (`QueryOptions.snapshots`) name, resolved now: a pin stays on
   * its generation however many swaps happen before the engine starts. A snapshot no longer held
   * fails with `SnapshotGoneError`, one newer than any served with `PinnedSnapshotUnknownError`.
   */
  #pins(options: QueryOptions): readonly PinnedGeneration[] | undefined {
    const asked = options.snapshots;
    if (asked === undefined) return undefined;
    const pins: PinnedGeneration[] = [];
    for (const [name, snapshotId] of Object.entries(asked)) {
      const entry =
        this.#registry.find(name) ??
        this.#registry.find(
          this.#registry.names().find((known) => known.toLowerCase() === name.toLowerCase()) ?? name,
        );
      if (entry === undefined) throw new UnknownDatasetError(name, this.#registry.names());
      const held = this.#catalog.held(entry.name, retentionOf(entry.config));
      const generation = held.find((each) => each.snapshotId === snapshotId);
      if (generation !== undefined) {
        pins.push({ name: entry.name, generation });
        continue;
      }
      if (held.length === 0) throw new DatasetNotReadyError(entry.name, entry.state);
      const ids = held.map((each) => each.snapshotId);
      const newest = Math.max(...ids);
      if (snapshotId > newest) throw new PinnedSnapshotUnknownError(entry.name, snapshotId, newest);
      throw new SnapshotGoneError(entry.name, snapshotId, ids);
    }
    return pins.length === 0 ? undefined : pins;
  }

  /**
   * The datasets `sql` read when it (or a statement of its shape) last ran; undefined when not
   * known yet. The results cache looks answers up by them.
   */
  datasetsOf(sql: string): readonly string[] | undefined {
    return (this.#plans.get(sql) ?? this.#shapePlan(this.#shapeOf(sql)))?.datasets;
  }

  /** The plan remembered for a shape key. */
  #shapePlan(shape: string | undefined): Plan | undefined {
    return shape === undefined ? undefined : this.#shapePlans.get(shape);
  }

  /**
   * The shape key of `sql`. The last one is kept: a query's text is looked up twice in one turn
   * (by the results cache, then to run it), and its shape is computed once.
   */
  #shapeOf(sql: string): string | undefined {
    if (this.#lastShape?.sql !== sql) this.#lastShape = { sql, key: statementShape(sql)?.key };
    return this.#lastShape.key;
  }

  /** Remembers `plan` by text, and by `shape` (computed now if need be) when it holds for the shape. */
  #remember(sql: string, shape: string | undefined, plan: Plan, shared: boolean): void {
    this.#plans.set(sql, plan, planBytes(sql, plan));
    if (shared) {
      shape ??= this.#shapeOf(sql);
      if (shape !== undefined) this.#shapePlans.set(shape, plan, planBytes(shape, plan));
    }
  }

  /**
   * Runs the statement where its route says, following re-routes and waiting for datasets as the
   * engines answer, until an engine answers for good. Admitted (or refused) before anything else.
   */
  async #execute(
    sql: string,
    options: QueryOptions,
    run: (
      engine: 'duckdb' | 'sqlite',
      plan: Plan | undefined,
      shape: string | undefined,
      pins: readonly PinnedGeneration[] | undefined,
      named: readonly string[],
    ) => Promise<QueryAnswer | Started>,
  ): Promise<{ engine: 'duckdb' | 'sqlite'; answer: Answered | Started }> {
    // Both engines take a NUL as the statement's end and would run what comes before it as the
    // whole statement (`… FROM users\0 WHERE 1 = 0` answered every row): refused, never cut.
    if (sql.includes('\u0000')) {
      throw new StatementRejectedError(
        'NUL',
        'The query holds a NUL character (U+0000), which the engines would take as the end of the statement and drop what follows; remove it from the SQL.',
      );
    }
    const asked = this.#registry.states();
    const pins = this.#pins(options);
    if (!this.#ready) await this.#pools();
    else if (this.#closed !== undefined) throw this.#closed;
    // The plan by the text, else by the shape (computed here only then, and passed on to the workers).
    let plan = this.#plans.get(sql);
    const shape = plan === undefined ? this.#shapeOf(sql) : undefined;
    plan ??= this.#shapePlan(shape);
    let waited = false;
    for (let hop = 0; ; hop++) {
      if (plan?.datasets !== undefined) {
        const waiting = this.#ensureServing(plan.datasets, options, asked);
        if (waiting !== undefined) await waiting;
      }
      // No plan yet: the text's tokens choose (the datasets it names as tables name a timeout).
      const chosen = plan ?? this.#firstEngine(sql);
      const { engine } = chosen;
      const named = plan?.datasets ?? ('tables' in chosen ? chosen.tables : []);
      this.#sent[engine]++;
      const answer = await run(engine, plan, shape, pins, named);
      const shared = answer.kind !== 'started' && answer.shared === true;
      if (answer.kind === 'reroute') {
        const { datasets, duckdbError } = answer;
        plan = { engine: 'sqlite', datasets, ...(duckdbError === undefined ? {} : { duckdbError }) };
        this.#remember(sql, shape, plan, shared);
      } else if (answer.kind === 'table') {
        if (answer.reason === 'unknown') throw new UnknownDatasetError(answer.table, this.#registry.names());
        if (answer.reason === 'duckdb') {
          // Not SQLite's dialect after all: DuckDB's own refusal says what is wrong with it.
          if (plan?.duckdbError !== undefined) throw new QueryFailedError(undefined, plan.duckdbError);
          throw new CrossDialectError(answer.table);
        }
        if (answer.reason === 'sqlite') {
          plan = { engine: 'sqlite', datasets: undefined };
          this.#remember(sql, shape, plan, false);
        } else {
          const entry = this.#registry.find(answer.table);
          // The registry says it serves but the engine has not attached it yet: a swap in flight.
          if (entry !== undefined && this.#registry.serving(entry) && waited) {
            throw new DatasetNotReadyError(answer.table, entry.state);
          }
          const waiting = this.#ensureServing([answer.table], options, asked);
          if (waiting !== undefined) await waiting;
          waited = true;
        }
      } else {
        // A stream says what it reads with its schema: remembered by its text (whether that holds
        // for its shape is said only by its final answer).
        if (answer.kind !== 'error' && !samePlan(plan, engine, answer.read)) {
          this.#remember(sql, shape, { engine, datasets: answer.read.map((read) => read.name) }, shared);
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

  /**
   * The error of an `error` / `too-large` answer (logging the engine's own words if paths were
   * hidden); `bytesSetting` names the byte cap (the row cap is always `maxResultRows`).
   */
  #failure(answer: Answered, bytesSetting: string, maxRows: number, maxBytes: number): Error {
    if (answer.kind === 'too-large') {
      const names = answer.read.map((read) => read.name);
      return answer.limit === 'rows'
        ? new ResultTooLargeError(names, maxRows, 'rows', 'maxResultRows')
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
   * Runs one query answered in one message (rows, or inline JSON) in `engine`. DuckDB's pool times
   * it (from when its worker starts it) and the caller's signal interrupts it in its engine; the
   * SQLite pool does both itself. `known`: the datasets of the statement's plan; `named`: those it
   * is known to read so far (for a timeout's message).
   */
  #answer(
    engine: 'duckdb' | 'sqlite',
    request: QueryRequest,
    options: QueryOptions,
    known: readonly string[] | undefined,
    named: readonly string[],
  ): Promise<QueryAnswer> {
    if (engine === 'sqlite') return this.#sqlitePool().run(named, request, options.signal);
    const query = this.#duckdbPool().run(request, this.#options.queryTimeoutMs, known);
    return untilAborted(query.answer, options.signal, cancelled, query.cancel);
  }

  async query(
    sql: string,
    params: readonly QueryParam[],
    options: QueryOptions,
  ): Promise<RuntimeQueryResult> {
    this.#admission.admit();
    try {
      const { maxResultRows: maxRows, maxResultBytes: maxBytes } = this.#options;
      const { engine, answer } = await this.#execute(sql, options, (where, plan, shape, pins, named) => {
        const request: QueryRequest = { sql, params, maxRows, maxBytes, inline: 0, shape, pins };
        return this.#answer(where, request, options, plan?.datasets, named);
      });
      if (answer.kind !== 'rows')
        throw this.#failure(answer as Answered, 'maxResultBytes', maxRows, maxBytes);
      return { columns: answer.columns, rows: answer.rows, ...provenance(answer.read, engine) };
    } finally {
      this.#admission.release();
    }
  }

  async queryArrow(
    sql: string,
    params: readonly QueryParam[],
    options: QueryOptions,
  ): Promise<RuntimeArrowResult> {
    this.#admission.admit();
    try {
      const { maxResultRows: maxRows, maxResultBytes: maxBytes } = this.#options;
      const stream = streamed(await this.#stream(sql, params, options, maxRows, maxBytes, 'maxResultBytes'));
      const batches = [];
      for await (const batch of stream.batches) batches.push(batch);
      const { datasets, dataset, snapshotId, engine } = stream;
      return { table: new Table(stream.schema, batches), datasets, dataset, snapshotId, engine };
    } finally {
      this.#admission.release();
    }
  }

  /**
   * A stream, or (`inline` > 0) a result of one batch whose JSON text is within `inline` bytes, as
   * that text (what the front's `queryStream` and `queryJson` ask).
   */
  async queryJson(
    sql: string,
    params: readonly QueryParam[],
    options: StreamOptions,
    inline: number,
  ): Promise<RuntimeQueryStream | RuntimeJsonRows> {
    this.#admission.admit();
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.#admission.release();
    };
    try {
      const maxBytes = options.maxBytes ?? this.#options.maxStreamBytes;
      // Admitted until the stream ends, fails or is left: it holds its engine's connection so long.
      const bytesSetting = options.maxBytes === undefined ? 'maxStreamBytes' : 'the maxBytes of queryStream';
      const answer = await this.#stream(sql, params, options, 0, maxBytes, bytesSetting, release, inline);
      if ('json' in answer) release();
      return answer;
    } catch (error) {
      release();
      throw error;
    }
  }

  async #stream(
    sql: string,
    params: readonly QueryParam[],
    options: StreamOptions,
    maxRows: number,
    maxBytes: number,
    bytesSetting: string,
    onFinished?: () => void,
    inline = 0,
  ): Promise<RuntimeQueryStream | RuntimeJsonRows> {
    const { engine, answer } = await this.#execute(sql, options, async (where, plan, shape, pins, named) => {
      // Asked inline, a query first runs as one message (a small result's JSON text comes back
      // whole, no stream is set up); a result larger than that is streamed, and its statement
      // (by shape, else text) is streamed at once from then on. Not under a byte cap a small
      // result could reach: an inline batch is not encoded, and a stream's cap counts IPC bytes.
      // (The shape is known here only when the text's own plan is not: both keys are kept.)
      const capped = maxBytes > 0 && maxBytes < 2 * inline;
      if (inline > 0 && !capped && this.#largerResults.get(shape ?? sql) === undefined) {
        const asked: QueryRequest = { sql, params, maxRows, maxBytes, inline, shape, pins };
        const answer = await this.#answer(where, asked, options, plan?.datasets, named);
        if (answer.kind !== 'larger') return answer;
        for (const key of shape === undefined ? [sql] : [sql, shape]) {
          this.#largerResults.set(key, true, 2 * key.length + 64);
        }
      }
      const request: QueryRequest = {
        sql,
        params,
        maxRows,
        maxBytes,
        inline: 0,
        shape,
        pins,
        ...(options.parameterTypes === true ? { parameterTypes: true } : {}),
      };
      const stream = new ResultStream({
        timeoutMs: this.#options.queryTimeoutMs,
        idleTimeoutMs: options.idleTimeoutMs ?? this.#options.streamIdleTimeoutMs,
        datasets: named,
        signal: options.signal,
      });
      const query =
        where === 'duckdb'
          ? this.#duckdbPool().run(request, 0, undefined, stream, options.batchRows)
          : this.#sqlitePool().stream(request, stream, options.batchRows);
      stream.attach(query);
      const answered = query.answer.then(
        (outcome) => ({ outcome }),
        (error: unknown) => ({ error }),
      );
      // The schema comes first, as its own message; an answer before it means no stream started —
      // unless the schema arrived in the same turn (a small result answered at once).
      await Promise.race([stream.schemaReady(), answered]);
      const first = stream.receivedSchema;
      if (first === undefined) {
        const settled = await answered;
        // A stream that failed before its schema (its time limit, its caller's cancellation) ends
        // with that reason, not with what its cancelled engine answered.
        const { failure } = stream;
        stream.dispose();
        if (failure !== undefined) throw failure;
        if ('error' in settled) throw settled.error;
        return settled.outcome;
      }
      // Admitted until its engine is done with it and its consumer too: a result the engine has
      // sent but the consumer has not yet turned into an answer still costs the host its time.
      if (onFinished !== undefined) void Promise.all([answered, stream.done]).then(onFinished);
      void answered.then((settled) => {
        // The stream's engine is done with it (it ended, failed, or was cancelled).
        if ('error' in settled) stream.fail(settled.error);
        else if (settled.outcome.kind === 'done') stream.end();
        else {
          stream.fail(this.#failure(settled.outcome as Answered, bytesSetting, maxRows, maxBytes));
        }
      });
      return { kind: 'started' as const, stream, schema: first, read: stream.read };
    });
    if (answer.kind === 'inline') {
      const { json, rows, bytes } = answer;
      return { json, rows, bytes, ...provenance(answer.read, engine) };
    }
    if (answer.kind !== 'started') {
      throw this.#failure(answer, bytesSetting, maxRows, maxBytes);
    }
    const { stream, schema } = answer;
    return {
      schema,
      batches: { [Symbol.asyncIterator]: () => stream.batches() },
      cancel: () => stream.fail(new QueryCancelledError('cancel() was called')),
      stopped: stream.stopped,
      ...provenance(stream.read, engine),
    };
  }

  /** Hands the DuckDB workers the task history as it is now (a query after this reads it). */
  async setTaskHistory(history: NamespaceTaskHistory): Promise<void> {
    await this.#pools();
    this.#duckdbPool().setTaskHistory(history);
  }

  /** The young generation of each query worker running now (a test hook). */
  youngGenerations(): ThreadYoungGeneration[] {
    const of = (thread: string, sizes: number[] = []): ThreadYoungGeneration[] =>
      sizes.map((maxYoungGenerationSizeMb) => ({ thread, maxYoungGenerationSizeMb }));
    return [
      ...of('DuckDB query worker', this.#duckdb?.youngGenerations()),
      ...of('SQLite read worker', this.#sqlite?.youngGenerations()),
    ];
  }

  /** Statements handed to each engine's pool so far, a re-routed one to both (a test hook's count). */
  get sent(): { readonly duckdb: number; readonly sqlite: number } {
    return { ...this.#sent };
  }

  /** Queries the pools have not answered yet. */
  get inFlight(): number {
    return (this.#duckdb?.inFlight ?? 0) + (this.#sqlite?.inFlight ?? 0);
  }

  /** Queries admitted now (running or queued) and refused so far. */
  get admission(): { readonly inFlight: number; readonly rejected: number } {
    return { inFlight: this.#admission.inFlight, rejected: this.#admission.rejected };
  }

  async close(reason: Error): Promise<void> {
    this.#closed ??= reason;
    await Promise.all([this.#duckdb?.close(reason), this.#sqlite?.close(reason)]);
  }
}
