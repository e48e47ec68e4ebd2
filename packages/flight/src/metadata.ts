/**
 * Flight SQL's metadata commands (GetCatalogs, GetDbSchemas, GetTables, GetTableTypes,
 * GetSqlInfo, the key commands) answered from the runtime's datasets through `catalog.ts`; a
 * table's schema (GetTables with `include_schema`, ListFlights) is the schema its `SELECT *`
 * streams. A dataset still waiting for its first snapshot has no schema yet and is listed with an
 * empty one; any other failure is the call's error, with its cause.
 */
import type { ArrowDataType, QueryParam } from '@ferry/core/base';
import { arrowTypeOf, PARAMETER_TYPES_METADATA } from '@ferry/engines/namespaces';
import { RUNTIME_SCHEMA } from '@ferry/engines/sql';
import type { Runtime } from '@ferry/runtime';
import { Field, Null, Schema } from 'apache-arrow';
import * as catalog from './catalog.js';
import type { SqlMessage } from './protocol.js';
import { field } from './requests.js';
import type { ResultOptions, ResultSource } from './result-source.js';

/** Failures that mean "no snapshot yet": the dataset exists and will have a schema once it serves. */
const NOT_SERVING: ReadonlySet<string> = new Set(['ERR_DATASET_NOT_READY']);

/** The datasets the metadata commands list (a dataset whose configuration failed is not a table). */
export function datasetNames(runtime: Runtime): string[] {
  return runtime
    .datasets()
    .filter((info) => info.state !== 'failed')
    .map((info) => info.name);
}

/** Every table GetTables lists: the datasets, the spicepod's views, the runtime's own tables. */
export function listedTables(runtime: Runtime): catalog.ListedTable[] {
  return [
    ...datasetNames(runtime).map((name) => ({ schema: catalog.SCHEMA_NAME, name, type: catalog.TABLE_TYPE })),
    ...runtime.config.views.map((view) => ({
      schema: catalog.SCHEMA_NAME,
      name: view.name,
      type: catalog.VIEW_TYPE,
    })),
    ...(runtime.config.taskHistory.enabled
      ? [{ schema: RUNTIME_SCHEMA, name: 'task_history', type: catalog.TABLE_TYPE }]
      : []),
  ];
}

/**
 * The schema `sql` answers with, none of its rows computed: `SELECT * FROM (sql) LIMIT 0`, read to
 * its (empty) end, so no engine runs the statement for it (SQLite would scan a table for a first
 * row); the statement as it is when it cannot be wrapped (a trailing `;`), which also gives a
 * broken statement's error. A lookup, not a query its caller ran: the wrapped statement is never in
 * the task history (no row naming SQL nobody sent, no error for a `;`), the statement as it is as
 * `options.taskHistory` says — never as cancelled once its schema is known.
 */
export async function statementSchema(
  source: ResultSource,
  sql: string,
  params: readonly QueryParam[],
  options: ResultOptions & { readonly taskHistory: 'failure' | 'none' },
  signal?: AbortSignal,
): Promise<Schema> {
  try {
    const wrapped = `SELECT * FROM (${sql}\n) LIMIT 0`;
    return await schemaOf(source, wrapped, params, signal, true, { ...options, taskHistory: 'none' });
  } catch {
    return schemaOf(source, sql, params, signal, false, options);
  }
}

/**
 * A prepared statement's two schemas: its result's ({@link statementSchema}) and its parameters',
 * one field per `$n` (`$1`, `$2`, …) typed as its engine uses it (DuckDB as it binds it, SQLite by
 * the column its program compares it with), else Null: Arrow's JDBC driver binds a value only to a
 * typed parameter, as Spice types them; ADBC drivers send the values' own types either way.
 */
export async function preparedSchemas(
  source: ResultSource,
  sql: string,
  count: number,
  signal?: AbortSignal,
): Promise<{ readonly dataset: Schema; readonly parameters: Schema }> {
  const nulls = Array<null>(count).fill(null);
  // Recorded when it fails, with its error, as Spice records a statement it could not prepare.
  const result = await statementSchema(
    source,
    sql,
    nulls,
    { parameterTypes: true, taskHistory: 'failure' },
    signal,
  );
  const metadata = new Map(result.metadata);
  const listed = metadata.get(PARAMETER_TYPES_METADATA);
  metadata.delete(PARAMETER_TYPES_METADATA);
  const types = listed === undefined ? [] : (JSON.parse(listed) as (ArrowDataType | null)[]);
  const parameters = nulls.map((_, index) => {
    const type = types[index];
    return new Field(`$${index + 1}`, type == null ? new Null() : arrowTypeOf(type), true);
  });
  return { dataset: new Schema(result.fields, metadata), parameters: new Schema(parameters) };
}

