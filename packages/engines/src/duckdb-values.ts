/**
 * DuckDB result values to JSON, per the shared encoding in `encode.ts`: BIGINT/HUGEINT exact
 * (strings beyond ±2^53), DECIMAL as DuckDB prints it (`"350.00"`), DATE `2026-11-29` (`infinity`, `-infinity`),
 * TIMESTAMP `2026-11-29T08:00:00.000000`, TIMESTAMPTZ the same in UTC with `Z`, TIME
 * `08:00:00.000000`, BLOB base64, LIST/ARRAY as arrays, STRUCT as objects, MAP as
 * `[{key, value}]` (keys need not be strings), UNION as `{tag, value}`, INTERVAL as
 * `{months, days, micros}`. Values are recognised by class, so nested values need no type.
 */
import type { DuckDBType, DuckDBValue } from '@duckdb/node-api';
import type { JsonValue } from '@ferry/core/base';
import { duckDbApi } from './duckdb-api.js';
import { base64, float32Number, isoTime, isoTimestamp, jsonFloat, jsonInteger, setEntry } from './encode.js';

const MICROS = 1_000_000n;
const NANOS = 1_000_000_000n;

function timestamp(
  value: { readonly isFinite: boolean; toString(): string },
  units: bigint,
  perSecond: bigint,
  digits: number,
  zulu: boolean,
): string {
  return value.isFinite ? isoTimestamp(units, perSecond, digits, zulu) : value.toString();
}

/**
 * `value` (of the column type `type`, when known) as JSON. The type tells a FLOAT from a DOUBLE,
 * which node-api reads alike as numbers: a FLOAT is written as its shortest 32-bit text.
 */
export function encodeDuckDbValue(value: DuckDBValue, type?: DuckDBType): JsonValue {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return value;
  if (typeof value === 'number') {
    return jsonFloat(type?.typeId === duckDbApi().DuckDBTypeId.FLOAT ? float32Number(value) : value);
  }
  if (typeof value === 'bigint') return jsonInteger(value);
  const {
    DuckDBArrayType,
    DuckDBArrayValue,
    DuckDBBlobValue,
    DuckDBDateValue,
    DuckDBIntervalValue,
    DuckDBListType,
    DuckDBListValue,
    DuckDBMapType,
    DuckDBMapValue,
    DuckDBStructType,
    DuckDBStructValue,
    DuckDBTimeNSValue,
    DuckDBTimestampMillisecondsValue,
    DuckDBTimestampNanosecondsValue,
    DuckDBTimestampSecondsValue,
    DuckDBTimestampTZValue,
    DuckDBTimestampValue,
    DuckDBTimeValue,
    DuckDBUnionType,
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
    const item =
      type instanceof DuckDBListType || type instanceof DuckDBArrayType ? type.valueType : undefined;
    return value.items.map((entry) => encodeDuckDbValue(entry, item));
  }
  if (value instanceof DuckDBStructValue) {
    const struct = type instanceof DuckDBStructType ? type : undefined;
    const object: { [key: string]: JsonValue } = {};
    for (const [key, entry] of Object.entries(value.entries)) {
      const entryType = struct?.entryTypes[struct.entryIndexes[key] as number];
      setEntry(object, key, encodeDuckDbValue(entry, entryType));
    }
    return object;
  }
  if (value instanceof DuckDBMapValue) {
    const map = type instanceof DuckDBMapType ? type : undefined;
    return value.entries.map((entry) => ({
      key: encodeDuckDbValue(entry.key, map?.keyType),
      value: encodeDuckDbValue(entry.value, map?.valueType),
    }));
  }
  if (value instanceof DuckDBUnionValue) {
    const member =
      type instanceof DuckDBUnionType
        ? type.memberTypes[type.tagMemberIndexes[value.tag] as number]
        : undefined;
    return { tag: value.tag, value: encodeDuckDbValue(value.value, member) };
  }
  if (value instanceof DuckDBIntervalValue) {
    return { months: value.months, days: value.days, micros: jsonInteger(value.micros) };
  }
  if (value instanceof DuckDBVariantValue) return encodeDuckDbValue(value.value);
  // DECIMAL, DATE, UUID, BIT, TIME WITH TIME ZONE, GEOMETRY: DuckDB's own text form is exact.
  return value.toString();
}
