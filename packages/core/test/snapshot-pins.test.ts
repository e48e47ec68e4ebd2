/** The `X-Ferry-Snapshot` request header's syntax: what the answer header says, read back. */
import { describe, expect, it } from 'vitest';
import { parseSnapshotPins } from '../src/index.js';

describe('parseSnapshotPins', () => {
  it('reads the answer header back, any subset, spaces or none', () => {
    expect(parseSnapshotPins('orders=17, users=4')).toEqual({ pins: { orders: 17, users: 4 } });
    expect(parseSnapshotPins('orders=17')).toEqual({ pins: { orders: 17 } });
    expect(parseSnapshotPins(' orders = 0 ,users=4,')).toEqual({ pins: { orders: 0, users: 4 } });
    expect(parseSnapshotPins('')).toEqual({ pins: {} });
  });

  it("keeps a pin whatever the dataset's name (one named __proto__ is not dropped)", () => {
    const parsed = parseSnapshotPins('__proto__=3, constructor=4') as { pins: Record<string, number> };
    expect(Object.entries(parsed.pins)).toEqual([
      ['__proto__', 3],
      ['constructor', 4],
    ]);
  });

  it('the same pin twice is one pin; two different ones are a problem', () => {
    expect(parseSnapshotPins('orders=3, ORDERS=3')).toEqual({ pins: { orders: 3 } });
    const twice = parseSnapshotPins('orders=3, Orders=4');
    expect(twice).toHaveProperty('problem');
    expect((twice as { problem: string }).problem).toMatch(/'Orders' is pinned twice \(3 and 4\)/);
  });

  it.each([
    ['orders', /'orders' names no snapshot/],
    ['orders=latest', /'latest' \(for orders\) is not a snapshot id/],
    ['orders=-1', /'-1' \(for orders\) is not a snapshot id/],
    ['orders=1.5', /'1.5' \(for orders\) is not a snapshot id/],
    ['or ders=1', /'or ders' is not a dataset name/],
    ['=4', /'' is not a dataset name/],
  ])('%s is refused, naming the part and the fix', (value, problem) => {
    const parsed = parseSnapshotPins(value);
    expect(parsed).toHaveProperty('problem');
    const text = (parsed as { problem: string }).problem;
    expect(text).toMatch(problem);
    expect(text).toMatch(/dataset=snapshotId/);
  });
});
