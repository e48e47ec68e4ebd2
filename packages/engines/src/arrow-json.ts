/**
 * Arrow record batches as the JSON and CSV text the HTTP API answers with, column by column and
 * without building row objects: {@link batchText} gives, for each column, the JSON text of a row's
 * value and its CSV cell. The encoding is the engines' own (`encode.ts`, `duckdb-values.ts`), so a
 * row streamed from Arrow reads exactly as the same row answered by `query()`: integers as numbers
 * within ±(2^53−1) and as strings beyond, non-finite floats as strings (a FLOAT as the shortest
 * text of its 32-bit value), DECIMAL as DuckDB prints
 * it, DATE / TIME / TIMESTAMP as ISO text (infinities as `infinity`), BLOB base64, INTERVAL as
 * `{months, days, micros}`, MAP as `[{key, value}]`, lists and structs as arrays and objects. A
 * column outside the type table is Utf8 holding the engine's text; its field's
 * {@link JSON_FORM_METADATA} says when that text is JSON (UNION, fixed-size ARRAY, nested values
 * holding such types) or an integer (HUGEINT, UHUGEINT, BIGNUM), so those come back as the JSON value they are.
 *
 * A CSV cell is what `formats.ts` has always written: empty for null, a string value as it is,
 * anything else as its JSON text.
 */
import { isAscii } from 'node:buffer';
import type { DuckDBTimestampValue } from '@duckdb/node-api';
import * as arrow from 'apache-arrow';
import { JSON_FORM_METADATA } from './arrow-results.js';
import { duckDbApi } from './duckdb-api.js';
import { encodeDuckDbValue } from './duckdb-values.js';
import { base64, float32Number, setEntry } from './encode.js';

