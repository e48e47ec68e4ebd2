/**
 * Spice's names in the DuckDB namespace. Spice serves every dataset and view as
 * `spice.public.<name>` (its `SPICE_DEFAULT_CATALOG` and `SPICE_DEFAULT_SCHEMA`), so `<name>`,
 * `public.<name>` and `spice.public.<name>` all resolve, and BI tools browse one catalog. Here the
 * catalog `spice` is an in-memory DuckDB database whose schema `public` holds a view per dataset
 * (over its generation, attached under an internal name) and per spicepod view, and every
 * connection uses `spice.public`. An SQLite dataset not read into DuckDB for the query at hand is
 * a placeholder view with its columns that fails if read, so DuckDB's own `DESCRIBE` and
 * `SHOW TABLES` know it.
 *
 * The listings DuckDB answers itself would also show the internal attachments and tables
 * (`ferry_g2`, `ferry_sqlite_3`): statements naming `information_schema.{tables,columns,schemata,
 * views}`, `SHOW [ALL] TABLES` or `duckdb_{tables,columns,views,schemas}()` are rewritten, on
 * DuckDB's own parse tree, to read filtered views of them instead: every dataset and view once,
 * under catalog `spice`, schema `public` (and the runtime's tables under `spice.runtime`), datasets
 * as `BASE TABLE` and views as `VIEW`, in DataFusion's column names for `SHOW TABLES`.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { SqliteColumnInDuckDb } from './duckdb-import.js';
import { quoteIdentifier, quoteLiteral } from './engine.js';
import { messageOf } from './errors.js';
import type { TaskHistoryRow } from './namespace-types.js';
import type { TableReference } from './statement-check.js';

export const SPICE_CATALOG = 'spice';
export const SPICE_SCHEMA = 'public';
/** Where the runtime's own tables live (`spice.runtime.task_history`). */
export const RUNTIME_SCHEMA = 'runtime';

/** `spice.public."orders"`: the name of a dataset's (or view's) view. */
export function spiceTable(name: string): string {
  return `${SPICE_CATALOG}.${SPICE_SCHEMA}.${quoteIdentifier(name)}`;
}

/** Whether `ref` names a table of `spice.public` (`x`, `public.x`, `spice.public.x`, `spice.x`). */
export function spiceName(ref: TableReference, ctes: ReadonlySet<string>): string | undefined {
  const catalog = ref.catalog.toLowerCase();
  const schema = ref.schema.toLowerCase();
  if (catalog === '' && schema === '') return ctes.has(ref.table.toLowerCase()) ? undefined : ref.table;
  if ((catalog === '' || catalog === 'spice') && schema === 'public') return ref.table;
  if (catalog === '' && schema === 'spice') return ref.table;
  return undefined;
}

/** The alias a generation is attached under: this prefix and the generation id. */
export const GENERATION_ALIAS = 'ferry_g';

/** The table of generation `id` of dataset `name`: the file's table, under its attachment. */
export function generationTable(id: number, name: string): string {
  return `${GENERATION_ALIAS}${id}.main.${quoteIdentifier(name)}`;
}

/** What every connection runs first: unqualified names resolve in `spice.public`. */
export const USE_SPICE = `USE ${SPICE_CATALOG}.${SPICE_SCHEMA}`;

/** Internal objects (in DuckDB's own `memory.main`, never listed). */
export const INTERNAL_SCHEMA = 'memory.main';
/** The spicepod views' names, for the listings' `table_type`. */
const VIEW_NAMES = `${INTERNAL_SCHEMA}.ferry_view_names`;
const LISTED_SCHEMAS = `('${SPICE_SCHEMA}', '${RUNTIME_SCHEMA}')`;

