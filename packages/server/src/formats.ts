/**
 * The text formats the API answers in besides JSON: CSV (a header row, then one line per row;
 * fields quoted per RFC 4180 when they hold a comma, a quote or a line break, and lines ended with
 * `\n` as Spice's CSV writer ends them) and a table for people (`+---+` borders, like Spice's
 * `text/plain`). Cells: null is empty, strings as they are, anything else as JSON. `/v1/sql`
 * streams its CSV line by line with {@link csvLine}; lists (`/v1/datasets`) use {@link toCsv}.
 */
import { createRequire } from 'node:module';

type Cell = unknown;

function cellText(value: Cell): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

const NEEDS_QUOTES = /[",\r\n]/;

/** One CSV line of cells (RFC 4180 quoting), ended with `\n`. */
export function csvLine(cells: readonly string[]): string {
  let line = '';
  for (let index = 0; index < cells.length; index++) {
    const cell = cells[index] as string;
    line += `${index === 0 ? '' : ','}${NEEDS_QUOTES.test(cell) ? `"${cell.replaceAll('"', '""')}"` : cell}`;
  }
  return `${line}\n`;
}

/** CSV of `rows` (objects) under `columns`, header first. */
export function toCsv(columns: readonly string[], rows: readonly Readonly<Record<string, Cell>>[]): string {
  let text = csvLine(columns);
  for (const row of rows) text += csvLine(columns.map((column) => cellText(row[column])));
  return text;
}

/**
 * The display width of one line, by the rule cli-table3 (the table's earlier renderer) used:
 * string-width's (wide characters 2, control and combining characters 0, ANSI colour codes none).
 */
const { strlen } = createRequire(import.meta.url)('cli-table3/src/utils.js') as {
  strlen(text: string): number;
};
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
const widthOf = (line: string): number => (PRINTABLE_ASCII.test(line) ? line.length : strlen(line));

/**
 * A bordered table of `rows` under `columns`, ending with a newline: `+---+` borders, cells padded
 * by one space to their column's widest line, a cell's lines (split at `\n`) on lines of their
 * own. Written in one pass per row (cli-table3, used before, took over ten minutes of the host
 * thread for 100,000 rows: every other request waited).
 */
export function toTextTable(
  columns: readonly string[],
  rows: readonly Readonly<Record<string, Cell>>[],
): string {
  const head = columns.map((column) => column.split('\n'));
  const body = rows.map((row) => columns.map((column) => cellText(row[column]).split('\n')));
  const widths = head.map((lines) => Math.max(...lines.map(widthOf)));
  for (const cells of body) {
    for (let index = 0; index < cells.length; index++) {
      for (const line of cells[index] as string[]) {
        const width = widthOf(line);
        if (width > (widths[index] as number)) widths[index] = width;
      }
    }
  }
  const rule = `+${widths.map((width) => '-'.repeat(width + 2)).join('+')}+\n`;
  const lines = (cells: readonly (readonly string[])[]): string => {
    const height = Math.max(1, ...cells.map((cell) => cell.length));
    let text = '';
    for (let at = 0; at < height; at++) {
      text += '|';
      for (let index = 0; index < cells.length; index++) {
        const line = cells[index]?.[at] ?? '';
        text += ` ${line}${' '.repeat(Math.max(0, (widths[index] as number) - widthOf(line)))} |`;
      }
      text += '\n';
    }
    return text;
  };
  let table = rule + lines(head) + rule;
  if (body.length === 0) return table;
  for (const cells of body) table += lines(cells);
  return table + rule;
}
