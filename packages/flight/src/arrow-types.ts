/**
 * Column types of a runtime result as Arrow types. A result names each column's type as its
 * engine does (DuckDB `DECIMAL(18,2)`, `STRUCT("a" INTEGER)`; SQLite's declared type or storage
 * class); this maps the name to the Arrow JSON of the snapshot-store type table (SQLite through
 * the engines' own mapping, DuckDB by parsing the name into the same vocabulary), then to an
 * `apache-arrow` DataType. Names outside the table (HUGEINT, UUID, ENUM, UNION, BIT, TIMETZ, …)
 * become Utf8, carrying the engine's text form.
 */
import type { ArrowDataType } from '@ferry/core';
import {
  arrowList,
  arrowMap,
  arrowStruct,
  sqliteDeclaredTypeToArrow,
  TIMESTAMPTZ_ZONE,
} from '@ferry/engines';
import {
  Binary,
  Bool,
  type DataType,
  DateDay,
  Decimal,
  Field,
  Float32,
  Float64,
  Int8,
  Int16,
  Int32,
  Int64,
  IntervalMonthDayNano,
  List,
  Map_,
  Struct,
  TimeMicrosecond,
  Timestamp,
  TimeUnit,
  Uint8,
  Uint16,
  Uint32,
  Uint64,
  Utf8,
} from 'apache-arrow';

const DUCKDB_SCALARS: Readonly<Record<string, ArrowDataType>> = {
  BOOLEAN: 'Boolean',
  TINYINT: 'Int8',
  SMALLINT: 'Int16',
  INTEGER: 'Int32',
  BIGINT: 'Int64',
  UTINYINT: 'UInt8',
  USMALLINT: 'UInt16',
  UINTEGER: 'UInt32',
  UBIGINT: 'UInt64',
  FLOAT: 'Float32',
  DOUBLE: 'Float64',
  VARCHAR: 'Utf8',
  BLOB: 'Binary',
  DATE: 'Date32',
  TIME: { Time64: 'Microsecond' },
  TIMESTAMP_S: { Timestamp: ['Second', null] },
  TIMESTAMP_MS: { Timestamp: ['Millisecond', null] },
  TIMESTAMP: { Timestamp: ['Microsecond', null] },
  TIMESTAMP_NS: { Timestamp: ['Nanosecond', null] },
  'TIMESTAMP WITH TIME ZONE': { Timestamp: ['Microsecond', TIMESTAMPTZ_ZONE] },
  INTERVAL: { Interval: 'MonthDayNano' },
};

/** A cursor over one DuckDB type name (`MAP(VARCHAR, STRUCT("a b" INTEGER[]))`). */
class TypeNameReader {
  #at = 0;
  constructor(readonly text: string) {}

