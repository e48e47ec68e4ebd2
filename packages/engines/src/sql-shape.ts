/**
 * A statement's shape: its text with every plain literal (a decimal number, a single-quoted string
 * without escapes) replaced by a marker. Dashboards and BI tools send the same statement with new
 * literals every time (`… WHERE day = '2026-12-01'`); what the checks and the router learn from a
 * statement — the tables it reads, the functions it calls, its statement type — does not depend on
 * the values of such literals, so it is learned once per shape instead of once per text.
 *
 * Only literals whose bounds both engines' lexers agree on are replaced: a number not touching a
 * word, a parameter marker or a dot; a string with no backslash inside and nothing before its
 * quote (`E'…'`, `X'…'`). Everything else — words, quoted identifiers, comments, parameters,
 * operators, whitespace — stays as written, so two texts of one shape differ only inside those
 * literals, with the same tokens around each. A text whose split DuckDB and SQLite could read
 * differently has no shape and is known by its exact text only: DuckDB's dollar quoting, a
 * backslash escape string, a nested block comment, or a bracketed or backquoted name (SQLite's
 * identifiers, DuckDB's list literals) holding a quote or a comment. Whoever shares a verdict by
 * shape also checks, on the text it learns from, that the engine read each replaced literal as a
 * constant where it found it (statement-check.ts does with DuckDB's parse tree).
 */

/** A replaced literal: where it is in the text (end exclusive) and which kind it is. */
export interface ShapeLiteral {
  readonly start: number;
  readonly end: number;
  readonly kind: 'number' | 'string';
}

export interface StatementShape {
  /** The text with each literal replaced by {@link NUMBER_MARK} or {@link STRING_MARK}. */
  readonly key: string;
  readonly literals: readonly ShapeLiteral[];
}

export const NUMBER_MARK = '\u0001';
export const STRING_MARK = '\u0002';

/** Texts longer than this have no shape: a key as long as the text costs its size again. */
export const SHAPE_MAX_SQL = 65_536;

const SINGLE = 39; // '
const DOUBLE = 34; // "
const BACKTICK = 96; // `
const BRACKET = 91; // [
const BRACKET_CLOSE = 93; // ]
const DASH = 45; // -
const SLASH = 47; // /
const STAR = 42; // *
const DOLLAR = 36; // $
const DOT = 46; // .
const BACKSLASH = 92; // \
const AMPERSAND = 38; // & (of U&'…')
/** What makes a number part of something else: `?1` / `:1` / `@1` parameters, `#1` columns, `x.1`. */
const MARKER_BEFORE_NUMBER: ReadonlySet<number> = new Set([63, 58, 64, 35, DOT]);

const isDigit = (c: number): boolean => c >= 48 && c <= 57;
/** Letters, digits, `_`, `$`, and anything beyond ASCII (a word character in both engines' lexers). */
const isWordChar = (c: number): boolean =>
  (c >= 48 && c <= 57) ||
  (c >= 65 && c <= 90) ||
  (c >= 97 && c <= 122) ||
  c === 95 ||
  c === DOLLAR ||
  c > 127;

/**
 * The shape of `sql`, or `undefined` when it has none (see the module's comment). A text without a
 * replaceable literal is its own shape (`key === sql`).
 */
