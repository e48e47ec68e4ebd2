/**
 * The gate every query passes before it runs, decided by the engines' own parsers. DuckDB parses
 * the SQL into its own parse tree (`json_serialize_sql`, parse only: nothing is bound, so no file
 * is opened), where table functions, scalar functions and table references are checked by name;
 * then it counts the statements (`extractStatements`: exactly one), prepares it and requires the
 * statement type SELECT (or EXPLAIN of such a read). SQLite prepares it and requires
 * `readonly && reader`. The tokenizer in sql-guard.ts only words the refusals (Spice's "… not
 * permitted when refresh_mode is 'snapshot'"), locates what an EXPLAIN explains and names a
 * PRAGMA; the verdict is the engine's. A refused statement leaves nothing on the connection (it
 * never runs), and the messages name the statement or the function, never a local file.
 */
import { type DuckDBConnection, type DuckDBPreparedStatement, StatementType } from '@duckdb/node-api';
import type { FerryError } from '@ferry/core';
import type Database from 'better-sqlite3';
import { LRUCache } from 'lru-cache';
import { StatementRejectedError } from './errors.js';
import {
  classifyEach,
  classifyStatement,
  explainedStatement,
  rejectionOf,
  type SqlDialect,
  tokenizeSql,
} from './sql-guard.js';

/**
 * Table functions a DuckDB query may call: value generators, JSON expanders and the catalog's
 * description of its own tables and functions. An allow-list, because DuckDB keeps adding table
 * functions that read files or run SQL (`read_duckdb` arrived in 1.4, `query` / `query_table` run
 * a string as SQL, which no check of the outer statement sees) and a new one must be refused until
 * someone has looked at it. Left out on purpose (DuckDB 1.5.6): every reader (`read_*`,
 * `parquet_*`, `sniff_csv`, `glob`, `seq_scan`, `arrow_scan`), every SQL runner (`query`,
 * `query_table`, `json_execute_serialized_sql`, the `histogram*` macros that take a table name as a
 * string), whatever changes the instance (`checkpoint`, `enable_logging`, `enable_profiling`,
 * `enable_peg_parser`, …) and what shows local paths or settings (`duckdb_databases`,
 * `duckdb_settings`, `duckdb_extensions`, `duckdb_temporary_files`, `duckdb_secrets`, `duckdb_logs`).
 */
export const DUCKDB_TABLE_FUNCTIONS: ReadonlySet<string> = new Set([
  'range',
  'generate_series',
  'unnest',
  'repeat',
  'repeat_row',
  'json_each',
  'json_tree',
  'pragma_table_info',
  'duckdb_tables',
  'duckdb_columns',
  'duckdb_views',
  'duckdb_schemas',
  'duckdb_types',
  'duckdb_constraints',
  'duckdb_indexes',
  'duckdb_keywords',
  'duckdb_functions',
  'pg_timezone_names',
  'icu_calendar_names',
]);

/**
 * Scalar functions refused by name. Scalars compute a value from their arguments; these few of
 * DuckDB 1.5.6 do more, and a deny-list is right here because an allow-list of the ~700 scalars
 * would refuse ordinary SQL whenever DuckDB adds one.
 */
export const DUCKDB_REFUSED_FUNCTIONS: ReadonlyMap<string, string> = new Map([
  ['current_setting', "it reveals the server's settings, local paths among them"],
  ['setseed', "it changes the connection's random seed, which would outlive the query"],
  ['nextval', 'it advances a sequence'],
  ['write_log', "it writes to DuckDB's log"],
  ['json_serialize_plan', 'it plans SQL given as a string, which opens the files that SQL names'],
]);

/**
 * System views refused when a query names them without a dataset's qualification: they show the
 * attached files' paths (`duckdb_databases`, `pragma_database_list`), the settings (`pg_settings`)
 * or DuckDB's log.
 */
export const DUCKDB_REFUSED_VIEWS: ReadonlySet<string> = new Set([
  'duckdb_databases',
  'pragma_database_list',
  'pg_settings',
  'duckdb_logs',
]);

/**
 * What DuckDB's replacement scans (`FROM 'x.csv'`, `FROM data.parquet`) recognise as a file: the
 * extensions of its bundled readers (CSV, Parquet, JSON, DuckDB files) and compression suffixes.
 */
