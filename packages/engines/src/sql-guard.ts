/**
 * The SQL tokenizer and a pure classification of one SQL string by its statement heads (after CTE
 * lists, EXPLAIN and leading parentheses); comments, string literals and quoted identifiers are
 * skipped, so keywords hidden in them are never mistaken for statements. It decides nothing on
 * its own any more: the engines' own parsers do (statement-check.ts), and this words their
 * refusals (Spice's wording for writes, {@link WriteRejectedError}; the kind for the rest,
 * {@link StatementRejectedError}), finds what an EXPLAIN explains and names a PRAGMA.
 * `assertReadOnlySql` stays as a cheap early refusal for callers that have no connection yet.
 */
import { closest, type FileFormat } from '@ferry/core/base';
import { SqlSyntaxError, StatementRejectedError, type WriteOperation, WriteRejectedError } from './errors.js';

/**
 * The guard follows the SQL of a file format's engine: `duckdb` treats `[` as a list literal;
 * `sqlite` reads `[name]` as a quoted identifier and `:a`/`@a` as parameters.
 */
export type SqlDialect = FileFormat;

export interface SqlToken {
  readonly kind: 'word' | 'identifier' | 'string' | 'number' | 'parameter' | 'symbol';
  /** Words and symbols as written, identifiers unquoted, strings and parameters raw. */
  readonly text: string;
  /** With `{ positions: true }`: where the token starts in the SQL, and where it ends (exclusive). */
  readonly start?: number;
  readonly end?: number;
}

export type StatementClass =
  /** `statement` is the head keyword: `SELECT`, `WITH`, `EXPLAIN`, `PRAGMA`, … */
  | { readonly kind: 'read'; readonly statement: string }
  /** `table` is the target as written, unquoted (`main.orders`). */
  | { readonly kind: 'write'; readonly operation: WriteOperation; readonly table: string }
  /** `statement` names the refused kind (`CREATE`, `ATTACH`, `PRAGMA`), or `MULTIPLE` / `EMPTY`. */
  | { readonly kind: 'refused'; readonly statement: string; readonly count?: number }
  /** `word` begins no statement of DuckDB, SQLite or Spice (`SELEC`): a syntax error, not a refusal. */
  | { readonly kind: 'syntax'; readonly word: string };

/** PRAGMAs that only read the schema; every other PRAGMA (and any `PRAGMA x = …`) is refused. */
const READ_ONLY_PRAGMAS: ReadonlySet<string> = new Set(['table_info']);

/** Statement heads that only read (DuckDB's DESCRIBE / SHOW / SUMMARIZE read the catalog or a table). */
const READ_HEADS: ReadonlySet<string> = new Set([
  'SELECT',
  'VALUES',
  'FROM',
  'DESCRIBE',
  'SHOW',
  'SUMMARIZE',
]);

/**
 * Every other word a statement of DuckDB, SQLite, Postgres or Spice (DataFusion) begins with: refused
 * by kind (`CREATE statements are not permitted …`). Any word outside these and the read heads is a
 * typo and answered as a syntax error.
 */
const STATEMENT_HEADS: ReadonlySet<string> = new Set([
  'ABORT',
  'ALTER',
  'ANALYZE',
  'ATTACH',
  'BEGIN',
  'CALL',
  'CHECKPOINT',
  'CLOSE',
  'CLUSTER',
  'COMMENT',
  'COMMIT',
  'COPY',
  'CREATE',
  'DEALLOCATE',
  'DECLARE',
  'DELETE',
  'DETACH',
  'DISCARD',
  'DO',
  'DROP',
  'END',
  'EXECUTE',
  'EXPLAIN',
  'EXPORT',
  'FETCH',
  'FORCE',
  'GRANT',
  'IMPORT',
  'INSERT',
  'INSTALL',
  'LISTEN',
  'LOAD',
  'LOCK',
  'MERGE',
  'MOVE',
  'NOTIFY',
  'PIVOT',
  'PRAGMA',
  'PREPARE',
  'REFRESH',
  'REINDEX',
  'RELEASE',
  'REPLACE',
  'RESET',
  'REVOKE',
  'ROLLBACK',
  'SAVEPOINT',
  'SECURITY',
  'SET',
  'START',
  'TABLE',
  'TRUNCATE',
  'UNLISTEN',
  'UNPIVOT',
  'UPDATE',
  'USE',
  'VACUUM',
  'WITH',
]);

