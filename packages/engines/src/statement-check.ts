/**
 * The gate every query passes before it runs, decided by the engines' own parsers. DuckDB parses
 * the SQL into its parse tree (`json_serialize_sql`, parse only: nothing is bound, no file is
 * opened and no PRAGMA is rewritten), where table functions, functions and table references are
 * checked by name against the tables of duckdb-functions.ts; the tree also gives the statement
 * count, the tables the statement reads (for routing) and where its constants are. Only a text
 * whose tree passed is handed to DuckDB's `prepare` (which does run PRAGMA rewrites, and
 * `IMPORT DATABASE` among them reads files), and the prepared statement must have the type the
 * tree said: SELECT, or EXPLAIN of such a read. `PRAGMA table_info(t)` is run as the SELECT of
 * `pragma_table_info('t')` it stands for. SQLite prepares the statement and requires
 * `readonly && reader`.
 *
 * What the tree check learns is a pure function of the text, and of its shape (sql-shape.ts): a
 * dashboard's statement sent with a new literal every time is parsed once, not once per text. The
 * tokenizer in sql-guard.ts only words the refusals (Spice's "… not permitted when refresh_mode is
 * 'snapshot'"), locates what an EXPLAIN explains and names a PRAGMA; the verdict is the engine's.
 * A refused statement leaves nothing on the connection (it never runs), and the messages name the
 * statement or the function, never a local file.
 */
import type {
  DuckDBConnection,
  DuckDBMaterializedResult,
  DuckDBPreparedStatement,
  StatementType,
} from '@duckdb/node-api';
import { type FerryError, registerErrors } from '@ferry/core/base';
import type Database from 'better-sqlite3';
import { BoundedCache } from './bounded-cache.js';
import {
  DUCKDB_ALLOWED_FUNCTIONS,
  DUCKDB_INTERNAL_FUNCTION,
  DUCKDB_REFUSED_FUNCTIONS,
  DUCKDB_REFUSED_TABLE_FUNCTIONS,
  DUCKDB_TABLE_FUNCTIONS,
} from './duckdb-functions.js';
import { quoteLiteral } from './engine.js';
import { NamespaceTableError, StatementRejectedError } from './errors.js';
import {
  classifyStatement,
  classifyTokens,
  explainedRange,
  rejectionOf,
  type SqlDialect,
  type SqlToken,
  splitStatements,
  syntaxErrorOf,
  tokenizeSql,
} from './sql-guard.js';
import { offsetInShape, type StatementShape, statementShape } from './sql-shape.js';

/**
 * DuckDB's `StatementType.SELECT` and `.EXPLAIN` (duckdb.h), by value: this module also checks
 * SQLite statements in the SQLite query workers, which load none of DuckDB. A test holds them equal
 * to the enum's.
 */
export const DUCKDB_SELECT = 1 as StatementType;
export const DUCKDB_EXPLAIN = 4 as StatementType;

/**
 * System views refused when a query names them without a dataset's qualification: they show the
 * attached files' paths (`duckdb_databases`, `pragma_database_list`), the settings (`pg_settings`),
 * DuckDB's log, or every object of the instance, internal ones included (SQLite's and Postgres's
 * catalog views as DuckDB offers them: `sqlite_master`, `pg_tables`, …). `SHOW TABLES` and
 * `information_schema` list the datasets and views.
 */
const DUCKDB_REFUSED_VIEWS: ReadonlySet<string> = new Set([
  'duckdb_databases',
  'pragma_database_list',
  'pg_settings',
  'duckdb_logs',
  'sqlite_master',
  'sqlite_schema',
  'sqlite_temp_master',
  'sqlite_temp_schema',
  'pg_tables',
  'pg_views',
  'pg_class',
  'pg_namespace',
  'pg_attribute',
  'pg_attrdef',
  'pg_index',
  'pg_indexes',
  'pg_constraint',
  'pg_database',
  'pg_depend',
  'pg_description',
  'pg_sequence',
  'pg_sequences',
]);

/** Ferry's own objects in DuckDB (generations `ferry_g<n>`, imports, listings): never a query's to name. */
const INTERNAL_NAME = /^ferry_/i;

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

/** Catalogs a function may be qualified with: DuckDB's own, and the in-memory database. */
const FUNCTION_CATALOGS: ReadonlySet<string> = new Set(['', 'system', 'memory', 'temp']);

