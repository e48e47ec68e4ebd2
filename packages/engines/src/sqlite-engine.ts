/**
 * The SQLite adapter (also used for Turso snapshots, which are SQLite-format files). The file is
 * opened `readonly` + `fileMustExist` and must be in rollback-journal mode, so no `-journal`,
 * `-wal` or `-shm` file is ever created next to it. Queries pass the engine's own statement check
 * (`checkSqliteStatement`: exactly one statement that SQLite reports as read-only and
 * row-returning), with `load_extension()` left unauthorised. Reads are synchronous: `querySync`
 * is what a worker pool calls; `query` wraps it in a promise.
 */

import type { ArrowSchema, JsonValue, QueryParam, QueryResult } from '@ferry/core/base';
import Database from 'better-sqlite3';
import {
  base64,
  jsonFloat,
  jsonInteger,
  type ScalarParam,
  scalarParams,
  setEntry,
  uniqueColumnNames,
} from './encode.js';
import {
  missingTable,
  type OpenOptions,
  queryFailure,
  type SnapshotEngine,
  schemaOfColumns,
  type TableColumn,
} from './engine.js';
import { EngineClosedError, EngineOpenError, InvalidParameterError, messageOf } from './errors.js';
import { assertSqliteFile, notADatabase } from './file-header.js';
import type { ResultColumn } from './namespace-types.js';
import { type SqlToken, tokenizeSql } from './sql-guard.js';
import { sqliteDeclaredTypeToArrow } from './sqlite-types.js';
import { checkSqliteStatement } from './statement-check.js';

export type SqliteValue = null | bigint | number | string | Uint8Array;

/** How a statement's markers bind: `?` positionally, `?1` / `$1` by number. */
export type SqliteBinding = 'positional' | 'numbered';

/** The statement's binding; SQLite's named `:a` / `@a` / `$a` are refused (`ERR_INVALID_PARAMETER`). */
export function sqliteBindingOf(tokens: readonly SqlToken[]): SqliteBinding {
  const markers = tokens.filter((token) => token.kind === 'parameter');
  if (markers.some((marker) => !/^[?$]\d*$/.test(marker.text))) {
    throw new InvalidParameterError(
      'Named query parameters (:name, @name, $name) are not supported; use positional ? or $1, $2, ….',
    );
  }
  return markers.some((marker) => marker.text.length > 1) ? 'numbered' : 'positional';
}

/**
 * The arguments better-sqlite3 binds for `params` (booleans as 0/1, integers exact; an integer past
 * 64 bits a REAL, as SQLite reads such a literal).
 */
export function sqliteArguments(binding: SqliteBinding, params: readonly ScalarParam[]): unknown[] {
  const values = params.map((param) => {
    if (typeof param === 'boolean') return param ? 1n : 0n;
    if (typeof param === 'bigint') return BigInt.asIntN(64, param) === param ? param : Number(param);
    if (typeof param === 'number' && Number.isSafeInteger(param)) return BigInt(param);
    return param;
  });
  if (binding === 'numbered')
    return [Object.fromEntries(values.map((value, index) => [String(index + 1), value]))];
  return values;
}

export function encodeSqliteValue(value: SqliteValue): JsonValue {
  if (value === null || typeof value === 'string') return value;
  if (typeof value === 'bigint') return jsonInteger(value);
  if (typeof value === 'number') return jsonFloat(value);
  return base64(value);
}

/** SQLite's storage class of a value (the type an expression column reports); undefined for NULL. */
export function storageClass(value: Exclude<SqliteValue, null>): string;
export function storageClass(value: SqliteValue | undefined): string | undefined;
export function storageClass(value: SqliteValue | undefined): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'bigint') return 'INTEGER';
  if (typeof value === 'number') return 'REAL';
  return typeof value === 'string' ? 'TEXT' : 'BLOB';
}

/**
 * A result's columns: each declared type, or for an expression (no declared type) the storage
 * class of its first non-null value, else `NULL`.
 */
export function sqliteColumns(
  names: readonly string[],
  declared: readonly (string | null)[],
  raw: readonly SqliteValue[][],
): ResultColumn[] {
  return declared.map((type, index) => ({
    name: names[index] as string,
    type: type ?? storageClass(raw.find((row) => row[index] !== null)?.[index]) ?? 'NULL',
  }));
}

