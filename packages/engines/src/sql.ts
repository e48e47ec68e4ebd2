/**
 * `@ferry/engines/sql`: what a process needs of the engines without loading one: statements as
 * text (the read-only guard and its tokens, shapes, Spice's names, what the results cache may keep,
 * named parameters), the engines' errors, and the Arrow names of their types. The runtime's host
 * thread, the HTTP server and Flight import it; an engine (DuckDB's node-api ~0.5 s of CPU, its
 * bindings, better-sqlite3) loads only in the threads that run one.
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
  CrossEngineLimitError,
  EngineClosedError,
  EngineOpenError,
  InvalidParameterError,
  NamespaceTableError,
  QueryFailedError,
  QueryResourceError,
  SqliteBindingError,
  SqlSyntaxError,
  StatementRejectedError,
  TableNotFoundError,
  UnsupportedColumnTypeError,
  type WriteOperation,
  WriteRejectedError,
} from './errors.js';
export { type NumberedStatement, numberNamedParameters } from './named-parameters.js';
export { type DatasetEngine, type FirstEngine, firstEngine, withoutSpiceQualifiers } from './spice-names.js';
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
