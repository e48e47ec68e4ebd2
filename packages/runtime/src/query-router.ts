/**
 * Which dataset a query reads. Queries name datasets as tables; each dataset is its own snapshot
 * file (its own engine), so a query reads exactly one. This looks at the tables named after FROM and
 * JOIN (and DESCRIBE / SUMMARIZE / `PRAGMA table_info(...)`), skipping CTE names, subqueries and
 * table functions — the engine itself refuses table functions that reach outside the file.
 */
import { type SqlToken, tokenizeSql } from '@ferry/engines';
import { MultipleDatasetsError, NoDatasetInQueryError, UnknownDatasetError } from './errors.js';

const isWord = (token: SqlToken | undefined, word: string): boolean =>
  token !== undefined && token.kind === 'word' && token.text.toUpperCase() === word;

const isSymbol = (token: SqlToken | undefined, symbol: string): boolean =>
  token !== undefined && token.kind === 'symbol' && token.text === symbol;

const isName = (token: SqlToken | undefined): token is SqlToken =>
  token !== undefined && (token.kind === 'identifier' || token.kind === 'word');

/** Reads a possibly qualified name at `index`; returns its last part and the index after it. */
function qualifiedName(
  tokens: readonly SqlToken[],
  index: number,
): { name: string; next: number } | undefined {
  let i = index;
  const first = tokens[i];
  if (!isName(first)) return undefined;
  let name = first.text;
  i++;
  while (isSymbol(tokens[i], '.') && isName(tokens[i + 1])) {
    name = (tokens[i + 1] as SqlToken).text;
    i += 2;
  }
  return { name, next: i };
}

/** Whether a CTE's optional column list, `AS`, optional `[NOT] MATERIALIZED` and `(` start at `index`. */
function cteBodyAt(tokens: readonly SqlToken[], index: number): boolean {
  let i = index;
  if (isSymbol(tokens[i], '(')) {
    // A column list: names separated by commas, then `)`.
    do {
      i++;
      if (!isName(tokens[i])) return false;
      i++;
    } while (isSymbol(tokens[i], ','));
    if (!isSymbol(tokens[i], ')')) return false;
    i++;
  }
  if (!isWord(tokens[i], 'AS')) return false;
  i++;
  if (isWord(tokens[i], 'NOT')) i++;
  if (isWord(tokens[i], 'MATERIALIZED')) i++;
  return isSymbol(tokens[i], '(');
}

/** The table names a query reads (as written, last part of a qualified name), CTE names excluded. */
export function referencedTables(sql: string): string[] {
  const tokens = tokenizeSql(sql);
  const ctes = new Set<string>();
  const tables: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    // `name [(columns)] AS [[NOT] MATERIALIZED] (` after WITH or a comma introduces a CTE.
    const before = tokens[i - 1];
    if (
      isName(token) &&
      (isWord(before, 'WITH') || isWord(before, 'RECURSIVE') || isSymbol(before, ',')) &&
      cteBodyAt(tokens, i + 1)
    ) {
      ctes.add(token.text.toLowerCase());
    }
    if (
      isWord(token, 'FROM') ||
      isWord(token, 'JOIN') ||
      isWord(token, 'DESCRIBE') ||
      isWord(token, 'SUMMARIZE')
    ) {
      let j = i + 1;
      for (;;) {
        const target = qualifiedName(tokens, j);
        if (target === undefined) break;
        // A table function (`read_csv(...)`) is not a table.
        if (!isSymbol(tokens[target.next], '(')) tables.push(target.name);
        // Skip an alias, then continue a comma-separated FROM list.
        let k = target.next;
        if (isWord(tokens[k], 'AS')) k++;
        if (isName(tokens[k]) && !isWord(tokens[k], 'WHERE') && !isSymbol(tokens[k + 1], '(')) k++;
        if (!isSymbol(tokens[k], ',') || !isWord(token, 'FROM')) break;
        j = k + 1;
      }
    }
    if (isWord(token, 'PRAGMA') && isName(tokens[i + 1]) && isSymbol(tokens[i + 2], '(')) {
      const argument = tokens[i + 3];
      if (argument !== undefined && (argument.kind === 'identifier' || argument.kind === 'word'))
        tables.push(argument.text);
      if (argument?.kind === 'string') tables.push(argument.text.replace(/^'|'$/g, '').replace(/''/g, "'"));
    }
  }
  return tables.filter((name) => !ctes.has(name.toLowerCase()));
}

/** The one dataset a query reads, matched case-insensitively; errors name the datasets. */
export function routeQuery(sql: string, datasets: readonly string[]): string {
  const byLower = new Map(datasets.map((name) => [name.toLowerCase(), name]));
  const found = new Set<string>();
  for (const table of referencedTables(sql)) {
    const dataset = byLower.get(table.toLowerCase());
    if (dataset === undefined) throw new UnknownDatasetError(table, datasets);
    found.add(dataset);
  }
  if (found.size === 0) throw new NoDatasetInQueryError(datasets);
  if (found.size > 1) throw new MultipleDatasetsError([...found]);
  return [...found][0] as string;
}
