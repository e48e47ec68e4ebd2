/**
 * The `text/plain` answer of `/v1/sql` (a table for people): its layout — `+---+` borders, cells
 * padded to their column's widest line by display width, a cell's lines on lines of their own — and
 * its cost, linear in the rows: it is written on the host thread, which every other request shares.
 */
import { describe, expect, it } from 'vitest';
import { toTextTable } from '../src/formats.js';

describe('toTextTable', () => {
  it('pads by display width, puts a cell’s lines on lines of their own, and shows nulls empty', () => {
    const rows = [
      { id: 1, name: 'grace', tags: ['a', 1], note: null },
      { id: 22, name: '日本😀', tags: { k: 'v' }, note: 'two\nlines' },
    ];
    expect(toTextTable(['id', 'name', 'tags', 'note'], rows)).toBe(
      [
        '+----+--------+-----------+-------+',
        '| id | name   | tags      | note  |',
        '+----+--------+-----------+-------+',
        '| 1  | grace  | ["a",1]   |       |',
        '| 22 | 日本😀 | {"k":"v"} | two   |',
        '|    |        |           | lines |',
        '+----+--------+-----------+-------+',
        '',
      ].join('\n'),
    );
    expect(toTextTable(['a\nb', 'c'], [])).toBe(
      ['+---+---+', '| a | c |', '| b |   |', '+---+---+', ''].join('\n'),
    );
  });

  it('writes 50,000 rows, each its line (cli-table3, used before, took 77 s: past the test timeout)', () => {
    // Its cost is the bench's to measure; here, a renderer that is not linear in the rows times out.
    const rows = Array.from({ length: 50_000 }, (_, i) => ({ i, label: `row ${i}`, f: i * 1.5 }));
    const table = toTextTable(['i', 'label', 'f'], rows);
    expect(table.split('\n')).toHaveLength(50_000 + 5);
    expect(table.split('\n')[3]).toBe('| 0     | row 0     | 0       |');
    expect(table.split('\n')[50_002]).toBe('| 49999 | row 49999 | 74998.5 |');
  });
});
