/**
 * The Arrow-JSON vocabulary of the snapshot-store type table, shared by both adapters: builders
 * for fields as a Spice writer records them (`dict_id: 0, dict_is_ordered: false, metadata: {}`),
 * and {@link canonicalArrowType}, which validates a recorded type against the table and folds
 * the variants one engine column stores alike (`LargeUtf8` → `Utf8`, `Date64` → `Date32`, any
 * time zone → `"UTC"`, child names and nullability fixed). Types outside the table are reported
 * by name ({@link UnmappedArrowTypeError}), never guessed.
 */
import { type ArrowDataType, type ArrowField, formatDataType, registerErrors } from '@ferry/core/base';

export function arrowField(name: string, dataType: ArrowDataType, nullable: boolean): ArrowField {
  return { name, data_type: dataType, nullable, dict_id: 0, dict_is_ordered: false, metadata: {} };
}

/** `{"List": item}` with the arrow crate's default child (`item`, nullable). */
export function arrowList(item: ArrowDataType): ArrowDataType {
  return { List: arrowField('item', item, true) };
}

/** `{"Struct": [fields]}`; engines do not record child nullability, so children are nullable. */
export function arrowStruct(fields: readonly (readonly [string, ArrowDataType])[]): ArrowDataType {
  return { Struct: fields.map(([name, type]) => arrowField(name, type, true)) };
}

/** `{"Map": [entries, false]}` with the arrow crate's MapBuilder names (`entries`, `keys`, `values`). */
export function arrowMap(key: ArrowDataType, value: ArrowDataType): ArrowDataType {
  const entries = { Struct: [arrowField('keys', key, false), arrowField('values', value, true)] };
  return { Map: [arrowField('entries', entries, false), false] };
}

/** The time zone a DuckDB TIMESTAMPTZ is reported with (DuckDB stores instants in UTC). */
export const TIMESTAMPTZ_ZONE = 'UTC';

/** A recorded Arrow type outside the snapshot-store type table. */
export class UnmappedArrowTypeError extends Error {
  /** The offending (possibly nested) type, in its JSON form. */
  readonly typeName: string;

  constructor(type: unknown) {
    const typeName = formatDataType(type as ArrowDataType);
    super(`Arrow type ${typeName} is not in the snapshot-store type table`);
    this.name = 'UnmappedArrowTypeError';
    this.typeName = typeName;
  }
}
registerErrors({ UnmappedArrowTypeError });

const sameAs: Readonly<Record<string, string>> = {
  Boolean: 'Boolean',
  Int8: 'Int8',
  Int16: 'Int16',
  Int32: 'Int32',
  Int64: 'Int64',
  UInt8: 'UInt8',
  UInt16: 'UInt16',
  UInt32: 'UInt32',
  UInt64: 'UInt64',
  Float16: 'Float32',
  Float32: 'Float32',
  Float64: 'Float64',
  Utf8: 'Utf8',
  LargeUtf8: 'Utf8',
  Utf8View: 'Utf8',
  Binary: 'Binary',
  LargeBinary: 'Binary',
  BinaryView: 'Binary',
  Date32: 'Date32',
  Date64: 'Date32',
};
const timeUnits: ReadonlySet<unknown> = new Set(['Second', 'Millisecond', 'Microsecond', 'Nanosecond']);

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function childType(field: unknown, whole: unknown): ArrowDataType {
  if (!isRecord(field) || typeof field.name !== 'string' || !('data_type' in field)) {
    throw new UnmappedArrowTypeError(whole);
  }
  return canonicalArrowType(field.data_type as ArrowDataType);
}

/**
 * The canonical form of a recorded type: what a DuckDB column able to store it reports through
 * this package's mapping. Two types a column stores alike have equal canonical forms. Throws
 * {@link UnmappedArrowTypeError} for anything outside the type table.
 */
export function canonicalArrowType(type: ArrowDataType): ArrowDataType {
  if (typeof type === 'string') {
    const same = sameAs[type];
    if (same === undefined) throw new UnmappedArrowTypeError(type);
    return same;
  }
  const keys = Object.keys(type);
  const variant = keys[0];
  if (keys.length !== 1 || variant === undefined) throw new UnmappedArrowTypeError(type);
  const payload = type[variant];
  switch (variant) {
    case 'Decimal128': {
      const [precision, scale] = Array.isArray(payload) ? payload : [];
      if (
        Number.isInteger(precision) &&
        Number.isInteger(scale) &&
        (precision as number) >= 1 &&
        (precision as number) <= 38 &&
        (scale as number) >= 0 &&
        (scale as number) <= (precision as number)
      ) {
        return { Decimal128: [precision, scale] };
      }
      break;
    }
    case 'FixedSizeBinary':
      if (Number.isInteger(payload)) return 'Binary';
      break;
    case 'Time64':
      if (payload === 'Microsecond') return { Time64: 'Microsecond' };
      break;
    case 'Timestamp': {
      const [unit, zone] = Array.isArray(payload) ? payload : [];
      if (timeUnits.has(unit) && zone === null) return { Timestamp: [unit, null] };
      if (timeUnits.has(unit) && typeof zone === 'string')
        return { Timestamp: ['Microsecond', TIMESTAMPTZ_ZONE] };
      break;
    }
    case 'Interval':
      if (payload === 'MonthDayNano') return { Interval: 'MonthDayNano' };
      break;
    case 'List':
    case 'LargeList':
      return arrowList(childType(payload, type));
    case 'Struct':
      if (Array.isArray(payload)) {
        return arrowStruct(
          payload.map((field) => {
            const child = childType(field, type);
            return [(field as { name: string }).name, child] as const;
          }),
        );
      }
      break;
    case 'Map': {
      const [entries] = Array.isArray(payload) ? payload : [];
      const struct = isRecord(entries) && isRecord(entries.data_type) ? entries.data_type.Struct : undefined;
      if (Array.isArray(struct) && struct.length === 2) {
        return arrowMap(childType(struct[0], type), childType(struct[1], type));
      }
      break;
    }
  }
  throw new UnmappedArrowTypeError(type);
}

/** The top-level name of a type: `"Int64"`, or the variant of an object type (`Decimal128`, `List`). */
export function arrowTypeName(type: ArrowDataType): string {
  return typeof type === 'string' ? type : (Object.keys(type)[0] ?? '?');
}
