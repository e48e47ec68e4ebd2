/**
 * `@ferry/engines/duckdb`: the DuckDB query namespace and DuckDB results as Arrow batches, for the
 * runtime's DuckDB query worker. Apart from `@ferry/engines/namespaces` so that the SQLite query
 * workers load none of DuckDB (its node-api is ~0.5 s of CPU for each thread that loads it).
 */
export { DuckDbBatchBuilder, duckDbResultSchema } from './duckdb-chunk-arrow.js';
export { DuckDbNamespace, type DuckDbNamespaceOptions } from './duckdb-namespace.js';
