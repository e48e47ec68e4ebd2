/**
 * SQLite results as Arrow with types that hold the values stored (`SqliteBatchBuilder`), on a
 * real SQLite file read as the namespace reads it (raw rows, safe integers): a column whose values
 * fit its declared type keeps it; one holding values its declared type cannot (text in INTEGER,
 * 2 in BOOLEAN, 12.555 in DECIMAL(18,2), a time in DATE) is widened to the values' own type; a
 * value no widening holds, in the first batch or a later one, fails naming column, row and cast.
 * Nothing becomes null.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchObjects } from '../src/arrow-json.js';
import { batchesFromIpc, batchToIpc } from '../src/arrow-results.js';
import { jsonObjects } from '../src/encode.js';
import { SqliteBatchBuilder } from '../src/sqlite-arrow.js';
import { encodeSqliteValue, type SqliteValue } from '../src/sqlite-engine.js';
import { makeSqliteFile, makeTempDir } from './files.js';

let remove: () => Promise<void>;
let db: Database.Database;

beforeAll(async () => {
  const temp = await makeTempDir();
  remove = temp.remove;
  const path = join(temp.dir, 'mixed.sqlite');
  await makeSqliteFile(path, [
    `CREATE TABLE fits (i INTEGER, r REAL, s TEXT, b BLOB, flag BOOLEAN, amount DECIMAL(18,2), d DATE,
      ts DATETIME, n NUMERIC, untyped)`,
    `INSERT INTO fits VALUES (1, 1.5, 'x', x'0102', 1, '12.50', '2026-11-29', '2026-11-29T08:00:00.123456', 3, 7),
      (-9223372036854775808, -0.25, 'é', x'', 0, 7, '1969-07-20', '1960-01-01 00:00:00', 4, 8),
      (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
    `CREATE TABLE widened (i INTEGER, flag BOOLEAN, amount DECIMAL(18,2), d DATE, ts DATETIME, mixed)`,
    `INSERT INTO widened VALUES (1, 1, 12.5, '2026-11-29', '2026-11-29T08:00:00', 1),
      ('abc', 2, 12.555, '2026-11-29 08:00', 'tomorrow', 2.5)`,
    'CREATE TABLE blobs (s TEXT)',
    `INSERT INTO blobs VALUES ('text'), (x'00ff')`,
    'CREATE TABLE later (x)',
    'WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 10) INSERT INTO later SELECT i FROM c',
    `INSERT INTO later VALUES ('eleven'), (9007199254740993)`,
  ]);
  db = new Database(path, { readonly: true, fileMustExist: true });
});

afterAll(async () => {
  db.close();
  await remove();
});

function read(sql: string): { names: string[]; declared: (string | null)[]; rows: SqliteValue[][] } {
  const statement = db.prepare(sql);
  statement.safeIntegers(true);
  statement.raw(true);
  const columns = statement.columns();
  return {
    names: columns.map((column) => column.name),
    declared: columns.map((column) => column.type),
    rows: statement.all() as SqliteValue[][],
  };
}

/** The result as Arrow (first `sampleRows` rows decide the types), read back through IPC. */
function arrowOf(sql: string, sampleRows = 65_536) {
  const { names, declared, rows } = read(sql);
  const builder = new SqliteBatchBuilder(names, declared, rows.slice(0, sampleRows));
  for (const row of rows) builder.append(row);
  const { schema, batches } = batchesFromIpc(batchToIpc(builder.schema, builder.flush()));
  const types = Object.fromEntries(schema.fields.map((field) => [field.name, String(field.type)]));
  const values = (batches[0]?.toArray() ?? []).map((row) => row.toJSON() as Record<string, unknown>);
  return { types, values, schema };
}

