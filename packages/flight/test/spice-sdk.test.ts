/**
 * Spice's own JS SDK (`@spiceai/spice`, Flight-only mode: no HTTP fallback) against a real runtime
 * on real fauxqs with a DuckDB and a SQLite dataset: plain queries (GetFlightInfo with the SQL as
 * the command, DoGet) and `$1` parameters (CreatePreparedStatement, DoPut, GetFlightInfo, DoGet,
 * ClosePreparedStatement) return the same rows as `POST /v1/sql` of the HTTP server on the same
 * runtime; then the SDK over TLS with the API key, as it connects to a remote Spice.
 */
import { readFileSync } from 'node:fs';
import { type RunningServer, startServer } from '@ferry/server';
import { TLS_FIXTURE } from '@ferry/test-support';
import { SpiceClient } from '@spiceai/spice';
import { DataType, type Decimal, type Table, type Vector } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFlightServer } from '../src/index.js';
import { ORDERS_SQL, type Served, serveDatasets, USERS_SQL } from './support.js';

const CERT = TLS_FIXTURE.cert;

let served: Served;
let http: RunningServer;

beforeAll(async () => {
  served = await serveDatasets(
    [
      { name: 'orders', engine: 'duckdb', sql: ORDERS_SQL },
      { name: 'users', engine: 'sqlite', sql: USERS_SQL },
    ],
    { prefix: 'spice-sdk/' },
  );
  http = await startServer(served.runtime, { port: 0 });
});

afterAll(async () => {
  await http?.close();
  await served?.close();
});

function decimalText(value: Uint32Array, scale: number): string {
  let unscaled = 0n;
  for (let word = 3; word >= 0; word--) unscaled = (unscaled << 32n) | BigInt(value[word] as number);
  const digits = BigInt.asIntN(128, unscaled)
    .toString()
    .padStart(scale + 1, '0');
  return scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/** A value of an Arrow column in the HTTP API's JSON encoding (the engines README's table). */
function asHttpJson(vector: Vector, index: number): unknown {
  const value = vector.get(index) as unknown;
  if (value === null) return null;
  const type = vector.type as DataType;
  if (typeof value === 'bigint')
    return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (DataType.isDecimal(type)) return decimalText(value as Uint32Array, (type as Decimal).scale);
  if (DataType.isDate(type)) return new Date(value as number).toISOString().slice(0, 10);
  if (DataType.isTimestamp(type)) return `${new Date(value as number).toISOString().slice(0, 23)}000`;
  if (DataType.isBinary(type)) return Buffer.from(value as Uint8Array).toString('base64');
  return value;
}

function rowsOf(table: Table): Record<string, unknown>[] {
  return Array.from({ length: table.numRows }, (_, row) =>
    Object.fromEntries(
      table.schema.fields.map((field, column) => [
        field.name,
        asHttpJson(table.getChildAt(column) as Vector, row),
      ]),
    ),
  );
}

async function overHttp(sql: string, params: unknown[] = []): Promise<unknown[]> {
  const response = await fetch(`${http.url}/v1/sql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ sql, params }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as unknown[];
}

function flightOnly(flightUrl: string, extra: Record<string, unknown> = {}): SpiceClient {
  return new SpiceClient({
    flightUrl,
    flightOnly: true,
    httpUrl: 'http://127.0.0.1:9',
    logging: false,
    ...extra,
  });
}

describe("Spice's JS SDK over Flight", () => {
  it('gets the same rows over Flight as the HTTP API, with typed columns (DuckDB)', async () => {
    const client = flightOnly(served.flight.address);
    const sql = 'SELECT * FROM orders ORDER BY id';
    const table = await client.sql(sql);
    expect(table.numRows).toBe(40);
    expect(table.schema.fields.map((field) => String(field.type))).toEqual([
      'Int64',
      'Decimal[10e+2]',
      'Date32<DAY>',
      'Timestamp<MICROSECOND>',
      'Utf8',
      'Bool',
      'Float64',
      'Binary',
      'Int64',
      'Utf8',
    ]);
    expect(rowsOf(table)).toEqual(await overHttp(sql));
  });

  it('gets the same rows over Flight as the HTTP API (SQLite)', async () => {
    const client = flightOnly(served.flight.address);
    const sql = 'SELECT id, name, score, admin, joined, score * 2 AS doubled FROM users ORDER BY id';
    const table = await client.sql(sql);
    expect(table.numRows).toBe(25);
    // SQLite stores BOOLEAN as 0/1; both answers come from the same Arrow batches, where it is a Bool.
    expect(rowsOf(table)).toEqual(await overHttp(sql));
    expect(rowsOf(table).map((row) => row.admin)).toContain(true);
  });

  it('binds $1 parameters through a prepared statement and gets the HTTP API’s rows', async () => {
    const client = flightOnly(served.flight.address);
    const sql = 'SELECT id, customer, amount FROM orders WHERE id > $1 AND customer = $2 ORDER BY id';
    const table = await client.sql(sql, { parameters: [10, 'customer-3'] });
    expect(rowsOf(table)).toEqual(await overHttp(sql, [10, 'customer-3']));
    expect(rowsOf(table).map((row) => row.id)).toEqual([17, 24, 31, 38]);
    const users = await client.sql('SELECT name FROM users WHERE id = $1', { parameters: [4] });
    expect(rowsOf(users)).toEqual([{ name: 'user 4' }]);
  });

  it('binds named $name parameters by name, whatever the order of the object, as the HTTP API does', async () => {
    const client = flightOnly(served.flight.address);
    const sql =
      'SELECT id, customer FROM orders WHERE id >= $low AND id < $high AND customer <> $skip ORDER BY id';
    // The SDK sends one column per name, in the object's order (here not the statement's).
    const parameters = { skip: 'customer-4', high: 13, low: 9 };
    const table = await client.sql(sql, { parameters });
    const answer = await fetch(`${http.url}/v1/sql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sql, parameters }),
    });
    expect(rowsOf(table)).toEqual(await answer.json());
    expect(rowsOf(table).map((row) => row.id)).toEqual([9, 10, 12]);
  });

  it('reports a write refusal from Flight, not from an HTTP fallback', async () => {
    const client = flightOnly(served.flight.address);
    await expect(client.sql('DELETE FROM users')).rejects.toThrow(
      "deletes on accelerated table users are not permitted when refresh_mode is 'snapshot'",
    );
  });

  it('connects over TLS with the API key (bearer token) and is refused with a wrong key', async () => {
    const tls = await startFlightServer(served.runtime, {
      port: 0,
      apiKey: 'sdk-secret',
      tls: { cert: readFileSync(TLS_FIXTURE.cert), key: readFileSync(TLS_FIXTURE.key) },
    });
    try {
      expect(tls.url).toBe(`grpc+tls://${tls.address}`);
      const options = { flightTlsEnabled: true, tlsRootCertFile: CERT };
      const client = flightOnly(tls.address, { ...options, apiKey: 'sdk-secret' });
      const table = await client.sql('SELECT count(*) AS n FROM orders');
      expect(rowsOf(table)).toEqual([{ n: 40 }]);
      const wrong = flightOnly(tls.address, { ...options, apiKey: 'not-it' });
      await expect(wrong.sql('SELECT count(*) AS n FROM orders')).rejects.toThrow(/UNAUTHENTICATED|API key/);
    } finally {
      await tls.close();
    }
  });
});
