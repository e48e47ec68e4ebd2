/**
 * @ferry/engines: read-only DuckDB and SQLite (and Turso) adapters for the core `Engine` port. The
 * query namespaces and Arrow results are the separate entry `@ferry/engines/namespaces`: they load
 * apache-arrow, which the many threads that only open and check files (dataset threads) need not
 * compile.
 */

export {
  arrowField,
  arrowList,
  arrowMap,
  arrowStruct,
  canonicalArrowType,
  TIMESTAMPTZ_ZONE,
  UnmappedArrowTypeError,
} from './arrow-types.js';
export { BoundedCache, type BoundedCacheOptions, textBytes } from './bounded-cache.js';
export { isCacheableStatement } from './cacheable.js';
export { RUNTIME_SCHEMA, SPICE_CATALOG, SPICE_SCHEMA } from './duckdb-catalog.js';
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
export {
  CrossEngineLimitError,
  EngineClosedError,
  EngineOpenError,
  InvalidParameterError,
  NamespaceTableError,
  QueryFailedError,
  QueryResourceError,
  SqlSyntaxError,
  StatementRejectedError,
  TableNotFoundError,
  UnsupportedColumnTypeError,
  type WriteOperation,
  WriteRejectedError,
} from './errors.js';
export { type DatabaseFormat, type DatabaseHeader, readDatabaseHeader } from './file-header.js';
export { type NumberedStatement, numberNamedParameters } from './named-parameters.js';
export type * from './namespace-types.js';
export { pinnedCatalog, pinsOf } from './namespace-types.js';
export { checkSnapshotFile, openEngine } from './open-engine.js';
export { duckDbTypeFromName, resultColumnArrowType } from './result-types.js';
export { checkTableSchema, type SchemaSource } from './schema-check.js';
export { createSnapshotChecker, type SnapshotChecker } from './snapshot-checker.js';
export { needsDuckDb, withoutSpiceQualifiers } from './spice-names.js';
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
export { type ShapeLiteral, type StatementShape, statementShape } from './sql-shape.js';
export { betterSqlite3Build } from './sqlite-build.js';
export { openSqlite, openSqliteSync, SqliteEngine } from './sqlite-engine.js';
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
