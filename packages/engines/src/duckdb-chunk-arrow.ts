/**
 * Arrow record batches made from DuckDB's data chunks column by column, the one converter every
 * Arrow consumer gets its DuckDB results from (Flight, HTTP, the embed API's `queryArrow` and
 * `queryStream`): {@link DuckDbBatchBuilder} appends whole chunks (or row ranges of them) and
 * flushes a `RecordBatch` whose schema is the type table's ({@link duckDbResultSchema}).
 *
 * Each vector is read through the bindings node-api wraps (`data_chunk_get_vector`,
 * `vector_get_data`, `vector_get_validity`): fixed-width vectors arrive as one byte copy and are
 * appended to the batch's buffer with one `set`; validity words are Arrow's LSB bitmap already;
 * no value becomes a JS object. Per-value steps remain only where the layouts differ: BOOLEAN is
 * packed to bits, DECIMAL(≤18) is sign-extended to 128 bits, INTERVAL's microseconds become
 * nanoseconds, and a VARCHAR/BLOB `string_t` (16 bytes: length, then up to 12 bytes inline or a
 * pointer) is read in two passes — lengths to offsets, then bytes — where the bytes of adjacent
 * out-of-line strings (DuckDB's string heap lays a vector's strings out one after another) are
 * copied with one binding call per run, not one per string. Lists, maps and structs recurse into
 * their child vectors (a list whose entries are not in order, such as a constant list flattened,
 * gathers its child rows). A column whose type is outside the type table is the engine's text
 * (`engineText`), the one place values are read one by one.
 *
 * The installed build hands out copies (two reads of a vector give distinct buffers); every
 * writer here copies what it reads before returning anyway, so a build that shares DuckDB's
 * memory instead is read correctly too: nothing outlives the chunk.
 */
import type {
  DuckDBDataChunk,
  DuckDBDecimalType,
  DuckDBListType,
  DuckDBMapType,
  DuckDBStructType,
  DuckDBType,
  DuckDBValue,
} from '@duckdb/node-api';
import type * as DuckDbBindings from '@duckdb/node-bindings';
import * as arrow from 'apache-arrow';
import {
  BitmapWriter,
  ByteBuffer,
  dataOf,
  grown,
  isValid,
  type Rows,
  readSize,
  rowAt,
  rowCount,
  setBit,
} from './arrow-buffers.js';
import { arrowSchemaOf, type ColumnBuilder, columnBuilder, recordBatchOf } from './arrow-results.js';
import { duckdb as api, duckdbBindings as duckdb } from './duckdb-node.js';
import { duckDbTypeToArrow } from './duckdb-types.js';
import { encodeDuckDbValue } from './duckdb-values.js';
import { QueryFailedError } from './errors.js';

const { DuckDBTypeId, DuckDBVariantValue, DuckDBVector } = api;

type Vector = DuckDbBindings.Vector;

// DuckDB's vectors are native-endian and Arrow's buffers little-endian: copied bytes would be wrong.
if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) {
  throw new Error('@ferry/engines reads DuckDB vectors as little-endian; this machine is big-endian.');
}

/** `byteCount` bytes of a vector's data (a copy, or a view copied from before it is kept). */
function vectorBytes(vector: Vector, byteCount: number): Uint8Array {
  return byteCount === 0 ? new Uint8Array(0) : duckdb.vector_get_data(vector, byteCount);
}

/** A vector's validity bytes for `size` rows (whole uint64 words), or `null` when every row is valid. */
function vectorValidity(vector: Vector, size: number): Uint8Array | null {
  if (size === 0) return null;
  return (duckdb.vector_get_validity(vector, Math.ceil(size / 64) * 8) as Uint8Array | null) ?? null;
}

/** One column of the batch being built, fed vector by vector. */
interface VectorWriter {
  readonly length: number;
  /** Bytes of the column's buffers so far. */
  readonly bytes: number;
  append(vector: Vector, rows: Rows): void;
  /** The column's Arrow data; the writer starts empty again. */
  finish(): arrow.Data;
}

type TypedArrayCtor = new (buffer: ArrayBuffer, byteOffset: number, length: number) => ArrayBufferView;

/** What every column writer keeps: its Arrow type, its row count and its validity. */
abstract class ColumnWriter implements VectorWriter {
  length = 0;
  protected readonly validity = new BitmapWriter();

  protected constructor(protected readonly type: arrow.DataType) {}

