/**
 * A statement's DuckDB datasets named by their generations: each reference to a DuckDB dataset
 * (`orders`, `public.orders`, `spice.public.orders`) is rewritten, in the text DuckDB prepares, to
 * the table of the generation attached for it (`ferry_g7.main."orders" AS "orders"`), so DuckDB
 * binds the table itself rather than the dataset's view over it. Binding through a view costs
 * DuckDB ~80–230 µs per run, and DuckDB binds a statement with parameters again on every run
 * (bench `duckdb-calls.js`, bench/RESULTS.md).
 *
 * The rewrite keeps what the statement means: the reference keeps the name it was written with as
 * its alias (so `orders.id` binds as before) or its own alias, and nothing else in the text moves.
 * What it does not handle stays as written and binds through the view, as before: a reference to a
 * CTE, a spicepod view or an SQLite dataset, a name written over comments, a text that quotes
 * itself (`current_query()`). A rewritten text DuckDB refuses is prepared again as written
 * (duckdb-namespace.ts), and an error of a rewritten text shows the text as written
 * ({@link writtenMessage}). Pure.
 */
import { generationTable, spiceName } from './duckdb-catalog.js';
import { quoteIdentifier } from './engine.js';
import { datasetByName, type NamespaceCatalog } from './namespace-types.js';
import { offsetInText, statementShape } from './sql-shape.js';
import { DUCKDB_SELECT, type DuckDbStatement, type TableReference } from './statement-check.js';

/** One rewritten reference: where its name is written (`start` to `end`) and what replaces it. */
export interface Swap {
  readonly start: number;
  readonly end: number;
  readonly prepared: string;
}

/** A text as written, and as prepared with its DuckDB datasets named by their generations. */
export interface DirectText {
  readonly written: string;
  readonly sql: string;
  /** In the order of the text. */
  readonly swaps: readonly Swap[];
  /** Every table the statement reads is named by its generation: the text binds no view. */
  readonly whole: boolean;
}

