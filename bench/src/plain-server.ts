/**
 * B9's baseline: the plain HTTP server a user would write instead of Ferry — `node:http`, DuckDB
 * (`@duckdb/node-api`) and better-sqlite3 called directly on the same files. `POST /v1/sql` with
 * the SQL as a text body answers its rows as a JSON array: a statement naming the SQLite table runs
 * in better-sqlite3 (`prepare(text).all()`, on this thread), any other in DuckDB
 * (`runAndReadAll(text)` on one of a few connections, queued when all are busy). Run as a child
 * process: `node plain-server.js <duckdb file> <sqlite file> <sqlite table>`; it prints
 * `Listening on http://HOST:PORT` once it accepts requests (sql-server.ts).
 */
import Database from 'better-sqlite3';
import { duckDbRows } from './duckdb-rows.js';
import { serveSql } from './sql-server.js';

const [duckdbPath, sqlitePath, sqliteTable] = process.argv.slice(2);
if (duckdbPath === undefined || sqlitePath === undefined || sqliteTable === undefined) {
  throw new Error('usage: plain-server.js <duckdb file> <sqlite file> <sqlite table>');
}

const duckdb = await duckDbRows(duckdbPath);
const sqlite = new Database(sqlitePath, { readonly: true, fileMustExist: true });

serveSql(async (sql) =>
  JSON.stringify(sql.includes(sqliteTable) ? sqlite.prepare(sql).all() : await duckdb(sql)),
);
