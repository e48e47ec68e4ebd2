/**
 * Validation of the Arrow schemas recorded in metadata.json, in the JSON form the Rust arrow crate
 * gives `Schema`/`Field`/`DataType` with serde (externally tagged enums: `"Int64"`,
 * `{"Timestamp":["Microsecond",null]}`, `{"List":{...field...}}`). Unknown types are reported by
 * name and never guessed. Also the inverse: writing a schema back in that full form.
 */
import { ArrowSchemaError } from './errors.js';
import {
  childPath,
  describeValue,
  expectArray,
  expectBoolean,
  expectInteger,
  expectRecord,
  expectString,
  Invalid,
  indexPath,
  isRecord,
  optional,
  readStringRecord,
} from './read-json.js';
import type { ArrowDataType, ArrowField, ArrowSchema } from './types.js';

const integerTypes = ['Int8', 'Int16', 'Int32', 'Int64', 'UInt8', 'UInt16', 'UInt32', 'UInt64'];

const primitiveTypes: ReadonlySet<string> = new Set([
  'Null',
  'Boolean',
  ...integerTypes,
  'Float16',
  'Float32',
  'Float64',
  'Utf8',
  'LargeUtf8',
  'Utf8View',
  'Binary',
  'LargeBinary',
  'BinaryView',
  'Date32',
  'Date64',
]);

const allTimeUnits = ['Second', 'Millisecond', 'Microsecond', 'Nanosecond'];
const int32Max = 2_147_483_647;

function expectOneOf(value: unknown, path: string, allowed: readonly string[]): string {
  if (typeof value === 'string' && allowed.includes(value)) return value;
  if (value === undefined) throw new Invalid(path, 'is missing');
  throw new Invalid(path, `must be one of ${allowed.join(', ')}, got ${describeValue(value)}`);
}

function expectTuple(value: unknown, path: string, length: number): readonly unknown[] {
  const tuple = expectArray(value, path);
  if (tuple.length !== length) {
    throw new Invalid(path, `must be an array of ${length} items, got ${tuple.length}`);
  }
  return tuple;
}

function decimal(maxPrecision: number) {
  return (payload: unknown, path: string): void => {
    const [precision, scale] = expectTuple(payload, path, 2);
    const p = expectInteger(precision, indexPath(path, 0), 1, maxPrecision);
    const s = expectInteger(scale, indexPath(path, 1), -128, 127);
    if (s > p) throw new Invalid(indexPath(path, 1), `scale ${s} must not exceed precision ${p}`);
  };
}

function listOf(payload: unknown, path: string): void {
  readArrowField(payload, path);
}

/** Payload checks of the parameterised variants, keyed by variant name. */
const variants: Readonly<Record<string, (payload: unknown, path: string) => void>> = {
  Timestamp: (payload, path) => {
    const [unit, tz] = expectTuple(payload, path, 2);
    expectOneOf(unit, indexPath(path, 0), allTimeUnits);
    optional(tz, (value) => expectString(value, indexPath(path, 1)));
  },
  Time32: (payload, path) => {
    expectOneOf(payload, path, ['Second', 'Millisecond']);
  },
  Time64: (payload, path) => {
    expectOneOf(payload, path, ['Microsecond', 'Nanosecond']);
  },
  Duration: (payload, path) => {
    expectOneOf(payload, path, allTimeUnits);
  },
  Interval: (payload, path) => {
    expectOneOf(payload, path, ['YearMonth', 'DayTime', 'MonthDayNano']);
  },
  Decimal32: decimal(9),
  Decimal64: decimal(18),
  Decimal128: decimal(38),
  Decimal256: decimal(76),
  FixedSizeBinary: (payload, path) => {
    expectInteger(payload, path, 0, int32Max);
  },
  List: listOf,
  LargeList: listOf,
  ListView: listOf,
  LargeListView: listOf,
  FixedSizeList: (payload, path) => {
    const [field, size] = expectTuple(payload, path, 2);
    readArrowField(field, indexPath(path, 0));
    expectInteger(size, indexPath(path, 1), 0, int32Max);
  },
  Struct: (payload, path) => {
    expectArray(payload, path).forEach((field, i) => {
      readArrowField(field, indexPath(path, i));
    });
  },
  Map: (payload, path) => {
    const [entries, sorted] = expectTuple(payload, path, 2);
    const field = readArrowField(entries, indexPath(path, 0));
    const inner = field.data_type;
    const struct = typeof inner === 'string' ? undefined : inner.Struct;
    if (!Array.isArray(struct) || struct.length !== 2) {
      throw new Invalid(
        childPath(indexPath(path, 0), 'data_type'),
        'must be a Struct of two fields (key, value) for a Map',
      );
    }
    expectBoolean(sorted, indexPath(path, 1));
  },
  Dictionary: (payload, path) => {
    const [key, value] = expectTuple(payload, path, 2);
    expectOneOf(key, indexPath(path, 0), integerTypes);
    checkDataType(value, indexPath(path, 1));
  },
};

