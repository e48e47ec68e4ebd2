/**
 * DuckDB result values to JSON, per the shared encoding in `encode.ts`: BIGINT/HUGEINT exact
 * (strings beyond ±2^53), DECIMAL as DuckDB prints it (`"350.00"`), DATE `2026-11-29` (`infinity`, `-infinity`),
 * TIMESTAMP `2026-11-29T08:00:00.000000`, TIMESTAMPTZ the same in UTC with `Z`, TIME
 * `08:00:00.000000`, BLOB base64, LIST/ARRAY as arrays, STRUCT as objects, MAP as
 * `[{key, value}]` (keys need not be strings), UNION as `{tag, value}`, INTERVAL as
 * `{months, days, micros}`. Values are recognised by class, so nested values need no type.
 */
import type { DuckDBValue } from '@duckdb/node-api';
import type { JsonValue } from '@ferry/core/base';
import { duckDbApi } from './duckdb-api.js';
import { base64, isoTime, isoTimestamp, jsonFloat, jsonInteger, setEntry } from './encode.js';

const MICROS = 1_000_000n;
const NANOS = 1_000_000_000n;

function timestamp(
  value: { readonly isFinite: boolean; toString(): string },
  units: bigint,
  perSecond: bigint,
  digits: number,
  zulu: boolean,
): string {
  return (value.isFinite ? isoTimestamp(units, perSecond, digits, zulu) : undefined) ?? value.toString();
}

export function encodeDuckDbValue(value: DuckDBValue): JsonValue {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return value;
  if (typeof value === 'number') return jsonFloat(value);
  if (typeof value === 'bigint') return jsonInteger(value);
  const {
    DuckDBArrayValue,
    DuckDBBlobValue,
    DuckDBDateValue,
    DuckDBIntervalValue,
    DuckDBListValue,
    DuckDBMapValue,
    DuckDBStructValue,
    DuckDBTimeNSValue,
    DuckDBTimestampMillisecondsValue,
    DuckDBTimestampNanosecondsValue,
    DuckDBTimestampSecondsValue,
    DuckDBTimestampTZValue,
    DuckDBTimestampValue,
    DuckDBTimeValue,
    DuckDBUnionValue,
    DuckDBVariantValue,
  } = duckDbApi();
  if (value instanceof DuckDBTimestampValue) return timestamp(value, value.micros, MICROS, 6, false);
  if (value instanceof DuckDBTimestampTZValue) return timestamp(value, value.micros, MICROS, 6, true);
  if (value instanceof DuckDBTimestampSecondsValue) {
    return timestamp(value, value.seconds * MICROS, MICROS, 6, false);
  }
  if (value instanceof DuckDBTimestampMillisecondsValue) {
    return timestamp(value, value.millis * 1000n, MICROS, 6, false);
  }
  if (value instanceof DuckDBTimestampNanosecondsValue) return timestamp(value, value.nanos, NANOS, 9, false);
  if (value instanceof DuckDBDateValue) {
    // DuckDB's infinite dates are the extreme day numbers, which node-api prints as those days.
    if (value.days === DuckDBDateValue.PosInf.days) return 'infinity';
    if (value.days === DuckDBDateValue.NegInf.days) return '-infinity';
    return value.toString();
  }
  if (value instanceof DuckDBTimeValue) return isoTime(value.micros, MICROS, 6);
  if (value instanceof DuckDBTimeNSValue) return isoTime(value.nanos, NANOS, 9);
  if (value instanceof DuckDBBlobValue) return base64(value.bytes);
  if (value instanceof DuckDBListValue || value instanceof DuckDBArrayValue) {
    return value.items.map(encodeDuckDbValue);
  }
  if (value instanceof DuckDBStructValue) {
    const object: { [key: string]: JsonValue } = {};
    for (const [key, entry] of Object.entries(value.entries)) setEntry(object, key, encodeDuckDbValue(entry));
    return object;
  }
  if (value instanceof DuckDBMapValue) {
    return value.entries.map((entry) => ({
      key: encodeDuckDbValue(entry.key),
      value: encodeDuckDbValue(entry.value),
    }));
  }
  if (value instanceof DuckDBUnionValue) return { tag: value.tag, value: encodeDuckDbValue(value.value) };
  if (value instanceof DuckDBIntervalValue) {
    return { months: value.months, days: value.days, micros: jsonInteger(value.micros) };
  }
  if (value instanceof DuckDBVariantValue) return encodeDuckDbValue(value.value);
  // DECIMAL, DATE, UUID, BIT, TIME WITH TIME ZONE, GEOMETRY: DuckDB's own text form is exact.
  return value.toString();
}
