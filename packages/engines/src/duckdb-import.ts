/**
 * Reading an SQLite dataset into DuckDB, for a query that joins it with DuckDB datasets: once per
 * generation, its table is read with better-sqlite3 (read-only) into a staging table, each column
 * typed by the rule a query of the dataset alone follows (`SqliteColumnPlanner`, sqlite-arrow.ts)
 * over every row and each value converted as that type converts it (read a second time only when
 * a column's values do not fit its declared type), then cast into the types its recorded schema
 * gives (what the snapshot's writer declared) where every value casts, in the table
 * `memory.main.ferry_sqlite_<generation>` (never listed), behind a view named after the dataset in
 * `spice.public`. Bounded in rows and bytes
 * (`CrossEngineLimitError` past either); large tables yield to the worker's other queries every
 * 10,000 rows. `sqliteColumnsInDuckDb` is also what a dataset's placeholder is typed by.
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { DuckDBAppender, DuckDBConnection } from '@duckdb/node-api';
import type { ArrowDataType } from '@ferry/core/base';
import Database from 'better-sqlite3';
import type { ArrowValue } from './arrow-results.js';
import { INTERNAL_SCHEMA, spiceTable } from './duckdb-catalog.js';
import { quoteIdentifier, quoteLiteral } from './engine.js';
import { CrossEngineLimitError } from './errors.js';
import { type NamespaceDataset, valueBytes } from './namespace-types.js';
import { type ColumnPlan, type MixedBlobColumn, SqliteColumnPlanner } from './sqlite-arrow.js';
import { type SqliteValue, storageClass } from './sqlite-engine.js';
import { sqliteDeclaredTypeToArrow } from './sqlite-types.js';

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

/** An SQLite column as DuckDB holds it. */
export interface SqliteColumnInDuckDb {
  readonly name: string;
  /** Its declared type (`null`: none). */
  readonly declared: string | null;
  /** The DuckDB type it takes: its recorded Arrow type's DuckDB form, else its declared type's. */
  readonly type: string;
}

/** An SQLite dataset's columns as DuckDB holds them, from its generation file (`db`, open read-only). */
export function sqliteColumnsInDuckDb(
  db: Database.Database,
  dataset: NamespaceDataset,
): SqliteColumnInDuckDb[] {
  const declared = db
    .prepare('SELECT name, type FROM pragma_table_info(?) ORDER BY cid')
    .all(dataset.name) as { name: string; type: string }[];
  const recorded = recordedTypes(dataset);
  return declared.map((column) => ({
    name: column.name,
    declared: column.type === '' ? null : column.type,
    type: duckDbTypeNameOf(recorded.get(column.name) ?? sqliteDeclaredTypeToArrow(column.type) ?? 'Utf8'),
  }));
}

function recordedTypes(dataset: NamespaceDataset): Map<string, ArrowDataType> {
  return new Map((dataset.generation?.schema?.fields ?? []).map((field) => [field.name, field.data_type]));
}

/**
 * How a column's values (as its plan converts them) land in the staging table: the staging type,
 * the appender's call, and the expression that makes the staged value the plan's type.
 */
interface Staging {
  readonly type: string;
  readonly append: (appender: DuckDBAppender, value: ArrowValue) => void;
  readonly expression: (column: string) => string;
}

function stagingOf(type: ArrowDataType): Staging {
  const plain = (column: string) => column;
  if (typeof type === 'string') {
    switch (type) {
      case 'Int64':
        return { type: 'BIGINT', append: (a, v) => a.appendBigInt(v as bigint), expression: plain };
      case 'Float64':
        return { type: 'DOUBLE', append: (a, v) => a.appendDouble(v as number), expression: plain };
      case 'Binary':
        return { type: 'BLOB', append: (a, v) => a.appendBlob(v as Uint8Array), expression: plain };
      case 'Boolean':
        return { type: 'BOOLEAN', append: (a, v) => a.appendBoolean(v as boolean), expression: plain };
      case 'Date32':
        // Days since the epoch.
        return {
          type: 'INTEGER',
          append: (a, v) => a.appendInteger(v as number),
          expression: (column) => `CAST(DATE '1970-01-01' + ${column} AS DATE)`,
        };
      default:
        return { type: 'VARCHAR', append: (a, v) => a.appendVarchar(v as string), expression: plain };
    }
  }
  if ('Decimal128' in type) {
    // The unscaled value as decimal text, exact at the scale.
    const [precision, scale] = type.Decimal128 as [number, number];
    return {
      type: 'VARCHAR',
      append: (a, v) => a.appendVarchar(decimalText(v as bigint, scale)),
      expression: (column) => `CAST(${column} AS DECIMAL(${precision}, ${scale}))`,
    };
  }
  // Timestamp: microseconds since the epoch.
  return {
    type: 'BIGINT',
    append: (a, v) => a.appendBigInt(v as bigint),
    expression: (column) => `make_timestamp(${column})`,
  };
}