export function statementShape(sql: string): StatementShape | undefined {
  const n = sql.length;
  if (n > SHAPE_MAX_SQL) return undefined;
  const literals: ShapeLiteral[] = [];
  let i = 0;
  while (i < n) {
    const c = sql.charCodeAt(i);
    if (c === 1 || c === 2) return undefined;
    if (c === SINGLE) {
      const prefix = i === 0 ? 32 : sql.charCodeAt(i - 1);
      const prefixed = isWordChar(prefix) || prefix === AMPERSAND;
      let plain = !prefixed;
      let j = i + 1;
      for (;;) {
        if (j >= n) return undefined; // unterminated: the engine says so
        const d = sql.charCodeAt(j);
        if (d === SINGLE) {
          if (sql.charCodeAt(j + 1) !== SINGLE) break;
          plain = false;
          j += 2;
          continue;
        }
        // In an E'…' string DuckDB reads a backslash as an escape (and SQLite does not).
        if (d === BACKSLASH) {
          if (prefixed) return undefined;
          plain = false;
        }
        if (d === 1 || d === 2) return undefined;
        j++;
      }
      if (plain) literals.push({ start: i, end: j + 1, kind: 'string' });
      i = j + 1;
    } else if (c === DOUBLE) {
      i = quoted(sql, i + 1, DOUBLE, '');
      if (i < 0) return undefined;
    } else if (c === BACKTICK) {
      i = quoted(sql, i + 1, BACKTICK, '\'"[');
      if (i < 0) return undefined;
    } else if (c === BRACKET) {
      i = quoted(sql, i + 1, BRACKET_CLOSE, '\'"`');
      if (i < 0) return undefined;
    } else if (c === DASH && sql.charCodeAt(i + 1) === DASH) {
      const end = sql.indexOf('\n', i);
      i = end === -1 ? n : end + 1;
    } else if (c === SLASH && sql.charCodeAt(i + 1) === STAR) {
      // DuckDB nests block comments and SQLite does not: a nested one has no shape.
      const end = sql.indexOf('*/', i + 2);
      if (end === -1 || sql.slice(i + 2, end).includes('/*')) return undefined;
      i = end + 2;
    } else if (c === DOLLAR && dollarQuote(sql, i)) {
      return undefined;
    } else if (isDigit(c) || (c === DOT && isDigit(sql.charCodeAt(i + 1)))) {
      // A number-like run, replaced only as a plain decimal not touching a word or a marker.
      let j = i + 1;
      while (j < n && (isWordChar(sql.charCodeAt(j)) || sql.charCodeAt(j) === DOT)) j++;
      const before = i === 0 ? 32 : sql.charCodeAt(i - 1);
      const after = j < n ? sql.charCodeAt(j) : 32;
      if (
        !isWordChar(before) &&
        !MARKER_BEFORE_NUMBER.has(before) &&
        after !== SINGLE &&
        after !== DOUBLE &&
        plainDecimal(sql, i, j)
      ) {
        literals.push({ start: i, end: j, kind: 'number' });
      }
      i = j;
    } else if (isWordChar(c)) {
      let j = i + 1;
      while (j < n && isWordChar(sql.charCodeAt(j))) j++;
      i = j;
    } else {
      i++;
    }
  }
  if (literals.length === 0) return { key: sql, literals };
  let key = '';
  let from = 0;
  for (const literal of literals) {
    key += sql.slice(from, literal.start) + (literal.kind === 'number' ? NUMBER_MARK : STRING_MARK);
    from = literal.end;
  }
  key += sql.slice(from);
  return { key, literals };
}

/**
 * Index past the character that closes a quoted name opened before `from`, `""` / ` `` ` doubling
 * it; -1 when unterminated or when it holds a character of `unsafe` or a comment opener (what the
 * other engine would read as a string or a comment, not a name).
 */
function quoted(sql: string, from: number, close: number, unsafe: string): number {
  let j = from;
  for (;;) {
    if (j >= sql.length) return -1;
    const d = sql.charCodeAt(j);
    if (d === close) {
      if (close !== BRACKET_CLOSE && sql.charCodeAt(j + 1) === close) {
        j += 2;
        continue;
      }
      return j + 1;
    }
    if (unsafe !== '') {
      if (unsafe.includes(sql[j] as string)) return -1;
      if ((d === DASH && sql.charCodeAt(j + 1) === DASH) || (d === SLASH && sql.charCodeAt(j + 1) === STAR)) {
        return -1;
      }
    }
    if (d === 1 || d === 2) return -1;
    j++;
  }
}

/** `$$` or `$tag$` at `i`: DuckDB's dollar-quoted string. */
function dollarQuote(sql: string, i: number): boolean {
  let j = i + 1;
  while (j < sql.length) {
    const d = sql.charCodeAt(j);
    if (d === DOLLAR) return true;
    if (!isWordChar(d) || (j === i + 1 && isDigit(d))) return false;
    j++;
  }
  return false;
}

/** `digits` or `digits.digits` exactly. */
function plainDecimal(sql: string, start: number, end: number): boolean {
  let dots = 0;
  for (let k = start; k < end; k++) {
    const d = sql.charCodeAt(k);
    if (d === DOT) {
      if (++dots > 1 || k === start || k === end - 1) return false;
    } else if (!isDigit(d)) return false;
  }
  return true;
}

/**
 * An offset in a text, as an offset in its shape's key (every literal one character): the same
 * for every text of the shape, since they differ only inside their literals.
 */
export function offsetInShape(offset: number, shape: StatementShape | undefined): number {
  if (shape === undefined) return offset;
  let shift = 0;
  for (const literal of shape.literals) {
    if (literal.start >= offset) break;
    shift += literal.end - literal.start - 1;
  }
  return offset - shift;
}

/** An offset in a shape's key, as an offset in the text of that shape whose literals `shape` has. */
export function offsetInText(offset: number, shape: StatementShape | undefined): number {
  if (shape === undefined) return offset;
  let shift = 0;
  for (const literal of shape.literals) {
    if (literal.start - shift >= offset) break;
    shift += literal.end - literal.start - 1;
  }
  return offset + shift;
}
