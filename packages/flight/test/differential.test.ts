/**
 * The differential test of results: one DuckDB and one SQLite dataset holding every type the
 * engines' type tests cover (and, from expressions, the DuckDB types outside the type table),
 * published by the writer and served by a real runtime; each query's answer on every protocol —
 * HTTP JSON, JSON Lines, Spice's sql.v1+json, CSV, HTTP Arrow IPC, Flight (a grpc-js stub and
 * Spice's JS SDK), the embed API's `query`, `queryArrow` and `queryStream` — agrees value for
 * value with the engine's own answer to the same SQL on the same file (DuckDB's node-api rows;
 * better-sqlite3's raw rows), in Ferry's JSON encoding of it. Arrow answers are compared through
 * `batchText` (itself tested against node-api's values in @ferry/engines), and their column types
 * with the type table's.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { JsonValue } from '@ferry/core';
import { duckDbTypeToArrow, encodeDuckDbValue } from '@ferry/engines';
import { arrowTypeOf, batchText } from '@ferry/engines/namespaces';
import type { Runtime } from '@ferry/runtime';
import { JSON_LINES_TYPE, type RunningServer, startServer } from '@ferry/server';
import { SpiceClient } from '@spiceai/spice';
import { type RecordBatch, tableFromIPC } from 'apache-arrow';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FlightStub, fetchTable, flightStub, type Served, serveDatasets } from './support.js';

const ROWS = 9_000;
const PREFIX = 'differential/';

/** Every type of the type table, with nulls, long and short text, nested values. */
const DUCKDB_TABLE = `CREATE TABLE alltypes AS SELECT
  i,
  CASE WHEN i % 5 = 0 THEN NULL ELSE (i % 100 - 50)::TINYINT END AS i8,
  (i % 30000 - 15000)::SMALLINT AS i16,
  CASE WHEN i % 7 = 0 THEN NULL ELSE (i * 1000 - 5000)::INTEGER END AS i32,
  ((i - 10000)::BIGINT * 900719925474099)::BIGINT AS i64,
  (i % 200)::UTINYINT AS u8, (i * 3)::USMALLINT AS u16, (i * 100000)::UINTEGER AS u32,
  (i::UBIGINT * 922337203685477)::UBIGINT AS u64,
  (i / 3.0)::FLOAT AS f32,
  CASE WHEN i % 11 = 0 THEN 'NaN'::DOUBLE WHEN i % 17 = 0 THEN 'Infinity'::DOUBLE WHEN i % 13 = 0 THEN NULL ELSE i / 7.0 END AS f64,
  ((i % 1999 - 999) / 10)::DECIMAL(4,1) AS dec4,
  ((i - 10000) * 123.57)::DECIMAL(9,2) AS dec9,
  CASE WHEN i % 4 = 0 THEN NULL ELSE ((i - 10000) * 12345678901.5)::DECIMAL(18,3) END AS dec18,
  (((i - 10000)::HUGEINT * 123456789012345678901)::VARCHAR || '.' || lpad((i * 7919 % 10000000000)::VARCHAR, 10, '0'))::DECIMAL(38,10) AS dec38,
  CASE WHEN i % 6 = 0 THEN NULL WHEN i % 2 = 0 THEN 's' || i ELSE 'a longer string, number ' || i || ' é "q"' END AS s,
  CASE WHEN i % 9 = 0 THEN NULL ELSE ('\\x' || lpad(to_hex(i % 256), 2, '0'))::BLOB || repeat('z', i % 20)::BLOB END AS b,
  CASE WHEN i % 3 = 0 THEN NULL ELSE i % 2 = 0 END AS flag,
  DATE '1969-07-20' + (i * 37 % 40000)::INTEGER AS d,
  TIME '00:00:00.25' + INTERVAL (i) SECOND AS tm,
  TIMESTAMP_S '2026-11-29 08:00:00' + INTERVAL (i) HOUR AS ts_s,
  TIMESTAMP_MS '2026-11-29 08:00:00.123' + INTERVAL (i) MINUTE AS ts_ms,
  TIMESTAMP '1960-01-01 00:00:00.000001' + INTERVAL (i * 1000003) MICROSECOND AS ts,
  TIMESTAMP_NS '2026-11-29 08:00:00.123456789' AS ts_ns,
  CASE WHEN i % 8 = 0 THEN NULL ELSE TIMESTAMPTZ '2026-11-29 08:00:00.5+00' + INTERVAL (i) DAY END AS tstz,
  INTERVAL (i % 40) MONTH + INTERVAL (i % 9) DAY + INTERVAL (i * 1001) MICROSECOND AS iv,
  CASE WHEN i % 10 = 0 THEN NULL WHEN i % 10 = 1 THEN [] ELSE ['a' || i, NULL, 'a rather long list item ' || i] END AS l,
  CASE WHEN i % 12 = 0 THEN NULL ELSE {'x y': i, 'z': ['q', 'a long item number ' || i]} END AS st,
  CASE WHEN i % 14 = 0 THEN NULL ELSE MAP {'k' || i: i, 'another key that is long': NULL} END AS m,
  [[i, i + 1], NULL, [i * 2]] AS ll
FROM range(${ROWS}) r(i)`;