/** `unscaled / 10^scale` as decimal text. */
function decimalText(unscaled: bigint, scale: number): string {
  const digits = (unscaled < 0n ? -unscaled : unscaled).toString().padStart(scale + 1, '0');
  const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return unscaled < 0n ? `-${text}` : text;
}

/** One column of an import: the plan its values are staged by, and where that lands in DuckDB. */
interface ImportColumn {
  readonly name: string;
  readonly plan: ColumnPlan | undefined;
  readonly staging: Staging | undefined;
  /** The DuckDB type it takes. */
  type: string;
  /** Why its values cannot be read into DuckDB: the column then fails the query that reads it. */
  unreadable: string | undefined;
  /** The first value (and its row) the plan could not convert, if any. */
  misfit: { readonly value: Exclude<SqliteValue, null>; readonly row: number } | undefined;
}

/** The import's column for `plan` (a planner's answer). */
function importColumn(
  dataset: NamespaceDataset,
  column: SqliteColumnInDuckDb,
  plan: ColumnPlan | MixedBlobColumn,
): ImportColumn {
  if (!('type' in plan)) {
    const why = `holds a BLOB in row ${plan.blobRow} and ${plan.otherClass} in row ${plan.otherRow}`;
    const cast = `CAST(${column.name} AS BLOB), or hex(${column.name}) for text`;
    return {
      name: column.name,
      plan: undefined,
      staging: undefined,
      type: column.type,
      unreadable: unreadable(dataset.name, column.name, why, cast),
      misfit: undefined,
    };
  }
  // The writer's recorded type, where the values fit the declared type or none is declared.
  const declaredNothing = sqliteDeclaredTypeToArrow(column.declared ?? '') === undefined;
  const recorded = plan.declared || declaredNothing ? recordedTypes(dataset).get(column.name) : undefined;
  return {
    name: column.name,
    plan,
    staging: stagingOf(plan.type),
    type: duckDbTypeNameOf(recorded ?? plan.type),
    unreadable: undefined,
    misfit: undefined,
  };
}

/**
 * Reads the dataset's current generation into `ferry_sqlite_<id>` behind a view of its name, on
 * `admin` (the caller keeps catalog changes from running meanwhile). Each column is typed by the
 * rule a query of the dataset alone answers it with (`SqliteColumnPlanner`, over every row): its
 * declared type when every value fits it, else its values' own (numbers among text as their
 * decimal text); then its recorded type instead, when every value casts to it and the values fit
 * the declared type or none is declared. The rows are staged as the declared types while every
 * value is seen; only when a column's values turn out not to fit are they read and staged again.
 * A column no one type holds (a BLOB among text, an integer beyond 2^53 among reals) is read as an
 * error that names the dataset, the column and the fix, raised only by a query that reads it.
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
    const listed = sqliteColumnsInDuckDb(db, dataset);
    // The listed columns by name: `*` also reads generated columns, which no listing shows.
    const statement = db
      .prepare(
        `SELECT ${listed.map((column) => quoteIdentifier(column.name)).join(', ')} FROM ${quoteIdentifier(dataset.name)}`,
      )
      .raw(true)
      .safeIntegers(true);
    const planners = listed.map((column) => new SqliteColumnPlanner(column.declared));
    const plans = () =>
      listed.map((column, index) =>
        importColumn(dataset, column, (planners[index] as SqliteColumnPlanner).plan()),
      );
    // Staged first as planned before any value is seen (the declared types), every value planned.
    const staged = plans();
    await stageRows(admin, stage, stageName, statement, staged, { dataset: dataset.name, limits, planners });
    const columns = plans();
    const restage = columns.some((column, index) => {
      const first = staged[index] as ImportColumn;
      return (
        column.unreadable === undefined &&
        (first.misfit !== undefined || JSON.stringify(first.plan?.type) !== JSON.stringify(column.plan?.type))
      );
    });
    // Read again only when a column's values do not fit its declared type.
    if (restage) await stageRows(admin, stage, stageName, statement, columns, undefined);
    for (const column of columns) {
      if (column.misfit === undefined || column.plan === undefined) continue;
      const { value, row } = column.misfit;
      const why = `holds ${storageClass(value)} ${String(value).slice(0, 40)} in row ${row}, which its ${duckDbTypeNameOf(column.plan.type)} column (typed from its values) cannot hold`;
      column.unreadable = unreadable(dataset.name, column.name, why, `CAST(${column.name} AS TEXT)`);
    }
    await admin.run(
      `CREATE OR REPLACE TABLE ${target} AS SELECT ${(await withCastableTypes(admin, stage, columns)).join(', ')} FROM ${stage}`,
    );
    const list = columns.map((column) => {
      const name = quoteIdentifier(column.name);
      return column.unreadable === undefined
        ? name
        : `CAST(error(${quoteLiteral(column.unreadable)}) AS ${column.type}) AS ${name}`;
    });
    await admin.run(
      `CREATE OR REPLACE VIEW ${spiceTable(dataset.name)} AS SELECT ${list.join(', ')} FROM ${target}`,
    );
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

/**
 * Every row into a new staging table, each value as its column's plan converts it (a value it
 * cannot convert is staged as null and kept as the column's misfit). The `first` read also bounds
 * the table (rows, bytes) and feeds each value to its column's planner, whose conversion to the
 * declared type is the value staged when the plan is that type.
 */
