/**
 * The JSON-safe result encoding both adapters share, so a row reads the same whichever engine
 * served it: integers as numbers within ±(2^53−1) and as decimal strings beyond, non-finite
 * floats as `"NaN"` / `"Infinity"` / `"-Infinity"` (a FLOAT as its shortest 32-bit text), blobs base64, timestamps
 * `YYYY-MM-DDTHH:MM:SS.ffffff` (nanosecond types: 9 digits; `Z` appended for TIMESTAMPTZ).
 * Also the parameter check and the column-name de-duplication both engines apply.
 */
import type { JsonValue, QueryParam } from '@ferry/core/base';
import { InvalidParameterError } from './errors.js';

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

export function jsonInteger(value: bigint): number | string {
  return value <= MAX_SAFE && value >= -MAX_SAFE ? Number(value) : value.toString();
}

export function jsonFloat(value: number): number | string {
  return Number.isFinite(value) ? value : String(value);
}

/**
 * A 32-bit float (held as the double it widens to) as the shortest decimal that reads back as the
 * same 32-bit float: `0.1`, as DuckDB and Arrow's JSON and CSV writers print a FLOAT, not the
 * double's `0.10000000149011612`.
 */
export function float32Number(value: number): number {
  if (!Number.isFinite(value)) return value;
  // 9 significant digits always read back; a (p+1)-digit rounding is never farther than a p-digit
  // one, so the digits that do form a range: search it.
  let low = 1;
  let high = 9;
  while (low < high) {
    const digits = (low + high) >> 1;
    if (Math.fround(Number(value.toPrecision(digits))) === value) high = digits;
    else low = digits + 1;
  }
  return Number(value.toPrecision(low));
}

export function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** Floor division and its non-negative remainder, for instants before 1970. */
function split(units: bigint, per: bigint): [bigint, bigint] {
  const whole = units / per - (units % per < 0n ? 1n : 0n);
  return [whole, units - whole * per];
}

/** The largest distance from the epoch a JavaScript Date represents, in seconds. */
const DATE_RANGE_SECONDS = 8_640_000_000_000n;
/** 400 Gregorian years, in seconds: the calendar repeats after them. */
const CYCLE_SECONDS = 12_622_780_800n;

/**
 * An instant of `units` (seconds × `perSecond`) since the epoch, as
 * `YYYY-MM-DDTHH:MM:SS.<digits>` (+ `Z` when `zulu`). Years before 0 or beyond 9999 use ISO's
 * expanded form (`+294247-01-10…`, `-000044-03-15…`, year 0 being 1 BC), also beyond the
 * ±275,760 years a Date represents (DuckDB's TIMESTAMP reaches 294,247): the date is then found
 * whole 400-year cycles nearer the epoch, and the cycles added back to its year.
 */
export function isoTimestamp(units: bigint, perSecond: bigint, digits: number, zulu: boolean): string {
  const [seconds, fraction] = split(units, perSecond);
  const cycles = seconds > DATE_RANGE_SECONDS || seconds < -DATE_RANGE_SECONDS ? seconds / CYCLE_SECONDS : 0n;
  const date = new Date(Number(seconds - cycles * CYCLE_SECONDS) * 1000);
  const year = date.getUTCFullYear() + Number(cycles) * 400;
  const yearText =
    year >= 0 && year <= 9999
      ? String(year).padStart(4, '0')
      : `${year < 0 ? '-' : '+'}${String(Math.abs(year)).padStart(6, '0')}`;
  const iso = date.toISOString();
  const rest = iso.slice(iso.indexOf('-', 1), iso.indexOf('.'));
  const scaled = (fraction * 10n ** BigInt(digits)) / perSecond;
  return `${yearText}${rest}.${scaled.toString().padStart(digits, '0')}${zulu ? 'Z' : ''}`;
}

/** A time of day of `units` (seconds × `perSecond`) since midnight, as `HH:MM:SS.<digits>`. */
export function isoTime(units: bigint, perSecond: bigint, digits: number): string {
  const [seconds, fraction] = split(units, perSecond);
  const pad = (n: bigint): string => n.toString().padStart(2, '0');
  const scaled = (fraction * 10n ** BigInt(digits)) / perSecond;
  return `${pad(seconds / 3600n)}:${pad((seconds / 60n) % 60n)}:${pad(seconds % 60n)}.${scaled.toString().padStart(digits, '0')}`;
}

/**
 * `object[key] = value` as an own property of `object`, also for the key `__proto__` (a column or
 * struct field may be named so), which plain assignment would take as the object's prototype.
 */
export function setEntry<T>(object: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__') {
    Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    object[key] = value;
  }
}

/** `a`, `a` → `a`, `a:1` (DuckDB's scheme), so rows keyed by name lose no column. */
export function uniqueColumnNames(names: readonly string[]): string[] {
  const seen = new Set<string>();
  return names.map((name) => {
    let unique = name;
    for (let n = 1; seen.has(unique); n++) unique = `${name}:${n}`;
    seen.add(unique);
    return unique;
  });
}

/**
 * Rows as JSON object texts joined by `,` (`{"a":1,"b":"x"}`, the columns in order, by name): the
 * text `batchObjects` (arrow-json.ts) writes for a batch holding the same JSON values. Undefined
 * once the text passes `bound` characters.
 */
export function jsonObjects(
  names: readonly string[],
  rows: number,
  valueAt: (row: number, column: number) => JsonValue,
  bound = Number.POSITIVE_INFINITY,
): string | undefined {
  const keys = names.map((name) => `${JSON.stringify(name)}:`);
  let json = '';
  for (let row = 0; row < rows; row++) {
    let text = row === 0 ? '{' : ',{';
    for (let column = 0; column < keys.length; column++) {
      text += `${column === 0 ? '' : ','}${keys[column]}${JSON.stringify(valueAt(row, column))}`;
    }
    json += `${text}}`;
    if (json.length > bound) return undefined;
  }
  return json;
}

/** A parameter as it binds: a `bigint` is an integer past what a JSON number carries exactly. */
export type ScalarParam = null | boolean | number | string | bigint;

/**
 * Only scalars bind the same way in both engines; anything else is refused with its position. The
 * list itself must be an array (a JavaScript caller may pass an options object in its place).
 */
export function scalarParams(params: readonly QueryParam[]): readonly ScalarParam[] {
  if (!Array.isArray(params)) {
    const got = params === null ? 'null' : typeof params === 'object' ? 'an object' : typeof params;
    throw new InvalidParameterError(
      `Query parameters are ${got}, not an array; pass one value per placeholder as an array (query(sql, [value, …], options)), or [] for none.`,
    );
  }
  return params.map((param, index) => {
    if (
      param === null ||
      typeof param === 'boolean' ||
      typeof param === 'string' ||
      typeof param === 'bigint'
    ) {
      return param;
    }
    if (typeof param === 'number') {
      if (Number.isFinite(param)) return param;
      throw new InvalidParameterError(
        `Query parameter ${index + 1} is ${param}; pass a finite number (or the value as a string).`,
      );
    }
    throw new InvalidParameterError(
      `Query parameter ${index + 1} is ${Array.isArray(param) ? 'an array' : 'an object'}; pass null, a boolean, a number or a string (JSON-encode structured values).`,
    );
  });
}
