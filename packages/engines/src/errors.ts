/**
 * Errors of the engine adapters. Each has a stable `code` that callers and tests match on, a
 * one-sentence message naming the file, table or statement and the fix, and the engine's own
 * error as `cause`. Snapshot validation failures use `SnapshotRejectedError` from `@ferry/core`.
 */
import { FerryError, type FerryErrorOptions, registerErrors } from '@ferry/core/base';

/** What an engine's error says: its message, or the thrown value as text. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The write a refused statement attempted, as Spice names it in its refusal messages. */
export type WriteOperation = 'insert' | 'update' | 'delete' | 'truncate';

const writeVerbs: Readonly<Record<WriteOperation, string>> = {
  insert: 'writes to',
  update: 'updates on',
  delete: 'deletes on',
  truncate: 'truncate on',
};

/**
 * An INSERT, UPDATE, DELETE or TRUNCATE sent to a snapshot replica. The message reproduces
 * Spice's wording for `refresh_mode: snapshot` word for word, because operators grep for it.
 */
export class WriteRejectedError extends FerryError {
  readonly operation: WriteOperation;
  readonly table: string;

  constructor(operation: WriteOperation, table: string, options: FerryErrorOptions = {}) {
    super(
      'ERR_WRITE_REJECTED',
      `${writeVerbs[operation]} accelerated table ${table} are not permitted when refresh_mode is 'snapshot'; the accelerator is driven exclusively from the snapshot store`,
      options,
    );
    this.name = 'WriteRejectedError';
    this.operation = operation;
    this.table = table;
  }
}

/** Any other statement that could change state or reach outside the datasets (DDL, COPY, ATTACH, SET, file readers, …). */
export class StatementRejectedError extends FerryError {
  /**
   * The statement kind as written (`CREATE`, `ATTACH`, `PRAGMA`), or `MULTIPLE` / `EMPTY`; a refused
   * function (`query()`, `read_csv()`), `FILE` (a file where a table belongs) or a refused view.
   */
  readonly statement: string;

  constructor(statement: string, message: string, options: FerryErrorOptions = {}) {
    super('ERR_STATEMENT_REJECTED', message, options);
    this.name = 'StatementRejectedError';
    this.statement = statement;
  }
}

/**
 * A statement that starts with a word no SQL statement starts with (`SELEC 1`): a typo, answered as
 * the syntax error it is (never as a refused statement kind), with the engine's own words when it
 * gave some and the statement keyword the word is nearest to.
 */
export class SqlSyntaxError extends FerryError {
  /** The word the statement starts with, as written. */
  readonly word: string;

  constructor(
    word: string,
    suggestion: string | undefined,
    engineMessage?: string,
    options: FerryErrorOptions = {},
  ) {
    const fix =
      suggestion === undefined
        ? 'start the query with SELECT (or WITH … SELECT)'
        : `did you mean ${suggestion}?`;
    super(
      'ERR_SQL_SYNTAX',
      `Syntax error: '${word}' does not begin any SQL statement${engineMessage === undefined ? '' : ` (${engineMessage})`}; ${fix}`,
      options,
    );
    this.name = 'SqlSyntaxError';
    this.word = word;
  }
}

/** The database file could not be opened (missing, unreadable, written by a newer engine version). */
export class EngineOpenError extends FerryError {
  constructor(path: string, reason: string, options: FerryErrorOptions = {}) {
    super('ERR_ENGINE_OPEN', `Cannot open '${path}' read-only: ${reason}`, options);
    this.name = 'EngineOpenError';
  }
}

/**
 * better-sqlite3's native module cannot be loaded by this Node.js: it was built for another
 * Node.js version (its NODE_MODULE_VERSION) or platform, as when Ferry was installed with one
 * Node.js and run with another. Every SQLite file would fail to open, so nothing SQLite starts.
 */
export class SqliteBindingError extends FerryError {
  constructor(reason: string, options: FerryErrorOptions = {}) {
    super(
      'ERR_SQLITE_BINDING',
      `better-sqlite3's native module cannot be loaded by Node.js ${process.version} (${reason}); rebuild it for this Node.js (pnpm rebuild better-sqlite3, or npm rebuild better-sqlite3) or run Ferry with the Node.js it was installed with`,
      options,
    );
    this.name = 'SqliteBindingError';
  }
}

/** A query or schema call on an engine that was closed. */
export class EngineClosedError extends FerryError {
  constructor(path: string) {
    super(
      'ERR_ENGINE_CLOSED',
      `The engine for '${path}' is closed; open the current snapshot file again before querying it.`,
    );
    this.name = 'EngineClosedError';
  }
}

/**
 * The engine refused or failed a query (syntax, unknown column, permission); the engine's words
 * follow. `subject` says what it ran on: a file (`'/data/orders.duckdb'`, quoted), the datasets of
 * a namespace query (`dataset 'orders'`), or nothing.
 */
export class QueryFailedError extends FerryError {
  constructor(subject: string | undefined, engineMessage: string, options: FerryErrorOptions = {}) {
    super(
      'ERR_QUERY_FAILED',
      subject === undefined
        ? `Query failed: ${engineMessage}`
        : `Query on ${subject} failed: ${engineMessage}`,
      options,
    );
    this.name = 'QueryFailedError';
  }
}

