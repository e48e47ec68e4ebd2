/** @ferry/engines: read-only DuckDB and SQLite (and Turso) adapters for the core `Engine` port. */

export {
  type ArrowColumn,
  type ArrowValue,
  ArrowValueError,
  arrowSchemaOf,
  arrowTypeOf,
  batchesFromIpc,
  batchToIpc,
  type ColumnBuilder,
  columnBuilder,
  type IntervalValue,
  RecordBatchBuilder,
} from './arrow-results.js';
export {
  arrowField,
  arrowList,
  arrowMap,
  arrowStruct,
  canonicalArrowType,
  TIMESTAMPTZ_ZONE,
  UnmappedArrowTypeError,
} from './arrow-types.js';
export { duckDbArrowValue } from './duckdb-arrow.js';
export {
  bindDuckDbParams,
  DUCKDB_READ_ONLY_SETTINGS,
  DuckDbEngine,
  type DuckDbOpenOptions,
  openDuckDb,
} from './duckdb-engine.js';
export { DuckDbNamespace, type DuckDbNamespaceOptions } from './duckdb-namespace.js';
export { duckDbTypeToArrow } from './duckdb-types.js';
export type { OpenOptions, QueryControl, SnapshotEngine, TableColumn } from './engine.js';
export {
  CrossEngineLimitError,
  EngineClosedError,
  EngineOpenError,
  InvalidParameterError,
  NamespaceTableError,
  QueryFailedError,
  QueryResourceError,
  StatementRejectedError,
  TableNotFoundError,
  UnsupportedColumnTypeError,
  type WriteOperation,
  WriteRejectedError,
} from './errors.js';
export { type DatabaseFormat, type DatabaseHeader, readDatabaseHeader } from './file-header.js';
export { type NumberedStatement, numberNamedParameters } from './named-parameters.js';
export { prepareDuckDbStatement, prepareSqliteStatement } from './namespace-statements.js';
export * from './namespace-types.js';
export { checkSnapshotFile, openEngine } from './open-engine.js';
export { duckDbTypeFromName, resultColumnArrowType } from './result-types.js';
export { checkTableSchema } from './schema-check.js';
export {
  assertReadOnlySql,
  classifyStatement,
  rejectionOf,
  type SqlDialect,
  type SqlToken,
  type StatementClass,
  tokenizeSql,
} from './sql-guard.js';
export { openSqlite, openSqliteSync, SqliteEngine } from './sqlite-engine.js';
export {
  SQLITE_MAX_ATTACHED,
  SqliteNamespace,
  type SqliteNamespaceOptions,
  type SyncBatchSink,
  sqliteArrowValue,
} from './sqlite-namespace.js';
export {
  type SqliteAffinity,
  sqliteAffinity,
  sqliteDeclaredTypeToArrow,
  sqliteStores,
} from './sqlite-types.js';
