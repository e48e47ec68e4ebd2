/**
 * @ferry/engines: read-only DuckDB and SQLite (and Turso) adapters for the core `Engine` port. The
 * query namespaces and Arrow results are the separate entries `@ferry/engines/namespaces` (SQLite's,
 * loading no DuckDB) and `@ferry/engines/duckdb`: they load apache-arrow, which the threads that
 * only open and check files need not compile. `@ferry/engines/sql` is the part that loads no engine.
 */

export {
  bindDuckDbParams,
  DuckDbEngine,
  type DuckDbOpenOptions,
  openDuckDb,
} from './duckdb-engine.js';
export {
  DUCKDB_ALLOWED_FUNCTIONS,
  DUCKDB_REFUSED_FUNCTIONS,
  DUCKDB_REFUSED_TABLE_FUNCTIONS,
  DUCKDB_TABLE_FUNCTIONS,
} from './duckdb-functions.js';
export {
  DUCKDB_EXTENSIONS_OFF,
  DUCKDB_READ_ONLY_SETTINGS,
  type DuckDbLockDown,
  lockDownDuckDb,
} from './duckdb-lockdown.js';
export type { DuckDbNamespaceOptions } from './duckdb-namespace.js';
export { duckDbTypeToArrow } from './duckdb-types.js';
export { encodeDuckDbValue } from './duckdb-values.js';
export type { OpenOptions, QueryControl, SnapshotEngine, TableColumn } from './engine.js';
export { type DatabaseFormat, type DatabaseHeader, readDatabaseHeader } from './file-header.js';
export type * from './namespace-types.js';
export { pinnedCatalog, pinsOf } from './namespace-types.js';
export { checkSnapshotFile, openEngine } from './open-engine.js';
export { duckDbTypeFromName, resultColumnArrowType } from './result-types.js';
export { checkTableSchema, type SchemaSource } from './schema-check.js';
export { createSnapshotChecker, type SnapshotChecker } from './snapshot-checker.js';
export * from './sql.js';
export { openSqlite, openSqliteSync, SqliteEngine } from './sqlite-engine.js';
export { betterSqlite3Build, checkSqliteBinding } from './sqlite-interrupt.js';
export type { SqliteNamespaceOptions, SyncBatchSink } from './sqlite-namespace.js';
export {
  type SqliteAffinity,
  sqliteAffinity,
  sqliteDeclaredTypeToArrow,
  sqliteStores,
} from './sqlite-types.js';
export {
  checkDuckDbSql,
  checkDuckDbStatement,
  checkSqliteStatement,
  DuckDbParseError,
  type DuckDbParser,
  type DuckDbStatement,
  parserOn,
  prepareCheckedDuckDb,
} from './statement-check.js';
