/**
 * The spicepod's `views` in the DuckDB namespace: each is a DuckDB view in `spice.public`, created
 * in every instance once every dataset it reads serves (DuckDB binds a view when it is created),
 * views over views after the views they read. Its SQL passes the same checks as a query (one
 * read-only SELECT, no file readers, no refused function); a view that cannot be created is
 * remembered with DuckDB's reason, which a query of it is answered with. Views over SQLite
 * datasets bind to their placeholders; a query reads the datasets in as a join across engines does.
 *
 * The namespace keeps what each view reads (datasets, and the views it reads in turn), from
 * DuckDB's own parse of its SQL (duckdb-namespace.ts): its routing expands a view into the datasets
 * under it, so a query of a view is bounded, pinned and reported by those datasets' snapshots.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { parseTree, setViewNames, spiceName, spiceTable } from './duckdb-catalog.js';
import { messageOf } from './errors.js';
import type { NamespaceCatalog, NamespaceView } from './namespace-types.js';
import { checkDuckDbStatement, DUCKDB_SELECT, namesIn } from './statement-check.js';

/** The names (datasets or views) a statement's parse tree reads from `spice.public`. */
async function namesRead(
  connection: DuckDBConnection,
  sql: string,
): Promise<string[] | { readonly problem: string }> {
  const tree = await parseTree(connection, sql);
  if (tree.error === true) return { problem: tree.error_message ?? 'DuckDB cannot parse it as one SELECT' };
  const { tables, ctes } = namesIn(tree.statements ?? []);
  const names: string[] = [];
  for (const ref of tables) {
    const name = spiceName(ref, ctes);
    if (name !== undefined && !names.some((known) => known.toLowerCase() === name.toLowerCase()))
      names.push(name);
  }
  return names;
}

const lower = (name: string): string => name.toLowerCase();

/** One instance's views: what it created (at which SQL), and which could not be. */
export class DuckDbViews {
  readonly #created = new Map<string, string>();
  /** What each view's SQL reads, parsed once. */
  readonly #reads = new Map<string, string[] | { readonly problem: string }>();
  #names = '';

  /**
   * Creates the views whose datasets serve (in dependency order), drops those that are gone, and
   * answers the views that cannot be created with the reason. A view whose dataset does not serve
   * yet is neither created nor failed: its queries wait for (or are refused by) that dataset.
   */
  async apply(admin: DuckDBConnection, catalog: NamespaceCatalog): Promise<Map<string, string>> {
    const views = catalog.views ?? [];
    const viewNames = views.map((view) => view.name);
    const names = viewNames.join('\u0000');
    if (names !== this.#names) {
      await setViewNames(admin, viewNames);
      this.#names = names;
    }
    for (const name of [...this.#created.keys()]) {
      if (views.some((view) => lower(view.name) === name)) continue;
      await admin.run(`DROP VIEW IF EXISTS ${spiceTable(name)}`);
      this.#created.delete(name);
    }
    const failures = new Map<string, string>();
    const byName = new Map(views.map((view) => [lower(view.name), view]));
    const serving = new Set(catalog.datasets.filter((d) => d.generation !== null).map((d) => lower(d.name)));
    const configured = new Set(catalog.datasets.map((d) => lower(d.name)));
    const reads = new Map<string, string[]>();
    for (const view of views) {
      let read = this.#reads.get(view.sql);
      if (read === undefined) {
        read = await namesRead(admin, view.sql);
        this.#reads.set(view.sql, read);
      }
      if ('problem' in read) failures.set(view.name, read.problem);
      else reads.set(lower(view.name), read);
    }
    // Passes until nothing more can be created: a view after the views it reads.
    let progress = true;
    while (progress) {
      progress = false;
      for (const view of views) {
        const key = lower(view.name);
        const read = reads.get(key);
        if (read === undefined || failures.has(view.name) || this.#created.get(key) === view.sql) continue;
        const blocked = read.some((name) => {
          const dependency = lower(name);
          if (byName.has(dependency)) return this.#created.get(dependency) !== byName.get(dependency)?.sql;
          return configured.has(dependency) && !serving.has(dependency);
        });
        if (blocked) continue;
        const failure = await this.#create(admin, view);
        if (failure === undefined) {
          this.#created.set(key, view.sql);
          progress = true;
        } else failures.set(view.name, failure);
      }
    }
    // What is left waits for a dataset, or can never be created (a failed view under it, a cycle).
    const waits = (key: string, seen: Set<string>): boolean =>
      (reads.get(key) ?? []).some((name) => {
        const dependency = lower(name);
        if (!byName.has(dependency)) return configured.has(dependency) && !serving.has(dependency);
        if (seen.has(dependency) || failures.has(byName.get(dependency)?.name ?? '')) return false;
        return waits(dependency, new Set([...seen, dependency]));
      });
    for (const view of views) {
      const key = lower(view.name);
      const read = reads.get(key);
      if (read === undefined || failures.has(view.name) || this.#created.get(key) === view.sql) continue;
      if (waits(key, new Set([key]))) continue;
      const failed = read.find((name) => failures.has(byName.get(lower(name))?.name ?? ''));
      failures.set(
        view.name,
        failed !== undefined
          ? `it reads view '${byName.get(lower(failed))?.name}', which cannot be created`
          : 'it reads itself through the views it reads (a cycle); break the cycle',
      );
    }
    return failures;
  }

  /** Creates one view; undefined on success, else DuckDB's (or the statement check's) reason. */
  async #create(admin: DuckDBConnection, view: NamespaceView): Promise<string | undefined> {
    try {
      const prepared = await checkDuckDbStatement(admin, view.sql);
      const type = prepared.statementType;
      prepared.destroySync();
      if (type !== DUCKDB_SELECT) return 'a view is one SELECT statement';
      await admin.run(`CREATE OR REPLACE VIEW ${spiceTable(view.name)} AS ${view.sql}`);
      return undefined;
    } catch (error) {
      const message = messageOf(error);
      const missing = /Table with name (\S+?) does not exist/.exec(message)?.[1];
      if (missing !== undefined) return `it reads '${missing}', which is no dataset or view of this spicepod`;
      return message.split('\n')[0] ?? message;
    }
  }
}
