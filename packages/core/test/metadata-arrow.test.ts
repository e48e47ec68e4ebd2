import { describe, expect, it } from 'vitest';
import { ArrowSchemaError, parseArrowSchema, serializeArrowSchema } from '../src/metadata/index.js';

function field(name: string, data_type: unknown, nullable = true) {
  return { name, data_type, nullable, dict_id: 0, dict_is_ordered: false, metadata: {} };
}

function schemaOf(dataType: unknown) {
  return { fields: [field('c', dataType)], metadata: {} };
}

describe('Arrow data types in the arrow crate JSON form', () => {
  const valid: unknown[] = [
    'Null',
    'Boolean',
    'Int8',
    'Int16',
    'Int32',
    'Int64',
    'UInt8',
    'UInt16',
    'UInt32',
    'UInt64',
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
    { Timestamp: ['Microsecond', null] },
    { Timestamp: ['Nanosecond', 'UTC'] },
    { Time32: 'Millisecond' },
    { Time64: 'Microsecond' },
    { Duration: 'Second' },
    { Interval: 'MonthDayNano' },
    { Interval: 'YearMonth' },
    { Decimal128: [38, 10] },
    { Decimal256: [76, 0] },
    { FixedSizeBinary: 16 },
    { List: field('item', 'Int32') },
    { LargeList: field('item', { Struct: [field('a', 'Utf8')] }) },
    { FixedSizeList: [field('item', 'Float32'), 3] },
    { Struct: [field('a', 'Int64', false), field('b', { List: field('item', 'Utf8') })] },
    {
      Map: [
        field('entries', { Struct: [field('keys', 'Utf8', false), field('values', 'Int64')] }, false),
        false,
      ],
    },
    { Dictionary: ['Int32', 'Utf8'] },
  ];

  it.each(valid.map((type) => [JSON.stringify(type), type]))('accepts %s', (_label, type) => {
    expect(parseArrowSchema(schemaOf(type)).fields[0]?.data_type).toEqual(type);
  });

  const invalid: [unknown, string][] = [
    ['Float128', "fields[0].data_type: unknown Arrow type 'Float128'"],
    ['int64', "fields[0].data_type: unknown Arrow type 'int64'"],
    [{ Float128: [] }, "fields[0].data_type: unknown Arrow type 'Float128'"],
    [{ Int64: null }, `fields[0].data_type: unknown Arrow type 'Int64' (write it as the string "Int64")`],
    ['Timestamp', `fields[0].data_type: Arrow type 'Timestamp' needs parameters, as {"Timestamp": ...}`],
    [
      { Timestamp: ['Minute', null] },
      'fields[0].data_type.Timestamp[0]: must be one of Second, Millisecond, Microsecond, Nanosecond, got "Minute"',
    ],
    [{ Timestamp: ['Second'] }, 'fields[0].data_type.Timestamp: must be an array of 2 items, got 1'],
    [{ Timestamp: ['Second', 5] }, 'fields[0].data_type.Timestamp[1]: must be a string, got 5'],
    [
      { Time32: 'Microsecond' },
      'fields[0].data_type.Time32: must be one of Second, Millisecond, got "Microsecond"',
    ],
    [
      { Interval: 'Week' },
      'fields[0].data_type.Interval: must be one of YearMonth, DayTime, MonthDayNano, got "Week"',
    ],
    [{ Decimal128: [39, 2] }, 'fields[0].data_type.Decimal128[0]: must be an integer from 1 to 38, got 39'],
    [{ Decimal128: [10, 11] }, 'fields[0].data_type.Decimal128[1]: scale 11 must not exceed precision 10'],
    [
      { FixedSizeBinary: -1 },
      'fields[0].data_type.FixedSizeBinary: must be an integer from 0 to 2147483647, got -1',
    ],
    [{ List: { name: 'item', nullable: true } }, 'fields[0].data_type.List.data_type: is missing'],
    [
      { Struct: [field('a', 'Int64'), field('b', 'Decimal')] },
      "fields[0].data_type.Struct[1].data_type: unknown Arrow type 'Decimal'",
    ],
    [
      { Map: [field('entries', 'Utf8'), false] },
      'fields[0].data_type.Map[0].data_type: must be a Struct of two fields (key, value) for a Map',
    ],
    [
      { Dictionary: ['Utf8', 'Utf8'] },
      'fields[0].data_type.Dictionary[0]: must be one of Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, got "Utf8"',
    ],
    [
      { List: field('item', 'Int32'), Struct: [] },
      'fields[0].data_type: must have exactly one key naming the Arrow type, got 2',
    ],
    [42, 'fields[0].data_type: must be an Arrow type name or object, got 42'],
  ];

  it.each(invalid.map(([type, message]) => [JSON.stringify(type), type, message]))(
    'refuses %s',
    (_label, type, detail) => {
      expect(() => parseArrowSchema(schemaOf(type), "dataset 'orders'")).toThrow(
        `Invalid Arrow schema for dataset 'orders': ${detail}; describe it with the types the arrow crate serialises.`,
      );
    },
  );

  it('carries a stable code and the path', () => {
    try {
      parseArrowSchema(schemaOf('Float128'));
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ArrowSchemaError);
      expect(error).toMatchObject({ code: 'ERR_ARROW_SCHEMA_INVALID', path: 'fields[0].data_type' });
    }
  });

  it('requires fields', () => {
    expect(() => parseArrowSchema({ metadata: {} })).toThrow(
      'Invalid Arrow schema for a schema: fields: is missing;',
    );
  });
});

describe('serializeArrowSchema', () => {
  it('writes every key the arrow crate requires, nested fields included', () => {
    const schema = parseArrowSchema({
      fields: [
        { name: 'id', data_type: 'Int64', nullable: false },
        {
          name: 'tags',
          data_type: { List: { name: 'item', data_type: 'Utf8', nullable: true } },
          nullable: true,
          metadata: { k: 'v' },
        },
      ],
    });
    expect(serializeArrowSchema(schema)).toEqual({
      fields: [
        field('id', 'Int64', false),
        { ...field('tags', { List: field('item', 'Utf8') }), metadata: { k: 'v' } },
      ],
      metadata: {},
    });
  });
});