/** The DuckDB types outside the type table, as expressions of the query. */
const DUCKDB_SQL = `SELECT *,
  ((i - 10000)::HUGEINT * 17014118346046923173168730371588410)::HUGEINT AS huge,
  ('00000000-0000-0000-0000-' || lpad(i::VARCHAR, 12, '0'))::UUID AS u,
  union_value(num := i)::UNION(num INTEGER, str VARCHAR) AS un,
  [i, i + 1, i + 2]::INTEGER[3] AS arr,
  TIMETZ '08:00:00+02' AS ttz
FROM alltypes ORDER BY i`;

/** The types the SQLite type tests declare, each holding what it declares, with nulls. */
const SQLITE_TABLE = [
  `CREATE TABLE sqltypes (k INTEGER PRIMARY KEY, i INTEGER, big BIGINT, r REAL, f FLOAT, s TEXT, v VARCHAR(20),
    b BLOB, flag BOOLEAN, amount DECIMAL(18,2), d DATE, ts DATETIME)`,
  `WITH RECURSIVE c(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM c WHERE n < ${ROWS - 1})
   INSERT INTO sqltypes SELECT n,
     CASE WHEN n % 5 = 0 THEN NULL ELSE n - 10000 END,
     CASE WHEN n % 2 = 0 THEN 9223372036854775807 - n ELSE -9007199254740993 + n END,
     CASE WHEN n % 11 = 0 THEN 1e999 WHEN n % 13 = 0 THEN NULL ELSE n / 7.0 END,
     -1.5 * n,
     CASE WHEN n % 6 = 0 THEN NULL ELSE 'text ' || n || ' é' END,
     'v' || (n % 100),
     CASE WHEN n % 9 = 0 THEN NULL ELSE randomblob(n % 17) END,
     CASE WHEN n % 3 = 0 THEN NULL ELSE n % 2 END,
     CASE WHEN n % 4 = 0 THEN NULL ELSE (n % 1000) * 1.25 END,
     date('2026-11-29', '+' || (n % 400) || ' days'),
     strftime('%Y-%m-%dT%H:%M:%f000', '2026-11-29 08:00:00', '+' || n || ' minutes')
   FROM c`,
];
const SQLITE_SQL = 'SELECT *, k * 2 AS two_k, r * 2 AS doubled, NULL AS nil FROM sqltypes ORDER BY k';

let dir: string;
let served: Served;
let runtime: Runtime;
let http: RunningServer;
let stub: FlightStub;
let spice: SpiceClient;
let duckdbFile: string;
let sqliteFile: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ferry-differential-'));
  duckdbFile = join(dir, 'alltypes.duckdb');
  sqliteFile = join(dir, 'sqltypes.sqlite');
  const instance = await DuckDBInstance.create(duckdbFile);
  const connection = await instance.connect();
  await connection.run(DUCKDB_TABLE);
  await connection.run('CHECKPOINT');
  connection.closeSync();
  instance.closeSync();
  const db = new Database(sqliteFile);
  db.pragma('journal_mode = DELETE');
  for (const statement of SQLITE_TABLE) db.exec(statement);
  db.close();
  served = await serveDatasets(
    [
      { name: 'alltypes', engine: 'duckdb', file: duckdbFile },
      { name: 'sqltypes', engine: 'sqlite', file: sqliteFile },
    ],
    { prefix: PREFIX },
  );
  runtime = served.runtime;
  http = await startServer(runtime, { port: 0 });
  stub = flightStub(served.flight.address);
  spice = new SpiceClient({
    flightUrl: served.flight.address,
    flightOnly: true,
    httpUrl: http.url,
    logging: false,
  });
});

