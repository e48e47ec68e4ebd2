/**
 * `@duckdb/node-api`, loaded on first use. The Arrow-to-JSON writer (`arrow-json.ts`) and the value
 * encoding (`duckdb-values.ts`) format DATE, DECIMAL and infinite timestamps with DuckDB's own value
 * classes, and they also run in the SQLite query workers, which otherwise load none of DuckDB: those
 * load it (~0.3 s of CPU) only when a result first holds such a column. It is the same module
 * instance `duckdb-node.ts` gives the modules that always run beside DuckDB (the classes'
 * `instanceof` agree).
 */
import { createRequire } from 'node:module';
import type * as DuckDbApiModule from '@duckdb/node-api';

type DuckDbApi = typeof DuckDbApiModule;

let api: DuckDbApi | undefined;

export function duckDbApi(): DuckDbApi {
  api ??= createRequire(import.meta.url)('@duckdb/node-api') as DuckDbApi;
  return api;
}
