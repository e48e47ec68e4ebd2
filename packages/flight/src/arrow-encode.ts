/**
 * JSON-safe result values (the engines' encoding: big integers and decimals as strings, dates
 * and timestamps as ISO text, blobs as base64) into Arrow column buffers, without loss: 64-bit
 * integers as BigInt64, decimals as 128-bit two's complement, timestamps in their own unit down
 * to the nanosecond. Each scalar has a parser that answers `undefined` for a value without a form
 * in the type, so a SQLite column (whose values need not match its declared type) can be checked
 * before its type is chosen ({@link columnFits}).
 */
import type { JsonValue } from '@ferry/core';
import {
  type Bool,
  Data,
  DataType,
  type Decimal,
  type Field,
  type Int,
  type List,
  type Map_,
  type Struct,
  type Timestamp,
  TimeUnit,
  Type,
} from 'apache-arrow';
import { ArrowConversionError } from './errors.js';

const MS_PER_DAY = 86_400_000;
const NANOS: Readonly<Record<TimeUnit, bigint>> = {
  [TimeUnit.SECOND]: 1_000_000_000n,
  [TimeUnit.MILLISECOND]: 1_000_000n,
  [TimeUnit.MICROSECOND]: 1_000n,
  [TimeUnit.NANOSECOND]: 1n,
};

function days(year: number, month: number, day: number): number | undefined {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return undefined;
  return date.getTime() / MS_PER_DAY;
}

const DATE = /^(-?\d{4,})-(\d{2})-(\d{2})$/;
const TIME = /^(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$/;
const TIMESTAMP =
  /^(-?\d{4,})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}(?::?\d{2})?)?$/;

function fractionNanos(fraction: string | undefined): bigint {
  return BigInt((fraction ?? '').padEnd(9, '0'));
}

function offsetSeconds(zone: string | undefined): number {
  if (zone === undefined || zone === 'Z') return 0;
  const sign = zone.startsWith('-') ? -1 : 1;
  const digits = zone.slice(1).replace(':', '');
  return sign * (Number(digits.slice(0, 2)) * 3600 + Number(digits.slice(2) || '0') * 60);
}

/** Nanoseconds since the epoch of an ISO date-time (`2026-11-29T08:00:00.123456Z`). */
export function timestampNanos(text: string): bigint | undefined {
  const m = TIMESTAMP.exec(text);
  if (m === null) return undefined;
  const day = days(Number(m[1]), Number(m[2]), Number(m[3]));
  if (day === undefined) return undefined;
  const seconds = day * 86_400 + Number(m[4]) * 3600 + Number(m[5]) * 60 + Number(m[6]) - offsetSeconds(m[8]);
  return BigInt(seconds) * 1_000_000_000n + fractionNanos(m[7]);
}

/** The unscaled integer of a decimal text or number at `scale`, or `undefined` if it needs more digits. */
export function unscaledDecimal(value: string | number, scale: number): bigint | undefined {
  const text = typeof value === 'number' ? String(value) : value.trim();
  const m = /^([+-])?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (m === null || `${m[2]}${m[3] ?? ''}` === '') return undefined;
  let digits = `${m[2]}${m[3] ?? ''}`;
  // The decimal point sits `point` digits from the left of `digits`.
  const point = (m[2] as string).length + Number(m[4] ?? 0);
  const wanted = point + scale;
  if (wanted < 0) return /^0*$/.test(digits) ? 0n : undefined;
  if (digits.length > wanted) {
    if (!/^0*$/.test(digits.slice(wanted))) return undefined;
    digits = digits.slice(0, wanted);
  } else {
    digits = digits.padEnd(wanted, '0');
  }
  const unscaled = BigInt(digits === '' ? '0' : digits);
  return m[1] === '-' ? -unscaled : unscaled;
}

type Parser<T> = (value: JsonValue) => T | undefined;

const integral = (value: JsonValue): bigint | undefined => {
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : undefined;
  if (typeof value === 'string' && /^[+-]?\d+$/.test(value.trim())) return BigInt(value.trim());
  if (typeof value === 'boolean') return value ? 1n : 0n;
  return undefined;
};

function intParser(type: Int): Parser<bigint> {
  const min = type.isSigned ? -(1n << BigInt(type.bitWidth - 1)) : 0n;
  const max = type.isSigned ? (1n << BigInt(type.bitWidth - 1)) - 1n : (1n << BigInt(type.bitWidth)) - 1n;
  return (value) => {
    // Fast path: a safe integer is within every 64-bit range.
    if (type.bitWidth === 64 && Number.isSafeInteger(value) && (type.isSigned || (value as number) >= 0)) {
      return BigInt(value as number);
    }
    const parsed = integral(value);
    return parsed !== undefined && parsed >= min && parsed <= max ? parsed : undefined;
  };
}

const floatParser: Parser<number> = (value) => {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && /^(NaN|-?Infinity)$/.test(value)) return Number(value);
  return undefined;
};

const boolParser: Parser<boolean> = (value) => {
  if (typeof value === 'boolean') return value;
  if (value === 0 || value === 1) return value === 1;
  return undefined;
};