afterAll(async () => {
  stub?.close();
  await http?.close();
  await served?.close();
  await rm(dir, { recursive: true, force: true });
});

// --- What each engine answers itself, in Ferry's JSON encoding ----------------------------------

interface Expected {
  readonly names: string[];
  /** The rows in the JSON of each column's Arrow type (what the Arrow-based protocols answer). */
  readonly rows: JsonValue[][];
  /** The rows as `query()` answers them: the stored values (the same as `rows` for DuckDB). */
  readonly stored: JsonValue[][];
  readonly arrowTypes: string[];
}

/** JSON values as JSON reads them back (no -0). */
const normal = (rows: JsonValue[][]): JsonValue[][] => JSON.parse(JSON.stringify(rows)) as JsonValue[][];

async function duckdbOwn(sql: string): Promise<Expected> {
  const instance = await DuckDBInstance.create(duckdbFile, { access_mode: 'READ_ONLY' });
  const connection = await instance.connect();
  try {
    const reader = await connection.runAndReadAll(sql);
    const types = reader.columnTypes();
    const rows = normal(
      reader.getRows().map((row) => row.map((value, index) => encodeDuckDbValue(value, types[index]))),
    );
    return {
      names: reader.deduplicatedColumnNames(),
      rows,
      stored: rows,
      arrowTypes: reader.columnTypes().map((type) => String(arrowTypeOf(duckDbTypeToArrow(type) ?? 'Utf8'))),
    };
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const integer = (value: bigint): JsonValue =>
  value <= MAX_SAFE && value >= -MAX_SAFE ? Number(value) : `${value}`;

/**
 * better-sqlite3's raw values in the JSON of the Arrow type each column has: BOOLEAN 0/1 as
 * false/true, DECIMAL(18,2) to two places, the rest as stored (dates and ISO timestamps are text).
 */
function sqliteOwn(sql: string): Expected {
  const db = new Database(sqliteFile, { readonly: true, fileMustExist: true });
  try {
    const statement = db.prepare(sql);
    statement.safeIntegers(true);
    statement.raw(true);
    const columns = statement.columns();
    const raw = statement.all() as (bigint | number | string | Buffer | null)[][];
    const plain = (value: bigint | number | string | Buffer | null): JsonValue => {
      if (value === null) return null;
      if (typeof value === 'bigint') return integer(value);
      if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
      return typeof value === 'string' ? value : Buffer.from(value).toString('base64');
    };
    const typed = raw.map((row) =>
      row.map((value, index): JsonValue => {
        const declared = columns[index]?.type;
        if (value !== null && declared === 'BOOLEAN') return value === 1n;
        if (value !== null && declared === 'DECIMAL(18,2)') {
          return typeof value === 'number' ? value.toFixed(2) : `${value}.00`;
        }
        return plain(value);
      }),
    );
    return {
      names: columns.map((column) => column.name),
      rows: normal(typed),
      stored: normal(raw.map((row) => row.map(plain))),
      arrowTypes: [
        'Int64',
        'Int64',
        'Int64',
        'Float64',
        'Float64',
        'Utf8',
        'Utf8',
        'Binary',
        'Bool',
        'Decimal[18e+2]',
        'Date32<DAY>',
        'Timestamp<MICROSECOND>',
        'Int64',
        'Float64',
        'Utf8',
      ],
    };
  } finally {
    db.close();
  }
}

// --- Each protocol's answer as rows of JSON values ----------------------------------------------

function arrowRows(batches: readonly RecordBatch[]): { types: string[]; rows: JsonValue[][] } {
  const rows: JsonValue[][] = [];
  for (const batch of batches) {
    const columns = batchText(batch);
    for (let row = 0; row < batch.numRows; row++) {
      rows.push(columns.map((column) => JSON.parse(column.json(row)) as JsonValue));
    }
  }
  return { types: (batches[0]?.schema.fields ?? []).map((field) => String(field.type)), rows };
}

async function post(sql: string, accept: string): Promise<Response> {
  const response = await fetch(`${http.url}/v1/sql`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', accept },
    body: sql,
  });
  expect(response.status, `${accept}: ${sql}`).toBe(200);
  return response;
}

const byName = (names: readonly string[], objects: readonly Record<string, JsonValue>[]): JsonValue[][] =>
  objects.map((object) => names.map((name) => object[name] ?? null));

/** RFC 4180 records (quoted fields may hold commas, quotes and line breaks). */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  for (let at = 0; at < text.length; at++) {
    const char = text[at] as string;
    if (quoted) {
      if (char === '"' && text[at + 1] === '"') {
        field += '"';
        at++;
      } else if (char === '"') quoted = false;
      else field += char;
    } else if (char === '"') quoted = true;
    else if (char === ',') {
      record.push(field);
      field = '';
    } else if (char === '\n') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
    } else field += char;
  }
  return records;
}