/** The filtered listings, by the `information_schema` table they replace. */
const INFORMATION_VIEWS: Readonly<Record<string, string>> = {
  tables: `SELECT * REPLACE (CASE WHEN table_schema = '${SPICE_SCHEMA}' AND table_name NOT IN (SELECT name FROM ${VIEW_NAMES}) THEN 'BASE TABLE' ELSE table_type END AS table_type) FROM information_schema.tables WHERE table_catalog = '${SPICE_CATALOG}' AND table_schema IN ${LISTED_SCHEMAS}`,
  columns: `SELECT * FROM information_schema.columns WHERE table_catalog = '${SPICE_CATALOG}' AND table_schema IN ${LISTED_SCHEMAS}`,
  schemata: `SELECT * FROM information_schema.schemata WHERE catalog_name = '${SPICE_CATALOG}' AND schema_name IN ${LISTED_SCHEMAS}`,
  views: `SELECT * FROM information_schema.views WHERE table_catalog = '${SPICE_CATALOG}' AND table_name IN (SELECT name FROM ${VIEW_NAMES})`,
};
/** DuckDB's catalog functions, filtered to what a query of the namespace may see. */
const FUNCTION_VIEWS: Readonly<Record<string, string>> = {
  duckdb_tables: `SELECT * FROM duckdb_tables() WHERE database_name = '${SPICE_CATALOG}'`,
  duckdb_columns: `SELECT * FROM duckdb_columns() WHERE database_name IN ('${SPICE_CATALOG}', 'system')`,
  // A dataset's view is DuckDB's own (its SQL names the attachment): only the spicepod views' SQL shows.
  duckdb_views: `SELECT * REPLACE (CASE WHEN database_name = 'system' OR view_name IN (SELECT name FROM ${VIEW_NAMES}) THEN sql END AS sql) FROM duckdb_views() WHERE database_name IN ('${SPICE_CATALOG}', 'system')`,
  duckdb_schemas: `SELECT * FROM duckdb_schemas() WHERE database_name IN ('${SPICE_CATALOG}', 'system')`,
};
/** `SHOW TABLES` as Spice (DataFusion) answers it. */
const SHOW_TABLES = `SELECT table_catalog, table_schema, table_name, table_type FROM ${INTERNAL_SCHEMA}.ferry_information_tables ORDER BY table_schema, table_name`;

/** Creates the `spice` catalog and the filtered listings (before the configuration is locked). */
export async function createSpiceCatalog(admin: DuckDBConnection): Promise<void> {
  await admin.run(`ATTACH ':memory:' AS ${SPICE_CATALOG}`);
  await admin.run(`CREATE SCHEMA ${SPICE_CATALOG}.${SPICE_SCHEMA}`);
  await admin.run(`CREATE SCHEMA ${SPICE_CATALOG}.${RUNTIME_SCHEMA}`);
  await admin.run(`CREATE TABLE ${VIEW_NAMES} (name VARCHAR)`);
  for (const [table, sql] of Object.entries(INFORMATION_VIEWS)) {
    await admin.run(`CREATE VIEW ${INTERNAL_SCHEMA}.ferry_information_${table} AS ${sql}`);
  }
  for (const [fn, sql] of Object.entries(FUNCTION_VIEWS)) {
    await admin.run(`CREATE VIEW ${INTERNAL_SCHEMA}.ferry_${fn} AS ${sql}`);
  }
  await admin.run(`CREATE VIEW ${INTERNAL_SCHEMA}.ferry_show_tables AS ${SHOW_TABLES}`);
  await admin.run(`CREATE TABLE ${TASK_HISTORY} (${TASK_HISTORY_COLUMNS})`);
  await admin.run(USE_SPICE);
}

