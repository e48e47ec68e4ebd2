/**
 * The query path's cache is bounded by entries and by bytes: a huge entry is not kept (and what
 * held resources is released), and many large ones never add up past the byte bound.
 */
import { describe, expect, it } from 'vitest';
import { BoundedCache, textBytes } from '../src/bounded-cache.js';

describe('BoundedCache', () => {
  it('keeps at most `entries`, least recently used out first', () => {
    const cache = new BoundedCache<string, number>({ entries: 2, bytes: 1024 * 1024 });
    cache.set('a', 1, 10);
    cache.set('b', 2, 10);
    cache.get('a');
    cache.set('c', 3, 10);
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([1, undefined, 3]);
  });

  it('keeps at most `bytes`, whatever the entry count allows', () => {
    const cache = new BoundedCache<string, string>({ entries: 1_000, bytes: 64 * 1024 });
    for (let n = 0; n < 1_000; n++) {
      const text = `${n}`.padEnd(2_000, 'x');
      cache.set(text, text, textBytes(text));
    }
    expect(cache.bytes).toBeLessThanOrEqual(64 * 1024);
    expect(cache.size).toBeLessThan(20);
  });

  it('does not keep an entry over a sixteenth of the bytes, and releases it (a 1 MiB statement)', () => {
    const released: string[] = [];
    const cache = new BoundedCache<string, string>({
      entries: 1_000,
      bytes: 8 * 1024 * 1024,
      dispose: (_value, key) => released.push(key.slice(0, 4)),
    });
    cache.set('kept', 'small', 100);
    const huge = 'huge'.padEnd(1024 * 1024, 'x');
    expect(cache.set(huge, huge, textBytes(huge))).toBe(false);
    expect(cache.get(huge)).toBeUndefined();
    expect(released).toEqual(['huge']);
    expect(cache.get('kept')).toBe('small');
  });

  it('disposes of what it evicts, replaces, deletes and clears', () => {
    const released: number[] = [];
    const cache = new BoundedCache<string, number>({
      entries: 1,
      bytes: 1024,
      dispose: (value) => released.push(value),
    });
    cache.set('a', 1, 1);
    cache.set('b', 2, 1);
    cache.set('b', 3, 1);
    cache.delete('b');
    cache.set('c', 4, 1);
    cache.clear();
    expect(released).toEqual([1, 2, 3, 4]);
  });
});