/**
 * The schema `sql` streams, the statement run until its schema is known, then stopped (GetSchema):
 * under `LIMIT 0` an SQLite expression's type could not be read from its values (`count(*)` would
 * say Utf8, where the statement's answer says Int64). Stopped there, it is no cancelled query: the
 * task history records it only when it fails, as Spice records a schema lookup.
 */
export function runningSchema(
  source: ResultSource,
  sql: string,
  params: readonly QueryParam[],
  signal?: AbortSignal,
): Promise<Schema> {
  return schemaOf(source, sql, params, signal, false, { taskHistory: 'failure' });
}

/** The schema of `sql`'s result; its rows read to the end when `empty` (none), else not read at all. */
async function schemaOf(
  source: ResultSource,
  sql: string,
  params: readonly QueryParam[],
  signal: AbortSignal | undefined,
  empty: boolean,
  options?: ResultOptions,
): Promise<Schema> {
  const controller = new AbortController();
  const stop = (): void => controller.abort();
  if (signal?.aborted === true) stop();
  signal?.addEventListener('abort', stop, { once: true });
  try {
    const result = await source.stream(sql, params, controller.signal, options);
    if (empty) for await (const _ of result.batches);
    return result.schema;
  } finally {
    signal?.removeEventListener('abort', stop);
    controller.abort();
  }
}

/** The schema a table's `SELECT *` streams, or an empty one while its dataset has no snapshot. */
export async function tableSchema(
  source: ResultSource,
  table: Pick<catalog.ListedTable, 'schema' | 'name'>,
): Promise<Schema> {
  try {
    // The server's own lookup (Spice reads a listed table's schema from its catalog): not recorded.
    return await statementSchema(source, `SELECT * FROM ${catalog.qualifiedName(table)}`, [], {
      taskHistory: 'none',
    });
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code === 'string' && NOT_SERVING.has(code)) return new Schema([]);
    throw error;
  }
}

/** The schema and single batch a metadata command answers with. */
export async function metadataResult(
  runtime: Runtime,
  source: ResultSource,
  command: SqlMessage,
): Promise<catalog.MetadataResult> {
  switch (command.name) {
    case 'CommandGetCatalogs':
      return catalog.catalogs();
    case 'CommandGetDbSchemas':
      return catalog.dbSchemas(field(command, 'catalog'), field(command, 'dbSchemaFilterPattern'), [
        ...new Set([catalog.SCHEMA_NAME, ...listedTables(runtime).map((table) => table.schema)]),
      ]);
    case 'CommandGetTables': {
      const request: catalog.TablesRequest = {
        catalog: field(command, 'catalog'),
        dbSchemaFilterPattern: field(command, 'dbSchemaFilterPattern'),
        tableNameFilterPattern: field(command, 'tableNameFilterPattern'),
        tableTypes: field<string[]>(command, 'tableTypes') ?? [],
        includeSchema: field<boolean>(command, 'includeSchema') === true,
      };
      const selected = catalog.selectTables(request, listedTables(runtime));
      const schemas = new Map<string, Schema>();
      if (request.includeSchema) {
        for (const table of selected) {
          schemas.set(catalog.qualifiedName(table), await tableSchema(source, table));
        }
      }
      return catalog.tables(request, selected, schemas);
    }
    case 'CommandGetTableTypes':
      return catalog.tableTypes();
    case 'CommandGetSqlInfo':
      return catalog.sqlInfo(field<number[]>(command, 'info') ?? []);
    case 'CommandGetPrimaryKeys':
      return catalog.primaryKeys();
    case 'CommandGetXdbcTypeInfo':
      return catalog.xdbcTypeInfo(field<number | undefined>(command, 'dataType'));
    default:
      return catalog.foreignKeys();
  }
}
