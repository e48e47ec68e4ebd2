/**
 * SQLite snapshot files. A query's result is built in a scratch DuckDB table first (same rules as
 * a DuckDB snapshot), then copied row by row into a fresh SQLite file whose declared column types
 * are the ones `@ferry/engines` reads back as the closest Arrow type (see {@link sqliteColumnFor}).
 * An existing SQLite file is copied with SQLite's online backup (consistent even with a live
 * writer or a WAL) and switched to `journal_mode=DELETE`, as the snapshot-store spec requires.
 */
import { type DuckDBType, DuckDBTypeId, type DuckDBValue } from '@duckdb/node-api';
import { checkSqliteBinding } from '@ferry/engines';
import Database from 'better-sqlite3';
import { openBuildConnection, quoteIdentifier } from './build-duckdb.js';

/** How one DuckDB column is stored in SQLite: the declared type and the DuckDB expression giving the value. */
export interface SqliteColumn {
  readonly declaredType: string;
  /** A DuckDB SQL expression over `column` (already quoted) yielding BIGINT, DOUBLE, VARCHAR or BLOB. */
  readonly expression: (column: string) => string;
}

const asIs = (column: string): string => column;
const cast =
  (type: string) =>
  (column: string): string =>
    `CAST(${column} AS ${type})`;
const format =
  (pattern: string) =>
  (column: string): string =>
    `strftime(${column}, '${pattern}')`;

/**
 * The SQLite column for a DuckDB type. Integers → INTEGER, floats → REAL, VARCHAR → TEXT, BLOB →
 * BLOB; BOOLEAN → BOOLEAN holding 0/1; DATE → DATE and TIMESTAMP (any unit) → TIMESTAMP holding
 * ISO-8601 text (`2026-11-29`, `2026-11-29T08:00:00.000000`), which those declared types keep as
 * text. Everything else is TEXT: DECIMAL as its exact digits (a NUMERIC column would round it to
 * 15 significant digits), TIMESTAMPTZ as UTC ISO-8601 with `Z`, TIME and INTERVAL as DuckDB
 * prints them, LIST/STRUCT/MAP/ARRAY/UNION as JSON, UUID/ENUM/HUGEINT and the rest as text.
 */
export function sqliteColumnFor(type: DuckDBType): SqliteColumn {
  switch (type.typeId) {
    case DuckDBTypeId.BOOLEAN:
      return { declaredType: 'BOOLEAN', expression: cast('INTEGER') };
    case DuckDBTypeId.TINYINT:
    case DuckDBTypeId.SMALLINT:
    case DuckDBTypeId.INTEGER:
    case DuckDBTypeId.BIGINT:
    case DuckDBTypeId.UTINYINT:
    case DuckDBTypeId.USMALLINT:
    case DuckDBTypeId.UINTEGER:
    case DuckDBTypeId.UBIGINT:
      return { declaredType: 'INTEGER', expression: cast('BIGINT') };
    case DuckDBTypeId.FLOAT:
    case DuckDBTypeId.DOUBLE:
      return { declaredType: 'REAL', expression: cast('DOUBLE') };
    case DuckDBTypeId.VARCHAR:
      return { declaredType: 'TEXT', expression: asIs };
    case DuckDBTypeId.BLOB:
      return { declaredType: 'BLOB', expression: asIs };
    case DuckDBTypeId.DATE:
      return { declaredType: 'DATE', expression: cast('VARCHAR') };
    case DuckDBTypeId.TIMESTAMP_S:
    case DuckDBTypeId.TIMESTAMP_MS:
    case DuckDBTypeId.TIMESTAMP:
      return { declaredType: 'TIMESTAMP', expression: format('%Y-%m-%dT%H:%M:%S.%f') };
    case DuckDBTypeId.TIMESTAMP_NS:
      return { declaredType: 'TIMESTAMP', expression: format('%Y-%m-%dT%H:%M:%S.%n') };
    case DuckDBTypeId.TIMESTAMP_TZ:
      return { declaredType: 'TEXT', expression: format('%Y-%m-%dT%H:%M:%S.%fZ') };
    case DuckDBTypeId.LIST:
    case DuckDBTypeId.STRUCT:
    case DuckDBTypeId.MAP:
    case DuckDBTypeId.ARRAY:
    case DuckDBTypeId.UNION:
      return { declaredType: 'TEXT', expression: (column) => `CAST(to_json(${column}) AS VARCHAR)` };
    default:
      return { declaredType: 'TEXT', expression: cast('VARCHAR') };
  }
}

