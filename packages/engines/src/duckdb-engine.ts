/**
 * The DuckDB adapter: one read-only DuckDB instance per snapshot file, with external access
 * disabled, extension auto-install/auto-load off and the configuration locked, so no query can
 * read another file, reach the network, download an extension or undo those settings. Queries
 * pass the engine's statement check (statement-check.ts), then run on a small pool of connections (concurrently);
 * `close()` refuses new queries and waits for running ones before releasing the file.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { DuckDBConnection, DuckDBPreparedStatement, DuckDBResult } from '@duckdb/node-api';
import type { ArrowSchema, JsonValue, QueryParam, QueryResult } from '@ferry/core/base';
import { DUCKDB_READ_ONLY_SETTINGS } from './duckdb-lockdown.js';
import { duckdb } from './duckdb-node.js';
import { duckDbTypeToArrow } from './duckdb-types.js';
import { encodeDuckDbValue } from './duckdb-values.js';
import { type ScalarParam, scalarParams, setEntry, uniqueColumnNames } from './encode.js';
import {
  missingTable,
  type OpenOptions,
  type QueryControl,
  queryFailure,
  quoteIdentifier,
  type SnapshotEngine,
  schemaOfColumns,
  type TableColumn,
} from './engine.js';
import { EngineClosedError, EngineOpenError, InvalidParameterError, messageOf } from './errors.js';
import { assertDuckDbFile, notADatabase } from './file-header.js';
import type { ResultColumn } from './namespace-types.js';
import { checkDuckDbStatement } from './statement-check.js';

const { DuckDBInstance } = duckdb;
type DuckDBInstance = InstanceType<typeof DuckDBInstance>;

export interface DuckDbOpenOptions extends OpenOptions {
  /** Connections queries run on concurrently (default 4). */
  readonly connections?: number;
}

/** What DuckDB failing to open (or attach) `path` means: not a DuckDB file, or an open error. */
export function duckDbOpenFailure(path: string, error: unknown): Error {
  const message = messageOf(error);
  if (message.includes('not a valid DuckDB database file')) {
    return notADatabase(path, 'DuckDB', 'not a valid DuckDB file', error);
  }
  return new EngineOpenError(path, message, { cause: error });
}

/** Open `path` as a configured read-only instance; the file must carry a DuckDB header. */
export async function createReadOnlyInstance(path: string): Promise<DuckDBInstance> {
  assertDuckDbFile(path);
  try {
    return await DuckDBInstance.create(path, { ...DUCKDB_READ_ONLY_SETTINGS });
  } catch (error) {
    throw duckDbOpenFailure(path, error);
  }
}

/**
 * The columns of `table` in order (`undefined`: no such table), in the connection's current
 * database and schema, or in the `main` schema of the attached database `database`.
 */
export async function readDuckDbColumns(
  connection: DuckDBConnection,
  table: string,
  database?: string,
): Promise<readonly TableColumn[] | undefined> {
  const found = await connection.runAndReadAll(
    `SELECT schema_name, table_name, column_name, is_nullable FROM duckdb_columns()
      WHERE ${database === undefined ? 'database_name = current_database() AND schema_name = current_schema()' : "database_name = $2 AND schema_name = 'main'"}
        AND lower(table_name) = lower($1)
      ORDER BY column_index`,
    database === undefined ? [table] : [table, database],
  );
  const rows = found.getRows();
  const first = rows[0];
  if (first === undefined) return undefined;
  // Column types from planning `SELECT *`: structured (nested types included), no parsing.
  const prepared = await connection.prepare(
    `SELECT * FROM ${database === undefined ? '' : `${quoteIdentifier(database)}.`}${quoteIdentifier(String(first[0]))}.${quoteIdentifier(String(first[1]))}`,
  );
  try {
    return rows.map((row, index) => {
      const type = prepared.columnType(index);
      return {
        name: String(row[2]),
        type: type.toString(),
        nullable: row[3] === true,
        arrow: duckDbTypeToArrow(type),
      };
    });
  } finally {
    prepared.destroySync();
  }
}

/** A result's column names (made unique) and types, as rows report them. */
export interface ResultColumns {
  readonly names: string[];
  readonly columns: ResultColumn[];
}

/** A result's (or a result reader's) column names (made unique) and types, as rows report them. */
export function columnsOf(result: Pick<DuckDBResult, 'columnNames' | 'columnTypes'>): ResultColumns {
  const names = uniqueColumnNames(result.columnNames());
  const columns = result
    .columnTypes()
    .map((type, index) => ({ name: names[index] as string, type: type.toString() }));
  return { names, columns };
}

/** An integer bound as DuckDB types the literal: BIGINT, else HUGEINT, else DOUBLE. */
function bindInteger(prepared: DuckDBPreparedStatement, position: number, value: bigint): void {
  if (BigInt.asIntN(64, value) === value) prepared.bindBigInt(position, value);
  else if (BigInt.asIntN(128, value) === value) prepared.bindHugeInt(position, value);
  else prepared.bindDouble(position, Number(value));
}

/** Binds one value per `?` / `$n` (clearing earlier values); a count mismatch is `ERR_INVALID_PARAMETER`. */
export function bindDuckDbParams(prepared: DuckDBPreparedStatement, params: readonly ScalarParam[]): void {
  prepared.clearBindings();
  if (params.length !== prepared.parameterCount) {
    throw new InvalidParameterError(
      `The query has ${prepared.parameterCount} parameter(s) but ${params.length} value(s) were given; pass one value per ? or $n.`,
    );
  }
  for (const [index, param] of params.entries()) {
    const position = index + 1;
    if (param === null) prepared.bindNull(position);
    else if (typeof param === 'boolean') prepared.bindBoolean(position, param);
    else if (typeof param === 'string') prepared.bindVarchar(position, param);
    else if (typeof param === 'bigint') bindInteger(prepared, position, param);
    else if (Number.isSafeInteger(param)) prepared.bindBigInt(position, BigInt(param));
    else prepared.bindDouble(position, param);
  }
}