/** Spice's `spice.runtime.task_history` (crates/runtime `task_history.rs`), its columns and types. */
export const TASK_HISTORY = `${SPICE_CATALOG}.${RUNTIME_SCHEMA}.task_history`;
const TASK_HISTORY_COLUMNS = [
  'trace_id VARCHAR NOT NULL',
  'span_id VARCHAR NOT NULL',
  'parent_span_id VARCHAR',
  'task VARCHAR NOT NULL',
  'input VARCHAR NOT NULL',
  'captured_output VARCHAR',
  'start_time TIMESTAMP NOT NULL',
  'end_time TIMESTAMP NOT NULL',
  'execution_duration_ms DOUBLE NOT NULL',
  'error_message VARCHAR',
  'labels MAP(VARCHAR, VARCHAR)',
].join(', ');
const TASK_ROW_JSON = JSON.stringify([
  {
    trace_id: 'VARCHAR',
    span_id: 'VARCHAR',
    parent_span_id: 'VARCHAR',
    task: 'VARCHAR',
    input: 'VARCHAR',
    captured_output: 'VARCHAR',
    start_us: 'BIGINT',
    end_us: 'BIGINT',
    execution_duration_ms: 'DOUBLE',
    error_message: 'VARCHAR',
    labels: 'MAP(VARCHAR, VARCHAR)',
  },
]);

/** Makes `spice.runtime.task_history` hold exactly `rows` (one statement, the rows as JSON). */
export async function replaceTaskHistory(
  admin: DuckDBConnection,
  rows: readonly TaskHistoryRow[],
): Promise<void> {
  await admin.run(`DELETE FROM ${TASK_HISTORY}`);
  if (rows.length === 0) return;
  await admin.run(
    `INSERT INTO ${TASK_HISTORY} SELECT r.trace_id, r.span_id, r.parent_span_id, r.task, r.input, r.captured_output, make_timestamp(r.start_us), make_timestamp(r.end_us), r.execution_duration_ms, r.error_message, r.labels FROM (SELECT unnest(from_json($1::JSON, ${quoteLiteral(TASK_ROW_JSON)})) AS r)`,
    [JSON.stringify(rows)],
  );
}

/** Records which names of `spice.public` are spicepod views (the listings call them `VIEW`). */
export async function setViewNames(admin: DuckDBConnection, names: readonly string[]): Promise<void> {
  await admin.run(`DELETE FROM ${VIEW_NAMES}`);
  if (names.length === 0) return;
  const values = names.map((name) => `(${quoteLiteral(name)})`).join(', ');
  await admin.run(`INSERT INTO ${VIEW_NAMES} VALUES ${values}`);
}

function internalTable(table: string, alias: string, location: unknown): Record<string, unknown> {
  return {
    type: 'BASE_TABLE',
    alias,
    sample: null,
    query_location: location,
    schema_name: 'main',
    table_name: table,
    column_name_alias: [],
    catalog_name: 'memory',
    at_clause: null,
  };
}

const SHOWN_TABLES = new Set(['"tables"', '__show_tables_expanded']);

/** The replacement of one table reference, or undefined to keep it. */
function replacement(node: Record<string, unknown>): Record<string, unknown> | undefined {
  if (node.type === 'BASE_TABLE') {
    const schema = String(node.schema_name ?? '').toLowerCase();
    const catalog = String(node.catalog_name ?? '').toLowerCase();
    const table = String(node.table_name ?? '').toLowerCase();
    if (schema !== 'information_schema' || !['', SPICE_CATALOG, 'system'].includes(catalog)) return undefined;
    if (INFORMATION_VIEWS[table] === undefined) return undefined;
    const alias = String(node.alias ?? '') || String(node.table_name);
    return internalTable(`ferry_information_${table}`, alias, node.query_location);
  }
  if (node.type === 'SHOW_REF') {
    const shown = SHOWN_TABLES.has(String(node.table_name ?? '')) || node.show_type === 'SHOW_FROM';
    return shown
      ? internalTable('ferry_show_tables', String(node.alias ?? ''), node.query_location)
      : undefined;
  }
  if (node.type === 'TABLE_FUNCTION') {
    const fn = node.function as { function_name?: unknown; children?: unknown[] } | undefined;
    const name = String(fn?.function_name ?? '').toLowerCase();
    if (FUNCTION_VIEWS[name] === undefined || (fn?.children ?? []).length > 0) return undefined;
    return internalTable(`ferry_${name}`, String(node.alias ?? '') || name, node.query_location);
  }
  return undefined;
}

