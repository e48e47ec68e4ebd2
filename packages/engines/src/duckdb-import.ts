/**
 * Reading an SQLite dataset into DuckDB, for a query that joins it with DuckDB datasets: once per
 * generation, its table is read with better-sqlite3 (read-only), appended into a staging table by
 * each column's SQLite affinity, then cast into the types its recorded schema gives (what the
 * snapshot's writer declared) in the table `memory.main.ferry_sqlite_<generation>` (never listed),
 * behind a view named after the dataset in `spice.public`. Bounded in rows and bytes
 * (`CrossEngineLimitError` past either); large tables yield to the worker's other queries every
 * 10,000 rows. `sqliteColumnsInDuckDb` is also what a dataset's placeholder is typed by.
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { DuckDBAppender, DuckDBConnection } from '@duckdb/node-api';
import type { ArrowDataType } from '@ferry/core/base';
import Database from 'better-sqlite3';
import { INTERNAL_SCHEMA, spiceTable } from './duckdb-catalog.js';
import { quoteIdentifier } from './engine.js';
import { CrossEngineLimitError, QueryFailedError } from './errors.js';
import { type NamespaceDataset, valueBytes } from './namespace-types.js';
import { type SqliteAffinity, sqliteAffinity, sqliteDeclaredTypeToArrow } from './sqlite-types.js';

/** The table an SQLite dataset's generation is read into: this prefix and the generation id. */
export const IMPORT_TABLE = 'ferry_sqlite_';

/** Bounds on an SQLite dataset read into DuckDB. */
export interface CrossEngineLimits {
  readonly maxRows: number;
  readonly maxBytes: number;
}

/** The DuckDB type an SQLite column takes in DuckDB: its recorded Arrow type's DuckDB form. */
function duckDbTypeNameOf(type: ArrowDataType): string {
  if (typeof type === 'string') {
    const names: Readonly<Record<string, string>> = {
      Boolean: 'BOOLEAN',
      Int8: 'TINYINT',
      Int16: 'SMALLINT',
      Int32: 'INTEGER',
      Int64: 'BIGINT',
      UInt8: 'UTINYINT',
      UInt16: 'USMALLINT',
      UInt32: 'UINTEGER',
      UInt64: 'UBIGINT',
      Float32: 'FLOAT',
      Float64: 'DOUBLE',
      Binary: 'BLOB',
      Date32: 'DATE',
    };
    return names[type] ?? 'VARCHAR';
  }
  const [variant, payload] = Object.entries(type)[0] ?? ['', undefined];
  if (variant === 'Decimal128') {
    const [precision, scale] = payload as [number, number];
    return `DECIMAL(${precision}, ${scale})`;
  }
  if (variant === 'Timestamp')
    return (payload as [string, string | null])[1] === null ? 'TIMESTAMP' : 'TIMESTAMPTZ';
  if (variant === 'Time64') return 'TIME';
  // Lists, structs and maps are stored as JSON text in SQLite snapshots: served as that text.
  return 'VARCHAR';
}

/** How an SQLite value lands in a staging column: by the column's affinity. */
type Staging = 'BIGINT' | 'DOUBLE' | 'VARCHAR' | 'BLOB';

/** An SQLite column as DuckDB holds it. */
export interface SqliteColumnInDuckDb {
  readonly name: string;
  readonly staging: Staging;
  /** The DuckDB type it takes: its recorded Arrow type's DuckDB form, else its declared type's. */
  readonly type: string;
}

/** The staging column of each affinity. */
const STAGING: Readonly<Record<SqliteAffinity, Staging>> = {
  INTEGER: 'BIGINT',
  REAL: 'DOUBLE',
  BLOB: 'BLOB',
  TEXT: 'VARCHAR',
  NUMERIC: 'VARCHAR',
};

/** An SQLite dataset's columns as DuckDB holds them, from its generation file (`db`, open read-only). */
export function sqliteColumnsInDuckDb(
  db: Database.Database,
  dataset: NamespaceDataset,
): SqliteColumnInDuckDb[] {
  const declared = db
    .prepare('SELECT name, type FROM pragma_table_info(?) ORDER BY cid')
    .all(dataset.name) as { name: string; type: string }[];
  const recorded = new Map(
    (dataset.generation?.schema?.fields ?? []).map((field) => [field.name, field.data_type]),
  );
  return declared.map((column) => ({
    name: column.name,
    staging: STAGING[sqliteAffinity(column.type)],
    type: duckDbTypeNameOf(recorded.get(column.name) ?? sqliteDeclaredTypeToArrow(column.type) ?? 'Utf8'),
  }));
}

