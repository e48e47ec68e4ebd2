/**
 * Whether a statement's result may be cached: one that answers the same rows from the same
 * snapshots every time. Not so with a clock (`now()`, `current_timestamp`, SQLite's `'now'`), a
 * random source (`random()`, `uuid()`, `USING SAMPLE`), the session, or a listing of the catalog
 * or the runtime's own tables (which change without any snapshot changing). Decided on tokens, so
 * a function name in a literal or a comment does not count; a column that shares such a name makes
 * the statement uncacheable, which is only a lost hit.
 */
import { tokenizeSql } from './sql-guard.js';

const VOLATILE = new Set([
  // Clocks (DuckDB and SQLite).
  'now',
  'current_timestamp',
  'current_date',
  'current_time',
  'current_localtimestamp',
  'current_localtime',
  'localtimestamp',
  'localtime',
  'today',
  'get_current_timestamp',
  'get_current_time',
  'transaction_timestamp',
  'statement_timestamp',
  'unixepoch',
  // Random sources.
  'random',
  'rand',
  'randomblob',
  'uuid',
  'gen_random_uuid',
  'uuidv4',
  'uuidv7',
  'sample',
  'tablesample',
  'reservoir_quantile',
  // The session.
  'current_query',
  'changes',
  'total_changes',
  'last_insert_rowid',
  // Listings and the runtime's tables.
  'information_schema',
  'duckdb_tables',
  'duckdb_columns',
  'duckdb_views',
  'duckdb_schemas',
  'duckdb_functions',
  'duckdb_types',
  'duckdb_constraints',
  'duckdb_indexes',
  'pragma_table_info',
  'task_history',
]);

const LISTING_HEADS = new Set(['SHOW', 'DESCRIBE', 'DESC', 'SUMMARIZE', 'PRAGMA', 'EXPLAIN']);

/** Any volatile word, or `now`, anywhere in a text (inside longer words too). */
const ANY_VOLATILE = new RegExp([...VOLATILE, 'now'].join('|'), 'iu');
/** A listing head first (after spaces and parentheses), or a comment that could hide what comes first. */
const MAYBE_LISTING = /^[\s(]*(?:show|describe|desc|summarize|pragma|explain)(?![\p{L}\p{N}_$])|--|\/\*/iu;

/** True when the statement's result depends only on the snapshots it reads (and its parameters). */
export function isCacheableStatement(sql: string): boolean {
  // Every token is a piece of the text: a text that holds no volatile word (nor `now`) even inside
  // a longer word, and starts with no listing head, has no such token. Most statements are decided
  // so, without tokenizing them (a new text every request costs no token list).
  if (!ANY_VOLATILE.test(sql) && !MAYBE_LISTING.test(sql)) return true;
  const tokens = tokenizeSql(sql, 'duckdb');
  const head = tokens.find((token) => !(token.kind === 'symbol' && token.text === '('));
  if (head?.kind === 'word' && LISTING_HEADS.has(head.text.toUpperCase())) return false;
  for (const token of tokens) {
    if ((token.kind === 'word' || token.kind === 'identifier') && VOLATILE.has(token.text.toLowerCase()))
      return false;
    // SQLite's date functions read the clock for the argument 'now'.
    if (token.kind === 'string' && token.text.trim().toLowerCase() === 'now') return false;
  }
  return true;
}