describe('SQLite results as Arrow', () => {
  it('keeps each declared type whose column holds values of it, exactly', () => {
    const { types, values, schema } = arrowOf('SELECT * FROM fits');
    expect(types).toEqual({
      i: 'Int64',
      r: 'Float64',
      s: 'Utf8',
      b: 'Binary',
      flag: 'Bool',
      amount: 'Decimal[18e+2]',
      d: 'Date32<DAY>',
      ts: 'Timestamp<MICROSECOND>',
      n: 'Int64',
      untyped: 'Int64',
    });
    expect(values[1]?.i).toBe(-9223372036854775808n);
    expect([values[0]?.r, values[0]?.s, Array.from(values[0]?.b as Uint8Array), values[0]?.flag]).toEqual([
      1.5,
      'x',
      [1, 2],
      true,
    ]);
    expect([String(values[0]?.amount), String(values[1]?.amount)]).toEqual(['1250', '700']);
    expect([values[0]?.d, values[1]?.d]).toEqual([Date.UTC(2026, 10, 29), Date.UTC(1969, 6, 20)]);
    expect(values[0]?.ts).toBe(Date.UTC(2026, 10, 29, 8, 0, 0, 123) + 0.456);
    expect(Object.values(values[2] ?? {}).every((value) => value === null)).toBe(true);
    expect(
      schema.fields.find((field) => field.name === 'n')?.metadata.get('ARROW:FLIGHT:SQL:TYPE_NAME'),
    ).toBe('NUMERIC');
  });

  it('widens a column whose values its declared type cannot hold to the values’ own type', () => {
    const { types, values } = arrowOf('SELECT * FROM widened');
    expect(types).toEqual({
      i: 'Utf8',
      flag: 'Int64',
      amount: 'Float64',
      d: 'Utf8',
      ts: 'Utf8',
      mixed: 'Float64',
    });
    expect(values).toEqual([
      { i: '1', flag: 1n, amount: 12.5, d: '2026-11-29', ts: '2026-11-29T08:00:00', mixed: 1 },
      { i: 'abc', flag: 2n, amount: 12.555, d: '2026-11-29 08:00', ts: 'tomorrow', mixed: 2.5 },
    ]);
  });

  it('refuses a column of blobs and text, naming the column, the rows and the cast', () => {
    expect(() => arrowOf('SELECT s FROM blobs')).toThrow(
      expect.objectContaining({
        code: 'ERR_QUERY_FAILED',
        message:
          "Query failed: column 's' holds a BLOB in row 2 and TEXT in row 1, and one Arrow column holds one type; cast it in the query (CAST(s AS BLOB), or hex(s) for text).",
      }),
    );
  });

  it('refuses a later row its column’s type cannot hold, naming the row, instead of a null', () => {
    expect(() => arrowOf('SELECT x FROM later', 10)).toThrow(
      "Query failed: column 'x' row 11 holds TEXT eleven, which its Arrow Int64 column (typed from the first rows) cannot hold; cast it in the query (e.g. CAST(x AS TEXT)).",
    );
    // With every row in the sample the text widens the column, and the numbers read as text.
    const { types, values } = arrowOf('SELECT x FROM later');
    expect(types).toEqual({ x: 'Utf8' });
    expect(values.map((row) => row.x).slice(-3)).toEqual(['10', 'eleven', '9007199254740993']);
    // An integer a Float64 column cannot hold exactly is refused, not rounded.
    expect(() => arrowOf("SELECT CASE WHEN x = 'eleven' THEN 0.5 ELSE x END AS y FROM later")).toThrow(
      /column 'y' row 12 holds INTEGER 9007199254740993, which its Arrow Float64 column/,
    );
  });

  it('says when its rows, each value as its own JSON form, are the batch’s JSON text (`natural`)', () => {
    const natural = (sql: string): boolean => {
      const { names, declared, rows } = read(sql);
      const builder = new SqliteBatchBuilder(names, declared, rows);
      for (const row of rows) builder.append(row);
      const batchText = batchObjects(builder.flush()).join(',');
      const rowsText = jsonObjects(names, rows.length, (row, column) =>
        encodeSqliteValue(rows[row]?.[column] ?? null),
      );
      // The flag is what a writer of JSON relies on: where it says so, the texts are the same.
      if (builder.natural(rows)) expect(rowsText, sql).toBe(batchText);
      return builder.natural(rows);
    };
    expect(natural('SELECT i, r, s, b, n, untyped, NULL AS nil FROM fits')).toBe(true);
    expect(natural("SELECT x FROM later WHERE typeof(x) = 'integer'")).toBe(true);
    expect(natural('SELECT i FROM fits WHERE i IS NULL')).toBe(true);
    // A declared type that converts its values (BOOLEAN, DECIMAL, DATE, DATETIME) ...
    for (const column of ['flag', 'amount', 'd', 'ts'])
      expect(natural(`SELECT ${column} FROM fits`)).toBe(false);
    // ... and a column mixing kinds (its numbers as text, or its integers as reals) are not.
    expect(natural('SELECT x FROM later')).toBe(false);
    expect(natural('SELECT mixed FROM widened')).toBe(false);
    expect(natural('SELECT CASE WHEN i = 1 THEN 1 ELSE 0.5 END AS m FROM widened')).toBe(false);
  });
});