const SQLITE_REFUSED_NAMES: ReadonlyMap<string, string> = new Map([
  ['pragma_database_list', "it shows the attached files' paths"],
]);

function refusedFunction(name: string, reason: string): StatementRejectedError {
  return new StatementRejectedError(
    `${name}()`,
    `${name}() is not permitted on a read-only snapshot replica: ${reason}; query the datasets' tables instead.`,
  );
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
function multipleRefusal(sql: string, dialect: SqlDialect, count: number): FerryError {
  const verdict = classifyStatement(sql, dialect);
  if (verdict.kind === 'write') return rejectionOf(verdict) as FerryError;
  return rejectionOf({ kind: 'refused', statement: 'MULTIPLE', count }) as FerryError;
}

const emptyRefusal = (): FerryError => rejectionOf({ kind: 'refused', statement: 'EMPTY' }) as FerryError;

/**
 * SQL DuckDB's parser cannot read, with its words (`Parser Error: syntax error at or near "["`).
 * Not a `FerryError`: it is how a caller tells "not DuckDB's SQL" (SQLite's quoting) from a refusal.
 */
export class DuckDbParseError extends Error {
  constructor(parserMessage: string) {
    super(`Parser Error: ${parserMessage}`);
    this.name = 'DuckDbParseError';
  }
}

registerErrors({ DuckDbParseError });

/** A table reference as DuckDB's parser gives it (empty parts where the statement left them out). */
export interface TableReference {
  readonly catalog: string;
  readonly schema: string;
  readonly table: string;
  /**
   * Where its name is written: an offset in the text DuckDB parsed (in a statement's `tables`, in
   * its shape's key: duckdb-direct.ts); undefined when the parser gave none.
   */
  readonly at?: number;
  /** Whether it is written with an alias of its own (`orders o`). */
  readonly aliased?: boolean;
}

/**
 * What the check learned about a DuckDB statement: the type it prepares as, what to prepare when
 * that is not the text itself, and what it reads.
 */
export interface DuckDbStatement {
  readonly type: StatementType;
  /** What DuckDB prepares instead of the text: `PRAGMA table_info(t)`'s SELECT. */
  readonly rewrite: string | undefined;
  /** The table references the statement names (for routing), or undefined when unknown (PRAGMA). */
  readonly tables: readonly TableReference[] | undefined;
  /** The names of its common table expressions (a reference to one is no dataset). */
  readonly ctes: ReadonlySet<string>;
  /**
   * Whether this holds for every text of the statement's shape (each literal the shape replaced is
   * a constant of the parse tree, none a table name): what a router learns from it may be kept by shape.
   */
  readonly shared: boolean;
  /**
   * The refusal of a SELECT whose tree calls or names what DuckDB may not run (a function, a table
   * function, a file), made anew for each throw; undefined when DuckDB may run it. Kept rather than
   * thrown at once so a router can still read the tables: a text that reads only SQLite datasets
   * runs in SQLite, under SQLite's check, where DuckDB's refusals mean nothing (SQLite has no
   * `query()`; there `query` is a table name). {@link checkDuckDbSql} throws it.
   */
  readonly refusal?: (() => FerryError) | undefined;
  /** Whether it calls `current_query()`: its text must run as written (duckdb-direct.ts). */
  readonly showsText?: boolean;
}

/** How a check asks DuckDB's parser and catalog (one connection, or a parser of a namespace). */
export interface DuckDbParser {
  /** `json_serialize_sql` of the text: its parse tree as JSON, or the parser's error. */
  serialize(sql: string): Promise<string>;
  /** Whether DuckDB has a function of this name (any type, any schema of its system catalog). */
  hasFunction(name: string): Promise<boolean>;
}

const SERIALIZE = 'SELECT json_serialize_sql($1::VARCHAR, skip_empty := true, skip_null := true)';
const HAS_FUNCTION =
  "SELECT count(*) FROM duckdb_functions() WHERE database_name = 'system' AND lower(function_name) = $1";

/**
 * The first value of a materialized result, read in place: one call to DuckDB (`run`) where
 * `runAndReadAll` makes three (it fetches the chunk, then the empty one that ends it): a new
 * statement's parse took 0.12 instead of 0.17 ms on one thread (bench/RESULTS.md, 2026-12-06).
 */
function firstValue(result: DuckDBMaterializedResult): unknown {
  return result.chunkCount === 0 ? undefined : result.getChunk(0).getColumnVector(0).getItem(0);
}

/** A parser that runs each request on `connection` as a query of its own. */
export function parserOn(connection: DuckDBConnection): DuckDbParser {
  return {
    serialize: async (sql) => String(firstValue(await connection.run(SERIALIZE, [sql]))),
    hasFunction: async (name) => Number(firstValue(await connection.run(HAS_FUNCTION, [name]))) > 0,
  };
}

/**
 * A parser on a connection of its own, with the serializer prepared once (a prepared statement is
 * not shared across concurrent runs, so requests take turns: one parse is ~0.2 ms, and with
 * statements known by shape a new one is rare).
 */
export class SharedDuckDbParser implements DuckDbParser {
  readonly #connection: DuckDBConnection;
  #serializer: Promise<DuckDBPreparedStatement> | undefined;
  #turn: Promise<unknown> = Promise.resolve();

  constructor(connection: DuckDBConnection) {
    this.#connection = connection;
  }

  serialize(sql: string): Promise<string> {
    const run = this.#turn.then(async () => {
      this.#serializer ??= this.#connection.prepare(SERIALIZE);
      const serializer = await this.#serializer;
      serializer.clearBindings();
      serializer.bindVarchar(1, sql);
      return String(firstValue(await serializer.run()));
    });
    // The next request waits for this one to end, whatever its outcome (the caller sees it).
    this.#turn = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  hasFunction(name: string): Promise<boolean> {
    return parserOn(this.#connection).hasFunction(name);
  }
}