export class DuckDbEngine implements SnapshotEngine {
  readonly kind = 'duckdb' as const;
  readonly path: string;
  readonly #instance: DuckDBInstance;
  readonly #maxConnections: number;
  readonly #idle: DuckDBConnection[] = [];
  readonly #busy = new Set<DuckDBConnection>();
  #cancelled = false;
  readonly #waiters: ((connection: DuckDBConnection) => void)[] = [];
  readonly #running = new Set<Promise<unknown>>();
  #opened = 0;
  #closing: Promise<void> | undefined;

  constructor(path: string, instance: DuckDBInstance, maxConnections: number) {
    this.path = path;
    this.#instance = instance;
    this.#maxConnections = Math.max(1, maxConnections);
  }

  async #acquire(): Promise<DuckDBConnection> {
    let connection = this.#idle.pop();
    if (connection === undefined && this.#opened < this.#maxConnections) {
      this.#opened++;
      try {
        connection = await this.#instance.connect();
      } catch (error) {
        this.#opened--;
        throw error;
      }
    }
    connection ??= await new Promise<DuckDBConnection>((resolve) => this.#waiters.push(resolve));
    this.#busy.add(connection);
    return connection;
  }

  #release(connection: DuckDBConnection): void {
    this.#busy.delete(connection);
    const waiter = this.#waiters.shift();
    if (waiter === undefined) this.#idle.push(connection);
    else waiter(connection);
  }

  /** Run `work` on a pooled connection; engine errors become `QueryFailedError`s ({@link queryFailure}). */
  #withConnection<T>(work: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
    if (this.#closing !== undefined) return Promise.reject(new EngineClosedError(this.path));
    const task = (async () => {
      const connection = await this.#acquire();
      try {
        return await work(connection);
      } catch (error) {
        throw queryFailure(`'${this.path}'`, error);
      } finally {
        this.#release(connection);
      }
    })();
    this.#running.add(task);
    const forget = (): void => {
      this.#running.delete(task);
    };
    task.then(forget, forget);
    return task;
  }

  /**
   * Run one read-only query. `control.signal` interrupts it (its connection is free again at once);
   * `control.maxRows` stops reading after `maxRows + 1` rows.
   */
  async query(
    sql: string,
    params: readonly QueryParam[] = [],
    control: QueryControl = {},
  ): Promise<QueryResult> {
    if (this.#closing !== undefined) throw new EngineClosedError(this.path);
    const values = scalarParams(params);
    const { signal, maxRows } = control;
    signal?.throwIfAborted();
    return this.#withConnection(async (connection) => {
      // Attached only while this query holds the connection (removed before it is released).
      const interrupt = (): void => connection.interrupt();
      signal?.addEventListener('abort', interrupt, { once: true });
      let prepared: DuckDBPreparedStatement | undefined;
      try {
        prepared = await checkDuckDbStatement(connection, sql);
        if (this.#cancelled) throw new EngineClosedError(this.path);
        signal?.throwIfAborted();
        bindDuckDbParams(prepared, values);
        const reader = await (maxRows === undefined
          ? prepared.runAndReadAll()
          : prepared.streamAndReadUntil(maxRows + 1)
        ).catch((error: unknown) => {
          // An interrupted query fails with DuckDB's "Interrupted!": report why it was cancelled.
          if (signal?.aborted === true) throw signal.reason;
          throw error;
        });
        const { names, columns } = columnsOf(reader);
        const types = reader.columnTypes();
        const rows = reader.getRows().map((row) => {
          const record: Record<string, JsonValue> = {};
          for (const [index, value] of row.entries())
            setEntry(record, names[index] as string, encodeDuckDbValue(value, types[index]));
          return record;
        });
        return { columns, rows };
      } finally {
        signal?.removeEventListener('abort', interrupt);
        prepared?.destroySync();
      }
    });
  }

  columns(table: string): Promise<readonly TableColumn[] | undefined> {
    return this.#withConnection((connection) => readDuckDbColumns(connection, table));
  }

  async schema(table: string): Promise<ArrowSchema> {
    return schemaOfColumns(this.path, table, await this.columns(table));
  }

  /**
   * Cancel every query for good: new ones are refused, running ones are interrupted (they fail with
   * DuckDB's "Interrupted" error) until none is left. Resolves when nothing runs. Used before a
   * thread ends: a worker thread must not be torn down while DuckDB executes on its behalf, or the
   * native addon aborts the whole process.
   */
  async cancelAll(): Promise<void> {
    this.#cancelled = true;
    while (this.#running.size > 0) {
      for (const connection of this.#busy) connection.interrupt();
      await sleep(20);
    }
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      await Promise.allSettled([...this.#running]);
      for (const connection of this.#idle.splice(0)) connection.closeSync();
      this.#instance.closeSync();
    })();
    return this.#closing;
  }
}

/** Open a DuckDB snapshot file read-only. */
export async function openDuckDb(path: string, options: DuckDbOpenOptions = {}): Promise<DuckDbEngine> {
  const instance = await createReadOnlyInstance(path);
  const engine = new DuckDbEngine(path, instance, options.connections ?? 4);
  try {
    if (options.table !== undefined && (await engine.columns(options.table)) === undefined)
      throw missingTable(path, options.table);
  } catch (error) {
    await engine.close();
    throw error;
  }
  return engine;
}
