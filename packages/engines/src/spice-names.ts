/**
 * Spice's names where DuckDB's catalog does not reach. Spice serves every dataset as
 * `spice.public.<name>` too; DuckDB resolves those names itself (duckdb-catalog.ts), SQLite cannot
 * (it knows two-part names only, `database.table`), so a statement SQLite runs has the qualifier
 * of each dataset it names taken off — on tokens, so text in literals, comments and quoted
 * identifiers that only look like a name is left alone. And which engine the host sends a statement
 * to first (`firstEngine`): SQLite for one that reads SQLite datasets only, DuckDB for the rest.
 */
import { type SqlToken, tokenizeSql } from './sql-guard.js';

const QUALIFIERS = /spice|public/i;

const nameText = (token: SqlToken | undefined): string | undefined =>
  token?.kind === 'word' || token?.kind === 'identifier' ? token.text : undefined;
const isDot = (token: SqlToken | undefined): boolean => token?.kind === 'symbol' && token.text === '.';

/**
 * `sql` with `spice.public.<dataset>`, `public.<dataset>` and `spice.<dataset>` written as
 * `<dataset>` (for SQLite); `isDataset` says which names are datasets.
 */
export function withoutSpiceQualifiers(sql: string, isDataset: (name: string) => boolean): string {
  if (!QUALIFIERS.test(sql)) return sql;
  const tokens = tokenizeSql(sql, 'sqlite', { positions: true });
  const cuts: { readonly from: number; readonly to: number }[] = [];
  for (let i = 0; i < tokens.length; i++) {
    if (isDot(tokens[i - 1])) continue;
    const first = nameText(tokens[i])?.toLowerCase();
    let target: number | undefined;
    if (first === 'spice' && isDot(tokens[i + 1]) && nameText(tokens[i + 2])?.toLowerCase() === 'public') {
      if (isDot(tokens[i + 3])) target = i + 4;
    } else if ((first === 'public' || first === 'spice') && isDot(tokens[i + 1])) {
      target = i + 2;
    }
    if (target === undefined) continue;
    const name = nameText(tokens[target]);
    if (name === undefined || !isDataset(name)) continue;
    cuts.push({ from: tokens[i]?.start ?? 0, to: tokens[target]?.start ?? 0 });
    i = target;
  }
  if (cuts.length === 0) return sql;
  let out = '';
  let at = 0;
  for (const cut of cuts) {
    out += sql.slice(at, cut.from);
    at = cut.to;
  }
  return out + sql.slice(at);
}

const DUCKDB_HEADS = new Set(['SHOW', 'DESCRIBE', 'DESC', 'SUMMARIZE']);
const DUCKDB_NAMES = new Set([
  'information_schema',
  'duckdb_tables',
  'duckdb_columns',
  'duckdb_views',
  'duckdb_schemas',
  'task_history',
]);
/** Words a table reference follows. */
const TABLE_HEADS = new Set(['FROM', 'JOIN']);
/** Qualifiers DuckDB resolves in its own catalog (`main.users` is its placeholder view, not SQLite's table). */
const DUCKDB_QUALIFIERS = new Set(['main', 'memory']);
/** Spice's qualifiers, which SQLite runs without (`withoutSpiceQualifiers`). */
const SPICE_QUALIFIERS = new Set(['spice', 'public']);

/**
 * Where a new text goes first; for SQLite, the datasets its text names as tables (what a timeout's
 * message names before SQLite has said what the statement reads).
 */
export type FirstEngine =
  | { readonly engine: 'duckdb' }
  | { readonly engine: 'sqlite'; readonly tables: readonly string[] };

const DUCKDB: FirstEngine = { engine: 'duckdb' };

/** A dataset as the host knows it: its engine, undefined until its format is known. */
export interface DatasetEngine {
  readonly name: string;
  readonly engine: 'duckdb' | 'sqlite' | undefined;
}

const isWord = (token: SqlToken | undefined, words: ReadonlySet<string>): boolean =>
  token?.kind === 'word' && words.has(token.text.toUpperCase());

/**
 * Whether the name at `tokens[at]` is a table reference: it follows `FROM` or `JOIN`, after at
 * most Spice's qualifiers (`spice.public.`, `public.`, `spice.`), and no `(` follows it (a
 * table function). `users.t` (SQLite's `dataset.table`) counts, with the dataset first.
 */
function isTableReference(tokens: readonly SqlToken[], at: number): boolean {
  if (tokens[at + 1]?.kind === 'symbol' && tokens[at + 1]?.text === '(') return false;
  let first = at;
  while (isDot(tokens[first - 1]) && SPICE_QUALIFIERS.has(nameText(tokens[first - 2])?.toLowerCase() ?? '')) {
    first -= 2;
  }
  return isWord(tokens[first - 1], TABLE_HEADS);
}

/**
 * The engine the host sends a statement it has no route for to — the one decision made before any
 * engine saw the text; the engine's parser confirms it (a DuckDB text reading only SQLite
 * datasets is answered "re-route", an SQLite text naming a DuckDB table "cross-dialect").
 *
 * SQLite when the runtime has SQLite datasets and the statement names none of: a DuckDB dataset
 * (or one whose format is not known yet), a spicepod view (`views`), a catalog listing (`SHOW`,
 * `DESCRIBE`, `information_schema`) or the runtime's tables — and, beside DuckDB datasets, when it
 * reads an SQLite dataset as a table (`FROM users`, `JOIN spice.public.users`; a pod of SQLite
 * datasets only runs every such statement in SQLite, even one that reads no table). DuckDB
 * otherwise. Tokens only, so the rule errs on one side: a word that merely shares a DuckDB
 * dataset's name (a column, an alias) sends the statement to DuckDB, whose parser re-routes it (a
 * detour, never a wrong answer); and a common table expression named like an SQLite dataset sends
 * it to SQLite, which answers it alike.
 */
export function firstEngine(
  sql: string,
  datasets: readonly DatasetEngine[],
  views: readonly string[],
): FirstEngine {
  const engines = new Map<string, DatasetEngine>();
  let mixed = false;
  for (const dataset of datasets) {
    engines.set(dataset.name.toLowerCase(), dataset);
    if (dataset.engine !== 'sqlite') mixed = true;
  }
  if (!datasets.some((dataset) => dataset.engine === 'sqlite')) return DUCKDB;
  const tokens = tokenizeSql(sql, 'sqlite');
  const head = tokens.find((token) => !(token.kind === 'symbol' && token.text === '('));
  if (isWord(head, DUCKDB_HEADS)) return DUCKDB;
  const duckdbNames = new Set([...DUCKDB_NAMES, ...views.map((name) => name.toLowerCase())]);
  const tables: string[] = [];
  for (let at = 0; at < tokens.length; at++) {
    const name = nameText(tokens[at])?.toLowerCase();
    if (name === undefined) continue;
    if (duckdbNames.has(name)) return DUCKDB;
    const dataset = engines.get(name);
    if (dataset === undefined) continue;
    if (dataset.engine !== 'sqlite') return DUCKDB;
    if (
      mixed &&
      isDot(tokens[at - 1]) &&
      DUCKDB_QUALIFIERS.has(nameText(tokens[at - 2])?.toLowerCase() ?? '')
    ) {
      return DUCKDB;
    }
    if (isTableReference(tokens, at) && !tables.includes(dataset.name)) tables.push(dataset.name);
  }
  return mixed && tables.length === 0 ? DUCKDB : { engine: 'sqlite', tables };
}
