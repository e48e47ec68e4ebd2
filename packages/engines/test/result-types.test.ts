/**
 * Result column types to Arrow: every type name DuckDB reports for a real query reads back into
 * the type it was printed from (so it maps exactly as `duckDbTypeToArrow` maps the type itself),
 * types outside the table stay unmapped, and SQLite names map by affinity.
 */
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { arrowField, arrowList, arrowMap, arrowStruct } from '../src/arrow-types.js';
import { duckDbTypeToArrow } from '../src/duckdb-types.js';
import { duckDbTypeFromName, resultColumnArrowType } from '../src/result-types.js';

describe('DuckDB result type names', () => {
  let instance: DuckDBInstance;

  beforeAll(async () => {
    instance = await DuckDBInstance.create(':memory:');
  });

  afterAll(() => {
    instance.closeSync();
  });

  it('read back into the type they were printed from, for every type of a real result', async () => {
    const connection = await instance.connect();
    try {
      const reader = await connection.runAndReadAll(`SELECT
        true AS b, 1::TINYINT AS i8, 1::SMALLINT AS i16, 1::INTEGER AS i32, 1::BIGINT AS i64,
        1::UTINYINT AS u8, 1::UBIGINT AS u64, 1.5::FLOAT AS f32, 1.5::DOUBLE AS f64,
        'x' AS s, 'x'::BLOB AS bin, DATE '2026-01-01' AS d, TIME '10:00' AS t,
        TIMESTAMP '2026-01-01' AS ts, '2026-01-01'::TIMESTAMP_S AS ts_s, '2026-01-01'::TIMESTAMP_MS AS ts_ms,
        '2026-01-01'::TIMESTAMP_NS AS ts_ns, now() AS tstz, INTERVAL 1 DAY AS iv,
        12.50::DECIMAL(18,2) AS dec, [1, 2] AS list, [[1]] AS nested,
        {'a b': 1, 'q"uote': 'x', 'inner': {'y': [1.5]}} AS st, MAP {'k': 1} AS m,
        1::HUGEINT AS huge, uuid() AS id, [1, 2]::INTEGER[2] AS fixed, 'a'::ENUM('a', 'b') AS e`);
      const names = reader.columnNames();
      const types = reader.columnTypes();
      for (const [index, type] of types.entries()) {
        const name = type.toString();
        const mapped = duckDbTypeToArrow(type);
        expect(resultColumnArrowType('duckdb', name), `${names[index]}: ${name}`).toEqual(mapped);
        if (mapped !== undefined) expect(duckDbTypeFromName(name)?.toString()).toBe(name);
      }
      const arrow = Object.fromEntries(
        names.map((name, index) => [
          name,
          resultColumnArrowType('duckdb', (types[index] as object).toString()),
        ]),
      );
      expect(arrow).toMatchObject({
        b: 'Boolean',
        i32: 'Int32',
        i64: 'Int64',
        u64: 'UInt64',
        f64: 'Float64',
        s: 'Utf8',
        bin: 'Binary',
        d: 'Date32',
        t: { Time64: 'Microsecond' },
        ts: { Timestamp: ['Microsecond', null] },
        ts_s: { Timestamp: ['Second', null] },
        tstz: { Timestamp: ['Microsecond', 'UTC'] },
        dec: { Decimal128: [18, 2] },
        list: arrowList('Int32'),
        nested: arrowList(arrowList('Int32')),
        st: arrowStruct([
          ['a b', 'Int32'],
          ['q"uote', 'Utf8'],
          ['inner', arrowStruct([['y', arrowList({ Decimal128: [2, 1] })]])],
        ]),
        m: arrowMap('Utf8', 'Int32'),
      });
      for (const unmapped of ['huge', 'id', 'fixed', 'e']) expect(arrow[unmapped], unmapped).toBeUndefined();
    } finally {
      connection.closeSync();
    }
  });

  it('leaves names it cannot read unmapped instead of guessing', () => {
    for (const name of [
      '',
      'BIGINTEGER',
      'DECIMAL(18)',
      'STRUCT("a" INTEGER',
      'INTEGER[]x',
      'MAP(VARCHAR)',
    ]) {
      expect(duckDbTypeFromName(name), name).toBeUndefined();
      expect(resultColumnArrowType('duckdb', name), name).toBeUndefined();
    }
  });
});

describe('SQLite result type names', () => {
  it('map declared types and storage classes by affinity', () => {
    expect(resultColumnArrowType('sqlite', 'INTEGER')).toBe('Int64');
    expect(resultColumnArrowType('sqlite', 'REAL')).toBe('Float64');
    expect(resultColumnArrowType('sqlite', 'TEXT')).toBe('Utf8');
    expect(resultColumnArrowType('sqlite', 'VARCHAR(20)')).toBe('Utf8');
    expect(resultColumnArrowType('sqlite', 'BLOB')).toBe('Binary');
    expect(resultColumnArrowType('sqlite', 'DECIMAL(10,2)')).toEqual({ Decimal128: [10, 2] });
    expect(resultColumnArrowType('sqlite', 'NULL')).toBe('Null');
    expect(resultColumnArrowType('sqlite', 'WHATEVER')).toBeUndefined();
  });

  it('builds fields the way a writer records them', () => {
    expect(arrowField('n', resultColumnArrowType('sqlite', 'INTEGER') ?? 'Utf8', true)).toEqual({
      name: 'n',
      data_type: 'Int64',
      nullable: true,
      dict_id: 0,
      dict_is_ordered: false,
      metadata: {},
    });
  });
});