const dateParser: Parser<number> = (value) => {
  if (typeof value !== 'string') return undefined;
  const m = DATE.exec(value);
  return m === null ? undefined : days(Number(m[1]), Number(m[2]), Number(m[3]));
};

const timeParser: Parser<bigint> = (value) => {
  if (typeof value !== 'string') return undefined;
  const m = TIME.exec(value);
  if (m === null) return undefined;
  const seconds = BigInt(Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]));
  return seconds * 1_000_000n + fractionNanos(m[4]) / 1_000n;
};

function timestampParser(type: Timestamp): Parser<bigint> {
  const per = NANOS[type.unit];
  return (value) => {
    if (typeof value !== 'string') return undefined;
    const nanos = timestampNanos(value);
    if (nanos === undefined || nanos % per !== 0n) return undefined;
    return nanos / per;
  };
}

function decimalParser(type: Decimal): Parser<bigint> {
  const limit = 10n ** BigInt(type.precision);
  return (value) => {
    if (typeof value !== 'string' && typeof value !== 'number') return undefined;
    const unscaled = unscaledDecimal(value, type.scale);
    return unscaled !== undefined && unscaled < limit && unscaled > -limit ? unscaled : undefined;
  };
}

const binaryParser: Parser<Uint8Array> = (value) =>
  typeof value === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(value)
    ? Buffer.from(value, 'base64')
    : undefined;

/** Text as is; any other value (a fallback column: UUID, ENUM, UNION, …) as its JSON text. */
const textParser: Parser<string> = (value) => (typeof value === 'string' ? value : JSON.stringify(value));

interface IntervalValue {
  readonly months: number;
  readonly days: number;
  readonly nanos: bigint;
}

const intervalParser: Parser<IntervalValue> = (value) => {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const { months, days: dayCount, micros } = value as Record<string, JsonValue>;
  const microseconds = micros === undefined ? undefined : integral(micros);
  if (typeof months !== 'number' || typeof dayCount !== 'number' || microseconds === undefined)
    return undefined;
  return { months, days: dayCount, nanos: microseconds * 1_000n };
};

function scalarParser(type: DataType): Parser<unknown> | undefined {
  switch (type.typeId) {
    case Type.Int:
      return intParser(type as Int);
    case Type.Float:
      return floatParser;
    case Type.Bool:
      return boolParser;
    case Type.Date:
      return dateParser;
    case Type.Time:
      return timeParser;
    case Type.Timestamp:
      return timestampParser(type as Timestamp);
    case Type.Decimal:
      return decimalParser(type as Decimal);
    case Type.Binary:
      return binaryParser;
    case Type.Utf8:
      return textParser;
    case Type.Interval:
      return intervalParser;
    default:
      return undefined;
  }
}

/** Whether every value of a column has a form in the (scalar) type. */
export function columnFits(type: DataType, values: Iterable<JsonValue>): boolean {
  const parse = scalarParser(type);
  if (parse === undefined) return false;
  for (const value of values) if (value !== null && parse(value) === undefined) return false;
  return true;
}

function validity(values: readonly JsonValue[]): { bitmap: Uint8Array; nulls: number } {
  const bitmap = new Uint8Array((values.length + 7) >> 3);
  let nulls = 0;
  for (let i = 0; i < values.length; i++) {
    if (values[i] === null || values[i] === undefined) nulls++;
    else bitmap[i >> 3] = (bitmap[i >> 3] as number) | (1 << (i & 7));
  }
  return { bitmap, nulls };
}

function parsed<T>(parse: Parser<T>, value: JsonValue, column: string, type: DataType): T {
  const result = parse(value);
  if (result === undefined) throw new ArrowConversionError(column, String(type), value);
  return result;
}

function variableWidth(type: DataType, values: readonly JsonValue[], column: string): Data {
  const offsets = new Int32Array(values.length + 1);
  let data: Uint8Array;
  if (type.typeId === Type.Utf8) {
    // One encode of all the text, offsets from each string's UTF-8 length (both native, no per-value copies).
    const texts: string[] = [];
    let size = 0;
    for (let i = 0; i < values.length; i++) {
      const value = values[i] ?? null;
      if (value !== null) {
        const text = parsed(textParser, value, column, type);
        texts.push(text);
        size += Buffer.byteLength(text, 'utf8');
      }
      offsets[i + 1] = size;
    }
    data = Buffer.from(texts.join(''), 'utf8');
  } else {
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (let i = 0; i < values.length; i++) {
      const value = values[i] ?? null;
      if (value !== null) {
        const bytes = parsed(binaryParser, value, column, type);
        chunks.push(bytes);
        size += bytes.length;
      }
      offsets[i + 1] = size;
    }
    data = Buffer.concat(chunks, size);
  }
  const { bitmap, nulls } = validity(values);
  return new Data(type, 0, values.length, nulls, { 0: offsets, 1: data, 2: bitmap } as never);
}

