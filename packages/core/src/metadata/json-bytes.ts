/**
 * Walking a JSON document in its bytes, without decoding it to one string or building its tree.
 * metadata.json only grows (the store contract keeps every snapshot entry), and a reader needs a
 * few members of it on every change; this lets the parser validate the whole document's syntax and
 * then materialise only the members it asked for, one slice at a time (`JSON.parse` of a slice).
 *
 * Validation is JSON's grammar exactly (RFC 8259): what `JSON.parse` of the decoded text refuses,
 * {@link JsonBytes} refuses too, with the byte offset. Strings are not checked for UTF-8 validity,
 * as `TextDecoder` (not fatal) and `JSON.parse` do not refuse it either. Iterative, so a document
 * nested deeper than the call stack is an error, not a crash.
 */

/** The document is not valid JSON: `problem` at byte `offset`. */
export class JsonSyntaxError extends Error {
  readonly offset: number;

  constructor(problem: string, offset: number) {
    super(`${problem} at byte ${offset}`);
    this.name = 'JsonSyntaxError';
    this.offset = offset;
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

const decoder = new TextDecoder();
/** Containers this deep or shallower (the document is 0) have their end remembered by the check. */
const REMEMBERED_DEPTH = 4;
const literals: readonly (readonly number[])[] = ['true', 'false', 'null'].map((word) =>
  [...word].map((char) => char.charCodeAt(0)),
);

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

function isHex(c: number): boolean {
  return isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}

/** The bytes of one JSON document, walked by offsets. */
export class JsonBytes {
  readonly bytes: Uint8Array;
  /** The whole document was checked ({@link document}): values are then skipped, not checked again. */
  #valid = false;
  /** Container start → end, for the containers nested less than {@link REMEMBERED_DEPTH} deep. */
  readonly #ends = new Map<number, number>();

  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
  }

  /**
   * The offsets of the document's one value, after a UTF-8 byte order mark and whitespace (as
   * `TextDecoder` drops the mark and `JSON.parse` the whitespace).
   * @throws JsonSyntaxError when the document is not exactly one valid JSON value.
   */
  document(): { readonly start: number; readonly end: number } {
    const b = this.bytes;
    const bom = b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf ? 3 : 0;
    const start = this.#space(bom);
    const end = this.valueEnd(start);
    const after = this.#space(end);
    if (after < b.length) throw new JsonSyntaxError('Unexpected data after the JSON value', after);
    this.#valid = true;
    return { start, end };
  }

  /** The first byte of the value at `offset` (after no whitespace): `{`, `[`, `"`, a digit, … */
  first(offset: number): number {
    return this.bytes[offset] ?? -1;
  }

  /** The value in `[start, end)` (offsets from this walker, so already valid), materialised. */
  parse(start: number, end: number): unknown {
    return JSON.parse(decoder.decode(this.bytes.subarray(start, end)));
  }

  /**
   * The members of the object starting at `start`, in order, as (key, value start, value end).
   * The object must have been validated ({@link document} or {@link valueEnd}).
   */
  *members(start: number): Generator<readonly [key: string, start: number, end: number]> {
    let i = this.#space(start + 1);
    if (this.bytes[i] === CLOSE_BRACE) return;
    for (;;) {
      const keyEnd = this.#valid ? this.#skipString(i) : this.#stringEnd(i);
      const key = this.parse(i, keyEnd) as string;
      const valueStart = this.#space(this.#space(keyEnd) + 1);
      const valueEnd = this.#end(valueStart);
      yield [key, valueStart, valueEnd];
      i = this.#space(valueEnd);
      if (this.bytes[i] === CLOSE_BRACE) return;
      i = this.#space(i + 1);
    }
  }

  /** The elements of the array starting at `start`, in order, as (start, end). Validated first, as for {@link members}. */
  *elements(start: number): Generator<readonly [start: number, end: number]> {
    let i = this.#space(start + 1);
    if (this.bytes[i] === CLOSE_BRACKET) return;
    for (;;) {
      const end = this.#end(i);
      yield [i, end];
      i = this.#space(end);
      if (this.bytes[i] === CLOSE_BRACKET) return;
      i = this.#space(i + 1);
    }
  }

  /**
   * The offset just past the value that begins at `start`, checking its grammar.
   * @throws JsonSyntaxError at the first byte that is not valid JSON.
   */
  valueEnd(start: number): number {
    const b = this.bytes;
    // The open containers, innermost last: true for an object, false for an array; and where each began.
    const open: boolean[] = [];
    const starts: number[] = [];
    let i = start;
    for (;;) {
      // A value begins at i.
      const c = b[i];
      if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        const object = c === OPEN_BRACE;
        const from = i;
        i = this.#space(i + 1);
        if (b[i] === (object ? CLOSE_BRACE : CLOSE_BRACKET)) {
          i++;
        } else {
          open.push(object);
          starts.push(from);
          if (object) i = this.#memberValue(i);
          continue;
        }
      } else if (c === QUOTE) {
        i = this.#stringEnd(i);
      } else if (c === MINUS || (c !== undefined && isDigit(c))) {
        i = this.#numberEnd(i);
      } else {
        i = this.#literalEnd(i);
      }
      // A value ended at i: close containers, or go on to the next element or member.
      for (;;) {
        if (open.length === 0) return i;
        const object = open[open.length - 1] as boolean;
        i = this.#space(i);
        const d = b[i];
        if (d === COMMA) {
          i = this.#space(i + 1);
          if (object) i = this.#memberValue(i);
          break;
        }
        if (d === (object ? CLOSE_BRACE : CLOSE_BRACKET)) {
          open.pop();
          const from = starts.pop() as number;
          i++;
          // Where the outer containers end (the document, its members, theirs and their elements):
          // the members and elements walks skip them without reading them again.
          if (open.length < REMEMBERED_DEPTH) this.#ends.set(from, i);
          continue;
        }
        throw this.#unexpected(i, object ? "',' or '}'" : "',' or ']'");
      }
    }
  }