type SqliteValue = null | number | bigint | string | Buffer;

function toSqliteValue(value: DuckDBValue): SqliteValue {
  if (value === null || typeof value === 'number' || typeof value === 'bigint' || typeof value === 'string') {
    return value;
  }
  if (typeof value === 'boolean') return value ? 1 : 0;
  // After the conversions above only BLOBs remain.
  const bytes = (value as { bytes?: Uint8Array }).bytes;
  return bytes === undefined ? String(value) : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Copy the dataset's table from the DuckDB file `duckDbPath` into a new SQLite file `sqlitePath`
 * (journal_mode=DELETE, one transaction). Columns keep their order, names and NOT NULL.
 */
export async function copyDuckDbTableToSqlite(
  duckDbPath: string,
  sqlitePath: string,
  dataset: string,
): Promise<void> {
  checkSqliteBinding();
  const table = quoteIdentifier(dataset);
  const { instance, connection } = await openBuildConnection(duckDbPath, { access_mode: 'READ_ONLY' });
  try {
    const info = await connection.runAndReadAll(
      `SELECT column_name, is_nullable FROM duckdb_columns()
        WHERE database_name = current_database() AND schema_name = current_schema() AND table_name = $1
        ORDER BY column_index`,
      [dataset],
    );
    const nullable = info.getRows().map((row) => row[1] === true);
    const prepared = await connection.prepare(`SELECT * FROM ${table}`);
    const columns = Array.from({ length: prepared.columnCount }, (_, i) => ({
      name: prepared.columnName(i),
      storage: sqliteColumnFor(prepared.columnType(i)),
      nullable: nullable[i] ?? true,
    }));
    prepared.destroySync();

    const db = new Database(sqlitePath);
    try {
      db.pragma('journal_mode = DELETE');
      const definitions = columns.map(
        (c) => `${quoteIdentifier(c.name)} ${c.storage.declaredType}${c.nullable ? '' : ' NOT NULL'}`,
      );
      db.exec(`CREATE TABLE ${table} (${definitions.join(', ')})`);
      const insert = db.prepare(`INSERT INTO ${table} VALUES (${columns.map(() => '?').join(', ')})`);
      const select = columns.map((c) => c.storage.expression(quoteIdentifier(c.name))).join(', ');
      const result = await connection.stream(`SELECT ${select} FROM ${table}`);
      db.exec('BEGIN');
      try {
        for (;;) {
          const chunk = await result.fetchChunk();
          if (chunk === null || chunk.rowCount === 0) break;
          for (const row of chunk.getRows()) insert.run(row.map(toSqliteValue));
        }
        db.exec('COMMIT');
      } catch (error) {
        db.exec('ROLLBACK');
        throw error;
      }
    } finally {
      db.close();
    }
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/**
 * Copy an SQLite database into `target` with the online backup API (reads through its WAL or a
 * concurrent writer consistently), then switch the copy to `journal_mode=DELETE` so it stands
 * alone. The source is opened read-only and never changed.
 */
export async function copySqliteFile(source: string, target: string): Promise<void> {
  checkSqliteBinding();
  const db = new Database(source, { readonly: true, fileMustExist: true });
  try {
    await db.backup(target);
  } finally {
    db.close();
  }
  const copy = new Database(target, { fileMustExist: true });
  try {
    copy.pragma('journal_mode = DELETE');
  } finally {
    copy.close();
  }
}
