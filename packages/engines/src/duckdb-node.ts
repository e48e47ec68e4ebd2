/**
 * `@duckdb/node-api` and `@duckdb/node-bindings`, loaded with `require` by the modules that run
 * only beside DuckDB (a DuckDB query worker, a snapshot worker). Both packages are CommonJS: an ESM
 * `import` of them first has Node's CommonJS lexer read node-api's index and every file it
 * re-exports to find their export names, which cost each such thread ~150 ms of CPU on top of the
 * ~150 ms the load itself takes (`bench/RESULTS.md`, "Start-up: CommonJS packages loaded with
 * require"). `require` gives the same module instance an `import` would. A module that may run in an
 * SQLite query worker uses `duckdb-api.ts` instead, which loads DuckDB only when first needed.
 */
import { createRequire } from 'node:module';
import type * as DuckDbApiModule from '@duckdb/node-api';
import type * as DuckDbBindingsModule from '@duckdb/node-bindings';

const require = createRequire(import.meta.url);

export const duckdb = require('@duckdb/node-api') as typeof DuckDbApiModule;
export const duckdbBindings = require('@duckdb/node-bindings') as typeof DuckDbBindingsModule;
