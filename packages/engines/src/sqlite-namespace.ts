/**
 * One SQL namespace over every SQLite dataset, on one connection: its main database is an empty
 * placeholder opened read-only, so every dataset file ATTACHed to it (under the dataset's name) is
 * read-only too, and `FROM users`, `FROM [users]` and `FROM users.users` all resolve, and Spice's
 * `public.users` and `spice.public.users` too (spice-names.ts). SQLite
 * attaches at most 10 databases, so datasets are attached while there is room and otherwise on
 * demand, driven by SQLite's own `no such table: users` error, least recently used first out.
 *
 * A dataset is attached at one generation (an immutable file) and re-attached at the next one
 * between queries, so a query reads each dataset at one generation. Which datasets a statement
 * read comes from its program (`EXPLAIN`'s OpenRead opcodes name the databases), once per
 * statement; statements are prepared once and kept (an LRU). Everything here is synchronous: it
 * runs in the read pool's workers.
 */
import type { ArrowDataType, QueryParam } from '@ferry/core/base';
import type { RecordBatch, Schema } from 'apache-arrow';
import Database from 'better-sqlite3';
import { batchToIpc } from './arrow-results.js';
import { BoundedCache } from './bounded-cache.js';
import { datasetsPhrase, redactDuckDbMessage } from './duckdb-errors.js';
import { jsonObjects, scalarParams, uniqueColumnNames } from './encode.js';
import { queryFailure, quoteIdentifier, quoteLiteral } from './engine.js';
import { messageOf, NamespaceTableError, QueryFailedError } from './errors.js';
import {
  type BatchControl,
  type BatchOutcome,
  capExceeded,
  type DatasetRead,
  datasetByName,
  type NamespaceCatalog,
  type NamespaceDataset,
  type NamespaceQueryControl,
  PARAMETER_TYPES_METADATA,
  type ResultColumn,
  type RowsOutcome,
  valueBytes,
} from './namespace-types.js';
import { SeenTexts } from './seen-texts.js';
import { withoutSpiceQualifiers } from './spice-names.js';
import { type SqlToken, tokenizeSql } from './sql-guard.js';
import { statementShape } from './sql-shape.js';
import { SqliteBatchBuilder } from './sqlite-arrow.js';
import {
  encodeSqliteValue,
  type SqliteBinding,
  type SqliteValue,
  sqliteArguments,
  sqliteBindingOf,
  sqliteColumns,
  sqliteRecords,
} from './sqlite-engine.js';
import { type InterruptRegion, watchInterrupts } from './sqlite-interrupt.js';
import { type ProgramStep, sqliteParameterTypes } from './sqlite-parameters.js';
import { checkSqliteStatement } from './statement-check.js';

/** SQLite's compile-time limit on attached databases (SQLITE_MAX_ATTACHED). */
export const SQLITE_MAX_ATTACHED = 10;

export interface SqliteNamespaceOptions {
  /** An empty file for the read-only main database (created by the caller). */
  readonly mainPath: string;
  /**
   * Where SQLite writes temporary files (sorts and indexes larger than the page cache; created and
   * unlinked at once). SQLite keeps one such directory per process: every namespace sets the same.
   */
  readonly tempDirectory?: string;
  /** Replaced by `<data dir>` in messages. */
  readonly privateRoots?: readonly string[];
}

/**
 * How a statement's result is handed over as Arrow, synchronously (the worker blocks meanwhile):
 * as IPC bytes, or as built (see `BatchSink`).
 */
export type SyncBatchSink = {
  /** The result's schema (see `BatchSink.schema`). */
  schema(schema: Schema, read: readonly DatasetRead[]): void;
} & (
  | {
      /** Returns when the consumer can take another batch; throws to stop the query. */
      batch(ipc: Uint8Array, rows: number): void;
    }
  | {
      /** The batch as built; throws to stop the query. */
      built(batch: RecordBatch, rows: number): void;
      /**
       * Optional: the first batch as its rows' JSON text instead (`jsonObjects`), when its values
       * are their columns' types themselves (`SqliteBatchBuilder.natural`), so that is the batch's
       * text; throws to stop the query.
       */
      text?(json: string, rows: number): void;
    }
);