const FILE_EXTENSIONS: ReadonlySet<string> = new Set([
  'csv',
  'tsv',
  'parquet',
  'json',
  'jsonl',
  'ndjson',
  'duckdb',
  'ddb',
  'db',
  'gz',
  'zst',
]);

/** A character no dataset's table name holds but a file name or URL does. */
const FILE_NAME_CHARACTER = /[./\\:*?[\]]/;

const TABLE_FUNCTION_REASONS: readonly (readonly [RegExp, string])[] = [
  [
    /^(query|query_table|json_execute_serialized_sql|histogram|histogram_values)$/,
    'it runs SQL given as a string',
  ],
  [/^(read_|parquet_|sniff_csv$|glob$|seq_scan$|arrow_scan)/, 'it reads files'],
];

const SQLITE_REFUSED_NAMES: ReadonlyMap<string, string> = new Map([
  ['pragma_database_list', "it shows the attached files' paths"],
]);

function refusedFunction(name: string, reason: string): StatementRejectedError {
  return new StatementRejectedError(
    `${name}()`,
    `${name}() is not permitted on a read-only snapshot replica: ${reason}; query the datasets' tables instead.`,
  );
}

function refusedTableFunction(name: string): StatementRejectedError {
  const reason =
    TABLE_FUNCTION_REASONS.find(([pattern]) => pattern.test(name))?.[1] ??
    `only these table functions are: ${[...DUCKDB_TABLE_FUNCTIONS].join(', ')}`;
  return refusedFunction(name, reason);
}

/** The refusal of a statement the engine does not run as a read, worded from the tokenizer's view of it. */
function refusalOf(sql: string, dialect: SqlDialect): FerryError {
  const verdict = classifyStatement(sql, dialect);
  if (verdict.kind !== 'read') return rejectionOf(verdict) as FerryError;
  return new StatementRejectedError(
    verdict.statement,
    `${dialect === 'duckdb' ? 'DuckDB' : 'SQLite'} does not run this ${verdict.statement} statement as a read-only query; send a single SELECT (or WITH … SELECT) query instead.`,
  );
}

/** Several statements: the write among them if the tokenizer finds one, else the count. */
function multipleRefusal(sql: string, dialect: SqlDialect, count: number | undefined): FerryError {
  const verdict = classifyStatement(sql, dialect);
  if (verdict.kind === 'write') return rejectionOf(verdict) as FerryError;
  const counted = count ?? classifyEach(sql, dialect).length;
  return rejectionOf({
    kind: 'refused',
    statement: 'MULTIPLE',
    ...(counted > 1 ? { count: counted } : {}),
  }) as FerryError;
}

const emptyRefusal = (): FerryError => rejectionOf({ kind: 'refused', statement: 'EMPTY' }) as FerryError;

interface TableReference {
  readonly catalog: string;
  readonly schema: string;
  readonly table: string;
}

interface TreeNames {
  readonly tableFunctions: string[];
  readonly functions: string[];
  readonly tables: TableReference[];
}

const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/** Every table function, function and table reference anywhere in a DuckDB parse tree (JSON). */
function namesIn(tree: unknown): TreeNames {
  const names: TreeNames = { tableFunctions: [], functions: [], tables: [] };
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    const record = node as Record<string, unknown>;
    if (record.type === 'TABLE_FUNCTION') {
      const fn = record.function as Record<string, unknown> | null | undefined;
      names.tableFunctions.push(text(fn?.function_name).toLowerCase());
    }
    if (record.type === 'BASE_TABLE') {
      names.tables.push({
        catalog: text(record.catalog_name),
        schema: text(record.schema_name),
        table: text(record.table_name),
      });
    }
    if (typeof record.function_name === 'string') names.functions.push(record.function_name.toLowerCase());
    for (const value of Object.values(record)) visit(value);
  };
  visit(tree);
  return names;
}

/** Whether DuckDB would read a table reference as a file (a replacement scan). */
function namesFile(ref: TableReference): boolean {
  const parts = [ref.catalog, ref.schema, ref.table].filter((part) => part !== '');
  if (parts.some((part) => FILE_NAME_CHARACTER.test(part))) return true;
  return parts.length > 1 && FILE_EXTENSIONS.has(ref.table.toLowerCase());
}

