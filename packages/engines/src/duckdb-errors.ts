/**
 * What a caller of the DuckDB namespace sees when DuckDB fails a query: a missing table named as
 * the dataset it is (or as no dataset of this runtime), running out of memory or temporary space
 * as the limit and the setting behind it, and anything else as DuckDB's words with every local
 * path and internal name taken out (a generation's path and alias become its dataset's name, other
 * paths `<data dir>`). Pure.
 */
import { FerryError } from '@ferry/core/base';
import { GENERATION_ALIAS, placeholderRead, spiceName } from './duckdb-catalog.js';
import type { ResourceClass } from './duckdb-resources.js';
import { queryFailure } from './engine.js';
import { messageOf, NamespaceTableError, QueryResourceError } from './errors.js';
import { datasetByName, type NamespaceCatalog } from './namespace-types.js';
import type { TableReference } from './statement-check.js';

/** What a message may not show: the directories behind the namespace. */
interface RedactionRoots {
  /** Replaced by `<data dir>` with whatever path follows them. */
  readonly roots: readonly string[];
  /** Internal table names of a generation (the SQLite import's `ferry_sqlite_<id>`), named by dataset. */
  readonly tablePrefixes: readonly string[];
}

/** The table a DuckDB "Table with name X does not exist" error names. */
export function missingDuckDbTable(error: unknown): string | undefined {
  const name = /^Catalog Error: Table with name (.+?) does not exist/.exec(messageOf(error))?.[1];
  // A qualified name comes quoted whole (`"nosuch.orders"`).
  return name?.replace(/^"(.*)"$/, '$1');
}

/**
 * How a statement wrote `table`, which DuckDB's error names bare (it drops the qualifier): its
 * qualified name (`main.orders`) when every reference to it is under a qualifier that is no Spice
 * name, so no dataset stands there whether it serves or not; undefined when one names it as Spice
 * does, or none names it.
 */
export function writtenUnderOtherQualifier(
  table: string,
  tables: readonly TableReference[] | undefined,
  ctes: ReadonlySet<string>,
): string | undefined {
  const lower = table.toLowerCase();
  const refs = (tables ?? []).filter((ref) => ref.table.toLowerCase() === lower);
  if (refs.length === 0 || refs.some((ref) => spiceName(ref, ctes) !== undefined)) return undefined;
  const ref = refs[0] as TableReference;
  return [ref.catalog, ref.schema, ref.table].filter((part) => part !== '').join('.');
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** `message` with generation paths named by dataset, other local paths and internal names hidden. */
export function redactDuckDbMessage(
  message: string,
  catalog: NamespaceCatalog,
  redaction: RedactionRoots,
): string {
  let text = message;
  for (const dataset of catalog.datasets) {
    const generation = dataset.generation;
    if (generation === null) continue;
    text = text
      .replaceAll(generation.path, `<dataset ${dataset.name}>`)
      .replaceAll(`${GENERATION_ALIAS}${generation.id}`, dataset.name);
    for (const prefix of redaction.tablePrefixes) {
      text = text.replaceAll(`${prefix}${generation.id}`, dataset.name);
    }
  }
  const roots = redaction.roots.map((root) => root.replace(/\/+$/, '')).sort((a, b) => b.length - a.length);
  for (const root of roots) {
    if (root === '') continue;
    text = text.replace(new RegExp(`${escapeRegExp(root)}[^\\s'"]*`, 'g'), '<data dir>');
  }
  return text;
}

/** The phrase naming the datasets a query reads (`dataset 'orders'`), or undefined for none. */
export function datasetsPhrase(names: readonly string[]): string | undefined {
  if (names.length === 0) return undefined;
  const quoted = names.map((name) => `'${name}'`).join(', ');
  return names.length === 1 ? `dataset ${quoted}` : `datasets ${quoted}`;
}

/** The error a caller sees for what DuckDB threw while running a query on `subject`. */
export function duckDbQueryError(
  error: unknown,
  options: {
    readonly subject: string | undefined;
    readonly resources: ResourceClass;
    readonly catalog: NamespaceCatalog;
    readonly redaction: RedactionRoots;
    /** The temporary-space cap and the setting behind it. */
    readonly temp: { readonly bytes: number; readonly setting: string };
    /** The first dataset under a spicepod view of this name, if it is one (see below). */
    readonly viewDataset?: (name: string) => string | undefined;
    /** The table references of the statement and its CTEs' names, when its parse gave them. */
    readonly statement?: {
      readonly tables: readonly TableReference[] | undefined;
      readonly ctes: ReadonlySet<string>;
    };
  },
): unknown {
  if (error instanceof FerryError) return error;
  const message = messageOf(error);
  // An SQLite dataset DuckDB was not asked to read in (its placeholder was read): SQLite's.
  const placeholder = placeholderRead(error);
  if (placeholder !== undefined) return new NamespaceTableError(placeholder, 'sqlite');
  const missing = missingDuckDbTable(error);
  if (missing !== undefined) {
    // A view not created yet: its datasets have just begun to serve (the catalog is on its way).
    const under = options.viewDataset?.(missing);
    if (under !== undefined) return new NamespaceTableError(under, 'not-serving');
    const dataset = datasetByName(options.catalog, missing);
    if (dataset === undefined) return new NamespaceTableError(missing, 'unknown');
    // A dataset's name under a qualifier where no dataset stands (`main.orders`): no dataset, as written.
    const written =
      options.statement === undefined
        ? undefined
        : writtenUnderOtherQualifier(missing, options.statement.tables, options.statement.ctes);
    if (written !== undefined) return new NamespaceTableError(written, 'unknown');
    return new NamespaceTableError(dataset.name, dataset.engine === 'sqlite' ? 'sqlite' : 'not-serving');
  }
  if (message.startsWith('Out of Memory Error')) {
    const temp = message.includes('max_temp_directory_size');
    return new QueryResourceError(
      temp ? 'temp' : 'memory',
      options.subject,
      temp ? options.temp.bytes : options.resources.memoryLimitBytes,
      temp ? `the runtime's ${options.temp.setting}` : options.resources.memorySource,
      { cause: error },
    );
  }
  return queryFailure(options.subject, error, (text) =>
    redactDuckDbMessage(text, options.catalog, options.redaction),
  );
}
