/**
 * Spice's names where DuckDB's catalog does not reach. Spice serves every dataset as
 * `spice.public.<name>` too; DuckDB resolves those names itself (duckdb-catalog.ts), SQLite cannot
 * (it knows two-part names only, `database.table`), so a statement SQLite runs has the qualifier
 * of each dataset it names taken off — on tokens, so text in literals, comments and quoted
 * identifiers that only look like a name is left alone. And a statement the host would send to
 * SQLite first (a pod of SQLite datasets only) goes to DuckDB when only DuckDB can answer it: a
 * listing (`SHOW TABLES`, `DESCRIBE`, `information_schema`), a view, the runtime's tables.
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

/**
 * Whether only the DuckDB namespace can answer `sql`: a listing of the catalog, or a statement
 * naming one of `names` (the spicepod's views) or the runtime's tables. Tokens only: a column that
 * happens to share a view's name sends the statement to DuckDB, whose parser routes it back.
 */
export function needsDuckDb(sql: string, names: readonly string[]): boolean {
  const tokens = tokenizeSql(sql, 'sqlite');
  const head = tokens.find((token) => !(token.kind === 'symbol' && token.text === '('));
  if (head?.kind === 'word' && DUCKDB_HEADS.has(head.text.toUpperCase())) return true;
  const wanted = new Set([...DUCKDB_NAMES, ...names.map((name) => name.toLowerCase())]);
  return tokens.some((token) => {
    const text = nameText(token);
    return text !== undefined && wanted.has(text.toLowerCase());
  });
}