const cellOf = (value: JsonValue): string =>
  value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value);

describe.each([
  ['DuckDB', 'alltypes', DUCKDB_SQL, duckdbOwn],
  ['SQLite', 'sqltypes', SQLITE_SQL, async (sql: string) => sqliteOwn(sql)],
] as const)('%s: every protocol answers what the engine answers', (_engine, _dataset, sql, own) => {
  let expected: Expected;

  beforeAll(async () => {
    expected = await own(sql);
    expect(expected.rows.length).toBe(ROWS);
  });

  it('HTTP JSON, JSON Lines and sql.v1+json', async () => {
    const json = (await (await post(sql, 'application/json')).json()) as Record<string, JsonValue>[];
    expect(byName(expected.names, json)).toEqual(expected.rows);
    const lines = (await (await post(sql, JSON_LINES_TYPE)).text()).trimEnd().split('\n');
    expect(
      byName(
        expected.names,
        lines.map((line) => JSON.parse(line)),
      ),
    ).toEqual(expected.rows);
    const spiceJson = (await (await post(sql, 'application/vnd.spiceai.sql.v1+json')).json()) as {
      row_count: number;
      data: Record<string, JsonValue>[];
    };
    expect(spiceJson.row_count).toBe(ROWS);
    expect(byName(expected.names, spiceJson.data)).toEqual(expected.rows);
  });

  it('CSV: a string as it is, anything else as its JSON', async () => {
    const [header, ...records] = parseCsv(await (await post(sql, 'text/csv')).text());
    expect(header).toEqual(expected.names);
    expect(records).toEqual(expected.rows.map((row) => row.map(cellOf)));
  });

  it('HTTP Arrow IPC, with the type table’s types', async () => {
    const table = tableFromIPC(
      new Uint8Array(await (await post(sql, 'application/vnd.apache.arrow.stream')).arrayBuffer()),
    );
    const { types, rows } = arrowRows(table.batches);
    expect(types).toEqual(expected.arrowTypes);
    expect(rows).toEqual(expected.rows);
  });

  it('Flight: a grpc-js stub and Spice’s JS SDK', async () => {
    const table = await fetchTable(stub, { type: 'CMD', cmd: Buffer.from(sql) });
    expect(table.batches.length).toBeGreaterThan(1);
    const plain = arrowRows(table.batches);
    expect(plain.types).toEqual(expected.arrowTypes);
    expect(plain.rows).toEqual(expected.rows);
    const sdk = arrowRows((await spice.sql(sql)).batches);
    expect(sdk.types).toEqual(expected.arrowTypes);
    expect(sdk.rows).toEqual(expected.rows);
  });

  it('the embed API: query() answers the stored values', async () => {
    const { rows, columns } = await runtime.query(sql, []);
    expect(columns.map((column) => column.name)).toEqual(expected.names);
    expect(byName(expected.names, rows as Record<string, JsonValue>[])).toEqual(expected.stored);
  });

  it('the embed API: queryArrow and queryStream', async () => {
    const { table } = await runtime.queryArrow(sql, [], {});
    expect(arrowRows(table.batches)).toEqual({ types: expected.arrowTypes, rows: expected.rows });
    const stream = await runtime.queryStream(sql, []);
    const batches: RecordBatch[] = [];
    for await (const batch of stream.batches) batches.push(batch);
    expect(arrowRows(batches).rows).toEqual(expected.rows);
  });
});