const isNameStart = (c: number): boolean =>
  (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c > 127;
const isNamePart = (c: number): boolean => isNameStart(c) || (c >= 48 && c <= 57) || c === 36;
const isSpace = (c: number): boolean => c === 32 || c === 9 || c === 10 || c === 13;

/**
 * The dotted name written at `at` in `sql`: its parts (unquoted) and where it ends, or undefined
 * when what is there is not a plain dotted name (a comment between its parts, an unclosed quote).
 */
export function nameAt(
  sql: string,
  at: number,
): { readonly parts: string[]; readonly end: number } | undefined {
  const parts: string[] = [];
  let i = at;
  for (;;) {
    if (sql.charCodeAt(i) === 34) {
      let part = '';
      let j = i + 1;
      for (;;) {
        const close = sql.indexOf('"', j);
        if (close < 0) return undefined;
        part += sql.slice(j, close);
        if (sql.charCodeAt(close + 1) !== 34) {
          i = close + 1;
          break;
        }
        part += '"';
        j = close + 2;
      }
      parts.push(part);
    } else if (isNameStart(sql.charCodeAt(i))) {
      let j = i + 1;
      while (j < sql.length && isNamePart(sql.charCodeAt(j))) j++;
      parts.push(sql.slice(i, j));
      i = j;
    } else {
      return undefined;
    }
    let k = i;
    while (isSpace(sql.charCodeAt(k))) k++;
    if (sql.charCodeAt(k) !== 46 || parts.length === 3) return { parts, end: i };
    k++;
    while (isSpace(sql.charCodeAt(k))) k++;
    i = k;
  }
}

/** Whether the name written is the reference DuckDB's parser read there (its parts, case aside). */
function sameName(parts: readonly string[], ref: TableReference): boolean {
  const expected = [ref.catalog, ref.schema, ref.table].filter((part) => part !== '');
  return (
    parts.length === expected.length &&
    parts.every((part, index) => part.toLowerCase() === expected[index]?.toLowerCase())
  );
}

/**
 * `sql` with its references to DuckDB datasets named by the generation attached for each in
 * `catalog`, or undefined when none is: see the module's comment. `statement` is `sql`'s check (by
 * its text or its shape).
 */
export function directText(
  sql: string,
  statement: DuckDbStatement,
  catalog: NamespaceCatalog,
): DirectText | undefined {
  if (
    statement.type !== DUCKDB_SELECT ||
    statement.rewrite !== undefined ||
    statement.tables === undefined ||
    statement.showsText === true
  )
    return undefined;
  const shape = statementShape(sql);
  const swaps: Swap[] = [];
  for (const ref of statement.tables) {
    if (ref.at === undefined) continue;
    // Spice's names only (`orders`, `public.orders`, `spice.public.orders`): what the view answers.
    if (ref.schema !== '' && ref.schema.toLowerCase() !== 'public') continue;
    const name = spiceName(ref, statement.ctes);
    const dataset = name === undefined ? undefined : datasetByName(catalog, name);
    const generation = dataset?.generation;
    if (dataset?.engine !== 'duckdb' || !generation) continue;
    const start = offsetInText(ref.at, shape);
    const written = nameAt(sql, start);
    if (written === undefined || !sameName(written.parts, ref)) return undefined;
    // A name written over lines would move the lines of DuckDB's messages (writtenMessage).
    if (/[\r\n]/.test(sql.slice(start, written.end))) return undefined;
    const direct = generationTable(generation.id, dataset.name);
    swaps.push({
      start,
      end: written.end,
      prepared: ref.aliased === true ? direct : `${direct} AS ${quoteIdentifier(ref.table)}`,
    });
  }
  if (swaps.length === 0) return undefined;
  swaps.sort((a, b) => a.start - b.start);
  let out = '';
  let from = 0;
  for (const swap of swaps) {
    if (swap.start < from) return undefined;
    out += sql.slice(from, swap.start) + swap.prepared;
    from = swap.end;
  }
  return { written: sql, sql: out + sql.slice(from), swaps, whole: swaps.length === statement.tables.length };
}

/** Where in `direct.written` an offset of `direct.sql` is (a rewritten name: where it is written). */
function writtenOffset(offset: number, direct: DirectText): number {
  let shift = 0;
  for (const swap of direct.swaps) {
    const at = swap.start + shift;
    if (offset < at) break;
    if (offset < at + swap.prepared.length) return swap.start;
    shift += swap.prepared.length - (swap.end - swap.start);
  }
  return offset - shift;
}

const EXCERPT = /^(LINE \d+: )(\.\.\.)?(.*?)(\.\.\.)?$/;
/** A line up to this long is shown whole (as DuckDB shows it when the error is not far into it). */
const WHOLE_LINE = 100;

/**
 * A `LINE n:` excerpt of `sql` at `offset` and its caret line, in DuckDB's form: the line, whole
 * up to {@link WHOLE_LINE} characters, else 60 characters before the place and 55 after, cut with
 * `...`. ASCII only (the caret counts characters); undefined otherwise.
 */
export function excerptAt(sql: string, offset: number): [string, string] | undefined {
  let lineStart = 0;
  let line = 1;
  for (let i = 0; i < offset; i++) {
    const c = sql.charCodeAt(i);
    if (c === 10 || (c === 13 && sql.charCodeAt(i + 1) !== 10)) {
      line++;
      lineStart = i + 1;
    }
  }
  let lineEnd = sql.length;
  for (let i = offset; i < sql.length; i++) {
    const c = sql.charCodeAt(i);
    if (c === 10 || c === 13) {
      lineEnd = i;
      break;
    }
  }
  const text = sql.slice(lineStart, lineEnd);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the test is for anything beyond ASCII
  if (/[^\x00-\x7f]/.test(text)) return undefined;
  const at = offset - lineStart;
  const whole = text.length <= WHOLE_LINE;
  const from = whole || at <= 60 ? 0 : at - 60;
  const to = whole || text.length - at <= 55 ? text.length : at + 55;
  const prefix = `LINE ${line}: ${from > 0 ? '...' : ''}`;
  return [
    `${prefix}${text.slice(from, to)}${to < text.length ? '...' : ''}`,
    `${' '.repeat(prefix.length + at - from)}^`,
  ];
}

/**
 * DuckDB's message about a text it ran as rewritten (`direct.sql`), as it would read of the text
 * as written: its `LINE n:` excerpt rendered again from the written text at the same place, or left
 * out when that place cannot be told.
 */
export function writtenMessage(message: string, direct: DirectText): string {
  const lines = message.split('\n');
  const index = lines.findIndex((line, i) => EXCERPT.test(line) && /^ *\^$/.test(lines[i + 1] ?? ''));
  if (index < 0) return message;
  const [, prefix = '', cut, content = ''] = EXCERPT.exec(lines[index] as string) ?? [];
  const caret = (lines[index + 1] as string).length - 1 - prefix.length - (cut === undefined ? 0 : 3);
  const lineNumber = Number(/\d+/.exec(prefix)?.[0]);
  // Where the excerpt is in the prepared text: its line, then its place (told only when it is once in that line).
  let lineStart = 0;
  for (let n = 1; n < lineNumber; n++) lineStart = direct.sql.indexOf('\n', lineStart) + 1;
  const lineEnd = direct.sql.indexOf('\n', lineStart);
  const preparedLine = direct.sql.slice(lineStart, lineEnd < 0 ? undefined : lineEnd);
  // A line with no rewritten name is as written, and DuckDB's excerpt of it stands.
  const lineEndAt = lineStart + preparedLine.length;
  let shift = 0;
  let rewritten = false;
  for (const swap of direct.swaps) {
    const at = swap.start + shift;
    if (at >= lineStart && at < lineEndAt) rewritten = true;
    shift += swap.prepared.length - (swap.end - swap.start);
  }
  if (!rewritten) return message;
  const first = preparedLine.indexOf(content);
  const once = first >= 0 && preparedLine.indexOf(content, first + 1) < 0;
  const rendered =
    once && caret >= 0
      ? excerptAt(direct.written, writtenOffset(lineStart + first + caret, direct))
      : undefined;
  return [...lines.slice(0, index), ...(rendered ?? []), ...lines.slice(index + 2)].join('\n');
}

/** `error` with its message showing the text as written ({@link writtenMessage}); itself when that changes nothing. */
export function asWritten(error: unknown, direct: DirectText): unknown {
  // DuckDB throws plain errors; anything of a class of its own is Ferry's, and keeps its class.
  if (!(error instanceof Error) || Object.getPrototypeOf(error) !== Error.prototype) return error;
  const message = writtenMessage(error.message, direct);
  return message === error.message ? error : new Error(message, { cause: error });
}