  abstract get bytes(): number;
  abstract append(vector: Vector, rows: Rows): void;
  abstract finish(): arrow.Data;

  /** The column's data over `buffers` (and its validity); the writer starts empty again. */
  protected data(buffers: Readonly<Record<string, unknown>>): arrow.Data {
    const length = this.length;
    this.length = 0;
    return dataOf(this.type, length, this.validity, buffers);
  }
}

/** A column of variable-length values (Utf8, Binary, List, Map): offsets, `length + 1` of them. */
abstract class OffsetsWriter extends ColumnWriter {
  protected offsets: Int32Array;

  protected constructor(type: arrow.DataType, capacity: number) {
    super(type);
    this.offsets = new Int32Array(capacity + 1);
  }

  /** Room for `count` more rows' offsets. */
  protected reserveOffsets(count: number): Int32Array {
    this.offsets = grown(this.offsets, this.length + count + 1);
    return this.offsets;
  }

  protected takeOffsets(): Int32Array {
    const taken = this.offsets.subarray(0, this.length + 1);
    this.offsets = new Int32Array(this.offsets.length);
    return taken;
  }
}

/**
 * A fixed-width column: DuckDB's values copied as they are (integers, floats, dates, times,
 * timestamps, DECIMAL(>18)), or, with `rewrite`, turned one by one into Arrow's layout
 * (`rewrite(source, row, target, at)` reads DuckDB's value of `row` and writes Arrow's bytes at `at`).
 */
class FixedWriter extends ColumnWriter {
  readonly #inWidth: number;
  readonly #outWidth: number;
  readonly #view: TypedArrayCtor;
  readonly #rewrite: ((source: DataView, row: number, target: DataView, at: number) => void) | undefined;
  readonly #values: ByteBuffer;

