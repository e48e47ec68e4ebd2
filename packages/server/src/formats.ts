/**
 * The text formats the API answers in besides JSON: CSV (a header row, then one line per row;
 * fields quoted per RFC 4180 when they hold a comma, a quote or a line break, and lines ended with
 * `\n` as Spice's CSV writer ends them) and a table for people (`+---+` borders, like Spice's
 * `text/plain`). Cells: null is empty, strings as they are, anything else as JSON. `/v1/sql`
 * streams its CSV line by line with {@link csvLine}; lists (`/v1/datasets`) use {@link toCsv}.
 */
import Table from 'cli-table3';

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

const BORDERS = {
  top: '-',
  'top-mid': '+',
  'top-left': '+',
  'top-right': '+',
  bottom: '-',
  'bottom-mid': '+',
  'bottom-left': '+',
  'bottom-right': '+',
  left: '|',
  'left-mid': '+',
  mid: '-',
  'mid-mid': '+',
  right: '|',
  'right-mid': '+',
  middle: '|',
};

/** A bordered table of `rows` under `columns`, ending with a newline. */
export function toTextTable(
  columns: readonly string[],
  rows: readonly Readonly<Record<string, Cell>>[],
): string {
  const table = new Table({
    head: [...columns],
    chars: BORDERS,
    style: { head: [], border: [], compact: true, 'padding-left': 1, 'padding-right': 1 },
  });
  for (const row of rows) table.push(columns.map((column) => cellText(row[column])));
  return `${table.toString()}\n`;
}