/** Refuse what a parse tree calls or names that is not a plain read of the datasets. */
function assertTreeReadsOnly(tree: unknown): void {
  const names = namesIn(tree);
  for (const name of names.tableFunctions) {
    if (!DUCKDB_TABLE_FUNCTIONS.has(name)) throw refusedTableFunction(name);
  }
  for (const name of names.functions) {
    const reason = DUCKDB_REFUSED_FUNCTIONS.get(name);
    if (reason !== undefined) throw refusedFunction(name, reason);
  }
  for (const ref of names.tables) {
    if (namesFile(ref)) {
      throw new StatementRejectedError(
        'FILE',
        "The query names a file where a table belongs, and reading files is not permitted on a read-only snapshot replica; query the datasets' tables instead.",
      );
    }
    const system = ['', 'system'].includes(ref.catalog.toLowerCase());
    if (system && DUCKDB_REFUSED_VIEWS.has(ref.table.toLowerCase())) {
      throw new StatementRejectedError(
        ref.table,
        `${ref.table} is not permitted on a read-only snapshot replica: it shows the server's files or settings; query the datasets' tables instead.`,
      );
    }
  }
}

type ParsedSql =
  /** DuckDB parsed only SELECT statements: their parse trees. */
  | { readonly kind: 'select'; readonly trees: readonly unknown[] }
  /** DuckDB parsed it, but a statement is not a SELECT. */
  | { readonly kind: 'other' }
  /** DuckDB cannot parse it. */
  | { readonly kind: 'invalid' };

/**
 * DuckDB's parse of `sql` (`json_serialize_sql` only parses: unlike `extractStatements`, which
 * also runs PRAGMA rewrites, and `IMPORT DATABASE` among them reads files, it opens nothing).
 */
async function parseDuckDb(connection: DuckDBConnection, sql: string): Promise<ParsedSql> {
  const reader = await connection.runAndReadAll(
    'SELECT json_serialize_sql($1::VARCHAR, skip_empty := true, skip_null := true)',
    [sql],
  );
  const parsed = JSON.parse(String(reader.getRows()[0]?.[0])) as {
    error?: boolean;
    error_message?: string;
    statements?: unknown[];
  };
  if (parsed.error !== true) return { kind: 'select', trees: parsed.statements ?? [] };
  return /Only SELECT statements/.test(parsed.error_message ?? '') ? { kind: 'other' } : { kind: 'invalid' };
}

/** Prepare the one statement (DuckDB's count) and require the statement type DuckDB gives it. */
async function prepareAs(
  connection: DuckDBConnection,
  sql: string,
  type: StatementType,
): Promise<DuckDBPreparedStatement> {
  const extracted = await connection.extractStatements(sql);
  if (extracted.count !== 1) throw multipleRefusal(sql, 'duckdb', extracted.count);
  const prepared = await extracted.prepare(0);
  if (prepared.statementType !== type) {
    prepared.destroySync();
    throw refusalOf(sql, 'duckdb');
  }
  return prepared;
}

/**
 * Texts whose parse tree passed the check, and the statement type each must prepare as. The tree
 * check reads nothing but the text (function names, table references, statement kinds), so its
 * verdict holds for that exact text on any connection and at any catalog version: a statement
 * prepared again after a swap, or on another connection, is not parsed once more. A new text is
 * always parsed; extracting, preparing and the statement type are checked on every prepare.
 */
const PASSED_TREES = new LRUCache<string, StatementType>({ max: 1_024 });
const PASSED_MAX_SQL = 8_192;

function passed(sql: string, type: StatementType): StatementType {
  if (sql.length <= PASSED_MAX_SQL) PASSED_TREES.set(sql, type);
  return type;
}

/**
 * Check one DuckDB query and prepare it. Exactly one statement (DuckDB's count); a SELECT whose
 * parse tree calls only allowed table functions (see {@link DUCKDB_TABLE_FUNCTIONS}), no refused
 * scalar function and no file; an EXPLAIN (ANALYZE too) only of such a SELECT; `PRAGMA
 * table_info(…)`. Anything else is refused before DuckDB binds it or runs a PRAGMA rewrite:
 * writes with Spice's wording ({@link WriteRejectedError}), the rest with
 * {@link StatementRejectedError}. SQL DuckDB cannot parse rejects with DuckDB's own `Parser
 * Error: …` (not a `FerryError`): that is how a caller tells "not DuckDB's SQL" (SQLite quoting)
 * from "refused". The prepared statement is the caller's: bind and run it, as often as wanted, and
 * destroy it.
 */