interface Prepared {
  readonly statement: Database.Statement;
  readonly binding: SqliteBinding;
  /** Its text's tokens (SQLite's dialect): the check's and the binding's, and what EXPLAIN needs. */
  readonly tokens: readonly SqlToken[];
  /** The datasets (attached names) its program opens; known by its shape, or read from its program. */
  datasets: readonly string[] | undefined;
  /** Whether `datasets` holds for every text of its shape (learned with the literals as parameters). */
  datasetsByShape: boolean;
  /** What it reads at catalog `version` (the generations' snapshot ids). */
  readAt: { readonly version: number; readonly read: DatasetRead[] } | undefined;
  /**
   * Its result columns as of attachment `epoch` (`statement.columns()` costs about half of a point
   * lookup; SQLite re-prepares a statement whose schema changed, so they hold until an attach).
   */
  described:
    | {
        readonly epoch: number;
        readonly names: string[];
        readonly declared: (string | null)[];
        /** The result columns when every one has a declared type (the same for every run). */
        readonly columns: ResultColumn[] | undefined;
      }
    | undefined;
}

const MIB = 1024 * 1024;

/** `no such table: users` / `no such table: users.t`: the database (when qualified) and table SQLite looked for. */
function missingTable(
  error: unknown,
): { readonly db: string | undefined; readonly table: string } | undefined {
  if ((error as { code?: unknown }).code !== 'SQLITE_ERROR') return undefined;
  const match = /^no such table: (?:([^.\s]+)\.)?(\S+)$/.exec((error as Error).message);
  return match === null ? undefined : { db: match[1], table: match[2] as string };
}

/** A statement's result handed over a batch at a time (see `SqliteNamespace.cursor`). */
export interface SqliteCursor {
  /** Hands over the next batch (if one is ready); the outcome once there is one, else undefined. */
  next(): BatchOutcome | undefined;
  /** Ends the statement before its outcome (nothing if it has one). */
  close(): void;
}

export class SqliteNamespace {
  readonly #db: Database.Database;
  readonly #options: SqliteNamespaceOptions;
  readonly #statements: BoundedCache<string, Prepared>;
  /** The datasets each statement shape reads (what EXPLAIN found for it, literals as parameters). */
  readonly #readsByShape = new BoundedCache<string, readonly string[]>({ entries: 1_024, bytes: 4 * MIB });
  /** The texts run before: a text's prepared statement is kept from its second run on. */
  readonly #seen = new SeenTexts();
  /** Attached datasets (by name) and the generation each holds, least recently used first. */
  readonly #attached = new Map<string, number>();
  /** Counts attaches and detaches: a statement's result columns are known until it moves. */
  #epoch = 0;
  /** The dataset touched last (the most recently used already: touching it again changes nothing). */
  #lastTouched: string | undefined;
  /** Nothing yet: a version no catalog has, so the first one is always applied. */
  #catalog: NamespaceCatalog = { version: -1, datasets: [] };
  /** The region the connection watches for stops (sqlite-interrupt.ts). */
  #interrupts: InterruptRegion | undefined;

  constructor(options: SqliteNamespaceOptions) {
    this.#options = options;
    this.#db = new Database(options.mainPath, { readonly: true, fileMustExist: true });
    this.#db.pragma('trusted_schema = OFF');
    // Temporary files in Ferry's directory, never beside a live file. (Not temp_store=MEMORY: it
    // made a GROUP BY over 200,000 rows three times slower, measured.)
    if (options.tempDirectory !== undefined) {
      this.#db.pragma(`temp_store_directory = ${quoteLiteral(options.tempDirectory)}`);
    }
    // Prepared statements kept: at most 128, and at most 16 MiB of texts and columns.
    this.#statements = new BoundedCache<string, Prepared>({ entries: 128, bytes: 16 * MIB });
  }

  get catalog(): NamespaceCatalog {
    return this.#catalog;
  }