/** Rows as records keyed by the (unique) column names, their values JSON-safe. */
export function sqliteRecords(
  names: readonly string[],
  raw: readonly SqliteValue[][],
): Record<string, JsonValue>[] {
  return raw.map((row) => {
    const record: Record<string, JsonValue> = {};
    for (let index = 0; index < row.length; index++) {
      setEntry(record, names[index] as string, encodeSqliteValue(row[index] as SqliteValue));
    }
    return record;
  });
}

/** `work()` run now, its value or its error as a promise (the sync calls' async faces). */
const promised = <T>(work: () => T): Promise<T> => new Promise((resolve) => resolve(work()));

export class SqliteEngine implements SnapshotEngine {
  readonly kind = 'sqlite' as const;
  readonly path: string;
  readonly #db: Database.Database;
  #closed = false;

  constructor(path: string, db: Database.Database) {
    this.path = path;
    this.#db = db;
  }

  #open(): Database.Database {
    if (this.#closed) throw new EngineClosedError(this.path);
    return this.#db;
  }

  #wrap<T>(work: () => T): T {
    try {
      return work();
    } catch (error) {
      throw queryFailure(`'${this.path}'`, error);
    }
  }

  /** Run one read-only query synchronously; its columns as {@link sqliteColumns} types them. */
  querySync(sql: string, params: readonly QueryParam[] = []): QueryResult {
    const db = this.#open();
    const values = scalarParams(params);
    return this.#wrap(() => {
      const tokens = tokenizeSql(sql, 'sqlite');
      const statement = checkSqliteStatement(db, sql, tokens);
      statement.safeIntegers(true);
      statement.raw(true);
      const raw = statement.all(...sqliteArguments(sqliteBindingOf(tokens), values)) as SqliteValue[][];
      const described = statement.columns();
      const names = uniqueColumnNames(described.map((column) => column.name));
      const declared = described.map((column) => column.type);
      return { columns: sqliteColumns(names, declared, raw), rows: sqliteRecords(names, raw) };
    });
  }

  query(sql: string, params: readonly QueryParam[] = []): Promise<QueryResult> {
    return promised(() => this.querySync(sql, params));
  }

  /** The declared columns of `table` (`PRAGMA table_info`), or `undefined` when it does not exist. */
  columnsSync(table: string): readonly TableColumn[] | undefined {
    const db = this.#open();
    const rows = this.#wrap(
      () =>
        db
          .prepare(
            'SELECT name, type, "notnull" AS "notnull" FROM pragma_table_info(?, \'main\') ORDER BY cid',
          )
          .all(table) as { name: string; type: string; notnull: number }[],
    );
    if (rows.length === 0) return undefined;
    return rows.map((row) => ({
      name: row.name,
      type: row.type,
      nullable: row.notnull === 0,
      arrow: sqliteDeclaredTypeToArrow(row.type),
    }));
  }

  columns(table: string): Promise<readonly TableColumn[] | undefined> {
    return promised(() => this.columnsSync(table));
  }

  async schema(table: string): Promise<ArrowSchema> {
    return schemaOfColumns(this.path, table, await this.columns(table));
  }

  close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#db.close();
    }
    return Promise.resolve();
  }
}

/** Open an SQLite (or Turso) snapshot file read-only, synchronously (for worker-pool tasks). */
export function openSqliteSync(path: string, options: OpenOptions = {}): SqliteEngine {
  assertSqliteFile(path);
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
    db.pragma('trusted_schema = OFF');
    // Reads the schema now, so a damaged file fails here rather than on the first query.
    db.prepare('SELECT count(*) FROM sqlite_schema').get();
  } catch (error) {
    db?.close();
    if ((error as { code?: unknown }).code === 'SQLITE_NOTADB') {
      throw notADatabase(path, 'SQLite', 'not a valid SQLite file', error);
    }
    throw new EngineOpenError(path, messageOf(error), { cause: error });
  }
  const engine = new SqliteEngine(path, db);
  if (options.table !== undefined && engine.columnsSync(options.table) === undefined) {
    db.close();
    throw missingTable(path, options.table);
  }
  return engine;
}

/** Open an SQLite (or Turso) snapshot file read-only. */
export function openSqlite(path: string, options: OpenOptions = {}): Promise<SqliteEngine> {
  return promised(() => openSqliteSync(path, options));
}