export async function checkDuckDbStatement(
  connection: DuckDBConnection,
  sql: string,
): Promise<DuckDBPreparedStatement> {
  const known = PASSED_TREES.get(sql);
  if (known !== undefined) return prepareAs(connection, sql, known);
  const parsed = await parseDuckDb(connection, sql);
  if (parsed.kind === 'select') {
    if (parsed.trees.length === 0) throw emptyRefusal();
    if (parsed.trees.length > 1) throw multipleRefusal(sql, 'duckdb', parsed.trees.length);
    assertTreeReadsOnly(parsed.trees[0]);
    return prepareAs(connection, sql, passed(sql, StatementType.SELECT));
  }
  if (parsed.kind === 'invalid') {
    // DuckDB's own error, from the parser (which fails before anything else runs).
    await connection.extractStatements(sql);
    throw refusalOf(sql, 'duckdb');
  }
  const explained = explainedStatement(sql, 'duckdb');
  if (explained !== undefined) {
    const inner = await parseDuckDb(connection, explained);
    if (inner.kind !== 'select' || inner.trees.length !== 1) throw refusalOf(sql, 'duckdb');
    assertTreeReadsOnly(inner.trees[0]);
    return prepareAs(connection, sql, passed(sql, StatementType.EXPLAIN));
  }
  // DuckDB rewrites PRAGMA table_info into a SELECT of pragma_table_info.
  const verdict = classifyStatement(sql, 'duckdb');
  if (verdict.kind === 'read' && verdict.statement === 'PRAGMA') {
    return prepareAs(connection, sql, passed(sql, StatementType.SELECT));
  }
  throw refusalOf(sql, 'duckdb');
}

/**
 * Check one SQLite query and prepare it: one statement (better-sqlite3 refuses more), which SQLite
 * reports both read-only and row-returning (refusing writes, DDL, temp objects, ATTACH / DETACH,
 * BEGIN / SAVEPOINT and pragma assignments), a PRAGMA only as `table_info` (any other is refused
 * before SQLite compiles it), and nothing that shows the attached files' paths. SQLite's quoting
 * (`[users]`, `` `users` ``) is its own parser's. A read SQLite cannot prepare (`no such table:
 * users`, a syntax error) throws SQLite's own `SqliteError`; a write it cannot prepare
 * (`TRUNCATE`, an unattached table) is still refused with Spice's wording. The statement is the
 * caller's, to run as often as wanted.
 */
export function checkSqliteStatement(db: Database.Database, sql: string): Database.Statement {
  // SQLite applies most PRAGMAs while it compiles them (`PRAGMA trusted_schema = ON` takes effect
  // in prepare()), so these never reach it: the one refusal the tokenizer decides, not only words.
  const pragma = classifyEach(sql, 'sqlite').find((c) => c.kind === 'refused' && c.statement === 'PRAGMA');
  if (pragma !== undefined) throw rejectionOf(pragma) as FerryError;
  let statement: Database.Statement;
  try {
    statement = db.prepare(sql);
  } catch (error) {
    if (error instanceof RangeError && /contains no statements/.test(error.message)) throw emptyRefusal();
    if (error instanceof RangeError && /more than one statement/.test(error.message)) {
      throw multipleRefusal(sql, 'sqlite', undefined);
    }
    // Nothing ran. A write or a refused kind SQLite has no syntax for (`TRUNCATE`, `COPY`) or whose
    // table is not attached is worded as on every engine; a read keeps SQLite's own error
    // (`no such table: users` is what attaching on demand is driven by).
    const verdict = classifyStatement(sql, 'sqlite');
    if (verdict.kind !== 'read') throw rejectionOf(verdict) as FerryError;
    throw error;
  }
  if (!statement.readonly || !statement.reader) throw refusalOf(sql, 'sqlite');
  for (const token of tokenizeSql(sql, 'sqlite')) {
    const reason = token.kind === 'symbol' ? undefined : SQLITE_REFUSED_NAMES.get(token.text.toLowerCase());
    if (reason !== undefined) throw refusedFunction(token.text.toLowerCase(), reason);
  }
  return statement;
}
