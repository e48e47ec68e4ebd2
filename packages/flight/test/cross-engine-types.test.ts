/**
 * A join across engines over an SQLite dataset whose columns hold values of mixed types (SQLite
 * keeps what each row was given), end to end over HTTP JSON, HTTP Arrow and Flight, against a
 * runtime on a local S3 serving a DuckDB dataset and that SQLite file as the writer publishes it:
 * each column answers across engines as a query of the SQLite dataset alone answers it, and a
 * column no one type holds fails only the query that reads it, naming the dataset, the column
 * and the fix.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { batchText } from '@ferry/engines/namespaces';
import { type RunningServer, startServer } from '@ferry/server';
import { type Table, tableFromIPC } from 'apache-arrow';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FlightStub, fetchTable, flightStub, type Served, serveDatasets } from './support.js';

let dir: string;
let served: Served;
let http: RunningServer;
let stub: FlightStub;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ferry-cross-types-'));
  const file = join(dir, 'mixed.sqlite');
  const db = new Database(file);
  db.pragma('journal_mode = DELETE');
  db.exec(`CREATE TABLE mixed (id INTEGER, score INTEGER, name TEXT, ratio REAL, photo TEXT);
    INSERT INTO mixed VALUES (1, 5, 'a', 1.5, 'p'), (2, 'n/a', 7, 2, x'00ff'), (3, 2.5, 3.5, NULL, 'q'),
      (4, NULL, NULL, 9007199254740993, NULL);`);
  db.close();
  served = await serveDatasets(
    [
      { name: 'orders', engine: 'duckdb', sql: 'SELECT i::BIGINT AS id FROM range(10) t(i)' },
      { name: 'mixed', engine: 'sqlite', file },
    ],
    { prefix: 'cross-types/' },
  );
  http = await startServer(served.runtime, { port: 0 });
  stub = flightStub(served.flight.address);
});

afterAll(async () => {
  stub?.close();
  await http?.close();
  await served?.close();
  await rm(dir, { recursive: true, force: true });
});

async function post(sql: string, accept: string) {
  return fetch(`${http.url}/v1/sql`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', accept },
    body: sql,
  });
}

/** An Arrow answer's rows, each value in the JSON of its column's type. */
const arrowRows = (table: Table) =>
  table.batches.flatMap((batch) => {
    const columns = batchText(batch);
    return Array.from({ length: batch.numRows }, (_, row) =>
      columns.map((column) => JSON.parse(column.json(row))),
    );
  });

describe('a join across engines over an SQLite column of mixed value types', () => {
  const alone = 'SELECT id, score, name, ratio FROM mixed ORDER BY id';
  const across =
    'SELECT m.id, m.score, m.name, m.ratio FROM orders o JOIN mixed m ON o.id = m.id ORDER BY m.id';

  it('answers as the SQLite dataset alone does, over HTTP JSON, HTTP Arrow and Flight', async () => {
    const expected = [
      { id: 1, score: '5', name: 'a', ratio: 1.5 },
      { id: 2, score: 'n/a', name: '7', ratio: 2 },
      { id: 3, score: '2.5', name: '3.5', ratio: null },
      { id: 4, score: null, name: null, ratio: 2 ** 53 },
    ];
    for (const sql of [alone, across]) {
      const json = await post(sql, 'application/json');
      expect([json.status, await json.json()], sql).toEqual([200, expected]);
      const arrow = tableFromIPC(
        new Uint8Array(await (await post(sql, 'application/vnd.apache.arrow.stream')).arrayBuffer()),
      );
      expect(arrowRows(arrow), sql).toEqual(expected.map((row) => Object.values(row)));
      const flight = await fetchTable(stub, { type: 'CMD', cmd: Buffer.from(sql) });
      expect(arrowRows(flight), sql).toEqual(expected.map((row) => Object.values(row)));
      expect(
        flight.schema.fields.map((field) => String(field.type)),
        sql,
      ).toEqual(['Int64', 'Utf8', 'Utf8', 'Float64']);
    }
  });

  it('a BLOB among text fails only the query that reads it, naming the dataset, the column and the fix', async () => {
    const counted = await post(
      'SELECT count(*) AS n FROM orders o JOIN mixed m ON o.id = m.id',
      'application/json',
    );
    expect(await counted.json()).toEqual([{ n: 4 }]);
    const refused = await post(
      'SELECT m.photo FROM orders o JOIN mixed m ON o.id = m.id',
      'application/json',
    );
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain(
      "SQLite dataset 'mixed' column 'photo' holds a BLOB in row 2 and TEXT in row 1, and a DuckDB column holds one type, so a query across engines cannot read it; read it in a query of 'mixed' alone (SQLite runs it: CAST(photo AS BLOB), or hex(photo) for text), or store one type in the column.",
    );
    const hex = await post('SELECT hex(photo) AS h FROM mixed WHERE id = 2', 'application/json');
    expect(await hex.json()).toEqual([{ h: '00FF' }]);
  });
});