  /** The end of the value at `start`: checked, unless the whole document was (then only skipped). */
  #end(start: number): number {
    if (!this.#valid) return this.valueEnd(start);
    return this.#ends.get(start) ?? this.#skip(start);
  }

  /** The end of the value at `start` in a checked document: strings by `indexOf`, brackets counted. */
  #skip(start: number): number {
    const b = this.bytes;
    const c = b[start];
    if (c === QUOTE) return this.#skipString(start);
    if (c !== OPEN_BRACE && c !== OPEN_BRACKET) {
      let i = start + 1;
      for (; i < b.length; i++) {
        const d = b[i] as number;
        if (d === COMMA || d === CLOSE_BRACE || d === CLOSE_BRACKET || isSpace(d)) break;
      }
      return i;
    }
    let depth = 0;
    let i = start;
    for (;;) {
      const d = b[i];
      if (d === QUOTE) {
        i = this.#skipString(i);
        continue;
      }
      if (d === OPEN_BRACE || d === OPEN_BRACKET) depth++;
      else if (d === CLOSE_BRACE || d === CLOSE_BRACKET) {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
  }

  /** The end of the (checked) string at `start`: the first quote not escaped. */
  #skipString(start: number): number {
    const b = this.bytes;
    let i = start + 1;
    for (;;) {
      const c = b[i];
      if (c === QUOTE) return i + 1;
      i += c === BACKSLASH ? 2 : 1;
    }
  }

  /** After a member's key at `i` and its colon: the offset of its value. */
  #memberValue(i: number): number {
    if (this.bytes[i] !== QUOTE) throw this.#unexpected(i, 'a property name in double quotes');
    const colon = this.#space(this.#stringEnd(i));
    if (this.bytes[colon] !== COLON) throw this.#unexpected(colon, "':'");
    return this.#space(colon + 1);
  }

  #space(i: number): number {
    const b = this.bytes;
    let j = i;
    while (j < b.length && isSpace(b[j] as number)) j++;
    return j;
  }

  #stringEnd(start: number): number {
    const b = this.bytes;
    if (b[start] !== QUOTE) throw this.#unexpected(start, 'a string');
    let i = start + 1;
    for (;;) {
      if (i >= b.length) throw new JsonSyntaxError('Unterminated string', start);
      const c = b[i] as number;
      if (c === QUOTE) return i + 1;
      if (c < 0x20) throw new JsonSyntaxError('Bad control character in string', i);
      if (c === BACKSLASH) {
        const e = b[i + 1];
        if (e === 0x75) {
          for (let k = 2; k < 6; k++) {
            if (!isHex(b[i + k] ?? -1)) throw new JsonSyntaxError('Bad Unicode escape in string', i);
          }
          i += 6;
        } else if (
          e === QUOTE ||
          e === BACKSLASH ||
          e === 0x2f ||
          e === 0x62 ||
          e === 0x66 ||
          e === 0x6e ||
          e === 0x72 ||
          e === 0x74
        ) {
          i += 2;
        } else {
          throw new JsonSyntaxError('Bad escaped character in string', i);
        }
      } else {
        i++;
      }
    }
  }

  #numberEnd(start: number): number {
    const b = this.bytes;
    let i = start;
    if (b[i] === MINUS) i++;
    const digits = (from: number): number => {
      let j = from;
      while (isDigit(b[j] ?? -1)) j++;
      if (j === from) throw this.#unexpected(j, 'a digit');
      return j;
    };
    if (b[i] === ZERO) i++;
    else i = digits(i);
    if (b[i] === DOT) i = digits(i + 1);
    if (b[i] === 0x65 || b[i] === 0x45) {
      i++;
      if (b[i] === PLUS || b[i] === MINUS) i++;
      i = digits(i);
    }
    return i;
  }

  #literalEnd(start: number): number {
    const b = this.bytes;
    for (const word of literals) {
      if (word.every((code, k) => b[start + k] === code)) return start + word.length;
    }
    throw this.#unexpected(start, 'a JSON value');
  }

  #unexpected(i: number, expected: string): JsonSyntaxError {
    if (i >= this.bytes.length)
      return new JsonSyntaxError(`Unexpected end of JSON input, expected ${expected}`, i);
    const shown = decoder.decode(this.bytes.subarray(i, i + 1));
    return new JsonSyntaxError(`Unexpected ${JSON.stringify(shown)}, expected ${expected}`, i);
  }
}