interface TreeNames {
  readonly tableFunctions: string[];
  readonly functions: { readonly name: string; readonly catalog: string }[];
  readonly tables: TableReference[];
  readonly ctes: Set<string>;
  /** Offsets of the constants (`query_location` of every CONSTANT node). */
  readonly constants: Set<number>;
}

const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/** Every table function, function, table reference, CTE and constant anywhere in DuckDB parse trees. */
export function namesIn(trees: readonly unknown[]): TreeNames {
  const names: TreeNames = {
    tableFunctions: [],
    functions: [],
    tables: [],
    ctes: new Set(),
    constants: new Set(),
  };
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    const record = node as Record<string, unknown>;
    const cteMap = (record.cte_map as { map?: { key: string }[] } | undefined)?.map;
    for (const entry of cteMap ?? []) names.ctes.add(entry.key.toLowerCase());
    if (record.class === 'CONSTANT' && typeof record.query_location === 'number') {
      names.constants.add(record.query_location);
    }
    if (record.type === 'BASE_TABLE') {
      names.tables.push({
        catalog: text(record.catalog_name),
        schema: text(record.schema_name),
        table: text(record.table_name),
        ...(typeof record.query_location === 'number' ? { at: record.query_location } : {}),
        aliased: text(record.alias) !== '',
      });
    }
    if (record.type === 'TABLE_FUNCTION') {
      const fn = record.function as Record<string, unknown> | null | undefined;
      names.tableFunctions.push(text(fn?.function_name).toLowerCase());
      // The call itself is a table function, not a scalar one: everything in it but its name is
      // visited — its arguments, and what DuckDB's parser keeps beside them (an ORDER BY, a FILTER).
      for (const [key, value] of Object.entries(record)) if (key !== 'function') visit(value);
      for (const [key, value] of Object.entries(fn ?? {})) if (key !== 'function_name') visit(value);
      return;
    }
    if (typeof record.function_name === 'string') {
      names.functions.push({ name: record.function_name.toLowerCase(), catalog: text(record.catalog) });
    }
    for (const value of Object.values(record)) visit(value);
  };
  visit(trees);
  return names;
}

/** Whether DuckDB would read a table reference as a file (a replacement scan). */
function namesFile(ref: TableReference): boolean {
  const parts = [ref.catalog, ref.schema, ref.table].filter((part) => part !== '');
  if (parts.some((part) => FILE_NAME_CHARACTER.test(part))) return true;
  return parts.length > 1 && FILE_EXTENSIONS.has(ref.table.toLowerCase());
}

/**
 * Functions DuckDB has by names these tables do not list (a newer DuckDB's), remembered per
 * process: they are refused until classified in duckdb-functions.ts.
 */
const UNLISTED = new BoundedCache<string, boolean>({ entries: 1_024, bytes: 256 * 1024 });

