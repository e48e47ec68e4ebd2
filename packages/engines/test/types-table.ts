/**
 * A DuckDB table of every type (the type table's and those outside it), 5 000 rows with nulls,
 * short and out-of-line strings, empty and nested lists, structs and maps: the converter's and
 * the JSON encoder's tests read it, from a read-only instance ({@link openTypesTable}).
 */
import { join } from 'node:path';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { makeDuckDbFile, makeTempDir } from './files.js';
export const TYPES_TABLE: readonly string[] = [
  `CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')`,
  `CREATE TABLE t AS SELECT
      i,
      CASE WHEN i % 5 = 0 THEN NULL ELSE (i % 100 - 50)::TINYINT END AS i8,
      (i * 3 - 3000)::SMALLINT AS i16,
      CASE WHEN i % 7 = 0 THEN NULL ELSE (i * 1000 - 5000)::INTEGER END AS i32,
      ((i - 2500)::BIGINT * -3602879701896397)::BIGINT AS i64,
      (i % 200)::UTINYINT AS u8, (i * 7)::USMALLINT AS u16, (i * 100000)::UINTEGER AS u32,
      (i::UBIGINT * 3689348814741910)::UBIGINT AS u64,
      (i / 3.0)::FLOAT AS f32,
      CASE WHEN i % 11 = 0 THEN 'NaN'::DOUBLE WHEN i % 13 = 0 THEN NULL ELSE i / 7.0 END AS f64,
      CASE WHEN i % 3 = 0 THEN NULL ELSE i % 2 = 0 END AS flag,
      ((i % 1999 - 999) / 10)::DECIMAL(4,1) AS dec4,
      ((i - 2500) * 1234.57)::DECIMAL(9,2) AS dec9,
      CASE WHEN i % 4 = 0 THEN NULL ELSE ((i - 2500) * 123456789012.5)::DECIMAL(18,3) END AS dec18,
      (((i - 2500)::HUGEINT * 123456789012345678901)::VARCHAR || '.' || lpad((i * 7919 % 10000000000)::VARCHAR, 10, '0'))::DECIMAL(38,10) AS dec38,
      CASE WHEN i % 6 = 0 THEN NULL WHEN i % 2 = 0 THEN 's' || i ELSE 'a longer string, number ' || i || ' é' END AS s,
      CASE WHEN i % 9 = 0 THEN NULL ELSE ('\\x' || lpad(to_hex(i % 256), 2, '0'))::BLOB || repeat('z', i % 20)::BLOB END AS b,
      DATE '1969-07-20' + (i * 37)::INTEGER AS d,
      TIME '00:00:00.25' + INTERVAL (i) SECOND AS tm,
      TIMESTAMP_S '2026-11-29 08:00:00' + INTERVAL (i) HOUR AS ts_s,
      TIMESTAMP_MS '2026-11-29 08:00:00.123' + INTERVAL (i) MINUTE AS ts_ms,
      TIMESTAMP '1960-01-01 00:00:00.000001' + INTERVAL (i * 1000003) MICROSECOND AS ts,
      TIMESTAMP_NS '2026-11-29 08:00:00.123456789' AS ts_ns,
      CASE WHEN i % 8 = 0 THEN NULL ELSE TIMESTAMPTZ '2026-11-29 08:00:00.5+00' + INTERVAL (i) DAY END AS tstz,
      INTERVAL (i % 40) MONTH + INTERVAL (i % 9) DAY + INTERVAL (i * 1001) MICROSECOND AS iv,
      CASE WHEN i % 10 = 0 THEN NULL WHEN i % 10 = 1 THEN [] ELSE ['a' || i, NULL, 'a rather long list item ' || i] END AS l,
      CASE WHEN i % 12 = 0 THEN NULL ELSE {'x y': i, 'z': ['q', 'a long item number ' || i], 'n': {'deep': i % 3 = 0}} END AS st,
      CASE WHEN i % 14 = 0 THEN NULL ELSE MAP {'k' || i: i, 'another key that is long': NULL} END AS m,
      [[i, i + 1], NULL, [i * 2]] AS ll,
      [{'a': i, 'b': 'entry ' || i}] AS ls,
      ((i - 2500)::HUGEINT * 68056473384187692692674921486353642) AS h,
      ('00000000-0000-0000-0000-' || lpad(i::VARCHAR, 12, '0'))::UUID AS u,
      (['sad', 'ok', 'happy'])[i % 3 + 1]::mood AS e,
      union_value(num := i)::UNION(num INTEGER, str VARCHAR) AS un,
      [i, i + 1, i + 2]::INTEGER[3] AS arr,
      TIMETZ '08:00:00+02' AS ttz,
      '1011'::BIT AS bits
    FROM range(5000) r(i)`,
];

export interface TypesTable {
  readonly connection: DuckDBConnection;
  close(): Promise<void>;
}

/** The table in a fresh DuckDB file, opened read-only; `close()` removes the file. */
export async function openTypesTable(): Promise<TypesTable> {
  const { dir, remove } = await makeTempDir();
  const path = join(dir, 'types.duckdb');
  await makeDuckDbFile(path, TYPES_TABLE);
  const instance = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
  const connection = await instance.connect();
  return {
    connection,
    async close() {
      connection.closeSync();
      instance.closeSync();
      await remove();
    },
  };
}