  #skipSpace(): void {
    while (this.text[this.#at] === ' ') this.#at++;
  }

  eat(symbol: string): boolean {
    this.#skipSpace();
    if (!this.text.startsWith(symbol, this.#at)) return false;
    this.#at += symbol.length;
    return true;
  }

  /** Words up to the next bracket, comma or quote: `TIMESTAMP WITH TIME ZONE`, `DECIMAL`. */
  words(): string {
    this.#skipSpace();
    const start = this.#at;
    while (this.#at < this.text.length && !'()[],"\''.includes(this.text[this.#at] as string)) this.#at++;
    return this.text.slice(start, this.#at).trim();
  }

  /** A struct field name: `"quoted ""name"""` or a bare word. */
  name(): string {
    this.#skipSpace();
    if (this.text[this.#at] !== '"') {
      const start = this.#at;
      while (this.#at < this.text.length && this.text[this.#at] !== ' ') this.#at++;
      return this.text.slice(start, this.#at);
    }
    let name = '';
    for (this.#at++; this.#at < this.text.length; this.#at++) {
      const c = this.text[this.#at] as string;
      if (c === '"') {
        if (this.text[this.#at + 1] !== '"') {
          this.#at++;
          return name;
        }
        this.#at++;
      }
      name += c;
    }
    return name;
  }

  number(): number | undefined {
    this.#skipSpace();
    const match = /^\d+/.exec(this.text.slice(this.#at));
    if (match === null) return undefined;
    this.#at += match[0].length;
    return Number(match[0]);
  }

  get done(): boolean {
    this.#skipSpace();
    return this.#at >= this.text.length;
  }
}

function readDuckDbType(reader: TypeNameReader): ArrowDataType | undefined {
  const head = reader.words().toUpperCase();
  let type: ArrowDataType | undefined;
  if (head === 'DECIMAL' || head === 'NUMERIC') {
    if (!reader.eat('(')) return undefined;
    const precision = reader.number();
    const scale = reader.eat(',') ? reader.number() : 0;
    if (!reader.eat(')') || precision === undefined || scale === undefined || precision > 38)
      return undefined;
    type = { Decimal128: [precision, scale] };
  } else if (head === 'STRUCT') {
    if (!reader.eat('(')) return undefined;
    const fields: [string, ArrowDataType][] = [];
    do {
      const name = reader.name();
      const child = readDuckDbType(reader);
      if (child === undefined) return undefined;
      fields.push([name, child]);
    } while (reader.eat(','));
    if (!reader.eat(')')) return undefined;
    type = arrowStruct(fields);
  } else if (head === 'MAP') {
    if (!reader.eat('(')) return undefined;
    const key = readDuckDbType(reader);
    if (key === undefined || !reader.eat(',')) return undefined;
    const value = readDuckDbType(reader);
    if (value === undefined || !reader.eat(')')) return undefined;
    type = arrowMap(key, value);
  } else {
    type = DUCKDB_SCALARS[head];
    if (type === undefined) return undefined;
  }
  // `T[]` is a LIST, `T[3]` an ARRAY: both arrive as JSON arrays and become Arrow lists.
  while (reader.eat('[')) {
    reader.number();
    if (!reader.eat(']')) return undefined;
    type = arrowList(type);
  }
  return type;
}

/** The Arrow JSON of a DuckDB type name, or `undefined` for a type outside the table. */
export function duckDbTypeNameToArrow(name: string): ArrowDataType | undefined {
  const reader = new TypeNameReader(name);
  const type = readDuckDbType(reader);
  return reader.done ? type : undefined;
}

/** The Arrow JSON of a result column's type name, per the engine that produced it. */
export function columnTypeToArrow(engine: string | undefined, typeName: string): ArrowDataType | undefined {
  return engine === 'duckdb' ? duckDbTypeNameToArrow(typeName) : sqliteDeclaredTypeToArrow(typeName);
}

const TIME_UNITS: Readonly<Record<string, TimeUnit>> = {
  Second: TimeUnit.SECOND,
  Millisecond: TimeUnit.MILLISECOND,
  Microsecond: TimeUnit.MICROSECOND,
  Nanosecond: TimeUnit.NANOSECOND,
};

const ARROW_SCALARS: Readonly<Record<string, () => DataType>> = {
  Boolean: () => new Bool(),
  Int8: () => new Int8(),
  Int16: () => new Int16(),
  Int32: () => new Int32(),
  Int64: () => new Int64(),
  UInt8: () => new Uint8(),
  UInt16: () => new Uint16(),
  UInt32: () => new Uint32(),
  UInt64: () => new Uint64(),
  Float32: () => new Float32(),
  Float64: () => new Float64(),
  Utf8: () => new Utf8(),
  Binary: () => new Binary(),
  Date32: () => new DateDay(),
};

interface JsonField {
  readonly name: string;
  readonly data_type: ArrowDataType;
  readonly nullable: boolean;
}

function fieldOf(json: JsonField): Field {
  return new Field(json.name, toDataType(json.data_type), json.nullable);
}

/** The `apache-arrow` DataType of an Arrow JSON type (only the type table's vocabulary). */
export function toDataType(type: ArrowDataType): DataType {
  if (typeof type === 'string') {
    const make = ARROW_SCALARS[type];
    if (make === undefined) throw new TypeError(`Arrow type ${type} has no mapping`);
    return make();
  }
  const [variant, payload] = Object.entries(type)[0] ?? [];
  switch (variant) {
    case 'Decimal128': {
      const [precision, scale] = payload as [number, number];
      return new Decimal(scale, precision, 128);
    }
    case 'Timestamp': {
      const [unit, zone] = payload as [string, string | null];
      return new Timestamp(TIME_UNITS[unit] ?? TimeUnit.MICROSECOND, zone);
    }
    case 'Time64':
      return new TimeMicrosecond();
    case 'Interval':
      return new IntervalMonthDayNano();
    case 'List':
      return new List(fieldOf(payload as JsonField));
    case 'Struct':
      return new Struct((payload as JsonField[]).map(fieldOf));
    case 'Map': {
      const [entries, sorted] = payload as [JsonField, boolean];
      return new Map_(fieldOf(entries) as Field<Struct>, sorted);
    }
  }
  throw new TypeError(`Arrow type ${JSON.stringify(type)} has no mapping`);
}