async function assertFunctionAllowed(parser: DuckDbParser, name: string, catalog: string): Promise<void> {
  const reason = DUCKDB_REFUSED_FUNCTIONS.get(name);
  if (reason !== undefined) throw refusedFunction(name, reason);
  if (DUCKDB_INTERNAL_FUNCTION.test(name))
    throw refusedFunction(name, "it is internal to DuckDB's optimizer");
  if (!FUNCTION_CATALOGS.has(catalog.toLowerCase())) {
    throw refusedFunction(name, "it is a function of an attached database's file, not DuckDB's");
  }
  if (DUCKDB_ALLOWED_FUNCTIONS.has(name)) return;
  let known = UNLISTED.get(name);
  if (known === undefined) {
    known = await parser.hasFunction(name);
    UNLISTED.set(name, known, name.length);
  }
  // A name DuckDB does not have is DuckDB's to refuse ("… does not exist"), with its own hints.
  if (known) throw refusedFunction(name, 'it is not among the functions this replica allows');
}

/** Refuse what parse trees call or name that is not a plain read of the datasets. */
async function assertTreesReadOnly(parser: DuckDbParser, names: TreeNames): Promise<void> {
  for (const name of names.tableFunctions) {
    if (DUCKDB_TABLE_FUNCTIONS.has(name)) continue;
    throw refusedFunction(
      name,
      DUCKDB_REFUSED_TABLE_FUNCTIONS.get(name) ??
        `it is not among the table functions this replica allows (${[...DUCKDB_TABLE_FUNCTIONS].join(', ')})`,
    );
  }
  for (const fn of names.functions) await assertFunctionAllowed(parser, fn.name, fn.catalog);
  for (const ref of names.tables) {
    if (namesFile(ref)) {
      throw new StatementRejectedError(
        'FILE',
        "The query names a file where a table belongs, and reading files is not permitted on a read-only snapshot replica; query the datasets' tables instead.",
      );
    }
    const internal = [ref.catalog, ref.schema, ref.table].find((part) => INTERNAL_NAME.test(part));
    if (internal !== undefined) {
      throw new NamespaceTableError(
        [ref.catalog, ref.schema, ref.table].filter(Boolean).join('.'),
        'unknown',
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
  /** DuckDB cannot parse it: the parser's words. */
  | { readonly kind: 'invalid'; readonly message: string };

async function parseDuckDb(parser: DuckDbParser, sql: string): Promise<ParsedSql> {
  const parsed = JSON.parse(await parser.serialize(sql)) as {
    error?: boolean;
    error_type?: string;
    error_message?: string;
    statements?: unknown[];
  };
  if (parsed.error !== true) return { kind: 'select', trees: parsed.statements ?? [] };
  if (parsed.error_type === 'parser') return { kind: 'invalid', message: parsed.error_message ?? '' };
  return { kind: 'other' };
}

/** What a SELECT's trees name, and the refusal of what they call or name, if any (see {@link DuckDbStatement.refusal}). */
async function readSelect(
  parser: DuckDbParser,
  sql: string,
  trees: readonly unknown[],
): Promise<{ readonly names: TreeNames; readonly refusal: (() => FerryError) | undefined }> {
  if (trees.length === 0) throw emptyRefusal();
  if (trees.length > 1) throw multipleRefusal(sql, 'duckdb', trees.length);
  const names = namesIn(trees);
  try {
    assertNoInlinedCte(sql);
    await assertTreesReadOnly(parser, names);
    return { names, refusal: undefined };
  } catch (error) {
    if (!(error instanceof StatementRejectedError)) throw error;
    const { statement, message } = error;
    // A fresh error per throw (its own stack), the same words.
    return { names, refusal: () => new StatementRejectedError(statement, message) };
  }
}

/**
 * Refuses a common table expression marked `AS NOT MATERIALIZED (`: DuckDB copies it into every
 * reference while it binds and plans, and a chain of them doubles at each step, in a phase its
 * interrupt does not reach (the query timeout answers, the thread and its memory go on). DuckDB's
 * parse tree does not keep the hint (`json_serialize_sql` gives CTE_MATERIALIZE_DEFAULT), so the
 * tokens find it; without it DuckDB materializes a CTE referenced more than once.
 */
function assertNoInlinedCte(sql: string): void {
  const tokens = tokenizeSql(sql, 'duckdb');
  for (let i = 0; i + 3 < tokens.length; i++) {
    const [as, not, materialized, open] = tokens.slice(i, i + 4) as [SqlToken, SqlToken, SqlToken, SqlToken];
    if (
      as.kind === 'word' &&
      as.text.toUpperCase() === 'AS' &&
      not.kind === 'word' &&
      not.text.toUpperCase() === 'NOT' &&
      materialized.kind === 'word' &&
      materialized.text.toUpperCase() === 'MATERIALIZED' &&
      open.kind === 'symbol' &&
      open.text === '('
    ) {
      throw new StatementRejectedError(
        'NOT MATERIALIZED',
        'A common table expression marked NOT MATERIALIZED is not permitted on a read-only snapshot replica: DuckDB copies it into every reference while it plans the query, which no query timeout can stop; leave the hint out.',
      );
    }
  }
}

/** Tokens an EXPLAIN and its options may hold before the statement it explains (no `;`, no parameter). */
const EXPLAIN_PREFIX_TOKEN = (token: SqlToken): boolean =>
  token.kind === 'symbol' ? ['(', ')', ',', '='].includes(token.text) : token.kind !== 'parameter';

/**
 * `PRAGMA table_info(<name>)` as the SELECT DuckDB's own PRAGMA rewrite makes of it, or undefined
 * when the text is not exactly that (a name: words and quoted identifiers joined by dots, or one
 * string).
 */
function tableInfoSelect(sql: string): string | undefined {
  const statements = splitStatements(tokenizeSql(sql, 'duckdb', { positions: true }));
  const tokens = statements[0];
  if (statements.length !== 1 || tokens === undefined) return undefined;
  const [pragma, name, open] = tokens;
  const close = tokens[tokens.length - 1];
  if (pragma?.text.toUpperCase() !== 'PRAGMA' || name?.text.toLowerCase() !== 'table_info') return undefined;
  if (open?.text !== '(' || close?.text !== ')' || close.kind !== 'symbol' || tokens.length < 5)
    return undefined;
  const inner = tokens.slice(3, -1);
  const first = inner[0];
  const last = inner[inner.length - 1];
  if (first?.start === undefined || last?.end === undefined) return undefined;
  let argument: string;
  if (inner.length === 1 && first.kind === 'string') {
    argument = sql.slice(first.start, first.end);
  } else {
    const dotted = inner.every((token, index) =>
      index % 2 === 0
        ? token.kind === 'word' || token.kind === 'identifier'
        : token.kind === 'symbol' && token.text === '.',
    );
    if (!dotted || inner.length % 2 === 0) return undefined;
    argument = quoteLiteral(sql.slice(first.start, last.end));
  }
  return `SELECT * FROM pragma_table_info(${argument})`;
}

/** Whether the engine's parse read every literal the shape replaced as a constant, at its offset. */
function literalsAreConstants(shape: StatementShape, constants: ReadonlySet<number>, sql: string): boolean {
  return shape.literals.every(
    (literal) =>
      constants.has(literal.start) ||
      (sql.charCodeAt(literal.start - 1) === 45 && constants.has(literal.start - 1)),
  );
}

/**
 * Check a text with DuckDB's parser (no cache): its statement, whose `shared` says whether what was
 * learned holds for every text of its shape (each replaced literal is a constant in the engine's tree).
 */
async function checkDuckDbText(
  parser: DuckDbParser,
  sql: string,
  shape: StatementShape | undefined,
): Promise<DuckDbStatement> {
  const parsed = await parseDuckDb(parser, sql);
  if (parsed.kind === 'select') {
    const { names, refusal } = await readSelect(parser, sql, parsed.trees);
    return {
      type: DUCKDB_SELECT,
      rewrite: undefined,
      // Where each name is, for every text of the shape (duckdb-direct.ts).
      tables: names.tables.map((ref) =>
        ref.at === undefined ? ref : { ...ref, at: offsetInShape(ref.at, shape) },
      ),
      ctes: names.ctes,
      shared: shape !== undefined && literalsAreConstants(shape, names.constants, sql),
      refusal,
      showsText: names.functions.some((fn) => fn.name === 'current_query'),
    };
  }
  if (parsed.kind === 'invalid') throw new DuckDbParseError(parsed.message);
  const range = explainedRange(sql, 'duckdb');
  if (range !== undefined) {
    const at = range.start;
    const explained = sql.slice(at, range.end);
    const prefix = tokenizeSql(sql.slice(0, at), 'duckdb');
    if (!prefix.every(EXPLAIN_PREFIX_TOKEN)) throw refusalOf(sql, 'duckdb');
    const inner = await parseDuckDb(parser, explained);
    if (inner.kind !== 'select' || inner.trees.length !== 1) throw refusalOf(sql, 'duckdb');
    const { names, refusal } = await readSelect(parser, explained, inner.trees);
    if (refusal !== undefined) throw refusal();
    const constants = new Set([...names.constants].map((offset) => offset + at));
    return {
      type: DUCKDB_EXPLAIN,
      rewrite: undefined,
      tables: names.tables,
      ctes: names.ctes,
      shared: shape !== undefined && literalsAreConstants(shape, constants, sql),
    };
  }
  const verdict = classifyStatement(sql, 'duckdb');
  const select = verdict.kind === 'read' && verdict.statement === 'PRAGMA' ? tableInfoSelect(sql) : undefined;
  if (select !== undefined) {
    const rewritten = await parseDuckDb(parser, select);
    if (rewritten.kind !== 'select') throw refusalOf(sql, 'duckdb');
    const { refusal } = await readSelect(parser, select, rewritten.trees);
    if (refusal !== undefined) throw refusal();
    return { type: DUCKDB_SELECT, rewrite: select, tables: undefined, ctes: new Set(), shared: false };
  }
  throw refusalOf(sql, 'duckdb');
}

/** Rough bytes a remembered statement holds (its key and what it names): what the caches count. */
function statementBytes(key: string, statement: DuckDbStatement): number {
  let bytes = 2 * key.length + 2 * (statement.rewrite?.length ?? 0) + 200;
  for (const ref of statement.tables ?? [])
    bytes += 2 * (ref.catalog.length + ref.schema.length + ref.table.length) + 64;
  for (const cte of statement.ctes) bytes += 2 * cte.length + 32;
  return bytes;
}

/**
 * Statements that passed, by exact text and by shape. Their verdicts are pure functions of the text
 * (function names, table references, statement kinds), so they hold on any connection and at any
 * catalog version; each cache is bounded by entries and by bytes (a long text costs its length).
 */
const BY_TEXT = new BoundedCache<string, DuckDbStatement>({ entries: 1_024, bytes: 8 * 1024 * 1024 });
const BY_SHAPE = new BoundedCache<string, DuckDbStatement>({ entries: 1_024, bytes: 8 * 1024 * 1024 });

/** A statement that passed before (by text, or by the shape given or computed), without asking DuckDB. */
export function knownDuckDbStatement(sql: string, shapeKey?: string): DuckDbStatement | undefined {
  const known = BY_TEXT.get(sql);
  if (known !== undefined) return known;
  const key = shapeKey ?? statementShape(sql)?.key;
  return key === undefined ? undefined : BY_SHAPE.get(key);
}

/**
 * Check one DuckDB statement: exactly one statement (DuckDB's parser counts); a SELECT whose parse
 * tree calls only allowed functions and table functions (duckdb-functions.ts) and names no file;
 * an EXPLAIN (ANALYZE too) only of such a SELECT; `PRAGMA table_info(…)`. Anything else is refused
 * before DuckDB binds it or runs a PRAGMA rewrite: writes with Spice's wording
 * ({@link WriteRejectedError}), the rest with {@link StatementRejectedError}. SQL DuckDB cannot
 * parse rejects with DuckDB's own `Parser Error: …` (not a `FerryError`). What passed is remembered
 * by text, and by shape when every replaced literal is a constant of the tree.
 */
export async function checkDuckDbSql(
  parser: DuckDbParser,
  sql: string,
  shapeKey?: string,
): Promise<DuckDbStatement> {
  const statement = await readDuckDbSql(parser, sql, shapeKey);
  if (statement.refusal !== undefined) throw statement.refusal();
  return statement;
}

/**
 * {@link checkDuckDbSql} for a router: a SELECT DuckDB may not run comes back with its
 * {@link DuckDbStatement.refusal} instead of throwing it, so the router can still route it to SQLite.
 */
export async function readDuckDbSql(
  parser: DuckDbParser,
  sql: string,
  shapeKey?: string,
): Promise<DuckDbStatement> {
  const known = BY_TEXT.get(sql) ?? (shapeKey === undefined ? undefined : BY_SHAPE.get(shapeKey));
  if (known !== undefined) return known;
  const shape = statementShape(sql);
  const byShape = shape === undefined || shape.key === shapeKey ? undefined : BY_SHAPE.get(shape.key);
  if (byShape !== undefined) return byShape;
  const statement = await checkDuckDbText(parser, sql, shape);
  BY_TEXT.set(sql, statement, statementBytes(sql, statement));
  if (statement.shared && shape !== undefined)
    BY_SHAPE.set(shape.key, statement, statementBytes(shape.key, statement));
  return statement;
}

/**
 * Prepare a statement {@link checkDuckDbSql} passed and require the type it passed as. The
 * prepared statement is the caller's: bind and run it, as often as wanted, and destroy it.
 */
export async function prepareCheckedDuckDb(
  connection: DuckDBConnection,
  sql: string,
  statement: DuckDbStatement,
): Promise<DuckDBPreparedStatement> {
  const prepared = await connection.prepare(statement.rewrite ?? sql);
  if (prepared.statementType !== statement.type) {
    prepared.destroySync();
    throw refusalOf(sql, 'duckdb');
  }
  return prepared;
}

/** Check one DuckDB statement on `connection` and prepare it there (see {@link checkDuckDbSql}). */
export async function checkDuckDbStatement(
  connection: DuckDBConnection,
  sql: string,
): Promise<DuckDBPreparedStatement> {
  return prepareCheckedDuckDb(connection, sql, await checkDuckDbSql(parserOn(connection), sql));
}

/**
 * Check one SQLite query and prepare it: one statement (better-sqlite3 refuses more), which SQLite
 * reports both read-only and row-returning (refusing writes, DDL, temp objects, ATTACH / DETACH,
 * BEGIN / SAVEPOINT and pragma assignments), a PRAGMA only as `table_info` (any other is refused
 * before SQLite compiles it), and nothing that shows the attached files' paths. SQLite's quoting
 * (`[users]`, `` `users` ``) is its own parser's. A read SQLite cannot prepare (`no such table:
 * users`, a syntax error) throws SQLite's own `SqliteError`; a write it cannot prepare
 * (`TRUNCATE`, an unattached table) is still refused with Spice's wording. The statement is the
 * caller's, to run as often as wanted. `tokens` are the text's (tokenizeSql, sqlite), when the
 * caller has them already.
 */
export function checkSqliteStatement(
  db: Database.Database,
  sql: string,
  tokens: readonly SqlToken[] = tokenizeSql(sql, 'sqlite'),
): Database.Statement {
  // A PRAGMA the tokenizer refuses is refused before SQLite compiles it: SQLite applies most
  // PRAGMAs while it compiles them (`PRAGMA trusted_schema = ON` takes effect in prepare()).
  for (const each of splitStatements(tokens)) {
    const verdict = classifyTokens(each, 0);
    if (verdict.kind === 'refused' && verdict.statement === 'PRAGMA')
      throw rejectionOf(verdict) as FerryError;
  }
  let statement: Database.Statement;
  try {
    statement = db.prepare(sql);
  } catch (error) {
    if (error instanceof RangeError && /contains no statements/.test(error.message)) throw emptyRefusal();
    if (error instanceof RangeError && /more than one statement/.test(error.message)) {
      throw multipleRefusal(sql, 'sqlite', splitStatements(tokens).length);
    }
    // Nothing ran. A write or a refused kind SQLite has no syntax for (`TRUNCATE`, `COPY`) or whose
    // table is not attached is worded as on every engine; a read keeps SQLite's own error
    // (`no such table: users` is what attaching on demand is driven by).
    const verdict = classifyStatement(sql, 'sqlite');
    if (verdict.kind === 'syntax') throw syntaxErrorOf(verdict.word, (error as Error).message, error);
    if (verdict.kind !== 'read') throw rejectionOf(verdict) as FerryError;
    throw error;
  }
  if (!statement.readonly || !statement.reader) throw refusalOf(sql, 'sqlite');
  for (const token of tokens) {
    const reason = token.kind === 'symbol' ? undefined : SQLITE_REFUSED_NAMES.get(token.text.toLowerCase());
    if (reason !== undefined) throw refusedFunction(token.text.toLowerCase(), reason);
  }
  return statement;
}