  constructor(
    type: arrow.DataType,
    widths: readonly [inWidth: number, outWidth: number],
    view: TypedArrayCtor,
    capacity: number,
    rewrite?: (source: DataView, row: number, target: DataView, at: number) => void,
  ) {
    super(type);
    [this.#inWidth, this.#outWidth] = widths;
    this.#view = view;
    this.#rewrite = rewrite;
    this.#values = new ByteBuffer(capacity * this.#outWidth);
  }

  get bytes(): number {
    return this.#values.length + (this.length >> 3);
  }

  append(vector: Vector, rows: Rows): void {
    const count = rowCount(rows);
    const size = readSize(rows);
    const source = vectorBytes(vector, size * this.#inWidth);
    const validity = vectorValidity(vector, size);
    const target = this.#values.reserve(count * this.#outWidth);
    const at = this.#values.length;
    const rewrite = this.#rewrite;
    const width = this.#outWidth;
    if (rewrite !== undefined) {
      const from = new DataView(source.buffer, source.byteOffset, source.byteLength);
      const to = new DataView(target.buffer, target.byteOffset, target.byteLength);
      for (let i = 0; i < count; i++) {
        const row = rowAt(rows, i);
        // A null row's bytes are whatever DuckDB left there: not read.
        if (isValid(validity, row)) rewrite(from, row, to, at + i * width);
      }
    } else if (rows.rows === undefined) {
      target.set(source.subarray(rows.from * width, rows.to * width), at);
    } else {
      for (let i = 0; i < count; i++) {
        const row = rows.rows[i] as number;
        target.set(source.subarray(row * width, (row + 1) * width), at + i * width);
      }
    }
    this.#values.length = at + count * width;
    this.validity.append(validity, rows);
    this.length += count;
  }

  finish(): arrow.Data {
    const values = this.#values.take();
    const elements =
      values.byteLength / (this.#view as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT;
    return this.data({ data: new this.#view(values.buffer as ArrayBuffer, values.byteOffset, elements) });
  }
}

/** BOOLEAN: one byte per value in DuckDB, one bit in Arrow. */
class BooleanWriter extends ColumnWriter {
  #values = new Uint8Array(64);

  constructor() {
    super(new arrow.Bool());
  }

  get bytes(): number {
    return this.length >> 2;
  }

  append(vector: Vector, rows: Rows): void {
    const count = rowCount(rows);
    const size = readSize(rows);
    const source = vectorBytes(vector, size);
    this.#values = grown(this.#values, ((this.length + count + 7) >> 3) + 1);
    const bits = this.#values;
    for (let i = 0; i < count; i++) {
      if (source[rowAt(rows, i)] !== 0) setBit(bits, this.length + i);
    }
    this.validity.append(vectorValidity(vector, size), rows);
    this.length += count;
  }

  finish(): arrow.Data {
    const values = this.#values.subarray(0, (this.length + 7) >> 3);
    this.#values = new Uint8Array(64);
    return this.data({ data: values });
  }
}

/** The longest string or blob column one batch may hold (Arrow's 32-bit offsets). */
const MAX_BATCH_STRING_BYTES = 2 ** 31 - 1;
const STRING_T = 16;
const INLINE = 12;

/** A pointer stored at `at`, as a number (user-space addresses stay below 2^53). */
const address = (view: DataView, at: number): number =>
  view.getUint32(at + 4, true) * 4_294_967_296 + view.getUint32(at, true);

/** VARCHAR → Utf8 and BLOB → Binary, from DuckDB's 16-byte `string_t`. */
class StringWriter extends OffsetsWriter {
  readonly #name: string;
  readonly #data = new ByteBuffer(16 * 1024);

  constructor(type: arrow.Utf8 | arrow.Binary, name: string, capacity: number) {
    super(type, capacity);
    this.#name = name;
  }

  get bytes(): number {
    return this.#data.length + this.length * 4;
  }

  append(vector: Vector, rows: Rows): void {
    const count = rowCount(rows);
    const size = readSize(rows);
    const raw = vectorBytes(vector, size * STRING_T);
    const validity = vectorValidity(vector, size);
    const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    // Pass 1: lengths (a null row has none: its string_t is not read) into offsets.
    const offsets = this.reserveOffsets(count);
    const base = this.length;
    const start = this.#data.length;
    let end = start;
    for (let i = 0; i < count; i++) {
      const row = rowAt(rows, i);
      if (isValid(validity, row)) end += view.getUint32(row * STRING_T, true);
      offsets[base + i + 1] = end;
    }
    if (end > MAX_BATCH_STRING_BYTES) {
      throw new RangeError(
        `Column '${this.#name}' holds more than 2 GiB of text in one Arrow batch; request smaller batches.`,
      );
    }
    // Pass 2: bytes. Inline strings are copied from the string_t; out-of-line ones in runs whose
    // bytes lie one after another in DuckDB's memory (one binding call per run).
    const data = this.#data.reserve(end - start);
    const buffer = raw.buffer as ArrayBuffer;
    let i = 0;
    while (i < count) {
      const at = offsets[base + i] as number;
      const length = (offsets[base + i + 1] as number) - at;
      const row = rowAt(rows, i);
      if (length <= INLINE) {
        const inline = row * STRING_T + 4;
        for (let k = 0; k < length; k++) data[at + k] = raw[inline + k] as number;
        i++;
        continue;
      }
      const pointer = row * STRING_T + 8;
      let next = address(view, pointer) + length;
      let j = i + 1;
      while (j < count) {
        const nextLength = (offsets[base + j + 1] as number) - (offsets[base + j] as number);
        if (nextLength <= INLINE) break;
        const nextAddress = address(view, rowAt(rows, j) * STRING_T + 8);
        if (nextAddress !== next) break;
        next = nextAddress + nextLength;
        j++;
      }
      const runBytes = (offsets[base + j] as number) - at;
      data.set(duckdb.get_data_from_pointer(buffer, raw.byteOffset + pointer, runBytes), at);
      i = j;
    }
    this.#data.length = end;
    this.validity.append(validity, rows);
    this.length += count;
  }

  finish(): arrow.Data {
    return this.data({ valueOffsets: this.takeOffsets(), data: this.#data.take() });
  }
}

/** LIST → List and MAP → Map (DuckDB's MAP is a list of key/value structs): offsets into one child. */
class ListWriter extends OffsetsWriter {
  readonly #child: VectorWriter;

  constructor(type: arrow.List | arrow.Map_, child: VectorWriter, capacity: number) {
    super(type, capacity);
    this.#child = child;
  }

  get bytes(): number {
    return this.#child.bytes + this.length * 4;
  }

  append(vector: Vector, rows: Rows): void {
    const count = rowCount(rows);
    const size = readSize(rows);
    // Each entry: uint64 offset, uint64 length (read as 32-bit halves: child sizes stay far below 2^32).
    const raw = vectorBytes(vector, size * 16);
    const entries = new Uint32Array(raw.buffer, raw.byteOffset, size * 4);
    const validity = vectorValidity(vector, size);
    const offsets = this.reserveOffsets(count);
    const base = this.length;
    let first = -1;
    let expected = -1;
    let inOrder = true;
    let total = 0;
    for (let i = 0; i < count; i++) {
      const row = rowAt(rows, i);
      if (isValid(validity, row)) {
        const offset = entries[row * 4] as number;
        const length = entries[row * 4 + 2] as number;
        if (length > 0) {
          if (first < 0) first = offset;
          else if (offset !== expected) inOrder = false;
          expected = offset + length;
        }
        total += length;
      }
      offsets[base + i + 1] = (offsets[base] as number) + total;
    }
    const child = duckdb.list_vector_get_child(vector);
    if (total > 0) {
      if (inOrder) this.#child.append(child, { from: first, to: first + total });
      else {
        // Entries out of order (or sharing child rows): gather them.
        const gathered = new Uint32Array(total);
        let at = 0;
        for (let i = 0; i < count; i++) {
          const row = rowAt(rows, i);
          if (!isValid(validity, row)) continue;
          const offset = entries[row * 4] as number;
          const length = entries[row * 4 + 2] as number;
          for (let k = 0; k < length; k++) gathered[at++] = offset + k;
        }
        this.#child.append(child, { rows: gathered, size: duckdb.list_vector_get_size(vector) });
      }
    }
    this.validity.append(validity, rows);
    this.length += count;
  }

  finish(): arrow.Data {
    return this.data({ valueOffsets: this.takeOffsets(), child: this.#child.finish() });
  }
}

/** STRUCT → Struct: each child vector appended for the same rows. */
class StructWriter extends ColumnWriter {
  readonly #children: readonly VectorWriter[];
  /** A MAP's entries: DuckDB has no validity for them (Arrow's entries are not nullable). */
  readonly #alwaysValid: boolean;

  constructor(type: arrow.Struct, children: readonly VectorWriter[], alwaysValid = false) {
    super(type);
    this.#children = children;
    this.#alwaysValid = alwaysValid;
  }

  get bytes(): number {
    return this.#children.reduce((sum, child) => sum + child.bytes, 0);
  }

  append(vector: Vector, rows: Rows): void {
    for (const [index, child] of this.#children.entries()) {
      child.append(duckdb.struct_vector_get_child(vector, index), rows);
    }
    if (this.#alwaysValid) this.validity.appendValid(rowCount(rows));
    else this.validity.append(vectorValidity(vector, readSize(rows)), rows);
    this.length += rowCount(rows);
  }

  finish(): arrow.Data {
    return this.data({ children: this.#children.map((child) => child.finish()) });
  }
}

/**
 * How a type outside the type table is written as text: JSON (`json`) when its JSON value is an
 * array or object, an integer's digits (`integer`) for HUGEINT, UHUGEINT and BIGNUM (VARINT: node-api
 * reads all three as bigint), the engine's text otherwise.
 */
function duckDbJsonForm(type: DuckDBType): 'json' | 'integer' | undefined {
  if (duckDbTypeToArrow(type) !== undefined) return undefined;
  switch (type.typeId) {
    case DuckDBTypeId.HUGEINT:
    case DuckDBTypeId.UHUGEINT:
    case DuckDBTypeId.BIGNUM:
      return 'integer';
    case DuckDBTypeId.UNION:
    case DuckDBTypeId.ARRAY:
    case DuckDBTypeId.LIST:
    case DuckDBTypeId.STRUCT:
    case DuckDBTypeId.MAP:
    case DuckDBTypeId.VARIANT:
      return 'json';
    default:
      return undefined;
  }
}

/**
 * A value of a type outside the type table as text: the engine's own for a string, else the text
 * the JSON answers carry. A VARIANT is its value's text (a VARIANT holding NULL is null, not `null`).
 */
function engineText(value: DuckDBValue, type?: DuckDBType): string | null {
  if (value === null) return null;
  if (value instanceof DuckDBVariantValue) return engineText(value.value);
  if (typeof value === 'string') return value;
  const encoded = encodeDuckDbValue(value, type);
  return typeof encoded === 'string' ? encoded : JSON.stringify(encoded);
}

/** A type outside the type table: node-api reads each value, written as its text (see {@link duckDbJsonForm}). */
class TextWriter implements VectorWriter {
  readonly #type: DuckDBType;
  readonly #json: boolean;
  readonly #utf8 = new arrow.Utf8();
  #builder: ColumnBuilder = columnBuilder(this.#utf8);

  constructor(type: DuckDBType) {
    this.#type = type;
    this.#json = duckDbJsonForm(type) === 'json';
  }

  get length(): number {
    return this.#builder.length;
  }

  get bytes(): number {
    return this.#builder.bytes;
  }

  append(vector: Vector, rows: Rows): void {
    const values = DuckDBVector.create(vector, readSize(rows), this.#type);
    const count = rowCount(rows);
    for (let i = 0; i < count; i++) {
      const row = rowAt(rows, i);
      const value = values.getItem(row);
      this.#builder.append(
        this.#json && value !== null
          ? JSON.stringify(encodeDuckDbValue(value, this.#type))
          : engineText(value, this.#type),
      );
    }
  }

  finish(): arrow.Data {
    const data = this.#builder.finish();
    this.#builder = columnBuilder(this.#utf8);
    return data;
  }
}

/** DECIMAL stored in 2, 4 or 8 bytes, sign-extended to Arrow's 128-bit two's complement. */
function decimalWriter(type: arrow.DataType, width: 2 | 4 | 8, capacity: number): VectorWriter {
  const low =
    width === 2
      ? (source: DataView, row: number) => source.getInt16(row * 2, true)
      : width === 4
        ? (source: DataView, row: number) => source.getInt32(row * 4, true)
        : undefined;
  return new FixedWriter(
    type,
    [width, 16],
    Uint32Array,
    capacity,
    low === undefined
      ? (source, row, target, at) => {
          const value = source.getBigInt64(row * 8, true);
          target.setBigInt64(at, value, true);
          target.setBigInt64(at + 8, value < 0n ? -1n : 0n, true);
        }
      : (source, row, target, at) => {
          const value = low(source, row);
          const sign = value < 0 ? -1 : 0;
          target.setInt32(at, value, true);
          target.setInt32(at + 4, sign, true);
          target.setInt32(at + 8, sign, true);
          target.setInt32(at + 12, sign, true);
        },
  );
}

const MAX_INTERVAL_MICROS = 9_223_372_036_854_775_807n / 1000n;

/** INTERVAL {months, days, micros} → MonthDayNano {months, days, nanos}. */
function intervalWriter(type: arrow.DataType, name: string, capacity: number): VectorWriter {
  return new FixedWriter(type, [16, 16], Int32Array, capacity, (source, row, target, at) => {
    const micros = source.getBigInt64(row * 16 + 8, true);
    if (micros > MAX_INTERVAL_MICROS || micros < -MAX_INTERVAL_MICROS) {
      throw new QueryFailedError(
        undefined,
        `column '${name}' holds an INTERVAL of ${micros} microseconds, beyond the 64-bit nanoseconds of an Arrow interval; cast it in the query (e.g. to VARCHAR).`,
      );
    }
    target.setInt32(at, source.getInt32(row * 16, true), true);
    target.setInt32(at + 4, source.getInt32(row * 16 + 4, true), true);
    target.setBigInt64(at + 8, micros * 1000n, true);
  });
}

/** A writer for a DuckDB column of `duckType` whose Arrow field type is `type`. */
function vectorWriter(
  duckType: DuckDBType,
  type: arrow.DataType,
  name: string,
  capacity: number,
): VectorWriter {
  // A column outside the type table is Utf8 whatever DuckDB holds; its text comes value by value.
  if (duckDbTypeToArrow(duckType) === undefined) return new TextWriter(duckType);
  const fixed = (width: number, view: TypedArrayCtor) =>
    new FixedWriter(type, [width, width], view, capacity);
  switch (duckType.typeId) {
    case DuckDBTypeId.BOOLEAN:
      return new BooleanWriter();
    case DuckDBTypeId.TINYINT:
      return fixed(1, Int8Array);
    case DuckDBTypeId.UTINYINT:
      return fixed(1, Uint8Array);
    case DuckDBTypeId.SMALLINT:
      return fixed(2, Int16Array);
    case DuckDBTypeId.USMALLINT:
      return fixed(2, Uint16Array);
    case DuckDBTypeId.INTEGER:
    case DuckDBTypeId.DATE:
      return fixed(4, Int32Array);
    case DuckDBTypeId.UINTEGER:
      return fixed(4, Uint32Array);
    case DuckDBTypeId.FLOAT:
      return fixed(4, Float32Array);
    case DuckDBTypeId.DOUBLE:
      return fixed(8, Float64Array);
    case DuckDBTypeId.UBIGINT:
      return fixed(8, BigUint64Array);
    case DuckDBTypeId.BIGINT:
    case DuckDBTypeId.TIME:
    case DuckDBTypeId.TIMESTAMP_S:
    case DuckDBTypeId.TIMESTAMP_MS:
    case DuckDBTypeId.TIMESTAMP:
    case DuckDBTypeId.TIMESTAMP_NS:
    case DuckDBTypeId.TIMESTAMP_TZ:
      return fixed(8, BigInt64Array);
    case DuckDBTypeId.INTERVAL:
      return intervalWriter(type, name, capacity);
    case DuckDBTypeId.DECIMAL: {
      const { width } = duckType as DuckDBDecimalType;
      if (width > 18) return fixed(16, Uint32Array);
      return decimalWriter(type, width <= 4 ? 2 : width <= 9 ? 4 : 8, capacity);
    }
    case DuckDBTypeId.VARCHAR:
    case DuckDBTypeId.BLOB:
      return new StringWriter(type as arrow.Utf8 | arrow.Binary, name, capacity);
    case DuckDBTypeId.LIST: {
      const item = (type as arrow.List).children[0] as arrow.Field;
      const child = vectorWriter((duckType as DuckDBListType).valueType, item.type, name, capacity);
      return new ListWriter(type as arrow.List, child, capacity);
    }
    case DuckDBTypeId.MAP: {
      const entries = (type as arrow.Map_).children[0] as arrow.Field<arrow.Struct>;
      const [keys, values] = entries.type.children as [arrow.Field, arrow.Field];
      const map = duckType as DuckDBMapType;
      const struct = new StructWriter(
        entries.type,
        [
          vectorWriter(map.keyType, keys.type, name, capacity),
          vectorWriter(map.valueType, values.type, name, capacity),
        ],
        true,
      );
      return new ListWriter(type as arrow.Map_, struct, capacity);
    }
    case DuckDBTypeId.STRUCT: {
      const struct = duckType as DuckDBStructType;
      const fields = (type as arrow.Struct).children;
      return new StructWriter(
        type as arrow.Struct,
        struct.entryTypes.map((entry, index) =>
          vectorWriter(entry, (fields[index] as arrow.Field).type, name, capacity),
        ),
      );
    }
    default:
      return new TextWriter(duckType);
  }
}

/** The Arrow schema of a DuckDB result: the type table's types, each field carrying DuckDB's type name. */
export function duckDbResultSchema(names: readonly string[], types: readonly DuckDBType[]): arrow.Schema {
  return arrowSchemaOf(
    types.map((type, index) => ({
      name: names[index] as string,
      type: duckDbTypeToArrow(type) ?? 'Utf8',
      typeName: type.toString(),
      jsonForm: duckDbJsonForm(type),
    })),
  );
}

/** Rows of a DuckDB result appended chunk by chunk, flushed as Arrow record batches. */
export class DuckDbBatchBuilder {
  readonly schema: arrow.Schema;
  readonly #writers: readonly VectorWriter[];
  #rows = 0;

  /**
   * `capacity`: rows a batch is expected to hold (buffers start that large); `metadata`: the
   * schema's own (a schema of its own then, not the one shared by every result of these columns).
   */
  constructor(
    names: readonly string[],
    types: readonly DuckDBType[],
    capacity = 2048,
    metadata?: ReadonlyMap<string, string>,
  ) {
    const shared = duckDbResultSchema(names, types);
    this.schema = metadata === undefined ? shared : new arrow.Schema(shared.fields, new Map(metadata));
    this.#writers = types.map((type, index) => {
      const field = this.schema.fields[index] as arrow.Field;
      return vectorWriter(type, field.type, field.name, capacity);
    });
  }

  get rows(): number {
    return this.#rows;
  }

  /** Bytes of the batch's buffers so far. */
  get bytes(): number {
    return this.#writers.reduce((sum, writer) => sum + writer.bytes, 0);
  }

  /** Appends rows `from` … `to − 1` of `chunk` (all of it by default). */
  append(chunk: DuckDBDataChunk, from = 0, to = chunk.rowCount): void {
    if (to <= from) return;
    for (const [index, writer] of this.#writers.entries()) {
      writer.append(duckdb.data_chunk_get_vector(chunk.chunk, index), { from, to });
    }
    this.#rows += to - from;
  }

  /** The batch of the rows appended so far; the builder starts empty again. */
  flush(): arrow.RecordBatch {
    const length = this.#rows;
    this.#rows = 0;
    return recordBatchOf(
      this.schema,
      length,
      this.#writers.map((writer) => writer.finish()),
    );
  }
}