async function stageRows(
  admin: DuckDBConnection,
  stage: string,
  stageName: string,
  statement: Database.Statement,
  columns: readonly ImportColumn[],
  first:
    | {
        readonly dataset: string;
        readonly limits: CrossEngineLimits;
        readonly planners: SqliteColumnPlanner[];
      }
    | undefined,
): Promise<void> {
  await admin.run(
    `CREATE OR REPLACE TABLE ${stage} (${columns.map((column) => `${quoteIdentifier(column.name)} ${column.staging?.type ?? 'BOOLEAN'}`).join(', ')})`,
  );
  const appender = await admin.createAppender(stageName, 'main', 'memory');
  try {
    let rows = 0;
    let bytes = 0;
    for (const row of statement.iterate() as IterableIterator<SqliteValue[]>) {
      rows++;
      if (first !== undefined && rows > first.limits.maxRows) {
        throw new CrossEngineLimitError(first.dataset, 'rows', first.limits.maxRows);
      }
      for (const [index, column] of columns.entries()) {
        const value = row[index] ?? null;
        let converted: ArrowValue | undefined = null;
        if (first !== undefined) {
          bytes += valueBytes(value);
          const declared = (first.planners[index] as SqliteColumnPlanner).add(value, rows);
          if (value !== null) converted = column.plan?.declared ? declared : column.plan?.convert(value);
        } else if (value !== null && column.plan !== undefined) {
          converted = column.plan.convert(value);
        }
        if (converted === undefined) {
          column.misfit ??= { value: value as Exclude<SqliteValue, null>, row: rows };
          converted = null;
        }
        if (converted === null || column.staging === undefined) appender.appendNull();
        else column.staging.append(appender, converted);
      }
      appender.endRow();
      if (first !== undefined && bytes > first.limits.maxBytes) {
        throw new CrossEngineLimitError(first.dataset, 'bytes', first.limits.maxBytes);
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
}

/**
 * Each column's select-list entry: its staged values made its plan's type, then cast to its
 * recorded type when every value casts to it (else it keeps its plan's type, as a query of the
 * dataset alone answers it).
 */
async function withCastableTypes(
  admin: DuckDBConnection,
  stage: string,
  columns: ImportColumn[],
): Promise<string[]> {
  const own = (column: ImportColumn) => (column.staging as Staging).expression(quoteIdentifier(column.name));
  const recast = columns.filter(
    (column) =>
      column.unreadable === undefined &&
      column.plan !== undefined &&
      column.type !== duckDbTypeNameOf(column.plan.type),
  );
  if (recast.length > 0) {
    const misfits = recast.map(
      (column) =>
        `count(*) FILTER (WHERE ${own(column)} IS NOT NULL AND TRY_CAST(${own(column)} AS ${column.type}) IS NULL)`,
    );
    const reader = await admin.runAndReadAll(`SELECT ${misfits.join(', ')} FROM ${stage}`);
    const counts = reader.getRows()[0] ?? [];
    for (const [index, column] of recast.entries()) {
      if (Number(counts[index] ?? 0) > 0) column.type = duckDbTypeNameOf((column.plan as ColumnPlan).type);
    }
  }
  return columns.map((column) => {
    const name = quoteIdentifier(column.name);
    if (column.unreadable !== undefined) return `CAST(NULL AS ${column.type}) AS ${name}`;
    return `CAST(${own(column)} AS ${column.type}) AS ${name}`;
  });
}

/** Why a column cannot be read into DuckDB, naming the dataset, the column and the fix. */
function unreadable(dataset: string, column: string, what: string, cast: string): string {
  return `SQLite dataset '${dataset}' column '${column}' ${what}, and a DuckDB column holds one type, so a query across engines cannot read it; read it in a query of '${dataset}' alone (SQLite runs it: ${cast}), or store one type in the column.`;
}