function fixedWidth(type: DataType, values: readonly JsonValue[], column: string): Data {
  const parse = scalarParser(type) as Parser<unknown>;
  const n = values.length;
  let data:
    | Int8Array
    | Uint8Array
    | Int16Array
    | Uint16Array
    | Int32Array
    | Uint32Array
    | BigInt64Array
    | BigUint64Array
    | Float32Array
    | Float64Array;
  const at = (i: number): unknown => {
    const value = values[i] ?? null;
    return value === null ? undefined : parsed(parse, value, column, type);
  };
  switch (type.typeId) {
    case Type.Bool: {
      const bits = new Uint8Array((n + 7) >> 3);
      for (let i = 0; i < n; i++)
        if (at(i) === true) bits[i >> 3] = (bits[i >> 3] as number) | (1 << (i & 7));
      data = bits;
      break;
    }
    case Type.Int:
    case Type.Time:
    case Type.Timestamp: {
      const ArrayType = (type as Int).ArrayType ?? BigInt64Array;
      const array = new ArrayType(n);
      const big = array instanceof BigInt64Array || array instanceof BigUint64Array;
      for (let i = 0; i < n; i++) {
        const value = at(i) as bigint | undefined;
        if (value !== undefined) array[i] = (big ? value : Number(value)) as never;
      }
      data = array;
      break;
    }
    case Type.Float: {
      const array = new (type as DataType).ArrayType(n) as Float32Array | Float64Array;
      for (let i = 0; i < n; i++) array[i] = (at(i) as number | undefined) ?? 0;
      data = array;
      break;
    }
    case Type.Date: {
      const array = new Int32Array(n);
      for (let i = 0; i < n; i++) array[i] = (at(i) as number | undefined) ?? 0;
      data = array;
      break;
    }
    case Type.Decimal: {
      const words = new Uint32Array(n * 4);
      for (let i = 0; i < n; i++) {
        const value = at(i) as bigint | undefined;
        if (value === undefined) continue;
        const twos = BigInt.asUintN(128, value);
        for (let w = 0; w < 4; w++) words[i * 4 + w] = Number((twos >> BigInt(32 * w)) & 0xffff_ffffn);
      }
      data = words;
      break;
    }
    case Type.Interval: {
      const words = new Int32Array(n * 4);
      for (let i = 0; i < n; i++) {
        const value = at(i) as IntervalValue | undefined;
        if (value === undefined) continue;
        const nanos = BigInt.asUintN(64, value.nanos);
        words.set(
          [value.months, value.days, Number(nanos & 0xffff_ffffn) | 0, Number(nanos >> 32n) | 0],
          i * 4,
        );
      }
      data = words;
      break;
    }
    default:
      throw new TypeError(`No Arrow encoding for ${String(type)}`);
  }
  const { bitmap, nulls } = validity(values);
  return new Data(type, 0, n, nulls, { 1: data, 2: bitmap } as never);
}

function listOf(
  type: DataType,
  items: readonly JsonValue[],
  column: string,
): { offsets: Int32Array; flat: JsonValue[] } {
  const offsets = new Int32Array(items.length + 1);
  const flat: JsonValue[] = [];
  for (let i = 0; i < items.length; i++) {
    const item = items[i] ?? null;
    if (item !== null) {
      if (!Array.isArray(item)) throw new ArrowConversionError(column, String(type), item);
      for (const element of item) flat.push(element);
    }
    offsets[i + 1] = flat.length;
  }
  return { offsets, flat };
}

function structOf(type: Struct, rows: readonly JsonValue[], column: string, names: readonly string[]): Data {
  const children = type.children.map((child: Field, index) => {
    const key = names[index] as string;
    return buildColumn(
      child.type,
      rows.map((row) =>
        row !== null && typeof row === 'object' && !Array.isArray(row) ? (row[key] ?? null) : null,
      ),
      `${column}.${child.name}`,
    );
  });
  const { bitmap, nulls } = validity(rows);
  return new Data(type, 0, rows.length, nulls, { 2: bitmap } as never, children);
}

/** One column of Arrow data from a column of JSON-safe values; throws {@link ArrowConversionError}. */
export function buildColumn(type: DataType, values: readonly JsonValue[], column: string): Data {
  if (DataType.isUtf8(type) || DataType.isBinary(type)) return variableWidth(type, values, column);
  if (DataType.isList(type)) {
    const { offsets, flat } = listOf(type, values, column);
    const child = buildColumn((type as List).valueType, flat, column);
    const { bitmap, nulls } = validity(values);
    return new Data(type, 0, values.length, nulls, { 0: offsets, 2: bitmap } as never, [child]);
  }
  if (DataType.isStruct(type)) {
    const struct = type as Struct;
    return structOf(
      struct,
      values,
      column,
      struct.children.map((child) => child.name),
    );
  }
  if (DataType.isMap(type)) {
    // The engines encode a MAP as [{ key, value }]; Arrow stores it as a list of (keys, values).
    const map = type as Map_;
    const { offsets, flat } = listOf(type, values, column);
    const entries = structOf((map.children[0] as Field).type as Struct, flat, column, ['key', 'value']);
    const { bitmap, nulls } = validity(values);
    return new Data(type, 0, values.length, nulls, { 0: offsets, 2: bitmap } as never, [entries]);
  }
  return fixedWidth(type as Bool, values, column);
}