function checkDataType(value: unknown, path: string): ArrowDataType {
  if (typeof value === 'string') {
    if (primitiveTypes.has(value)) return value;
    if (Object.hasOwn(variants, value)) {
      throw new Invalid(path, `Arrow type '${value}' needs parameters, as {"${value}": ...}`);
    }
    throw new Invalid(path, `unknown Arrow type '${value}'`);
  }
  if (!isRecord(value)) {
    if (value === undefined) throw new Invalid(path, 'is missing');
    throw new Invalid(path, `must be an Arrow type name or object, got ${describeValue(value)}`);
  }
  const keys = Object.keys(value);
  const [variant] = keys;
  if (keys.length !== 1 || variant === undefined) {
    throw new Invalid(path, `must have exactly one key naming the Arrow type, got ${keys.length}`);
  }
  const check = Object.hasOwn(variants, variant) ? variants[variant] : undefined;
  if (check === undefined) {
    const hint = primitiveTypes.has(variant) ? ` (write it as the string "${variant}")` : '';
    throw new Invalid(path, `unknown Arrow type '${variant}'${hint}`);
  }
  check(value[variant], childPath(path, variant));
  return value;
}

/** Internal reader used by the metadata parser; throws {@link Invalid} with the exact path. */
export function readArrowField(value: unknown, path: string): ArrowField {
  const field = expectRecord(value, path);
  const name = expectString(field.name, childPath(path, 'name'));
  const dataType = checkDataType(field.data_type, childPath(path, 'data_type'));
  const nullable = expectBoolean(field.nullable, childPath(path, 'nullable'));
  const dictId = optional(field.dict_id, (v) =>
    expectInteger(v, childPath(path, 'dict_id'), Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
  );
  const dictIsOrdered = optional(field.dict_is_ordered, (v) =>
    expectBoolean(v, childPath(path, 'dict_is_ordered')),
  );
  const metadata = optional(field.metadata, (v) => readStringRecord(v, childPath(path, 'metadata'))) ?? {};
  return {
    name,
    data_type: dataType,
    nullable,
    ...(dictId === undefined ? {} : { dict_id: dictId }),
    ...(dictIsOrdered === undefined ? {} : { dict_is_ordered: dictIsOrdered }),
    metadata,
  };
}

/** Internal reader used by the metadata parser; throws {@link Invalid} with the exact path. */
export function readArrowSchema(value: unknown, path: string): ArrowSchema {
  const schema = expectRecord(value, path);
  const fieldsPath = childPath(path, 'fields');
  const fields = expectArray(schema.fields, fieldsPath).map((field, i) =>
    readArrowField(field, indexPath(fieldsPath, i)),
  );
  const metadata = optional(schema.metadata, (v) => readStringRecord(v, childPath(path, 'metadata'))) ?? {};
  return { fields, metadata };
}

/**
 * Validates an Arrow schema in the arrow crate's JSON form and returns it typed. Missing field
 * `metadata` and schema `metadata` become `{}`; data types are kept exactly as given. `subject`
 * names what the schema belongs to in the error (`dataset 'orders'`).
 * @throws ArrowSchemaError naming the path of the first problem (`fields[2].data_type`).
 */
export function parseArrowSchema(value: unknown, subject = 'a schema'): ArrowSchema {
  try {
    return readArrowSchema(value, '');
  } catch (error) {
    if (error instanceof Invalid) throw new ArrowSchemaError(subject, error.path, error.problem);
    throw error;
  }
}

/**
 * The Arrow-JSON object a writer records, with every key the arrow crate's serde form requires
 * (`dict_id`, `dict_is_ordered`, `metadata`), nested fields included. The input must be valid
 * (see {@link parseArrowSchema}).
 */
export function serializeArrowSchema(schema: ArrowSchema): Record<string, unknown> {
  return { fields: schema.fields.map(serializeField), metadata: { ...schema.metadata } };
}

function serializeField(field: ArrowField): Record<string, unknown> {
  return {
    name: field.name,
    data_type: serializeDataType(field.data_type),
    nullable: field.nullable,
    dict_id: field.dict_id ?? 0,
    dict_is_ordered: field.dict_is_ordered ?? false,
    metadata: { ...field.metadata },
  };
}

function serializeDataType(type: ArrowDataType): unknown {
  if (typeof type === 'string') return type;
  const [variant, payload] = Object.entries(type)[0] ?? [];
  if (variant === undefined) return type;
  const asField = (value: unknown) => serializeField(value as ArrowField);
  switch (variant) {
    case 'List':
    case 'LargeList':
    case 'ListView':
    case 'LargeListView':
      return { [variant]: asField(payload) };
    case 'FixedSizeList':
    case 'Map': {
      const [field, second] = payload as readonly [unknown, unknown];
      return { [variant]: [asField(field), second] };
    }
    case 'Struct':
      return { [variant]: (payload as readonly unknown[]).map(asField) };
    case 'Dictionary': {
      const [key, value] = payload as readonly [ArrowDataType, ArrowDataType];
      return { [variant]: [key, serializeDataType(value)] };
    }
    default:
      return { [variant]: payload };
  }
}
