/**
 * Connections the statement checks are tested on, set up the way the shared query pools set them
 * up: DuckDB in memory (its catalog writable, so only the check stands between a write and the
 * table) locked down with `allowed_directories` on a directory that holds a canary file (so
 * DuckDB itself would read it: only the check stops that), external access off and the
 * configuration locked; SQLite with a read-only empty main database and the data file ATTACHed
 * under the name `data` (it inherits read-only; unqualified names resolve through it).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import Database from 'better-sqlite3';
import { DUCKDB_EXTENSIONS_OFF, lockDownDuckDb } from '../src/duckdb-lockdown.js';
import { makeSqliteFile } from './files.js';

/** The tables the corpus names, in both engines, with the same rows. */
const TABLES = [
  'CREATE TABLE orders (id INTEGER, name VARCHAR, x INTEGER, a INTEGER)',
  'CREATE TABLE items (id INTEGER, name VARCHAR)',
  'CREATE TABLE users (id INTEGER, name VARCHAR)',
  'CREATE TABLE t (x INTEGER)',
  "INSERT INTO orders VALUES (1, 'one', 10, 100), (2, 'two', 20, 200)",
  "INSERT INTO items VALUES (1, 'alpha')",
  "INSERT INTO users VALUES (1, 'ann'), (2, 'bob')",
  'INSERT INTO t VALUES (7)',
];

export const CANARY = 'ferry-canary-5d2a71';

export interface CheckConnections {
  readonly duckdb: DuckDBConnection;
  readonly sqlite: Database.Database;
  /** A CSV file inside DuckDB's allowed directory holding {@link CANARY}. */
  readonly canary: string;
  /** Replace `<canary>` and `<out>` (a path inside `dir` that must never appear). */
  readonly fill: (sql: string) => string;
  readonly close: () => void;
}

export async function openCheckConnections(dir: string): Promise<CheckConnections> {
  const canary = join(dir, 'canary.csv');
  await writeFile(canary, `secret\n${CANARY}\n`);
  const instance = await DuckDBInstance.create(':memory:', { ...DUCKDB_EXTENSIONS_OFF, threads: '1' });
  const duckdb = await instance.connect();
  for (const statement of TABLES) await duckdb.run(statement);
  await lockDownDuckDb(duckdb, { allowedDirectories: [`${dir}/`] });

  const placeholder = join(dir, 'main.sqlite');
  const data = join(dir, 'data.sqlite');
  await makeSqliteFile(placeholder, []);
  await makeSqliteFile(data, TABLES);
  const sqlite = new Database(placeholder, { readonly: true, fileMustExist: true });
  sqlite.pragma('trusted_schema = OFF');
  sqlite.prepare('ATTACH ? AS data').run(data);

  return {
    duckdb,
    sqlite,
    canary,
    fill: (sql) => sql.replaceAll('<canary>', canary).replaceAll('<out>', join(dir, 'out')),
    close: () => {
      duckdb.closeSync();
      instance.closeSync();
      sqlite.close();
    },
  };
}
