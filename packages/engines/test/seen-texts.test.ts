import { describe, expect, it } from 'vitest';
import { SeenTexts } from '../src/seen-texts.js';

describe('SeenTexts', () => {
  it('answers true from a text’s second sighting on', () => {
    const seen = new SeenTexts();
    expect(seen.again('SELECT 1 FROM t')).toBe(false);
    expect(seen.again('SELECT 2 FROM t')).toBe(false);
    expect(seen.again('SELECT 1 FROM t')).toBe(true);
    expect(seen.again('SELECT 1 FROM t')).toBe(true);
    expect(seen.again('')).toBe(false);
    expect(seen.again('')).toBe(true);
  });

  it('forgets a text once others have taken its slot, and keeps no text', () => {
    const seen = new SeenTexts(2);
    seen.again('a');
    for (let i = 0; i < 64; i++) seen.again(`SELECT ${i}`);
    // Two slots, 64 other texts: 'a' has been displaced (each text takes the slot its hash picks).
    expect(seen.again('a')).toBe(false);
  });

  it('tells apart the new texts of a load where every request is new', () => {
    const seen = new SeenTexts();
    let repeats = 0;
    for (let i = 0; i < 10_000; i++) if (seen.again(`SELECT name FROM users WHERE id = ${i}`)) repeats++;
    // Only hash collisions in a slot count as repeats: none of 10,000 distinct texts here.
    expect(repeats).toBe(0);
  });
});
