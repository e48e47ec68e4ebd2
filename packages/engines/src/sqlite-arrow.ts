/**
 * SQLite results as Arrow record batches whose column types hold the values actually stored.
 * SQLite does not enforce declared types, so a column's Arrow type is decided from its declared
 * type (`sqliteDeclaredTypeToArrow`) and the values of the result's first batch, before the schema
 * is sent:
 *
 *   - the declared type, when every value of the first batch fits it exactly (BOOLEAN holds 0 and
 *     1; DECIMAL(p,s) holds numbers and decimal text exact at scale s within p digits; DATE holds
 *     `YYYY-MM-DD` text, DATETIME/TIMESTAMP ISO-8601 text to the microsecond);
 *   - otherwise (and for expressions, untyped and NUMERIC columns) the type of the values
 *     themselves, widened to hold them all: integers → Int64, reals → Float64, integers and reals
 *     → Float64, any text among them → Utf8 (numbers as their decimal text), blobs → Binary.
 *
 * A value that does not fit (a blob among text or numbers, an integer beyond 2^53 in a Float64
 * column, a later batch's value of a kind the first batch did not have) is never turned into null:
 * the query fails with an error naming the column, the row and the cast that answers it.
 *
 * A join across engines types each column of an SQLite dataset it reads into DuckDB by this same
 * rule (`SqliteColumnPlanner`), over every row of the table (duckdb-import.ts).
 */
import type { ArrowDataType } from '@ferry/core/base';
import type * as arrow from 'apache-arrow';
import { Schema } from 'apache-arrow';
import { type ArrowValue, arrowSchemaOf, RecordBatchBuilder } from './arrow-results.js';
import { QueryFailedError } from './errors.js';
import { type SqliteValue, storageClass } from './sqlite-engine.js';
import { sqliteDeclaredTypeToArrow } from './sqlite-types.js';

/** A column's conversion: the Arrow value of a non-null SQLite value, or `undefined` when it does not fit. */
export type Converter = (value: Exclude<SqliteValue, null>) => ArrowValue | undefined;

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** Days since the epoch of `YYYY-MM-DD` text naming a real day (proleptic Gregorian, as `Date`). */
function isoDays(text: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return undefined;
  const year = Number(text.slice(0, 4));
  const month = Number(text.slice(5, 7));
  const day = Number(text.slice(8, 10));
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const length =
    month === 2 ? (leap ? 29 : 28) : month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
  if (month < 1 || month > 12 || day < 1 || day > length) return undefined;
  // Days from civil (H. Hinnant): years counted from March, in eras of 400 years.
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  return (
    era * 146_097 +
    yearOfEra * 365 +
    Math.floor(yearOfEra / 4) -
    Math.floor(yearOfEra / 100) +
    dayOfYear -
    719_468
  );
}

/** Microseconds since the epoch of ISO-8601 text (`T` or space; up to 6 fraction digits, more only if zero; optional `Z`). */
function isoMicros(text: string): bigint | undefined {
  const match = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z?$/.exec(text);
  if (match === null) return undefined;
  const days = isoDays(match[1] as string);
  const time = match[2] as string;
  const hours = Number(time.slice(0, 2));
  const minutes = Number(time.slice(3, 5));
  const seconds = Number(time.slice(6, 8));
  if (days === undefined || hours > 23 || minutes > 59 || seconds > 59) return undefined;
  const fraction = match[3] ?? '';
  if (/[1-9]/.test(fraction.slice(6))) return undefined;
  const micros = Number(fraction.slice(0, 6).padEnd(6, '0'));
  // Whole seconds fit a double exactly (years 0000-9999: under 2^39).
  return BigInt(days * 86_400 + hours * 3600 + minutes * 60 + seconds) * 1_000_000n + BigInt(micros);
}

