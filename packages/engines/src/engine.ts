/**
 * What both adapters offer beyond the core `Engine` port: the table's columns as the engine
 * declares them (the after-download schema check needs the engine's own types, not only their
 * Arrow form), and the open options they share. Also the helpers both use to turn columns into
 * the Arrow schema a writer records.
 */
import {
  type ArrowDataType,
  type ArrowSchema,
  type Engine,
  FerryError,
  type QueryParam,
  type QueryResult,
  SnapshotRejectedError,
  SnapshotRejectionCode,
} from '@ferry/core/base';
import { arrowField } from './arrow-types.js';
import { messageOf, QueryFailedError, TableNotFoundError, UnsupportedColumnTypeError } from './errors.js';

export interface TableColumn {
  readonly name: string;
  /** The engine's type: DuckDB's type name (`DECIMAL(18,2)`), SQLite's declared type as written. */
  readonly type: string;
  /** DuckDB: false for NOT NULL. SQLite: false for NOT NULL (declared constraints only). */
  readonly nullable: boolean;
  /** The Arrow form per the snapshot-store type table, or `undefined` when the type has none. */
  readonly arrow: ArrowDataType | undefined;
}

/** How a caller bounds one query. */
export interface QueryControl {
  /**
   * Cancels the query: DuckDB interrupts it (its connection is free again at once) and the query
   * rejects with the signal's reason. Synchronous engines cannot be interrupted from their thread.
   */
  readonly signal?: AbortSignal;
  /**
   * The caller refuses results with more rows than this: DuckDB stops reading after `maxRows + 1`
   * rows, so such a result is never held whole (the caller sees `rows.length > maxRows`).
   */
  readonly maxRows?: number;
}

export interface SnapshotEngine extends Engine {
  query(sql: string, params?: readonly QueryParam[], control?: QueryControl): Promise<QueryResult>;
  /** The columns of `table` in order, or `undefined` when the file has no such table. */
  columns(table: string): Promise<readonly TableColumn[] | undefined>;
  /**
   * Refuse new queries and cancel running ones, resolving when none runs (engines whose queries
   * execute off the JavaScript thread, i.e. DuckDB; synchronous engines have nothing to cancel).
   */
  cancelAll?(): Promise<void>;
}

export interface OpenOptions {
  /** The dataset's table: when given, opening fails with `ERR_SNAPSHOT_MISSING_TABLE` if it is absent. */
  readonly table?: string;
}

export function missingTable(path: string, table: string): SnapshotRejectedError {
  return new SnapshotRejectedError(
    SnapshotRejectionCode.missingTable,
    `'${path}' has no table '${table}'; a snapshot must contain a table named after its dataset.`,
  );
}

/**
 * What a query on `subject` (a quoted path, the datasets it reads) fails with: a Ferry error as it
 * is, the engine's as a {@link QueryFailedError} in its words, as `words` redacts them.
 */
export function queryFailure(
  subject: string | undefined,
  error: unknown,
  words: (message: string) => string = (message) => message,
): unknown {
  if (error instanceof FerryError) return error;
  return new QueryFailedError(subject, words(messageOf(error)), { cause: error });
}

/** The recorded-schema form of a table's columns; a column without an Arrow form is an error. */
export function schemaOfColumns(
  path: string,
  table: string,
  columns: readonly TableColumn[] | undefined,
): ArrowSchema {
  if (columns === undefined) throw new TableNotFoundError(path, table);
  return {
    fields: columns.map((column) => {
      if (column.arrow === undefined) {
        throw new UnsupportedColumnTypeError(path, table, column.name, column.type);
      }
      return arrowField(column.name, column.arrow, column.nullable);
    }),
    metadata: {},
  };
}

/** Quote an identifier for both engines (`"a""b"`). */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Quote a string literal for both engines (`'a''b'`). */
export function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}
