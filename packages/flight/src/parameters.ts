/**
 * Prepared statement parameters as clients bind them: one Arrow record batch sent with DoPut,
 * one column per placeholder (Spice's SDKs name them `$1`, `$2`; other drivers use any names, in
 * placeholder order), one row. The values become the runtime's parameters: 64-bit integers beyond
 * 2^53 as bigints (bound as integers), decimals as exact strings, dates and timestamps as ISO text
 * (which both engines compare and cast), booleans, floats and text as they are.
 */
import type { JsonValue, QueryParam } from '@ferry/core/base';
import { type NumberedStatement, numberNamedParameters, tokenizeSql } from '@ferry/engines/sql';
import {
  DataType,
  type Decimal,
  type Field,
  type RecordBatch,
  type Time,
  type Timestamp,
  TimeUnit,
  type Vector,
} from 'apache-arrow';
import { FlightRequestError } from './errors.js';

const PER_SECOND: Readonly<Record<TimeUnit, bigint>> = {
  [TimeUnit.SECOND]: 1n,
  [TimeUnit.MILLISECOND]: 1_000n,
  [TimeUnit.MICROSECOND]: 1_000_000n,
  [TimeUnit.NANOSECOND]: 1_000_000_000n,
};
const DIGITS: Readonly<Record<TimeUnit, number>> = {
  [TimeUnit.SECOND]: 0,
  [TimeUnit.MILLISECOND]: 3,
  [TimeUnit.MICROSECOND]: 6,
  [TimeUnit.NANOSECOND]: 9,
};

/** A 64-bit integer as a number when one carries it exactly, else as the bigint (bound as the integer). */
function integerParam(value: bigint): number | bigint {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value)
    : value;
}

function decimalText(unscaled: bigint, scale: number): string {
  const negative = unscaled < 0n;
  const digits = (negative ? -unscaled : unscaled).toString().padStart(scale + 1, '0');
  const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return negative ? `-${text}` : text;
}

/**
 * `units` since the epoch (or midnight) as `YYYY-MM-DDTHH:MM:SS[.fff…]`, in whole seconds plus a
 * fraction. A timestamp's fraction has six digits whatever its unit (nine only for nanoseconds
 * past the microsecond): SQLite compares timestamps as the text the snapshot stores, ISO 8601 to
 * the microsecond, so 08:00:03 in milliseconds must read `08:00:03.000000` there too.
 */
function isoOf(units: bigint, unit: TimeUnit, withDate: boolean): string {
  const per = PER_SECOND[unit];
  let seconds = units / per;
  let fraction = units % per;
  if (fraction < 0n) {
    fraction += per;
    seconds -= 1n;
  }
  let digits = DIGITS[unit];
  if (withDate && !(unit === TimeUnit.NANOSECOND && fraction % 1_000n !== 0n)) {
    fraction = (fraction * PER_SECOND[TimeUnit.MICROSECOND]) / per;
    digits = 6;
  }
  const tail = digits === 0 ? '' : `.${fraction.toString().padStart(digits, '0')}`;
  if (!withDate) {
    const s = Number(seconds);
    const pad = (n: number) => String(n).padStart(2, '0');
    return `${pad(Math.floor(s / 3600))}:${pad(Math.floor(s / 60) % 60)}:${pad(s % 60)}${tail}`;
  }
  return `${new Date(Number(seconds) * 1000).toISOString().slice(0, 19)}${tail}`;
}

function unscaledOf(words: Uint32Array, at: number): bigint {
  let value = 0n;
  for (let w = 3; w >= 0; w--) value = (value << 32n) | BigInt(words[at * 4 + w] as number);
  return BigInt.asIntN(128, value);
}

