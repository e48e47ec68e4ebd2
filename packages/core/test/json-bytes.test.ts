import { describe, expect, it } from 'vitest';
import { JsonBytes, JsonSyntaxError } from '../src/metadata/json-bytes.js';

const encoder = new TextEncoder();

/** What JSON.parse of the decoded text says: the value, or that it refuses. */
function parsed(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(new TextDecoder().decode(encoder.encode(text))) };
  } catch {
    return { ok: false };
  }
}

/** What the walker says, the value rebuilt from its members and elements (never from one whole parse). */
function walked(text: string): { ok: true; value: unknown } | { ok: false } {
  const json = new JsonBytes(encoder.encode(text));
  let range: { start: number; end: number };
  try {
    range = json.document();
  } catch (error) {
    if (!(error instanceof JsonSyntaxError)) throw error;
    return { ok: false };
  }
  const rebuild = (start: number, end: number): unknown => {
    if (json.first(start) === 0x7b) {
      const object: Record<string, unknown> = {};
      for (const [key, from, to] of json.members(start)) {
        Object.defineProperty(object, key, {
          value: rebuild(from, to),
          enumerable: true,
          configurable: true,
        });
      }
      return object;
    }
    if (json.first(start) === 0x5b) return [...json.elements(start)].map(([from, to]) => rebuild(from, to));
    return json.parse(start, end);
  };
  return { ok: true, value: rebuild(range.start, range.end) };
}

const valid = [
  '{}',
  ' \n\t\r{ } ',
  '\ufeff{"a":1}',
  '[]',
  '[[[[]]]]',
  '{"a":{"b":[1,2,{"c":null}]},"d":true,"e":false}',
  '"text"',
  '"esc \\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\uD83D\\uDE00"',
  '"ünï 😀"',
  '0',
  '-0',
  '-12.5e+3',
  '1E-2',
  '123456789012345678901234567890',
  '{"a":1,"a":2}',
  '{"__proto__":{"x":1}}',
  '[1 , 2 ,\n3]',
  // Deeper than the check remembers container ends: skipped by counting brackets, past strings.
  '{"a":{"b":{"c":{"d":{"e":[1,{"f":"x\\"]}\\\\"},[[]],{}],"g":"}"}}}}}',
];

const invalid = [
  '',
  ' ',
  '{',
  '}',
  '{"a"}',
  '{"a":}',
  '{"a":1,}',
  '{,}',
  '[1,]',
  '[,1]',
  '[1 2]',
  '{"a":1 "b":2}',
  "{'a':1}",
  '{a:1}',
  '01',
  '1.',
  '.5',
  '-',
  '+1',
  '1e',
  '1e+',
  '0x10',
  'NaN',
  'Infinity',
  'tru',
  'nul',
  'truex',
  '"unterminated',
  '"bad \\x escape"',
  '"bad \\u12 escape"',
  '"tab\tinside"',
  '"newline\ninside"',
  '{} {}',
  '[1]]',
  '{"a":[}',
  '[{]',
  '\ufeff\ufeff{}',
];

describe('JsonBytes accepts exactly what JSON.parse accepts', () => {
  it.each(valid)('accepts %j and reads the same value', (text) => {
    const expected = parsed(text);
    expect(expected.ok).toBe(true);
    expect(walked(text)).toEqual(expected);
  });

  it.each(invalid)('refuses %j', (text) => {
    expect(parsed(text).ok).toBe(false);
    expect(walked(text)).toEqual({ ok: false });
  });

  it('agrees with JSON.parse on thousands of damaged documents', () => {
    // A seeded generator: the same documents every run, so a disagreement is reproducible.
    let seed = 42;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const value = (depth: number): unknown => {
      switch (random(depth > 3 ? 4 : 6)) {
        case 0:
          return random(1000) - 500 + random(10) / 8;
        case 1:
          return ['', 'a"b', 'é\n', '\u0001', 'x\\y'][random(5)];
        case 2:
          return [true, false, null][random(3)];
        case 3:
          return 1e21 * random(3);
        case 4:
          return Array.from({ length: random(4) }, () => value(depth + 1));
        default:
          return Object.fromEntries(Array.from({ length: random(4) }, (_, i) => [`k${i}`, value(depth + 1)]));
      }
    };
    const noise = [' ', ',', ':', '"', '\\', '[', ']', '{', '}', '0', '-', 'e', '.', 'n', '\n', '\t'];
    let disagreements = 0;
    let refused = 0;
    for (let round = 0; round < 4000; round++) {
      let text = JSON.stringify(value(0), null, random(2) === 0 ? 1 : undefined) ?? 'null';
      for (let edits = random(3); edits > 0; edits--) {
        const at = random(text.length + 1);
        const cut = random(3) === 0 ? 1 : 0;
        text = text.slice(0, at) + (noise[random(noise.length)] ?? '') + text.slice(at + cut);
      }
      const expected = parsed(text);
      if (!expected.ok) refused++;
      if (JSON.stringify(walked(text)) !== JSON.stringify(expected)) disagreements++;
    }
    expect(disagreements).toBe(0);
    // The damage must actually produce both kinds, or the comparison proves little.
    expect(refused).toBeGreaterThan(1000);
    expect(refused).toBeLessThan(3900);
  });

  it('names the byte where the document stops being JSON', () => {
    const json = new JsonBytes(encoder.encode('{"a": [1, 2,, 3]}'));
    expect(() => json.document()).toThrow(new JsonSyntaxError('Unexpected ",", expected a JSON value', 12));
  });

  it('walks a document nested deeper than the call stack without overflowing it', () => {
    const depth = 200_000;
    const text = `${'['.repeat(depth)}${']'.repeat(depth)}`;
    expect(new JsonBytes(encoder.encode(text)).document()).toEqual({ start: 0, end: 2 * depth });
  });
});
