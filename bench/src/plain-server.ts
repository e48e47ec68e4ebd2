/**
 * B9's baseline: the plain HTTP server a user would write instead of Ferry — `node:http`, DuckDB
 * (`@duckdb/node-api`) and better-sqlite3 called directly on the same files. `POST /v1/sql` with
 * the SQL as a text body answers its rows as a JSON array: a statement naming the SQLite table runs
 * in better-sqlite3 (`prepare(text).all()`, on this thread), any other in DuckDB
 * (`runAndReadAll(text)` on one of a few connections, queued when all are busy). Run as a child
 * process: `node plain-server.js <duckdb file> <sqlite file> <sqlite table>`; it prints
 * `Listening on http://HOST:PORT` once it accepts requests.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import Database from 'better-sqlite3';

const [duckdbPath, sqlitePath, sqliteTable] = process.argv.slice(2);
if (duckdbPath === undefined || sqlitePath === undefined || sqliteTable === undefined) {
  throw new Error('usage: plain-server.js <duckdb file> <sqlite file> <sqlite table>');
}

const instance = await DuckDBInstance.create(duckdbPath, { access_mode: 'READ_ONLY' });
const idle: DuckDBConnection[] = [];
for (let n = 0; n < 4; n++) idle.push(await instance.connect());
const waiting: ((connection: DuckDBConnection) => void)[] = [];
const sqlite = new Database(sqlitePath, { readonly: true, fileMustExist: true });

async function duckdb(sql: string): Promise<unknown[]> {
  const connection = idle.pop() ?? (await new Promise<DuckDBConnection>((resolve) => waiting.push(resolve)));
  try {
    return (await connection.runAndReadAll(sql)).getRowObjectsJson();
  } finally {
    const next = waiting.shift();
    if (next === undefined) idle.push(connection);
    else next(connection);
  }
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const sql = Buffer.concat(chunks).toString('utf8');
    const rows = sql.includes(sqliteTable)
      ? Promise.resolve().then(() => sqlite.prepare(sql).all())
      : duckdb(sql);
    rows.then(
      (result) => {
        const body = JSON.stringify(result);
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        });
        res.end(body);
      },
      (error: unknown) => {
        const body = JSON.stringify({ error: (error as Error).message });
        res.writeHead(400, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      },
    );
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const { address, port } = server.address() as AddressInfo;
  process.stdout.write(`Listening on http://${address}:${port}\n`);
});
process.on('SIGTERM', () => {
  server.close();
  process.exit(0);
});
