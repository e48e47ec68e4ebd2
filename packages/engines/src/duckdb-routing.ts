/**
 * Where a statement DuckDB's parser read runs, decided from the table references of its parse tree
 * and the catalog: in DuckDB when it reads a DuckDB dataset, joins across engines or reads no
 * dataset; in SQLite when it reads only SQLite datasets (or is SQLite's dialect: DuckDB could not
 * parse it and the runtime has SQLite datasets). A reference to a common table expression is no
 * dataset. Spice's names (`<name>`, `public.<name>`, `spice.public.<name>`) name a dataset or a
 * spicepod view; a view is read as the datasets under it and runs in DuckDB (views are DuckDB's),
 * as do listings (`SHOW`, `DESCRIBE`, `information_schema`), which run as rewritten to Spice's
 * names (duckdb-catalog.ts). Pure: the parse is statement-check.ts's.
 */
import { spiceName } from './duckdb-catalog.js';
import { QueryFailedError } from './errors.js';
import {
  datasetByName,
  type NamespaceCatalog,
  type NamespaceView,
  type QueryRoute,
} from './namespace-types.js';
import { classifyStatement, syntaxErrorOf } from './sql-guard.js';
import type { DuckDbStatement, TableReference } from './statement-check.js';

/** What a text that names a listing runs as (its own, per text: the rewrite keeps its literals). */
export interface ListingText {
  /** The statement with its listings rewritten to Spice's names, when they were. */
  readonly sql?: string;
  /** A DESCRIBE: it reads no rows, so no dataset is read in for it. */
  readonly describe: boolean;
}

/** What routing knows of the spicepod's views. */
export interface ViewContext {
  /** What each view's SQL reads (by its SQL), from its parse; tables undefined when unknown. */
  readonly reads: ReadonlyMap<string, Pick<DuckDbStatement, 'tables' | 'ctes'>>;
  /** Views that cannot be created, and why (a query of one is answered with it). */
  readonly failures: ReadonlyMap<string, string>;
}

/** The spicepod view a table reference names, if any. */
function viewOfReference(
  ref: TableReference,
  ctes: ReadonlySet<string>,
  catalog: NamespaceCatalog,
): NamespaceView | undefined {
  if (catalog.views === undefined || catalog.views.length === 0) return undefined;
  const name = spiceName(ref, ctes)?.toLowerCase();
  return name === undefined ? undefined : catalog.views.find((view) => view.name.toLowerCase() === name);
}

/** The names of the views a route read, when it read any (checked again for failures on every run). */
export const viewsOfRoute = new WeakMap<QueryRoute, readonly string[]>();

/** The configured dataset a table reference names, if any. */
function datasetOfReference(
  ref: TableReference,
  ctes: ReadonlySet<string>,
  catalog: NamespaceCatalog,
): string | undefined {
  // `orders`, `public.orders`, `spice.public.orders` (Spice's names; CTEs excluded).
  const plain = spiceName(ref, ctes);
  if (plain !== undefined) return datasetByName(catalog, plain)?.name;
  if (ref.catalog === '' && ref.schema === '' && ctes.has(ref.table.toLowerCase())) return undefined;
  // `main.orders`, `memory.main.orders`: DuckDB's own default names, as earlier listings gave them.
  if ((ref.catalog === '' || ref.catalog === 'memory') && ref.schema === 'main')
    return datasetByName(catalog, ref.table)?.name;
  // SQLite's `dataset.table`: the schema is the attached dataset.
  if (ref.catalog === '') {
    const dataset = datasetByName(catalog, ref.schema);
    if (dataset?.engine === 'sqlite') return dataset.name;
  }
  return undefined;
}

/**
 * The route of a statement that passed DuckDB's check, at `catalog`; `views` what routing knows of
 * the spicepod's views, `listing` what a listing text runs as (undefined: it is none).
 */
export function duckDbRoute(
  statement: DuckDbStatement,
  catalog: NamespaceCatalog,
  views?: ViewContext,
  listing?: ListingText,
): QueryRoute {
  const rewritten = listing?.sql === undefined ? {} : { sql: listing.sql };
  if (statement.tables === undefined)
    return { engine: 'duckdb', datasets: undefined, statement, ...rewritten };
  const names: string[] = [];
  const viewsRead: string[] = [];
  // SQLite resolves `main.users` in its own main database (the empty placeholder), not in the
  // attached dataset: a statement that names an SQLite dataset as `main.<name>` runs in DuckDB.
  let mainQualifiedSqlite = false;
  const visit = (
    refs: readonly TableReference[],
    ctes: ReadonlySet<string>,
    seen: readonly string[],
  ): void => {
    for (const ref of refs) {
      const view = viewOfReference(ref, ctes, catalog);
      if (view !== undefined) {
        if (!viewsRead.includes(view.name)) viewsRead.push(view.name);
        const failure = views?.failures.get(view.name);
        if (failure !== undefined) throw new QueryFailedError(`view '${view.name}'`, failure);
        const read = views?.reads.get(view.sql);
        if (read?.tables !== undefined && !seen.includes(view.name))
          visit(read.tables, read.ctes, [...seen, view.name]);
        continue;
      }
      const name = datasetOfReference(ref, ctes, catalog);
      if (name === undefined) continue;
      if (!names.includes(name)) names.push(name);
      if (ref.schema === 'main' && datasetByName(catalog, name)?.engine === 'sqlite')
        mainQualifiedSqlite = true;
    }
  };
  visit(statement.tables, statement.ctes, []);
  const sqliteOnly =
    names.length > 0 &&
    viewsRead.length === 0 &&
    listing === undefined &&
    !mainQualifiedSqlite &&
    names.every((name) => datasetByName(catalog, name)?.engine === 'sqlite');
  if (sqliteOnly) return { engine: 'sqlite', datasets: names };
  // A DESCRIBE reads no rows: the datasets' views (an SQLite one's placeholder) describe them.
  const datasets = listing?.describe === true ? [] : names;
  const route: QueryRoute = { engine: 'duckdb', datasets, statement, ...rewritten };
  if (viewsRead.length > 0) viewsOfRoute.set(route, viewsRead);
  return route;
}

/**
 * The route of a text DuckDB cannot parse: SQLite's, when there are SQLite datasets (its quoting,
 * `[users]`, is the usual cause); otherwise the parser's error names the problem, as a syntax
 * error when the first word begins no statement.
 */
export function unparsedRoute(parseError: Error, catalog: NamespaceCatalog, sql: string): QueryRoute {
  if (catalog.datasets.some((dataset) => dataset.engine === 'sqlite')) {
    return { engine: 'sqlite', datasets: undefined, duckdbError: parseError.message };
  }
  // A typo in the first word (`SELEC 1`) is named as such, with DuckDB's words.
  const verdict = classifyStatement(sql, 'duckdb');
  if (verdict.kind === 'syntax') throw syntaxErrorOf(verdict.word, parseError.message, parseError);
  throw new QueryFailedError(undefined, parseError.message);
}