/** The unscaled value of decimal text exact at `scale` within `precision` digits. */
function unscaledText(text: string, precision: number, scale: number): bigint | undefined {
  const match = /^([+-]?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (match === null) return undefined;
  const whole = (match[2] as string).replace(/^0+(?=\d)/, '');
  const fraction = (match[3] ?? '').replace(/0+$/, '');
  if (fraction.length > scale || (whole === '0' ? 0 : whole.length) > precision - scale) return undefined;
  const magnitude = BigInt(`${whole}${fraction.padEnd(scale, '0')}`);
  return match[1] === '-' ? -magnitude : magnitude;
}

function decimal(precision: number, scale: number): Converter {
  const factor = 10n ** BigInt(scale);
  return (value) => {
    if (typeof value === 'bigint') {
      const magnitude = value < 0n ? -value : value;
      return magnitude.toString().length <= precision - scale || magnitude === 0n
        ? value * factor
        : undefined;
    }
    if (typeof value === 'number') {
      // A real fits when the decimal at this scale reads back as the same double.
      if (!Number.isFinite(value) || Math.abs(value) >= 1e21) return undefined;
      const text = value.toFixed(scale);
      return Number(text) === value ? unscaledText(text, precision, scale) : undefined;
    }
    return typeof value === 'string' ? unscaledText(value.trim(), precision, scale) : undefined;
  };
}

const int64: Converter = (value) => (typeof value === 'bigint' ? value : undefined);
const float64: Converter = (value) => {
  if (typeof value === 'number') return value;
  return typeof value === 'bigint' && value <= MAX_SAFE && value >= -MAX_SAFE ? Number(value) : undefined;
};
const utf8: Converter = (value) => (value instanceof Uint8Array ? undefined : String(value));
const binary: Converter = (value) => (value instanceof Uint8Array ? value : undefined);
const boolean: Converter = (value) => (value === 0n ? false : value === 1n ? true : undefined);
const date32: Converter = (value) => (typeof value === 'string' ? isoDays(value) : undefined);
const timestamp: Converter = (value) => (typeof value === 'string' ? isoMicros(value) : undefined);

/** The converters of the scalar types other than Utf8. */
const CONVERTERS: Readonly<Record<string, Converter>> = {
  Int64: int64,
  Float64: float64,
  Binary: binary,
  Boolean: boolean,
  Date32: date32,
};

/** The converter of a type `sqliteDeclaredTypeToArrow` gives, or of a value type. */
function converterOf(type: ArrowDataType): Converter {
  if (typeof type === 'string') return CONVERTERS[type] ?? utf8;
  if ('Decimal128' in type) {
    const [precision, scale] = type.Decimal128 as [number, number];
    return decimal(precision, scale);
  }
  return 'Timestamp' in type ? timestamp : utf8;
}

/** The Arrow type a value is of itself (what {@link planColumn} gives a column of that one kind). */
function ownType(value: Exclude<SqliteValue, null>): ArrowDataType {
  if (typeof value === 'bigint') return 'Int64';
  if (typeof value === 'number') return 'Float64';
  return typeof value === 'string' ? 'Utf8' : 'Binary';
}

/** The storage class a value type is named by (the type name of an expression column). */
const CLASS_OF_TYPE: Readonly<Record<string, string>> = {
  Int64: 'INTEGER',
  Float64: 'REAL',
  Utf8: 'TEXT',
  Binary: 'BLOB',
};

/** A column's Arrow type and how each of its values becomes one. */
export interface ColumnPlan {
  readonly type: ArrowDataType;
  readonly typeName: string | undefined;
  readonly convert: Converter;
  /** Its declared type (every value fits it), not the values' own. */
  readonly declared: boolean;
}

/** A column whose values no one Arrow type holds: a BLOB in one row, another kind in another. */
export interface MixedBlobColumn {
  readonly blobRow: number;
  readonly otherClass: string;
  readonly otherRow: number;
}

/**
 * The one rule that types an SQLite column from its declared type and its values (see the top of
 * this file), fed a value at a time: a result's first batch (`SqliteBatchBuilder`), or every row of
 * a table read into DuckDB for a join across engines (duckdb-import.ts).
 */
export class SqliteColumnPlanner {
  readonly #declared: string | null;
  readonly #declaredType: ArrowDataType | undefined;
  readonly #declaredConvert: Converter | undefined;
  #fitsDeclared = true;
  /** Each storage class among the values, and the (1-based) row it came first in. */
  readonly #classes = new Map<string, number>();

  constructor(declared: string | null) {
    this.#declared = declared;
    this.#declaredType = declared === null ? undefined : sqliteDeclaredTypeToArrow(declared);
    this.#declaredConvert = this.#declaredType === undefined ? undefined : converterOf(this.#declaredType);
  }

  /**
   * Takes the value of `row` (1-based) into account; answers it as the declared type converts it,
   * while every value so far fits that type (else undefined).
   */
  add(value: SqliteValue, row: number): ArrowValue | undefined {
    if (value === null) return null;
    let converted: ArrowValue | undefined;
    if (this.#fitsDeclared && this.#declaredConvert !== undefined) {
      converted = this.#declaredConvert(value);
      if (converted === undefined) this.#fitsDeclared = false;
    } else this.#fitsDeclared = false;
    const kind = storageClass(value);
    if (!this.#classes.has(kind)) this.#classes.set(kind, row);
    return converted;
  }

  /** The column's plan, or where it mixes a BLOB with another kind (no one type holds both). */
  plan(): ColumnPlan | MixedBlobColumn {
    const declaredType = this.#declaredType;
    if (declaredType !== undefined && this.#fitsDeclared) {
      return {
        type: declaredType,
        typeName: this.#declared ?? undefined,
        convert: this.#declaredConvert as Converter,
        declared: true,
      };
    }
    const classes = this.#classes;
    const blobRow = classes.get('BLOB');
    if (blobRow !== undefined && classes.size > 1) {
      const [otherClass, otherRow] = [...classes].find(([kind]) => kind !== 'BLOB') as [string, number];
      return { blobRow, otherClass, otherRow };
    }
    let type: ArrowDataType;
    if (blobRow !== undefined) type = 'Binary';
    else if (classes.has('TEXT')) type = 'Utf8';
    else if (classes.has('REAL')) type = 'Float64';
    else if (classes.has('INTEGER')) type = 'Int64';
    else type = declaredType ?? 'Utf8';
    const typeName = this.#declared ?? (classes.size > 0 ? CLASS_OF_TYPE[type as string] : undefined);
    return { type, typeName, convert: converterOf(type), declared: false };
  }
}

/** A column's type from its declared type and its first batch's values; throws for values no one type holds. */
function planColumn(
  name: string,
  declared: string | null,
  sample: readonly SqliteValue[][],
  index: number,
): ColumnPlan {
  const planner = new SqliteColumnPlanner(declared);
  for (const [row, record] of sample.entries()) planner.add(record[index] ?? null, row + 1);
  const plan = planner.plan();
  if ('type' in plan) return plan;
  throw new QueryFailedError(
    undefined,
    `column '${name}' holds a BLOB in row ${plan.blobRow} and ${plan.otherClass} in row ${plan.otherRow}, and one Arrow column holds one type; cast it in the query (CAST(${name} AS BLOB), or hex(${name}) for text).`,
  );
}

/**
 * Rows of one SQLite result as Arrow batches: the column types decided from the declared types and
 * `sample` (the rows of the first batch), then rows appended one by one.
 */
export class SqliteBatchBuilder {
  readonly schema: arrow.Schema;
  readonly #plans: readonly ColumnPlan[];
  readonly #names: readonly string[];
  readonly #builder: RecordBatchBuilder;
  /** Rows appended so far, over every batch (the row number errors name). */
  #row = 0;

  /** `metadata`: the schema's own (a schema of its own then, not the one shared by results of these columns). */
  constructor(
    names: readonly string[],
    declared: readonly (string | null)[],
    sample: readonly SqliteValue[][],
    metadata?: ReadonlyMap<string, string>,
  ) {
    this.#names = names;
    this.#plans = names.map((name, index) => planColumn(name, declared[index] ?? null, sample, index));
    const shared = arrowSchemaOf(
      this.#plans.map((plan, index) => ({
        name: names[index] as string,
        type: plan.type,
        typeName: plan.typeName,
      })),
    );
    this.schema = metadata === undefined ? shared : new Schema(shared.fields, new Map(metadata));
    this.#builder = new RecordBatchBuilder(this.schema);
  }

  /**
   * Whether every value of `rows` is of its column's type itself (no declared type converts it, no
   * column mixes kinds): those rows, each value as its own JSON form (`encodeSqliteValue`), are then
   * the JSON text of their batch. Asked only by a sink that takes text, so a stream pays nothing.
   */
  natural(rows: readonly SqliteValue[][]): boolean {
    return this.#plans.every((plan, index) =>
      rows.every((row) => {
        const value = row[index] ?? null;
        return value === null || ownType(value) === plan.type;
      }),
    );
  }

  get rows(): number {
    return this.#builder.rows;
  }

  get bytes(): number {
    return this.#builder.bytes;
  }

  /** Appends one row; a value its column's type cannot hold fails the query, naming column and row. */
  append(row: readonly SqliteValue[]): void {
    this.#row++;
    const values = new Array<ArrowValue>(row.length);
    for (let index = 0; index < row.length; index++) {
      const value = row[index] ?? null;
      if (value === null) {
        values[index] = null;
        continue;
      }
      const converted = (this.#plans[index] as ColumnPlan).convert(value);
      if (converted === undefined) throw this.#misfit(index, value);
      values[index] = converted;
    }
    this.#builder.appendRow(values);
  }

  #misfit(index: number, value: Exclude<SqliteValue, null>): QueryFailedError {
    const name = this.#names[index] as string;
    const type = this.schema.fields[index]?.type;
    const kind = storageClass(value);
    const shown = value instanceof Uint8Array ? `${value.byteLength} bytes` : String(value).slice(0, 40);
    return new QueryFailedError(
      undefined,
      `column '${name}' row ${this.#row} holds ${kind} ${shown}, which its Arrow ${type} column (typed from the first rows) cannot hold; cast it in the query (e.g. CAST(${name} AS ${kind === 'BLOB' ? 'BLOB' : 'TEXT'})).`,
    );
  }

  /** The batch of the rows appended since the last flush. */
  flush(): arrow.RecordBatch {
    return this.#builder.flush();
  }
}