function parameterValue(vector: Vector, field: Field, index: number): QueryParam {
  if (!vector.isValid(0)) return null;
  const type = field.type as DataType;
  const raw = vector.data[0]?.values as ArrayLike<number | bigint> | undefined;
  if (DataType.isNull(type)) return null;
  if (DataType.isBool(type)) return vector.get(0) as boolean;
  if (DataType.isInt(type)) {
    const value = vector.get(0) as number | bigint;
    return typeof value === 'bigint' ? integerParam(value) : value;
  }
  if (DataType.isFloat(type)) return vector.get(0) as number;
  if (DataType.isUtf8(type) || DataType.isLargeUtf8(type)) return vector.get(0) as string;
  if (DataType.isDecimal(type)) {
    return decimalText(unscaledOf(raw as Uint32Array, vector.data[0]?.offset ?? 0), (type as Decimal).scale);
  }
  if (DataType.isDate(type)) return new Date(vector.get(0) as number).toISOString().slice(0, 10);
  if (DataType.isTimestamp(type) && raw !== undefined) {
    const t = type as Timestamp;
    const text = isoOf(BigInt(raw[vector.data[0]?.offset ?? 0] as bigint), t.unit, true);
    return t.timezone === null || t.timezone === undefined ? text : `${text}Z`;
  }
  if (DataType.isTime(type) && raw !== undefined) {
    return isoOf(BigInt(raw[vector.data[0]?.offset ?? 0] as bigint | number), (type as Time).unit, false);
  }
  if (DataType.isDictionary(type)) {
    const value = vector.get(0) as unknown;
    if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) return value as JsonValue;
  }
  throw new FlightRequestError(
    `Parameter ${index + 1} ('${field.name}') is of Arrow type ${String(type)}, which cannot be bound; send integers, floats, decimals, booleans, text, dates or timestamps.`,
  );
}

const NUMBERED = /^\$?(\d+)$/;

/** The one parameter row of the batches a client bound (no rows: no parameters). */
export function parametersOf(batches: readonly RecordBatch[]): QueryParam[] {
  const rows = batches.reduce((sum, batch) => sum + batch.numRows, 0);
  if (rows === 0) return [];
  if (rows > 1) {
    throw new FlightRequestError(
      `The parameter batch holds ${rows} rows; bind exactly one row of parameters per execution.`,
    );
  }
  const batch = batches.find((candidate) => candidate.numRows > 0) as RecordBatch;
  const fields = batch.schema.fields.map((field, column) => ({ field, column }));
  // `$1`, `$2`, … columns bind by number; any other names bind in column order.
  if (fields.every(({ field }) => NUMBERED.test(field.name))) {
    fields.sort(
      (a, b) => Number(NUMBERED.exec(a.field.name)?.[1]) - Number(NUMBERED.exec(b.field.name)?.[1]),
    );
  }
  return fields.map(({ field, column }, index) => {
    const vector = batch.getChildAt(column) as Vector;
    return parameterValue(vector, field, index);
  });
}

/** The names of a statement's `$name` markers (not `$1`), as written without the `$`. */
function markerNames(sql: string): Set<string> {
  const names = new Set<string>();
  for (const token of tokenizeSql(sql)) {
    if (token.kind === 'parameter' && /^\$[^\d]/.test(token.text)) names.add(token.text.slice(1));
  }
  return names;
}

/**
 * The statement and values a bound parameter row runs with. Columns named for every `$name`
 * marker of the statement (Spice's SDKs bind named parameters so, one column per name, in the
 * order of their object) fill the markers by name, as the HTTP API's named parameters do;
 * otherwise the values bind by position ({@link parametersOf}).
 */
export function boundStatement(sql: string, batches: readonly RecordBatch[]): NumberedStatement {
  const params = parametersOf(batches);
  const columns = batches.find((batch) => batch.numRows > 0)?.schema.fields.map((field) => field.name) ?? [];
  const bare = columns.map((name) => (name.startsWith('$') ? name.slice(1) : name));
  const markers = markerNames(sql);
  if (markers.size === 0 || ![...markers].every((name) => bare.includes(name))) return { sql, params };
  return numberNamedParameters(
    sql,
    Object.fromEntries(bare.map((name, index) => [name, params[index] ?? null])),
  );
}

/**
 * How many parameters a statement takes: the highest `$n`/`?n`, the count of bare `?`, or of
 * distinct `$name`s (DuckDB binds a list of values to them in order of first appearance).
 */
export function placeholderCount(sql: string): number {
  let numbered = 0;
  let bare = 0;
  const names = new Set<string>();
  for (const token of tokenizeSql(sql)) {
    if (token.kind !== 'parameter') continue;
    const match = /^[$?](\d+)$/.exec(token.text);
    if (match !== null) numbered = Math.max(numbered, Number(match[1]));
    else if (token.text === '?') bare++;
    else if (token.text.startsWith('$')) names.add(token.text);
  }
  return Math.max(numbered, bare, names.size);
}
