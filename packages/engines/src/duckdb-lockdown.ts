/**
 * How every DuckDB instance Ferry creates is locked down, in one place: no extension installed or
 * loaded on demand (nothing is downloaded), no file reachable beyond the ones it serves, no way
 * back (the configuration is locked, so no query can `SET` any of it again). A snapshot file opened
 * on its own gets all of it at creation ({@link DUCKDB_READ_ONLY_SETTINGS}); an in-memory instance
 * that ATTACHes files (the query namespaces, the after-download checker) is created with
 * {@link DUCKDB_EXTENSIONS_OFF} and then {@link lockDownDuckDb}, because `allowed_directories` and
 * the temporary-space cap cannot be given at creation.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { quoteLiteral } from './engine.js';

/** Creation options that keep DuckDB from installing or loading any extension by itself. */
export const DUCKDB_EXTENSIONS_OFF: Readonly<Record<string, string>> = {
  autoinstall_known_extensions: 'false',
  autoload_known_extensions: 'false',
  allow_community_extensions: 'false',
};

/**
 * The settings of an instance opened on one snapshot file (DuckDB configuration option names):
 * read-only, no external access, no extension loading, and `lock_configuration` last — once set,
 * `SET` / `RESET` of any option fails.
 */
export const DUCKDB_READ_ONLY_SETTINGS: Readonly<Record<string, string>> = {
  access_mode: 'READ_ONLY',
  enable_external_access: 'false',
  ...DUCKDB_EXTENSIONS_OFF,
  lock_configuration: 'true',
};

/** A size as DuckDB settings take it (whole KiB, at least 1). */
export function duckDbSize(bytes: number): string {
  return `${Math.max(1, Math.floor(bytes / 1024))}KiB`;
}

export interface DuckDbLockDown {
  /** The only directories queries may read files from (the generations, a download directory). */
  readonly allowedDirectories: readonly string[];
  /** Most bytes the instance may spill to its temporary directory. */
  readonly maxTempBytes?: number;
}

/**
 * Locks down an in-memory instance through one of its connections. Order matters:
 * `allowed_directories` must be set while external access is still on, the temporary-space cap is
 * only enforced when set after creation, and the lock comes last.
 */
export async function lockDownDuckDb(connection: DuckDBConnection, lock: DuckDbLockDown): Promise<void> {
  await connection.run(`SET allowed_directories = [${lock.allowedDirectories.map(quoteLiteral).join(', ')}]`);
  if (lock.maxTempBytes !== undefined) {
    await connection.run(`SET max_temp_directory_size = '${duckDbSize(lock.maxTempBytes)}'`);
  }
  await connection.run('SET enable_external_access = false');
  await connection.run('SET lock_configuration = true');
}
