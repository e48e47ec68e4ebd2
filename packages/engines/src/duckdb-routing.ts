/**
 * Where a statement DuckDB's parser read runs, decided from the table references of its parse tree
 * and the catalog: in DuckDB when it reads a DuckDB dataset, joins across engines or reads no
 * dataset; in SQLite when it reads only SQLite datasets (or is SQLite's dialect: DuckDB could not
 * parse it and the runtime has SQLite datasets). A reference to a common table expression is no
 * dataset. Pure: the parse is statement-check.ts's.
 */
import { QueryFailedError } from './errors.js';
import { datasetByName, type NamespaceCatalog, type QueryRoute } from './namespace-types.js';
import type { DuckDbStatement, TableReference } from './statement-check.js';

/** The configured dataset a table reference names, if any. */
export function datasetOfReference(
  ref: TableReference,
  ctes: ReadonlySet<string>,
  catalog: NamespaceCatalog,
): string | undefined {
  const plain =
    (ref.catalog === '' || ref.catalog === 'memory') && (ref.schema === '' || ref.schema === 'main');
  if (plain) {
    if (ref.catalog === '' && ref.schema === '' && ctes.has(ref.table.toLowerCase())) return undefined;
    return datasetByName(catalog, ref.table)?.name;
  }
  // SQLite's `dataset.table`: the schema is the attached dataset.
  if (ref.catalog === '') {
    const dataset = datasetByName(catalog, ref.schema);
    if (dataset?.engine === 'sqlite') return dataset.name;
  }
  return undefined;
}

/** The route of a statement that passed DuckDB's check, at `catalog`. */
export function duckDbRoute(statement: DuckDbStatement, catalog: NamespaceCatalog): QueryRoute {
  if (statement.tables === undefined) return { engine: 'duckdb', datasets: undefined, statement };
  const names: string[] = [];
  // SQLite resolves `main.users` in its own main database (the empty placeholder), not in the
  // attached dataset: a statement that names an SQLite dataset as `main.<name>` (the schema the
  // Flight SQL listing gives every table) runs in DuckDB, where the SQLite side is read in.
  let mainQualifiedSqlite = false;
  for (const ref of statement.tables) {
    const name = datasetOfReference(ref, statement.ctes, catalog);
    if (name === undefined) continue;
    if (!names.includes(name)) names.push(name);
    if (ref.schema === 'main' && datasetByName(catalog, name)?.engine === 'sqlite')
      mainQualifiedSqlite = true;
  }
  const sqliteOnly =
    names.length > 0 &&
    !mainQualifiedSqlite &&
    names.every((name) => datasetByName(catalog, name)?.engine === 'sqlite');
  return sqliteOnly
    ? { engine: 'sqlite', datasets: names }
    : { engine: 'duckdb', datasets: names, statement };
}

/**
 * The route of a text DuckDB cannot parse: SQLite's, when there are SQLite datasets (its quoting,
 * `[users]`, is the usual cause); otherwise the parser's error names the problem.
 */
export function unparsedRoute(parseError: Error, catalog: NamespaceCatalog): QueryRoute {
  if (catalog.datasets.some((dataset) => dataset.engine === 'sqlite')) {
    return { engine: 'sqlite', datasets: undefined };
  }
  throw new QueryFailedError(undefined, parseError.message);
}