const WORD_CHAR = /[\p{L}\p{N}_$]/u;
const WORD_START = /[\p{L}_]/u;
const NUMBER_CHAR = /[\p{L}\p{N}_.]/u;
const SPACE = /\s/u;

/** ASCII by code, the rest by Unicode class (the tokenizer runs once per new statement text). */
const isAsciiLetter = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isDigitCode = (c: number): boolean => c >= 48 && c <= 57;
const isWordChar = (sql: string, i: number): boolean => {
  const c = sql.charCodeAt(i);
  if (c < 128) return isAsciiLetter(c) || isDigitCode(c) || c === 95 || c === 36;
  return WORD_CHAR.test(sql[i] as string);
};
const isWordStart = (sql: string, i: number): boolean => {
  const c = sql.charCodeAt(i);
  if (Number.isNaN(c)) return false;
  if (c < 128) return isAsciiLetter(c) || c === 95;
  return WORD_START.test(sql[i] as string);
};
const isNumberChar = (sql: string, i: number): boolean => {
  const c = sql.charCodeAt(i);
  if (c < 128) return isAsciiLetter(c) || isDigitCode(c) || c === 95 || c === 46;
  return NUMBER_CHAR.test(sql[i] as string);
};
const isSpace = (sql: string, i: number): boolean => {
  const c = sql.charCodeAt(i);
  if (c < 128) return c === 32 || (c >= 9 && c <= 13);
  return SPACE.test(sql[i] as string);
};
const DOLLAR_TAG = /\$([\p{L}_][\p{L}\p{N}_]*)?\$/uy;

/** DuckDB's `$$` / `$tag$` opening a dollar-quoted string at `i`, if there is one. */
function dollarTagAt(sql: string, i: number): string | undefined {
  DOLLAR_TAG.lastIndex = i;
  return DOLLAR_TAG.test(sql) ? sql.slice(i, DOLLAR_TAG.lastIndex) : undefined;
}

/** Split SQL into tokens; comments and whitespace are dropped, unterminated literals run to the end. */
export function tokenizeSql(
  sql: string,
  dialect: SqlDialect = 'duckdb',
  options: { readonly positions?: boolean } = {},
): SqlToken[] {
  const tokens: SqlToken[] = [];
  const n = sql.length;
  let i = 0;
  /** The text up to `close` from `from` (a doubled `close` is one), and the index past it. */
  const until = (close: string, from: number, doubled: boolean): { text: string; end: number } => {
    let text = '';
    let j = from;
    for (;;) {
      const at = sql.indexOf(close, j);
      if (at === -1) return { text: text + sql.slice(j), end: n };
      text += sql.slice(j, at);
      if (doubled && sql.startsWith(close, at + close.length)) {
        text += close;
        j = at + close.length * 2;
        continue;
      }
      return { text, end: at + close.length };
    }
  };
  while (i < n) {
    const start = i;
    const count = tokens.length;
    const c = sql[i] as string;
    const next = sql[i + 1] ?? '';
    if (isSpace(sql, i)) {
      i++;
    } else if (c === '-' && next === '-') {
      const end = sql.indexOf('\n', i);
      i = end === -1 ? n : end + 1;
    } else if (c === '/' && next === '*') {
      // DuckDB (a PostgreSQL grammar) nests block comments; SQLite ends at the first `*/`.
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (sql.startsWith('*/', i)) {
          depth--;
          i += 2;
        } else if (dialect === 'duckdb' && sql.startsWith('/*', i)) {
          depth++;
          i += 2;
        } else {
          i++;
        }
      }
    } else if (c === "'") {
      const { text, end } = until("'", i + 1, true);
      tokens.push({ kind: 'string', text });
      i = end;
    } else if (c === '"' || c === '`') {
      const { text, end } = until(c, i + 1, true);
      tokens.push({ kind: 'identifier', text });
      i = end;
    } else if (c === '[' && dialect === 'sqlite') {
      const { text, end } = until(']', i + 1, false);
      tokens.push({ kind: 'identifier', text });
      i = end;
    } else if (c === '$' && dialect === 'duckdb' && dollarTagAt(sql, i) !== undefined) {
      const tag = dollarTagAt(sql, i) as string;
      const { text, end } = until(tag, i + tag.length, false);
      tokens.push({ kind: 'string', text });
      i = end;
    } else if (c === '?' || (c === '$' && isDigitCode(sql.charCodeAt(i + 1)))) {
      // `?`, and the numbered parameters `$1`, `?1`.
      let j = i + 1;
      while (j < n && isDigitCode(sql.charCodeAt(j))) j++;
      tokens.push({ kind: 'parameter', text: sql.slice(i, j) });
      i = j;
    } else if ((c === '$' || (dialect === 'sqlite' && (c === ':' || c === '@'))) && isWordStart(sql, i + 1)) {
      let j = i + 1;
      while (j < n && isWordChar(sql, j)) j++;
      tokens.push({ kind: 'parameter', text: sql.slice(i, j) });
      i = j;
    } else if (isDigitCode(sql.charCodeAt(i)) || (c === '.' && isDigitCode(sql.charCodeAt(i + 1)))) {
      let j = i + 1;
      while (j < n && isNumberChar(sql, j)) j++;
      tokens.push({ kind: 'number', text: sql.slice(i, j) });
      i = j;
    } else if (isWordStart(sql, i)) {
      let j = i + 1;
      while (j < n && isWordChar(sql, j)) j++;
      const word = sql.slice(i, j);
      if (dialect === 'duckdb' && (word === 'E' || word === 'e') && sql[j] === "'") {
        // E'…': backslash escapes.
        let k = j + 1;
        let text = '';
        while (k < n && sql[k] !== "'") {
          if (sql[k] === '\\' && k + 1 < n) k++;
          text += sql[k];
          k++;
        }
        tokens.push({ kind: 'string', text });
        i = Math.min(k + 1, n);
      } else {
        tokens.push({ kind: 'word', text: word });
        i = j;
      }
    } else {
      tokens.push({ kind: 'symbol', text: c });
      i++;
    }
    if (options.positions === true && tokens.length > count) {
      tokens[count] = { ...(tokens[count] as SqlToken), start, end: i };
    }
  }
  return tokens;
}

