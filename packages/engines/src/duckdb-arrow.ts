/**
 * DuckDB result values as the plain values the Arrow builders take (`arrow-results.ts`), directed
 * by the column's Arrow type: dates as days, timestamps and times as bigint in their unit,
 * decimals unscaled, intervals as `{ months, days, nanos }`, nested values recursively. A value
 * whose column has no Arrow form in the type table (HUGEINT, UUID, ENUM, …) is reported as the
 * engine's text, the same text the JSON answers carry.
 */
import {
  DuckDBArrayValue,
  DuckDBBlobValue,
  DuckDBDateValue,
  DuckDBDecimalValue,
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
  type DuckDBValue,
  DuckDBVariantValue,
} from '@duckdb/node-api';
import * as arrow from 'apache-arrow';
import type { ArrowValue } from './arrow-results.js';
import { encodeDuckDbValue } from './duckdb-values.js';

function text(value: DuckDBValue): string {
  const encoded = encodeDuckDbValue(value);
  return typeof encoded === 'string' ? encoded : JSON.stringify(encoded);
}

/** `value` as the plain value of an Arrow column of `type`. */
export function duckDbArrowValue(value: DuckDBValue, type: arrow.DataType): ArrowValue {
  if (value === null) return null;
  if (value instanceof DuckDBVariantValue) return duckDbArrowValue(value.value, type);
  switch (type.typeId) {
    case arrow.Type.Utf8:
      return typeof value === 'string' ? value : text(value);
    case arrow.Type.Binary:
      return value instanceof DuckDBBlobValue ? value.bytes : text(value);
    case arrow.Type.Date:
      return value instanceof DuckDBDateValue ? value.days : null;
    case arrow.Type.Time:
      if (value instanceof DuckDBTimeValue) return value.micros;
      return value instanceof DuckDBTimeNSValue ? value.nanos : null;
    case arrow.Type.Timestamp:
      if (value instanceof DuckDBTimestampValue || value instanceof DuckDBTimestampTZValue)
        return value.micros;
      if (value instanceof DuckDBTimestampSecondsValue) return value.seconds;
      if (value instanceof DuckDBTimestampMillisecondsValue) return value.millis;
      return value instanceof DuckDBTimestampNanosecondsValue ? value.nanos : null;
    case arrow.Type.Decimal:
      return value instanceof DuckDBDecimalValue ? value.value : null;
    case arrow.Type.Interval:
      return value instanceof DuckDBIntervalValue
        ? { months: value.months, days: value.days, nanos: value.micros * 1000n }
        : null;
    case arrow.Type.List: {
      const item = (type as arrow.List).valueType;
      return value instanceof DuckDBListValue || value instanceof DuckDBArrayValue
        ? value.items.map((entry) => duckDbArrowValue(entry, item))
        : null;
    }
    case arrow.Type.Struct: {
      if (!(value instanceof DuckDBStructValue)) return null;
      const record: Record<string, ArrowValue> = {};
      for (const field of (type as arrow.Struct).children) {
        record[field.name] = duckDbArrowValue(value.entries[field.name] ?? null, field.type);
      }
      return record;
    }
    case arrow.Type.Map: {
      if (!(value instanceof DuckDBMapValue)) return null;
      const [keyField, valueField] = ((type as arrow.Map_).children[0] as arrow.Field<arrow.Struct>).type
        .children as [arrow.Field, arrow.Field];
      return value.entries.map(
        (entry) =>
          [
            duckDbArrowValue(entry.key, keyField.type),
            duckDbArrowValue(entry.value, valueField.type),
          ] as const,
      );
    }
    default:
      // Booleans, integers (64-bit ones are bigint already) and floats are the engine's own values.
      return typeof value === 'object' ? text(value) : value;
  }
}
