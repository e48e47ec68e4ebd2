/**
 * Building a DuckDB table from a SQL query: `CREATE TABLE <dataset> AS <sql>` in a fresh file,
 * NOT NULL added where asked, then CHECKPOINT and close so the file stands alone (no `.wal`).
 * The query may read local CSV, Parquet and JSON files through DuckDB's readers, which are
 * statically linked; extension auto-install and auto-load are off, so a query that would need
 * another extension fails instead of downloading one. The session time zone is UTC, so the
 * result does not depend on the host's zone.
 */
import { type DuckDBConnection, DuckDBInstance, StatementType } from '@duckdb/node-api';
import { NotNullViolationError, SnapshotQueryError } from './errors.js';

/** Instance settings of every DuckDB the writer opens (names are DuckDB configuration options). */
export const DUCKDB_BUILD_SETTINGS: Readonly<Record<string, string>> = {
  autoinstall_known_extensions: 'false',
  autoload_known_extensions: 'false',
  allow_community_extensions: 'false',
};

/** Double-quote an identifier for DuckDB and SQLite (`"a""b"`). */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Open (creating it if needed) a DuckDB file with the build settings and one UTC connection. */
export async function openBuildConnection(
  path: string,
  extra: Readonly<Record<string, string>> = {},
): Promise<{ instance: DuckDBInstance; connection: DuckDBConnection }> {
  const instance = await DuckDBInstance.create(path, { ...DUCKDB_BUILD_SETTINGS, ...extra });
  try {
    const connection = await instance.connect();
    await connection.run("SET TimeZone = 'UTC'");
    return { instance, connection };
  } catch (error) {
    instance.closeSync();
    throw error;
  }
}

/** Refuse anything but exactly one SELECT (so no INSTALL, ATTACH, COPY or SET rides along). */
async function assertSingleSelect(connection: DuckDBConnection, dataset: string, sql: string): Promise<void> {
  let count: number;
  try {
    const extracted = await connection.extractStatements(sql);
    count = extracted.count;
    if (count === 1) {
      const prepared = await extracted.prepare(0);
      const type = prepared.statementType;
      prepared.destroySync();
      if (type !== StatementType.SELECT) {
        const kind = StatementType[type] ?? String(type);
        throw new SnapshotQueryError(dataset, `it is a ${kind} statement, not a SELECT`);
      }
    }
  } catch (error) {
    if (error instanceof SnapshotQueryError) throw error;
    throw new SnapshotQueryError(dataset, messageOf(error), { cause: error });
  }
  if (count !== 1) {
    throw new SnapshotQueryError(dataset, `it holds ${count} statements, not exactly one SELECT`);
  }
}

export interface CreateTableOptions {
  /** The file to create the table in (created when absent). */
  readonly path: string;
  /** Dataset name = table name. */
  readonly dataset: string;
  readonly sql: string;
  /** Columns to declare NOT NULL; names the table does not have are ignored. */
  readonly notNull?: readonly string[];
}

/**
 * Create the dataset's table in `path` from `sql`, CHECKPOINT and close. Rejects with
 * `ERR_WRITER_QUERY` when the query is not one SELECT or fails, and `ERR_WRITER_NOT_NULL` when a
 * NOT NULL column holds NULLs.
 */
export async function createDuckDbTable(options: CreateTableOptions): Promise<void> {
  const { dataset, sql } = options;
  const table = quoteIdentifier(dataset);
  const { instance, connection } = await openBuildConnection(options.path);
  try {
    await assertSingleSelect(connection, dataset, sql);
    try {
      // The newline keeps a trailing `-- comment` of the query from swallowing anything.
      await connection.run(`CREATE TABLE ${table} AS\n${sql}\n`);
    } catch (error) {
      throw new SnapshotQueryError(dataset, messageOf(error), { cause: error });
    }
    const prepared = await connection.prepare(`SELECT * FROM ${table}`);
    const columns = Array.from({ length: prepared.columnCount }, (_, i) => prepared.columnName(i));
    prepared.destroySync();
    for (const column of options.notNull ?? []) {
      if (!columns.includes(column)) continue;
      try {
        await connection.run(`ALTER TABLE ${table} ALTER COLUMN ${quoteIdentifier(column)} SET NOT NULL`);
      } catch (error) {
        if (/NOT NULL constraint/i.test(messageOf(error))) {
          throw new NotNullViolationError(dataset, column, { cause: error });
        }
        throw error;
      }
    }
    await connection.run('CHECKPOINT');
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}
