/**
 * The buffers an Arrow column is appended into, shared by the column writers of
 * `duckdb-chunk-arrow.ts`: growable bytes, a validity bitmap fed from DuckDB's validity words
 * (byte-wise when aligned, bit by bit otherwise), and the rows of a source vector an append takes
 * (a range, or a list of rows when they must be gathered).
 */
import * as arrow from 'apache-arrow';

export const setBit = (bits: Uint8Array, bit: number): void => {
  bits[bit >> 3] = (bits[bit >> 3] as number) | (1 << (bit & 7));
};

export const isValid = (validity: Uint8Array | null, row: number): boolean =>
  validity === null || ((validity[row >> 3] as number) & (1 << (row & 7))) !== 0;

/** `array`, or a zeroed copy with room for at least `needed` elements (doubling). */
export function grown<T extends ArrayBufferView & { readonly length: number }>(array: T, needed: number): T {
  if (needed <= array.length) return array;
  const next = new (array.constructor as new (length: number) => T)(Math.max(array.length * 2, needed, 64));
  (next as unknown as { set(source: T): void }).set(array);
  return next;
}

/** Which rows of a vector a writer appends: a range, or (lists out of order) a list of rows. */
export type Rows =
  /** Rows `from` … `to − 1` of a vector holding at least `to` rows. */
  | { readonly from: number; readonly to: number; readonly rows?: undefined }
  /** Rows `rows[i]` of a vector holding `size` rows. */
  | { readonly rows: Uint32Array; readonly size: number };

/** The vector row of the `i`-th row appended. */
export const rowAt = (rows: Rows, i: number): number =>
  rows.rows === undefined ? rows.from + i : (rows.rows[i] as number);

export const rowCount = (rows: Rows): number =>
  rows.rows === undefined ? rows.to - rows.from : rows.rows.length;
/** Rows the vector must be read for. */
export const readSize = (rows: Rows): number => (rows.rows === undefined ? rows.to : rows.size);

/** A validity bitmap being appended to; bits at and past `length` are always zero. */
export class BitmapWriter {
  length = 0;
  #bits = new Uint8Array(64);
  #nulls = false;

  /** Appends `rows` of a vector whose validity is `source` (`null`: all valid). */
  append(source: Uint8Array | null, rows: Rows): void {
    const count = rowCount(rows);
    const at = this.length;
    this.#bits = grown(this.#bits, ((at + count + 7) >> 3) + 1);
    const bits = this.#bits;
    if (rows.rows !== undefined) {
      for (let i = 0; i < count; i++) {
        if (isValid(source, rows.rows[i] as number)) setBit(bits, at + i);
        else this.#nulls = true;
      }
    } else if (source === null) {
      setOnes(bits, at, count);
    } else {
      if (copyBits(source, rows.from, bits, at, count)) this.#nulls = true;
    }
    this.length = at + count;
  }

  /** Appends `count` valid rows. */
  appendValid(count: number): void {
    this.#bits = grown(this.#bits, ((this.length + count + 7) >> 3) + 1);
    setOnes(this.#bits, this.length, count);
    this.length += count;
  }

  /** The bitmap, or `undefined` when no row is null (Arrow then needs none); starts empty again. */
  finish(): Uint8Array | undefined {
    const bitmap = this.#nulls ? this.#bits.subarray(0, (this.length + 7) >> 3) : undefined;
    this.length = 0;
    this.#bits = new Uint8Array(64);
    this.#nulls = false;
    return bitmap;
  }
}

/** A column's Arrow data: its buffers, and the validity bitmap when a row is null. */
export function dataOf(
  type: arrow.DataType,
  length: number,
  validity: BitmapWriter,
  buffers: Readonly<Record<string, unknown>>,
): arrow.Data {
  const nullBitmap = validity.finish();
  return arrow.makeData({
    type,
    length,
    ...(nullBitmap === undefined ? { nullCount: 0 } : { nullBitmap }),
    ...buffers,
  } as never);
}

/** Sets bits `at` … `at + count − 1` of a zeroed tail. */
function setOnes(bits: Uint8Array, at: number, count: number): void {
  let bit = at;
  const end = at + count;
  while (bit < end && (bit & 7) !== 0) {
    setBit(bits, bit);
    bit++;
  }
  const wholeEnd = end & ~7;
  if (bit < wholeEnd) {
    bits.fill(0xff, bit >> 3, wholeEnd >> 3);
    bit = wholeEnd;
  }
  while (bit < end) {
    setBit(bits, bit);
    bit++;
  }
}

/** ORs `count` bits of `source` from bit `from` into `target` at bit `at`; true when any was zero. */
function copyBits(source: Uint8Array, from: number, target: Uint8Array, at: number, count: number): boolean {
  let zero = false;
  let first = 0;
  if ((from & 7) === 0 && (at & 7) === 0) {
    const whole = count >> 3;
    const start = from >> 3;
    for (let i = 0; i < whole; i++) {
      const byte = source[start + i] as number;
      if (byte !== 0xff) zero = true;
      target[(at >> 3) + i] = byte;
    }
    first = whole << 3;
  }
  for (let bit = first; bit < count; bit++) {
    if (isValid(source, from + bit)) setBit(target, at + bit);
    else zero = true;
  }
  return zero;
}

/** Growable bytes: a fixed-width column's values, or a string column's characters. */
export class ByteBuffer {
  length = 0;
  bytes: Uint8Array;

  constructor(capacity = 1024) {
    this.bytes = new Uint8Array(capacity);
  }

  reserve(more: number): Uint8Array {
    this.bytes = grown(this.bytes, this.length + more);
    return this.bytes;
  }

  take(): Uint8Array {
    const taken = this.bytes.subarray(0, this.length);
    this.bytes = new Uint8Array(Math.max(1024, this.length));
    this.length = 0;
    return taken;
  }
}
