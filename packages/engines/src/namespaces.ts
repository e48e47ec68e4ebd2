/**
 * `@ferry/engines/namespaces`: the SQLite query namespace (every SQLite dataset as a table of one
 * SQL namespace), the namespace types and Arrow results, for the runtime's query workers and the
 * HTTP server. A separate entry from `@ferry/engines` so that threads which only open and check
 * snapshot files do not load apache-arrow; the DuckDB namespace is `@ferry/engines/duckdb`, so
 * that a SQLite query worker loads none of DuckDB (DuckDB's value classes, which format a DATE or
 * DECIMAL column as DuckDB prints it, load on the first such column: `duckdb-api.ts`).
 */

export { batchObjects, batchText, type ColumnText } from './arrow-json.js';
export {
  type ArrowColumn,
  type ArrowValue,
  ArrowValueError,
  arrowJsonSchema,
  arrowJsonType,
  arrowSchemaOf,
  arrowTypeOf,
  batchesFromIpc,
  batchIpcMessages,
  batchToIpc,
  type ColumnBuilder,
  columnBuilder,
  type IntervalValue,
  IPC_END_OF_STREAM,
  type IpcMessage,
  ipcMessages,
  JSON_FORM_METADATA,
  RecordBatchBuilder,
  recordBatchOf,
  schemaIpcMessage,
} from './arrow-results.js';
export { jsonObjects } from './encode.js';
export { NamespaceTableError } from './errors.js';
export * from './namespace-types.js';
export { SqliteBatchBuilder } from './sqlite-arrow.js';
export {
  betterSqlite3Build,
  checkSqliteBinding,
  INTERRUPT_EVERY,
  type InterruptRegion,
} from './sqlite-interrupt.js';
export {
  SQLITE_MAX_ATTACHED,
  type SqliteCursor,
  SqliteNamespace,
  type SqliteNamespaceOptions,
  type SyncBatchSink,
} from './sqlite-namespace.js';