/**
 * Reads the dataset's current generation into `ferry_sqlite_<id>` behind a view of its name, on
 * `admin` (the caller keeps catalog changes from running meanwhile).
 */
export async function importSqliteDataset(
  admin: DuckDBConnection,
  dataset: NamespaceDataset,
  limits: CrossEngineLimits,
): Promise<void> {
  const generation = dataset.generation;
  if (generation === null) return;
  // Internal tables live in DuckDB's own `memory.main`, which no listing shows (duckdb-catalog.ts).
  const stageName = `ferry_stage_${generation.id}`;
  const stage = `${INTERNAL_SCHEMA}.${stageName}`;
  const target = `${INTERNAL_SCHEMA}.${IMPORT_TABLE}${generation.id}`;
  const db = new Database(generation.path, { readonly: true, fileMustExist: true });
  try {
    const columns = sqliteColumnsInDuckDb(db, dataset);
    await admin.run(
      `CREATE OR REPLACE TABLE ${stage} (${columns.map((column) => `${quoteIdentifier(column.name)} ${column.staging}`).join(', ')})`,
    );
    const appender = await admin.createAppender(stageName, 'main', 'memory');
    let rows = 0;
    let bytes = 0;
    try {
      const statement = db
        .prepare(`SELECT * FROM ${quoteIdentifier(dataset.name)}`)
        .raw(true)
        .safeIntegers(true);
      for (const row of statement.iterate() as IterableIterator<unknown[]>) {
        rows++;
        if (rows > limits.maxRows) {
          throw new CrossEngineLimitError(dataset.name, 'rows', limits.maxRows);
        }
        for (const [index, column] of columns.entries()) {
          const value = row[index];
          bytes += valueBytes(value);
          appendStaging(appender, column.staging, value, dataset.name, column.name);
        }
        appender.endRow();
        if (bytes > limits.maxBytes) {
          throw new CrossEngineLimitError(dataset.name, 'bytes', limits.maxBytes);
        }
        // Other queries of this worker keep going while a large table is read in.
        if (rows % 10_000 === 0) {
          appender.flushSync();
          await yieldToLoop();
        }
      }
      appender.flushSync();
    } finally {
      appender.closeSync();
    }
    const casts = columns
      .map(
        (column) =>
          `CAST(${quoteIdentifier(column.name)} AS ${column.type}) AS ${quoteIdentifier(column.name)}`,
      )
      .join(', ');
    await admin.run(`CREATE OR REPLACE TABLE ${target} AS SELECT ${casts} FROM ${stage}`);
    await admin.run(`CREATE OR REPLACE VIEW ${spiceTable(dataset.name)} AS SELECT * FROM ${target}`);
  } catch (error) {
    db.close();
    // The import's own error is the one its query reports. Its staging table is dropped here, and
    // one that could not be is replaced by the next import of this generation (CREATE OR REPLACE).
    await admin.run(`DROP TABLE IF EXISTS ${stage}`).catch(() => undefined);
    throw error;
  }
  db.close();
  await admin.run(`DROP TABLE IF EXISTS ${stage}`);
}

function appendStaging(
  appender: DuckDBAppender,
  staging: Staging,
  value: unknown,
  dataset: string,
  column: string,
): void {
  if (value === null || value === undefined) {
    appender.appendNull();
    return;
  }
  switch (staging) {
    case 'BIGINT':
      if (typeof value === 'bigint') appender.appendBigInt(value);
      else if (typeof value === 'number' && Number.isInteger(value)) appender.appendBigInt(BigInt(value));
      else throw mismatch(dataset, column, 'INTEGER', value);
      return;
    case 'DOUBLE':
      if (typeof value === 'number') appender.appendDouble(value);
      else if (typeof value === 'bigint') appender.appendDouble(Number(value));
      else throw mismatch(dataset, column, 'REAL', value);
      return;
    case 'BLOB':
      if (value instanceof Uint8Array) appender.appendBlob(value);
      else appender.appendBlob(new TextEncoder().encode(String(value)));
      return;
    default:
      appender.appendVarchar(
        value instanceof Uint8Array ? Buffer.from(value).toString('base64') : String(value),
      );
  }
}

function mismatch(dataset: string, column: string, affinity: string, value: unknown): QueryFailedError {
  return new QueryFailedError(
    `dataset '${dataset}'`,
    `column '${column}' (${affinity}) holds a ${typeof value === 'string' ? 'TEXT' : typeof value} value, which DuckDB cannot take in a join across engines; cast the column in a query of its own.`,
  );
}