/** How one column reads as text: `json(row)` its value's JSON, `cell(row)` its CSV cell. */
export interface ColumnText {
  json(row: number): string;
  cell(row: number): string;
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** `true` when row `row` of `data` is valid. */
function validity(data: arrow.Data): (row: number) => boolean {
  const bitmap = data.nullBitmap;
  if (bitmap === undefined || bitmap.length === 0 || data.nullCount === 0) return () => true;
  const offset = data.offset;
  return (row) => {
    const bit = offset + row;
    return ((bitmap[bit >> 3] as number) & (1 << (bit & 7))) !== 0;
  };
}

const integerJson = (value: bigint): string =>
  value <= MAX_SAFE && value >= -MAX_SAFE ? value.toString() : `"${value}"`;

const floatJson = (value: number): string => (Number.isFinite(value) ? String(value) : `"${value}"`);

/** A column whose JSON value is a string (`text(row)`): JSON-quoted, and the string itself as a CSV cell. */
function stringColumn(valid: (row: number) => boolean, text: (row: number) => string): ColumnText {
  return {
    json: (row) => (valid(row) ? JSON.stringify(text(row)) : 'null'),
    cell: (row) => (valid(row) ? text(row) : ''),
  };
}

/** A column whose JSON value is not a string (`json(row)`): its JSON text in both. */
function jsonColumn(valid: (row: number) => boolean, json: (row: number) => string): ColumnText {
  return { json: (row) => (valid(row) ? json(row) : 'null'), cell: (row) => (valid(row) ? json(row) : '') };
}

/** A column whose values are JSON values of either kind (nested values, unions). */
function valueColumn(valid: (row: number) => boolean, value: (row: number) => unknown): ColumnText {
  return {
    json: (row) => (valid(row) ? JSON.stringify(value(row)) : 'null'),
    cell: (row) => {
      if (!valid(row)) return '';
      const decoded = value(row);
      return typeof decoded === 'string' ? decoded : JSON.stringify(decoded);
    },
  };
}

const decoder = new TextDecoder();

/** Utf8 values as strings: one decode of the batch's bytes when they are ASCII, else one per value. */
function utf8Reader(data: arrow.Data): (row: number) => string {
  const offsets = data.valueOffsets as Int32Array;
  const bytes = data.values as Uint8Array;
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (isAscii(buffer)) {
    const whole = buffer.toString('latin1');
    return (row) => whole.slice(offsets[row] as number, offsets[row + 1] as number);
  }
  return (row) => decoder.decode(bytes.subarray(offsets[row] as number, offsets[row + 1] as number));
}

/** A value of a nested column as the JSON value the engines' encoding gives it. */
function valueReader(data: arrow.Data): (row: number) => unknown {
  const valid = validity(data);
  switch (data.typeId) {
    case arrow.Type.List: {
      const offsets = data.valueOffsets as Int32Array;
      const item = valueReader(data.children[0] as arrow.Data);
      return (row) => {
        if (!valid(row)) return null;
        const items: unknown[] = [];
        for (let at = offsets[row] as number; at < (offsets[row + 1] as number); at++) items.push(item(at));
        return items;
      };
    }
    case arrow.Type.Struct: {
      const fields = (data.type as arrow.Struct).children;
      const children = data.children.map((child) => valueReader(child));
      return (row) => {
        if (!valid(row)) return null;
        const object: Record<string, unknown> = {};
        for (const [index, field] of fields.entries()) setEntry(object, field.name, children[index]?.(row));
        return object;
      };
    }
    case arrow.Type.Map: {
      const offsets = data.valueOffsets as Int32Array;
      const entries = data.children[0] as arrow.Data;
      const key = valueReader(entries.children[0] as arrow.Data);
      const value = valueReader(entries.children[1] as arrow.Data);
      return (row) => {
        if (!valid(row)) return null;
        const pairs: { key: unknown; value: unknown }[] = [];
        for (let at = offsets[row] as number; at < (offsets[row + 1] as number); at++) {
          pairs.push({ key: key(at), value: value(at) });
        }
        return pairs;
      };
    }
    default: {
      // A scalar inside a nested value: its JSON text parsed back (one encoding for both).
      const text = columnText(data, undefined);
      return (row) => (valid(row) ? JSON.parse(text.json(row)) : null);
    }
  }
}

/** The 128-bit two's complement integer of a Decimal128 value. */
function decimalValue(words: Uint32Array, row: number): bigint {
  const at = row * 4;
  const low = BigInt(words[at] as number) | (BigInt(words[at + 1] as number) << 32n);
  const high = BigInt(words[at + 2] as number) | (BigInt(words[at + 3] as number) << 32n);
  return BigInt.asIntN(128, (high << 64n) | low);
}

/** DuckDB's value of a timestamp in `unit` (`zoned`: with a time zone), to encode as DuckDB's rows are. */
function timestampValue(unit: arrow.TimeUnit, zoned: boolean): (value: bigint) => DuckDBTimestampValue {
  const api = duckDbApi();
  const make: Readonly<Record<number, (value: bigint) => object>> = {
    [arrow.TimeUnit.SECOND]: (value) => new api.DuckDBTimestampSecondsValue(value),
    [arrow.TimeUnit.MILLISECOND]: (value) => new api.DuckDBTimestampMillisecondsValue(value),
    [arrow.TimeUnit.MICROSECOND]: (value) =>
      zoned ? new api.DuckDBTimestampTZValue(value) : new api.DuckDBTimestampValue(value),
    [arrow.TimeUnit.NANOSECOND]: (value) => new api.DuckDBTimestampNanosecondsValue(value),
  };
  return make[unit] as (value: bigint) => DuckDBTimestampValue;
}

/** How column `data` reads as text; `form` is its field's {@link JSON_FORM_METADATA}. */
function columnText(data: arrow.Data, form: string | undefined): ColumnText {
  const valid = validity(data);
  const values = data.values as ArrayLike<number | bigint> | undefined;
  switch (data.typeId) {
    case arrow.Type.Null:
      return { json: () => 'null', cell: () => '' };
    case arrow.Type.Bool: {
      const bits = data.values as Uint8Array;
      const offset = data.offset;
      return jsonColumn(valid, (row) =>
        ((bits[(offset + row) >> 3] as number) & (1 << ((offset + row) & 7))) !== 0 ? 'true' : 'false',
      );
    }
    case arrow.Type.Int: {
      if ((data.type as arrow.Int).bitWidth === 64) {
        const wide = values as ArrayLike<bigint>;
        return {
          json: (row) => (valid(row) ? integerJson(wide[row] as bigint) : 'null'),
          cell: (row) => (valid(row) ? (wide[row] as bigint).toString() : ''),
        };
      }
      const narrow = values as ArrayLike<number>;
      return jsonColumn(valid, (row) => String(narrow[row]));
    }
    case arrow.Type.Float: {
      const floats = values as ArrayLike<number>;
      // A FLOAT: the shortest text of its 32-bit value.
      const single = (data.type as arrow.Float).precision === arrow.Precision.SINGLE;
      const value = single
        ? (row: number) => float32Number(floats[row] as number)
        : (row: number) => floats[row] as number;
      return {
        json: (row) => (valid(row) ? floatJson(value(row)) : 'null'),
        cell: (row) => (valid(row) ? String(value(row)) : ''),
      };
    }
    case arrow.Type.Utf8: {
      const text = utf8Reader(data);
      if (form === 'json') return jsonColumn(valid, text);
      if (form === 'integer') {
        return {
          json: (row) => (valid(row) ? integerJson(BigInt(text(row))) : 'null'),
          cell: (row) => (valid(row) ? text(row) : ''),
        };
      }
      return stringColumn(valid, text);
    }
    case arrow.Type.Binary: {
      const offsets = data.valueOffsets as Int32Array;
      const bytes = data.values as Uint8Array;
      return stringColumn(valid, (row) =>
        base64(bytes.subarray(offsets[row] as number, offsets[row + 1] as number)),
      );
    }
    case arrow.Type.Date: {
      const days = values as ArrayLike<number>;
      const { DuckDBDateValue } = duckDbApi();
      return stringColumn(
        valid,
        (row) => encodeDuckDbValue(new DuckDBDateValue(days[row] as number)) as string,
      );
    }
    case arrow.Type.Time: {
      const units = values as ArrayLike<bigint>;
      const nanos = (data.type as arrow.Time).unit === arrow.TimeUnit.NANOSECOND;
      const { DuckDBTimeNSValue, DuckDBTimeValue } = duckDbApi();
      return stringColumn(valid, (row) => {
        const value = units[row] as bigint;
        return encodeDuckDbValue(nanos ? new DuckDBTimeNSValue(value) : new DuckDBTimeValue(value)) as string;
      });
    }
    case arrow.Type.Timestamp: {
      const type = data.type as arrow.Timestamp;
      const make = timestampValue(type.unit, type.timezone !== null);
      const units = values as ArrayLike<bigint>;
      return stringColumn(valid, (row) => encodeDuckDbValue(make(units[row] as bigint)) as string);
    }
    case arrow.Type.Decimal: {
      const { precision, scale } = data.type as arrow.Decimal;
      const words = values as Uint32Array;
      const { DuckDBDecimalValue } = duckDbApi();
      return stringColumn(valid, (row) =>
        new DuckDBDecimalValue(decimalValue(words, row), precision, scale).toString(),
      );
    }
    case arrow.Type.Interval: {
      const parts = values as Int32Array;
      const nanos = new BigInt64Array(parts.buffer, parts.byteOffset, parts.length / 2);
      const { DuckDBIntervalValue } = duckDbApi();
      return jsonColumn(valid, (row) =>
        JSON.stringify(
          encodeDuckDbValue(
            new DuckDBIntervalValue(
              parts[row * 4] as number,
              parts[row * 4 + 1] as number,
              (nanos[row * 2 + 1] as bigint) / 1000n,
            ),
          ),
        ),
      );
    }
    case arrow.Type.List:
    case arrow.Type.Struct:
    case arrow.Type.Map:
      return valueColumn(valid, valueReader(data));
    default: {
      // Types this package never produces (a caller's own batches): apache-arrow's text of the value.
      const vector = arrow.makeVector(data);
      return stringColumn(valid, (row) => String(vector.get(row)));
    }
  }
}

/** The text of every column of `batch`, in field order. */
export function batchText(batch: arrow.RecordBatch): ColumnText[] {
  return batch.schema.fields.map((field, index) => {
    const data = batch.getChildAt(index)?.data[0] as arrow.Data;
    return columnText(data, field.metadata.get(JSON_FORM_METADATA));
  });
}

/**
 * Each row of `batch` as a JSON object text, `{"a":1,"b":"x"}`: its columns in field order, by
 * their names. `columns` are the batch's {@link batchText} (passed when already made).
 */
export function batchObjects(
  batch: arrow.RecordBatch,
  columns: readonly ColumnText[] = batchText(batch),
): string[] {
  const keys = batch.schema.fields.map((field) => `${JSON.stringify(field.name)}:`);
  const lines = new Array<string>(batch.numRows);
  for (let row = 0; row < batch.numRows; row++) {
    let text = '{';
    for (let index = 0; index < columns.length; index++) {
      text += `${index === 0 ? '' : ','}${keys[index]}${(columns[index] as ColumnText).json(row)}`;
    }
    lines[row] = `${text}}`;
  }
  return lines;
}