function rewrite(node: unknown, changed: { value: boolean }): unknown {
  if (Array.isArray(node)) return node.map((item) => rewrite(item, changed));
  if (node === null || typeof node !== 'object') return node;
  const record = node as Record<string, unknown>;
  const replaced = replacement(record);
  if (replaced !== undefined) {
    changed.value = true;
    return replaced;
  }
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) out[key] = rewrite(value, changed);
  return out;
}

/**
 * The parse tree (`json_serialize_sql`'s) with the listings replaced by their filtered views, or
 * undefined when the statement names none. Turn it back into SQL with `json_deserialize_sql`.
 */
export function rewriteListings(tree: unknown): unknown | undefined {
  const changed = { value: false };
  const result = rewrite(tree, changed);
  return changed.value ? result : undefined;
}

/** DuckDB's whole parse tree of `sql` (`json_serialize_sql`'s), or its parser's error (`error: true`). */
export async function parseTree(
  connection: DuckDBConnection,
  sql: string,
): Promise<{ readonly error?: boolean; readonly error_message?: string; readonly statements?: unknown[] }> {
  const reader = await connection.runAndReadAll('SELECT json_serialize_sql($1::VARCHAR)', [sql]);
  return JSON.parse(String(reader.getRows()[0]?.[0] ?? '{}'));
}

/**
 * JSON of a parse tree for `json_deserialize_sql`. DuckDB writes "no location" as 2^64 - 1, which
 * JavaScript numbers round up (and DuckDB then refuses): it is written back exactly.
 */
export function treeJson(tree: unknown): string {
  return JSON.stringify(tree).replaceAll('18446744073709552000', '18446744073709551615');
}

/** Whether a parse tree is a `DESCRIBE` (which reads a table's columns, never its rows). */
export function isDescribe(tree: unknown): boolean {
  const statements = (
    tree as { statements?: { node?: { from_table?: { type?: string; show_type?: string } } }[] }
  ).statements;
  const from = statements?.[0]?.node?.from_table;
  return statements?.length === 1 && from?.type === 'SHOW_REF' && from.show_type === 'DESCRIBE';
}

/** Whether a parse tree holds a `SHOW` / `DESCRIBE` / `SUMMARIZE` (DuckDB's statements, never SQLite's). */
export function hasShow(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(hasShow);
  if (node === null || typeof node !== 'object') return false;
  const record = node as Record<string, unknown>;
  return record.type === 'SHOW_REF' || Object.values(record).some(hasShow);
}

const PLACEHOLDER = 'ferry-sqlite-placeholder:';

/**
 * The view standing for an SQLite dataset until a query reads it into DuckDB: its columns, typed,
 * and an error if a row is ever asked of it (so a query DuckDB runs without reading the dataset in
 * fails, and is routed to SQLite, instead of answering nothing).
 */
export function placeholderViewSql(name: string, columns: readonly SqliteColumnInDuckDb[]): string {
  const list = columns
    .map((column) => `CAST(NULL AS ${column.type}) AS ${quoteIdentifier(column.name)}`)
    .join(', ');
  const marker = quoteLiteral(`${PLACEHOLDER}${name}`);
  return `CREATE OR REPLACE VIEW ${spiceTable(name)} AS SELECT ${list} FROM (SELECT 1) AS ferry_placeholder WHERE error(${marker})`;
}

/** The SQLite dataset whose placeholder a DuckDB error says was read, if any. */
export function placeholderRead(error: unknown): string | undefined {
  const message = messageOf(error);
  const at = message.indexOf(PLACEHOLDER);
  if (at === -1) return undefined;
  return /^[A-Za-z0-9_]+/.exec(message.slice(at + PLACEHOLDER.length))?.[0];
}
