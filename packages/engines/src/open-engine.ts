/**
 * One entry point from a dataset's engine name to an open read-only adapter, and the whole
 * after-download validation of a file in one call. Turso snapshots are SQLite-format files and
 * use the SQLite adapter (their `kind` is therefore `sqlite`).
 */
import type { ArrowSchema, EngineName } from '@ferry/core/base';
import { openDuckDb } from './duckdb-engine.js';
import type { OpenOptions, SnapshotEngine } from './engine.js';
import { checkTableSchema } from './schema-check.js';
import { openSqlite } from './sqlite-engine.js';

export function openEngine(
  kind: EngineName,
  path: string,
  options: OpenOptions = {},
): Promise<SnapshotEngine> {
  return kind === 'duckdb' ? openDuckDb(path, options) : openSqlite(path, options);
}

/**
 * Step 5 of the spec's validation: open `path` read-only as `kind`, check `table` against the
 * recorded schema, close. Rejects with `ERR_SNAPSHOT_NOT_A_DATABASE`, `ERR_SNAPSHOT_MISSING_TABLE`
 * or `ERR_SNAPSHOT_SCHEMA_MISMATCH` (a `SnapshotRejectedError`), or an I/O error.
 */
export async function checkSnapshotFile(
  kind: EngineName,
  path: string,
  table: string,
  recorded: ArrowSchema,
): Promise<void> {
  const engine = await openEngine(kind, path, { table });
  try {
    await checkTableSchema(engine, table, recorded);
  } finally {
    await engine.close();
  }
}