const isSymbol = (token: SqlToken | undefined, symbol: string): boolean =>
  token?.kind === 'symbol' && token.text === symbol;
const keywordOf = (token: SqlToken | undefined): string | undefined =>
  token?.kind === 'word' ? token.text.toUpperCase() : undefined;

/** Index just past the parenthesis group opening at `open` (or the end when unbalanced). */
function skipGroup(tokens: readonly SqlToken[], open: number): number {
  let depth = 0;
  for (let i = open; i < tokens.length; i++) {
    if (isSymbol(tokens[i], '(')) depth++;
    else if (isSymbol(tokens[i], ')')) {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return tokens.length;
}

/** A possibly qualified name (`main."Orders"` → `main.Orders`) starting at `i`. */
function readName(tokens: readonly SqlToken[], i: number): string {
  const parts: string[] = [];
  let j = i;
  for (;;) {
    const token = tokens[j];
    if (token === undefined || (token.kind !== 'word' && token.kind !== 'identifier')) break;
    parts.push(token.text);
    if (!isSymbol(tokens[j + 1], '.')) break;
    j += 2;
  }
  return parts.length === 0 ? '(unnamed)' : parts.join('.');
}

const read = (statement: string): StatementClass => ({ kind: 'read', statement });
const refused = (statement: string): StatementClass => ({ kind: 'refused', statement });
const write = (operation: WriteOperation, table: string): StatementClass => ({
  kind: 'write',
  operation,
  table,
});

/** The class of one statement's tokens (`start`: the index of its first token). */
export function classifyTokens(tokens: readonly SqlToken[], start: number): StatementClass {
  let i = start;
  while (isSymbol(tokens[i], '(')) i++;
  const head = tokens[i];
  if (head === undefined) return refused('EMPTY');
  const keyword = keywordOf(head);
  if (keyword === undefined) return refused(head.kind === 'symbol' ? head.text : 'UNKNOWN');
  if (READ_HEADS.has(keyword)) return read(keyword);
  const skipOr = (j: number): number => (keywordOf(tokens[j]) === 'OR' ? j + 2 : j);
  switch (keyword) {
    case 'WITH':
      return classifyWith(tokens, i + 1);
    case 'EXPLAIN': {
      // An EXPLAIN is as safe as the statement it explains.
      const inner = classifyTokens(tokens, explainBody(tokens, i + 1));
      return inner.kind === 'read' ? read('EXPLAIN') : inner;
    }
    case 'PRAGMA':
      return classifyPragma(tokens, i + 1);
    case 'INSERT':
    case 'REPLACE': {
      const into = skipOr(i + 1);
      return write('insert', readName(tokens, keywordOf(tokens[into]) === 'INTO' ? into + 1 : into));
    }
    case 'MERGE':
      return write('insert', readName(tokens, keywordOf(tokens[i + 1]) === 'INTO' ? i + 2 : i + 1));
    case 'UPDATE': {
      const target = skipOr(i + 1);
      const after = tokens[target + 1];
      // DuckDB's `UPDATE EXTENSIONS [(names)]` updates installed extensions, not a table.
      if (keywordOf(tokens[target]) === 'EXTENSIONS' && (after === undefined || isSymbol(after, '('))) {
        return refused('UPDATE EXTENSIONS');
      }
      return write('update', readName(tokens, target));
    }
    case 'DELETE':
      return write('delete', readName(tokens, keywordOf(tokens[i + 1]) === 'FROM' ? i + 2 : i + 1));
    case 'TRUNCATE':
      return write('truncate', readName(tokens, keywordOf(tokens[i + 1]) === 'TABLE' ? i + 2 : i + 1));
    case 'FORCE': {
      const what = keywordOf(tokens[i + 1]);
      return refused(what === undefined ? 'FORCE' : `FORCE ${what}`);
    }
    default:
      return STATEMENT_HEADS.has(keyword) ? refused(keyword) : { kind: 'syntax', word: head.text };
  }
}

/** `WITH [RECURSIVE] name [(cols)] [USING KEY (…)] AS [NOT] [MATERIALIZED] (body), … main`. */
function classifyWith(tokens: readonly SqlToken[], start: number): StatementClass {
  let i = keywordOf(tokens[start]) === 'RECURSIVE' ? start + 1 : start;
  for (;;) {
    const name = tokens[i];
    if (name === undefined || (name.kind !== 'word' && name.kind !== 'identifier')) return refused('WITH');
    i++;
    if (isSymbol(tokens[i], '(')) i = skipGroup(tokens, i);
    if (keywordOf(tokens[i]) === 'USING' && keywordOf(tokens[i + 1]) === 'KEY') i = skipGroup(tokens, i + 2);
    if (keywordOf(tokens[i]) !== 'AS') return refused('WITH');
    i++;
    if (keywordOf(tokens[i]) === 'NOT') i++;
    if (keywordOf(tokens[i]) === 'MATERIALIZED') i++;
    if (!isSymbol(tokens[i], '(')) return refused('WITH');
    const end = skipGroup(tokens, i);
    const body = classifyTokens(tokens.slice(i + 1, end - 1), 0);
    if (body.kind !== 'read') return body;
    i = end;
    if (!isSymbol(tokens[i], ',')) break;
    i++;
  }
  const main = classifyTokens(tokens, i);
  return main.kind === 'read' ? read('WITH') : main;
}

const EXPLAIN_MODIFIERS: ReadonlySet<string> = new Set(['ANALYZE', 'ANALYSE', 'VERBOSE', 'QUERY', 'PLAN']);

/**
 * `EXPLAIN [ANALYZE] [VERBOSE] [QUERY PLAN] [(options)] statement`: the index of the explained
 * statement's first token, `start` being the token after `EXPLAIN`.
 */
function explainBody(tokens: readonly SqlToken[], start: number): number {
  let i = start;
  while (EXPLAIN_MODIFIERS.has(keywordOf(tokens[i]) ?? '')) i++;
  const first = keywordOf(tokens[i + 1]);
  if (isSymbol(tokens[i], '(') && first !== undefined && !READ_HEADS.has(first) && first !== 'WITH') {
    i = skipGroup(tokens, i);
    while (EXPLAIN_MODIFIERS.has(keywordOf(tokens[i]) ?? '')) i++;
  }
  return i;
}

/**
 * Where the statement an `EXPLAIN …` explains is in `sql` (`EXPLAIN ANALYZE SELECT 1` → the range
 * of `SELECT 1`; end exclusive), or `undefined` when `sql` is not exactly one EXPLAIN with a
 * statement after it. This only locates text: the engine's own parser checks what it holds.
 */
export function explainedRange(
  sql: string,
  dialect: SqlDialect = 'duckdb',
): { readonly start: number; readonly end: number } | undefined {
  const statements = splitStatements(tokenizeSql(sql, dialect, { positions: true }));
  const tokens = statements[0];
  if (statements.length !== 1 || tokens === undefined || keywordOf(tokens[0]) !== 'EXPLAIN') return undefined;
  const first = tokens[explainBody(tokens, 1)];
  const last = tokens[tokens.length - 1];
  if (first?.start === undefined || last?.end === undefined) return undefined;
  return { start: first.start, end: last.end };
}

/** The statement an `EXPLAIN …` explains, as written (`EXPLAIN ANALYZE SELECT 1` → `SELECT 1`); see {@link explainedRange}. */
export function explainedStatement(sql: string, dialect: SqlDialect = 'duckdb'): string | undefined {
  const range = explainedRange(sql, dialect);
  return range === undefined ? undefined : sql.slice(range.start, range.end);
}

/** Only the schema-reading pragmas, and never in their assignment form. */
function classifyPragma(tokens: readonly SqlToken[], start: number): StatementClass {
  let i = start;
  while (isSymbol(tokens[i + 1], '.')) i += 2;
  const name = tokens[i];
  if (name === undefined || name.kind !== 'word') return refused('PRAGMA');
  const assigns = tokens.slice(i + 1).some((token) => isSymbol(token, '='));
  return !assigns && READ_ONLY_PRAGMAS.has(name.text.toLowerCase()) ? read('PRAGMA') : refused('PRAGMA');
}

/** Split on `;` (never inside literals or comments, which the tokenizer already consumed). */
export function splitStatements(tokens: readonly SqlToken[]): SqlToken[][] {
  const statements: SqlToken[][] = [[]];
  for (const token of tokens) {
    if (isSymbol(token, ';')) statements.push([]);
    else (statements[statements.length - 1] as SqlToken[]).push(token);
  }
  return statements.filter((statement) => statement.length > 0);
}

/**
 * Classify one SQL string. A string holding several statements is `refused` as `MULTIPLE`, unless
 * one of them is a write, which is reported as that write (the more useful answer).
 */
export function classifyStatement(sql: string, dialect: SqlDialect = 'duckdb'): StatementClass {
  const classes = splitStatements(tokenizeSql(sql, dialect)).map((statement) => classifyTokens(statement, 0));
  if (classes.length === 0) return refused('EMPTY');
  const firstWrite = classes.find((c) => c.kind === 'write');
  if (firstWrite !== undefined) return firstWrite;
  if (classes.length > 1) return { kind: 'refused', statement: 'MULTIPLE', count: classes.length };
  return classes[0] as StatementClass;
}

/** The error a statement class is refused with, or `undefined` for a read. */
export function rejectionOf(
  statement: StatementClass,
): WriteRejectedError | StatementRejectedError | SqlSyntaxError | undefined {
  switch (statement.kind) {
    case 'read':
      return undefined;
    case 'syntax':
      return syntaxErrorOf(statement.word);
    case 'write':
      return new WriteRejectedError(statement.operation, statement.table);
    case 'refused':
      if (statement.statement === 'EMPTY') {
        return new StatementRejectedError('EMPTY', 'The query is empty; send one SELECT statement.');
      }
      if (statement.statement === 'MULTIPLE') {
        return new StatementRejectedError(
          'MULTIPLE',
          `A query must be exactly one statement but this one holds ${statement.count ?? 'several'}; send the statements one at a time.`,
        );
      }
      return new StatementRejectedError(
        statement.statement,
        statement.statement === 'PRAGMA'
          ? 'PRAGMA statements are not permitted on a read-only snapshot replica (only PRAGMA table_info(<table>) is); query the tables with SELECT instead.'
          : `${statement.statement} statements are not permitted on a read-only snapshot replica; send a single SELECT (or WITH … SELECT) query instead.`,
      );
  }
}

/**
 * The syntax error of a statement beginning with `word`, naming the statement keyword it is nearest
 * to (`SELEC` → SELECT) and the engine's own message when there is one.
 */
export function syntaxErrorOf(word: string, engineMessage?: string, cause?: unknown): SqlSyntaxError {
  const suggestion = closest(word, [...READ_HEADS, ...STATEMENT_HEADS]);
  return new SqlSyntaxError(word, suggestion, engineMessage, { cause });
}

/** Throw unless `sql` is exactly one read-only statement. */
export function assertReadOnlySql(sql: string, dialect: SqlDialect = 'duckdb'): void {
  const rejection = rejectionOf(classifyStatement(sql, dialect));
  if (rejection !== undefined) throw rejection;
}