/**
 * A table a namespace query names is not one it can read there: no such dataset (`unknown`), a
 * dataset that serves nothing yet (`not-serving`), an SQLite dataset named where only DuckDB can
 * answer (`sqlite`: route the query to SQLite), or a DuckDB dataset named in SQLite (`duckdb`).
 * The runtime turns it into its own error or a re-route; the message is the fallback.
 */
export class NamespaceTableError extends FerryError {
  readonly table: string;
  readonly reason: 'unknown' | 'not-serving' | 'sqlite' | 'duckdb';

  constructor(table: string, reason: NamespaceTableError['reason']) {
    super(
      'ERR_NAMESPACE_TABLE',
      reason === 'unknown'
        ? `Table '${table}' is not a dataset of this runtime.`
        : reason === 'not-serving'
          ? `Dataset '${table}' serves no snapshot yet; retry later.`
          : `Dataset '${table}' is an ${reason === 'sqlite' ? 'SQLite' : 'DuckDB'} dataset, which this engine cannot read here; query it in a statement of its own.`,
    );
    this.name = 'NamespaceTableError';
    this.table = table;
    this.reason = reason;
  }
}

function mib(bytes: number): string {
  return bytes % (1024 * 1024 * 1024) === 0 && bytes > 0
    ? `${bytes / (1024 * 1024 * 1024)} GiB`
    : `${Math.round(bytes / (1024 * 1024))} MiB`;
}

/**
 * A query ran out of the memory (`ERR_QUERY_MEMORY`) or the temporary disk space
 * (`ERR_QUERY_TEMP_SPACE`) its engine instance may use. `source` names the setting that set the
 * limit (`duckdb_memory_limit of dataset 'orders'`, `the runtime's queryMemoryLimit`).
 */
export class QueryResourceError extends FerryError {
  readonly limit: 'memory' | 'temp';
  readonly bytes: number;

  constructor(
    limit: 'memory' | 'temp',
    subject: string | undefined,
    bytes: number,
    source: string,
    options: FerryErrorOptions = {},
  ) {
    const what = subject === undefined ? 'The query' : `The query on ${subject}`;
    super(
      limit === 'memory' ? 'ERR_QUERY_MEMORY' : 'ERR_QUERY_TEMP_SPACE',
      limit === 'memory'
        ? `${what} needed more than the ${mib(bytes)} of memory it may use (${source}) and was stopped; narrow it (filter before joining, aggregate less) or raise ${source.replace(/^the runtime's /, '')}.`
        : `${what} spilled more than the ${mib(bytes)} it may write to its temporary directory (${source}) and was stopped; narrow it or raise ${source.replace(/^the runtime's /, '')}.`,
      options,
    );
    this.name = 'QueryResourceError';
    this.limit = limit;
    this.bytes = bytes;
  }
}

/** An SQLite dataset read into DuckDB for a join across engines is larger than the bound. */
export class CrossEngineLimitError extends FerryError {
  constructor(dataset: string, limit: 'rows' | 'bytes', max: number) {
    super(
      'ERR_CROSS_ENGINE_TOO_LARGE',
      limit === 'rows'
        ? `SQLite dataset '${dataset}' has more than ${max} rows, the most a query across engines reads into DuckDB (crossEngineMaxRows); join it in SQLite, filter it in a query of its own, or raise crossEngineMaxRows.`
        : `SQLite dataset '${dataset}' holds more than ${mib(max)}, the most a query across engines reads into DuckDB (crossEngineMaxBytes); join it in SQLite, filter it in a query of its own, or raise crossEngineMaxBytes.`,
    );
    this.name = 'CrossEngineLimitError';
  }
}

/** A query parameter that cannot be bound (not a scalar, not finite, wrong count). */
export class InvalidParameterError extends FerryError {
  constructor(message: string) {
    super('ERR_INVALID_PARAMETER', message);
    this.name = 'InvalidParameterError';
  }
}

/** `schema(table)` on a table the file does not contain. */
export class TableNotFoundError extends FerryError {
  readonly table: string;

  constructor(path: string, table: string) {
    super(
      'ERR_TABLE_NOT_FOUND',
      `Table '${table}' does not exist in '${path}'; query a table the snapshot contains (it is named after the dataset).`,
    );
    this.name = 'TableNotFoundError';
    this.table = table;
  }
}

/** A column whose engine type has no Arrow form in the snapshot-store type table: reported, never guessed. */
export class UnsupportedColumnTypeError extends FerryError {
  readonly table: string;
  readonly column: string;
  readonly type: string;

  constructor(path: string, table: string, column: string, type: string) {
    super(
      'ERR_UNSUPPORTED_COLUMN_TYPE',
      `Column '${column}' of table '${table}' in '${path}' has type ${type === '' ? '(none declared)' : type}, which has no Arrow mapping in the snapshot-store type table; store it as one of the mapped types.`,
    );
    this.name = 'UnsupportedColumnTypeError';
    this.table = table;
    this.column = column;
    this.type = type;
  }
}

registerErrors({
  WriteRejectedError,
  StatementRejectedError,
  SqlSyntaxError,
  EngineOpenError,
  SqliteBindingError,
  EngineClosedError,
  QueryFailedError,
  NamespaceTableError,
  QueryResourceError,
  CrossEngineLimitError,
  InvalidParameterError,
  TableNotFoundError,
  UnsupportedColumnTypeError,
});
