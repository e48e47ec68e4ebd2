/** @ferry/engines: read-only DuckDB and SQLite (and Turso) adapters for the core `Engine` port. */
export {
  arrowField,
  arrowList,
  arrowMap,
  arrowStruct,
  canonicalArrowType,
  TIMESTAMPTZ_ZONE,
  UnmappedArrowTypeError,
} from './arrow-types.js';
export {
  DUCKDB_READ_ONLY_SETTINGS,
  DuckDbEngine,
  type DuckDbOpenOptions,
  openDuckDb,
} from './duckdb-engine.js';
export { duckDbTypeToArrow } from './duckdb-types.js';
export type { OpenOptions, QueryControl, SnapshotEngine, TableColumn } from './engine.js';
export {
  EngineClosedError,
  EngineOpenError,
  InvalidParameterError,
  QueryFailedError,
  StatementRejectedError,
  TableNotFoundError,
  UnsupportedColumnTypeError,
  type WriteOperation,
  WriteRejectedError,
} from './errors.js';
export { type DatabaseFormat, type DatabaseHeader, readDatabaseHeader } from './file-header.js';
export { type NumberedStatement, numberNamedParameters } from './named-parameters.js';
export { checkSnapshotFile, openEngine } from './open-engine.js';
export { duckDbTypeFromName, resultColumnArrowType } from './result-types.js';
export { checkTableSchema } from './schema-check.js';
export {
  assertReadOnlySql,
  classifyStatement,
  explainedStatement,
  rejectionOf,
  type SqlDialect,
  type SqlToken,
  type StatementClass,
  tokenizeSql,
} from './sql-guard.js';
export { openSqlite, openSqliteSync, SqliteEngine } from './sqlite-engine.js';
export {
  type SqliteAffinity,
  sqliteAffinity,
  sqliteDeclaredTypeToArrow,
  sqliteStores,
} from './sqlite-types.js';
export { checkDuckDbStatement, checkSqliteStatement } from './statement-check.js';