  /**
   * Where the connection looks for stops from now on (sqlite-interrupt.ts): a statement stopped
   * there fails with `SQLITE_INTERRUPT`. The same region again costs nothing.
   */
  interruptOn(region: InterruptRegion | undefined): void {
    const known = this.#interrupts;
    const same =
      known?.buffer === region?.buffer && known?.offset === region?.offset && known?.stops === region?.stops;
    if (same) return;
    watchInterrupts(this.#db, region);
    this.#interrupts = region;
  }

  /** Re-attach datasets whose generation moved, detach the ones gone, attach new ones while there is room. */
  setCatalog(catalog: NamespaceCatalog): void {
    if (catalog.version === this.#catalog.version) return;
    this.#catalog = catalog;
    for (const [name, generation] of [...this.#attached]) {
      const dataset = datasetByName(catalog, name);
      if (dataset?.engine === 'sqlite' && dataset.generation?.id === generation) continue;
      this.#detach(name);
      if (dataset?.engine === 'sqlite' && dataset.generation !== null) this.#attach(dataset);
    }
    for (const dataset of catalog.datasets) {
      if (this.#attached.size >= SQLITE_MAX_ATTACHED) break;
      if (dataset.engine === 'sqlite' && dataset.generation !== null && !this.#attached.has(dataset.name)) {
        this.#attach(dataset);
      }
    }
  }

  #attach(dataset: NamespaceDataset): void {
    const generation = dataset.generation;
    if (generation === null) throw new NamespaceTableError(dataset.name, 'not-serving');
    this.#db.prepare('ATTACH DATABASE ? AS ?').run(generation.path, dataset.name);
    this.#attached.set(dataset.name, generation.id);
    this.#epoch++;
  }

  #detach(name: string): void {
    this.#db.prepare('DETACH DATABASE ?').run(name);
    this.#attached.delete(name);
    this.#epoch++;
  }

  /** Marks `name` most recently used. */
  #touch(name: string): void {
    if (this.#lastTouched === name) return;
    const generation = this.#attached.get(name);
    if (generation === undefined) return;
    this.#attached.delete(name);
    this.#attached.set(name, generation);
    this.#lastTouched = name;
  }

  /**
   * After SQLite's `no such table`: attach the dataset it names (making room if needed, never by
   * detaching one this query needs) and return true, or return false when the error is about a
   * table missing from an attached dataset (the engine's error stands).
   */
  #attachFor(error: unknown, needed: Set<string>): boolean {
    const missing = missingTable(error);
    if (missing === undefined) return false;
    const name = missing.db ?? missing.table;
    if (this.#attached.has(name) || name.toLowerCase() === 'main' || name.toLowerCase() === 'temp')
      return false;
    const dataset = datasetByName(this.#catalog, name);
    if (dataset === undefined) throw new NamespaceTableError(name, 'unknown');
    if (dataset.engine === 'duckdb') throw new NamespaceTableError(dataset.name, 'duckdb');
    if (dataset.generation === null) throw new NamespaceTableError(dataset.name, 'not-serving');
    if (this.#attached.has(dataset.name)) return false;
    if (this.#attached.size >= SQLITE_MAX_ATTACHED) {
      const victim = [...this.#attached.keys()].find((attached) => !needed.has(attached));
      if (victim === undefined) {
        throw new QueryFailedError(
          undefined,
          `the query reads more than ${SQLITE_MAX_ATTACHED} SQLite datasets, and SQLite attaches at most ${SQLITE_MAX_ATTACHED} databases to a connection (SQLITE_MAX_ATTACHED); split it into queries of at most ${SQLITE_MAX_ATTACHED} datasets.`,
        );
      }
      this.#detach(victim);
      this.#statements.clear();
    }
    this.#attach(dataset);
    needed.add(dataset.name);
    return true;
  }

  /** The statement prepared (attaching what it needs); the text is tokenized once. */
  #prepare(sql: string): Prepared {
    const known = this.#statements.get(sql);
    if (known !== undefined) {
      for (const name of known.datasets ?? []) this.#touch(name);
      return known;
    }
    const needed = new Set<string>();
    const tokens = tokenizeSql(sql, 'sqlite');
    for (;;) {
      try {
        const statement = checkSqliteStatement(this.#db, sql, tokens);
        statement.safeIntegers(true);
        statement.raw(true);
        const prepared: Prepared = {
          statement,
          binding: sqliteBindingOf(tokens),
          tokens,
          datasets: undefined,
          datasetsByShape: false,
          readAt: undefined,
          described: undefined,
        };
        // Kept from a text's second run on (seen-texts.ts).
        if (this.#seen.again(sql)) this.#statements.set(sql, prepared, preparedBytes(sql, prepared));
        return prepared;
      } catch (error) {
        if (!this.#attachFor(error, needed)) throw error;
      }
    }
  }

  /** The connection's databases by the number a program's `OpenRead` names them with (P3). */
  #databaseNames(): Map<number, string> {
    const list = this.#db.pragma('database_list') as { seq: number; name: string }[];
    return new Map(list.map((row) => [row.seq, row.name]));
  }

  /** The attached datasets the statement's program opens (`OpenRead` / `ReopenIdx` of `EXPLAIN`). */
  #programReads(explain: string, args: readonly unknown[]): string[] {
    const program = this.#db.prepare(explain).all(...args) as { opcode: string; p3: number }[];
    const names = this.#databaseNames();
    const read: string[] = [];
    for (const step of program) {
      if (step.opcode !== 'OpenRead' && step.opcode !== 'ReopenIdx') continue;
      const name = names.get(step.p3);
      const dataset = name === undefined ? undefined : datasetByName(this.#catalog, name);
      if (dataset !== undefined && !read.includes(dataset.name)) read.push(dataset.name);
    }
    return read;
  }

  /**
   * The datasets a statement reads, learned once per shape: the program of its shape with each
   * literal as a parameter (so SQLite folds no constant away: `WHERE 0 AND EXISTS (…)` still opens
   * what `WHERE 1 AND EXISTS (…)` does). A shape whose literals cannot be parameters (a type's
   * length, `VARCHAR(10)`) is explained as written, for this text only.
   */
  #datasetsOf(
    sql: string,
    prepared: Prepared,
    args: readonly unknown[],
    shapeKey: string | undefined,
  ): string[] {
    const key = shapeKey ?? statementShape(sql)?.key;
    const known = key === undefined ? undefined : this.#readsByShape.get(key);
    if (known !== undefined) {
      prepared.datasetsByShape = true;
      return [...known];
    }
    const shape = key === undefined ? undefined : statementShape(sql);
    if (shape !== undefined && shape.key === key) {
      const parameterized = withLiteralParameters(sql, shape.literals, prepared);
      if (parameterized !== undefined) {
        try {
          const read = this.#programReads(`EXPLAIN ${parameterized.sql}`, parameterized.args);
          this.#readsByShape.set(shape.key, read, 2 * shape.key.length + 64 * (read.length + 1));
          prepared.datasetsByShape = true;
          return read;
        } catch {
          // Not every literal can be a parameter (`VARCHAR(10)`): the text as written is explained below.
        }
      }
    }
    try {
      return this.#programReads(`EXPLAIN ${sql}`, args);
    } catch (error) {
      // SQLite has no EXPLAIN of an EXPLAIN: explaining a statement compiles it and opens no table,
      // so an EXPLAIN reads no dataset. Any other statement that cannot be explained is an error.
      if (prepared.tokens[0]?.kind === 'word' && prepared.tokens[0].text.toUpperCase() === 'EXPLAIN')
        return [];
      throw new QueryFailedError(
        undefined,
        `SQLite could not list the datasets the statement reads (EXPLAIN failed: ${this.redact(messageOf(error))}).`,
        { cause: error },
      );
    }
  }

  /** What the statement reads, at the generations attached now (computed at its first run). */
  #read(
    sql: string,
    prepared: Prepared,
    args: readonly unknown[],
    shapeKey: string | undefined,
  ): DatasetRead[] {
    const { version } = this.#catalog;
    if (prepared.readAt?.version === version) return prepared.readAt.read;
    prepared.datasets ??= this.#datasetsOf(sql, prepared, args, shapeKey);
    const read = prepared.datasets.flatMap((name) => {
      const generation = datasetByName(this.#catalog, name)?.generation;
      return generation ? [{ name, snapshotId: generation.snapshotId }] : [];
    });
    prepared.readAt = { version, read };
    return read;
  }

  /** Each parameter's type as the statement's program uses it (sqlite-parameters.ts). */
  #parameterTypes(sql: string, args: readonly unknown[]): (ArrowDataType | null)[] {
    const db = this.#db;
    // Explained with every value NULL: SQLite may fold a bound value into the program (a bound
    // LIMIT became `Integer 10`), and the types must not depend on the values.
    const unbound = args.map((arg) =>
      arg !== null && typeof arg === 'object' && !(arg instanceof Uint8Array)
        ? Object.fromEntries(Object.keys(arg).map((key) => [key, null]))
        : null,
    );
    let program: ProgramStep[];
    try {
      program = db.prepare(`EXPLAIN ${sql}`).all(...unbound) as ProgramStep[];
    } catch {
      // No program to read (an EXPLAIN cannot be explained): nothing is known of its parameters.
      return [];
    }
    const count = program.reduce(
      (most, step) => (step.opcode === 'Variable' ? Math.max(most, step.p1) : most),
      0,
    );
    const databases = this.#databaseNames();
    const declaredTypes = (schema: string, table: string): (string | null)[] =>
      (db.pragma(`${schema}.table_info(${quoteIdentifier(table)})`) as { type: string }[]).map((column) =>
        column.type === '' ? null : column.type,
      );
    return sqliteParameterTypes(program, count, (database, rootPage) => {
      const name = databases.get(database);
      if (name === undefined) return undefined;
      const schema = quoteIdentifier(name);
      const opened = db
        .prepare(`SELECT type, name, tbl_name AS "table" FROM ${schema}.sqlite_schema WHERE rootpage = ?`)
        .get(rootPage) as { type: string; name: string; table: string } | undefined;
      if (opened?.type === 'table') return declaredTypes(schema, opened.name);
      if (opened?.type !== 'index') return undefined;
      const columns = declaredTypes(schema, opened.table);
      return (db.pragma(`${schema}.index_xinfo(${quoteIdentifier(opened.name)})`) as { cid: number }[]).map(
        ({ cid }) => (cid === -1 ? 'INTEGER' : (columns[cid] ?? null)),
      );
    });
  }

  /** The statement's result column names (made unique) and declared types, asked once per epoch. */
  #described(sql: string, prepared: Prepared): NonNullable<Prepared['described']> {
    if (prepared.described?.epoch === this.#epoch) return prepared.described;
    const columns = prepared.statement.columns();
    const names = uniqueColumnNames(columns.map((column) => column.name));
    const declared = columns.map((column) => column.type);
    prepared.described = {
      epoch: this.#epoch,
      names,
      declared,
      columns: declared.every((type) => type !== null)
        ? declared.map((type, index) => ({ name: names[index] as string, type: type as string }))
        : undefined,
    };
    // Charged again with its column names.
    if (this.#statements.get(sql) === prepared)
      this.#statements.set(sql, prepared, preparedBytes(sql, prepared));
    return prepared.described;
  }

  /**
   * Runs `work` on the prepared statement of `asked` (with Spice's qualified names of the SQLite
   * datasets, `spice.public.users`, made SQLite's: `sql`), its arguments and what it reads; a table
   * that went missing since it was prepared (its dataset was detached to make room) is attached and
   * the statement run again.
   */
  #withStatement<T>(
    asked: string,
    params: readonly QueryParam[],
    shapeKey: string | undefined,
    work: (sql: string, prepared: Prepared, args: unknown[], read: DatasetRead[]) => T,
  ): T {
    const sql = withoutSpiceQualifiers(
      asked,
      (name) => datasetByName(this.#catalog, name)?.engine === 'sqlite',
    );
    const values = scalarParams(params);
    try {
      for (let attempt = 0; ; attempt++) {
        const prepared = this.#prepare(sql);
        try {
          const args = sqliteArguments(prepared.binding, values);
          return work(sql, prepared, args, this.#read(sql, prepared, args, shapeKey));
        } catch (error) {
          if (attempt > SQLITE_MAX_ATTACHED || !this.#attachFor(error, new Set(prepared.datasets ?? []))) {
            throw this.#engineError(error, prepared);
          }
          this.#statements.delete(sql);
        }
      }
    } catch (error) {
      throw this.#engineError(error, undefined);
    }
  }

  /** Runs `sql` and answers JSON-safe rows; reading stops at the first row or byte over a cap. */
  rows(
    asked: string,
    params: readonly QueryParam[],
    control: NamespaceQueryControl = {},
    shapeKey?: string,
  ): RowsOutcome {
    return this.#withStatement(asked, params, shapeKey, (sql, prepared, args, read) => {
      const { statement } = prepared;
      const raw: SqliteValue[][] = [];
      let bytes = 0;
      const iterator = statement.iterate(...args) as IterableIterator<SqliteValue[]>;
      for (const row of iterator) {
        raw.push(row);
        for (const value of row) bytes += valueBytes(value);
        const limit = capExceeded(raw.length, bytes, control);
        if (limit !== undefined) {
          iterator.return?.();
          return { kind: 'too-large', limit, read };
        }
      }
      const { names, declared, columns: known } = this.#described(sql, prepared);
      const columns = known ?? sqliteColumns(names, declared, raw);
      const rows = sqliteRecords(names, raw);
      return prepared.datasetsByShape
        ? { kind: 'rows', columns, rows, read, shared: true }
        : { kind: 'rows', columns, rows, read };
    });
  }

  /**
   * Runs `sql` and hands its result to `sink` as Arrow batches. Column types come from the declared
   * types and the values of the first batch (`SqliteBatchBuilder`).
   */
  batches(
    asked: string,
    params: readonly QueryParam[],
    sink: SyncBatchSink,
    control: BatchControl = {},
    shapeKey?: string,
  ): BatchOutcome {
    const cursor = this.cursor(asked, params, sink, control, shapeKey);
    for (;;) {
      const outcome = cursor.next();
      if (outcome !== undefined) return outcome;
    }
  }

  /**
   * {@link batches}, a step at a time: each `next()` hands `sink` at most one batch (the batch it
   * read the step before: a step reads the next batch's rows, then stops before handing it over)
   * and answers the outcome once there is one. A caller may wait between steps (for its consumer),
   * while this connection stays busy with the statement: until the outcome, or `close()`, nothing
   * else may run on it.
   */
  cursor(
    asked: string,
    params: readonly QueryParam[],
    sink: SyncBatchSink,
    control: BatchControl = {},
    shapeKey?: string,
  ): SqliteCursor {
    let steps: Generator<undefined, BatchOutcome> | undefined;
    let prepared: Prepared | undefined;
    const step = (): BatchOutcome | undefined => {
      const next = (steps as Generator<undefined, BatchOutcome>).next();
      return next.done === true ? next.value : undefined;
    };
    return {
      next: () => {
        if (steps === undefined) {
          // The first step in #withStatement: a table detached since the statement was prepared is
          // attached and the statement run again (nothing has been handed over before it).
          return this.#withStatement(asked, params, shapeKey, (sql, statement, args, read) => {
            prepared = statement;
            steps = this.#batchSteps(sql, statement, args, read, sink, control);
            return step();
          });
        }
        try {
          return step();
        } catch (error) {
          throw this.#engineError(error, prepared);
        }
      },
      // Ends the statement (its iterator's `return`), so the connection is free again.
      close: () => void steps?.return(undefined as never),
    };
  }

  /** {@link batches}' steps: yields before it hands each batch over (see {@link cursor}). */
  *#batchSteps(
    sql: string,
    prepared: Prepared,
    args: unknown[],
    read: DatasetRead[],
    sink: SyncBatchSink,
    control: BatchControl,
  ): Generator<undefined, BatchOutcome> {
    const batchRows = control.batchRows ?? 65_536;
    const batchBytes = control.batchBytes ?? 4 * MIB;
    const { statement } = prepared;
    const iterator = statement.iterate(...args) as IterableIterator<SqliteValue[]>;
    let pending: SqliteValue[][] = [];
    let pendingBytes = 0;
    let builder: SqliteBatchBuilder | undefined;
    let rows = 0;
    let bytes = 0;
    const send = (): 'rows' | 'bytes' | undefined => {
      const first = builder === undefined;
      if (builder === undefined) {
        const { names, declared } = this.#described(sql, prepared);
        const metadata =
          control.parameterTypes === true
            ? new Map([[PARAMETER_TYPES_METADATA, JSON.stringify(this.#parameterTypes(sql, args))]])
            : undefined;
        // The first batch's rows decide the column types (see sqlite-arrow.ts).
        builder = new SqliteBatchBuilder(names, declared, pending, metadata);
        sink.schema(builder.schema, read);
      }
      const taken = pending;
      pending = [];
      pendingBytes = 0;
      if (first && 'text' in sink && sink.text !== undefined && taken.length > 0 && builder.natural(taken)) {
        const { names } = this.#described(sql, prepared);
        const json = jsonObjects(names, taken.length, (row, column) =>
          encodeSqliteValue(taken[row]?.[column] ?? null),
        ) as string;
        rows += taken.length;
        bytes += json.length;
        const limit = capExceeded(rows, bytes, control);
        if (limit !== undefined) return limit;
        sink.text(json, taken.length);
        return undefined;
      }
      for (const row of taken) builder.append(row);
      const count = builder.rows;
      if (count === 0) return undefined;
      const built = builder.flush();
      const ipc = 'batch' in sink ? batchToIpc(builder.schema, built) : undefined;
      rows += count;
      bytes += ipc?.byteLength ?? built.data.byteLength;
      const limit = capExceeded(rows, bytes, control);
      if (limit !== undefined) return limit;
      if ('batch' in sink) sink.batch(ipc as Uint8Array, count);
      else sink.built(built, count);
      return undefined;
    };
    // A `return()` while suspended in this loop closes the iterator (for-of does), ending the statement.
    for (const row of iterator) {
      pending.push(row);
      for (const value of row) pendingBytes += valueBytes(value);
      if (pending.length >= batchRows || pendingBytes >= batchBytes) {
        yield;
        const limit = send();
        if (limit !== undefined) {
          iterator.return?.();
          return { kind: 'too-large', limit, read };
        }
      }
    }
    if (pending.length > 0) yield;
    const limit = send();
    if (limit !== undefined) return { kind: 'too-large', limit, read };
    return prepared.datasetsByShape
      ? { kind: 'done', read, rows, bytes, shared: true }
      : { kind: 'done', read, rows, bytes };
  }

  #engineError(error: unknown, prepared: Prepared | undefined): unknown {
    return queryFailure(datasetsPhrase(prepared?.datasets ?? []), error, (message) => this.redact(message));
  }

  /** `message` with generation paths named by dataset and other local paths hidden. */
  redact(message: string): string {
    const roots = [...(this.#options.privateRoots ?? []), this.#options.mainPath];
    return redactDuckDbMessage(message, this.#catalog, { roots, tablePrefixes: [] });
  }

  close(): void {
    this.#statements.clear();
    this.#db.close();
  }
}

/** Bytes a prepared statement is charged in the cache: its text, and its columns once described. */
function preparedBytes(sql: string, prepared: Prepared): number {
  let bytes = 2 * sql.length + 2_048 + 32 * prepared.tokens.length;
  for (const name of prepared.described?.names ?? []) bytes += 2 * name.length + 64;
  return bytes;
}

/**
 * The statement with each literal of its shape as a named parameter, and arguments binding every
 * parameter to NULL (for EXPLAIN: nothing runs); undefined when its parameters are SQLite's named
 * ones (refused when it runs) or the literals touch them.
 */
function withLiteralParameters(
  sql: string,
  literals: readonly { readonly start: number; readonly end: number }[],
  prepared: Prepared,
): { readonly sql: string; readonly args: unknown[] } | undefined {
  let text = '';
  let from = 0;
  const named: Record<string, null> = {};
  for (const [index, literal] of literals.entries()) {
    const name = `ferry_literal_${index + 1}`;
    named[name] = null;
    text += `${sql.slice(from, literal.start)}:${name}`;
    from = literal.end;
  }
  text += sql.slice(from);
  const markers = prepared.tokens.filter((token) => token.kind === 'parameter');
  if (prepared.binding === 'numbered') {
    for (const marker of markers) named[marker.text.slice(1)] = null;
    return { sql: text, args: [named] };
  }
  const positional = markers.filter((marker) => marker.text === '?').length;
  return { sql: text, args: [...new Array<null>(positional).fill(null), named] };
}
