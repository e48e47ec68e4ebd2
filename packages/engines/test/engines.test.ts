/** Runs the engine contract against every adapter: DuckDB, SQLite, and Turso (via `openEngine`). */
import { openDuckDb } from '../src/duckdb-engine.js';
import { openEngine } from '../src/open-engine.js';
import { openSqlite } from '../src/sqlite-engine.js';
import { engineContract } from './engine-contract.js';
import { makeDuckDbFile, makeSqliteFile } from './files.js';

engineContract('duckdb', openDuckDb, makeDuckDbFile);
engineContract('sqlite', openSqlite, makeSqliteFile);
engineContract('sqlite', (path, options) => openEngine('turso', path, options), makeSqliteFile, 'turso');
