/**
 * Producing a publishable snapshot file: built from a SQL query, or copied from an existing DuckDB
 * or SQLite database. Either way the result is one standalone file (a checkpointed DuckDB file
 * with no `.wal`, or an SQLite file in `journal_mode=DELETE` with no side files) holding a table
 * named after the dataset, and its Arrow schema and row count are read back through
 * `@ferry/engines`, the same adapters readers validate it with.
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdtemp, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import {
  type ArrowSchema,
  FerryError,
  FILE_FORMAT_NAMES,
  type FileFormat,
  isSafeDatasetName,
  SPICEPOD_NAME,
} from '@ferry/core/base';
import { openEngine, readDatabaseHeader, type SnapshotEngine } from '@ferry/engines';
import { createDuckDbTable, quoteIdentifier } from './build-duckdb.js';
import { copyDuckDbTableToSqlite, copySqliteFile } from './build-sqlite.js';
import { SnapshotFileError, SnapshotQueryError, SourceFileError, WriterOptionsError } from './errors.js';

/** Where a snapshot's data comes from: a DuckDB query, or an existing database file. */
export type SnapshotSource = { readonly sql: string } | { readonly file: string };

export interface BuildSnapshotOptions {
  /** Dataset name; also the name of the table in the file. */
  readonly dataset: string;
  readonly source: SnapshotSource;
  /** Engine of the file to produce. Default: `duckdb` for `sql`; for `file`, what its header says. */
  readonly engine?: FileFormat;
  /** Path of the file to write; it must not exist. */
  readonly output: string;
  /** `sql` only: columns to declare NOT NULL (absent names are ignored). */
  readonly notNull?: readonly string[];
}

export interface BuiltSnapshot {
  readonly path: string;
  readonly dataset: string;
  readonly engine: FileFormat;
  /** The table's Arrow schema as `@ferry/engines` reads it: what metadata.json records. */
  readonly schema: ArrowSchema;
  readonly rowCount: number;
  readonly size: number;
}

/** Files an engine may leave beside a database; a snapshot must have none. */
const SIDE_FILE_SUFFIXES: Readonly<Record<FileFormat, readonly string[]>> = {
  duckdb: ['.wal'],
  sqlite: ['-wal', '-shm', '-journal'],
};

export function assertDatasetName(dataset: string): void {
  if (!isSafeDatasetName(dataset)) {
    throw new WriterOptionsError(
      'dataset',
      `Dataset name '${dataset}' is not usable in a snapshot key; use up to 128 letters, digits and '_'.`,
    );
  }
  // Safe in a key, but no reader could serve it: a spicepod names datasets with letters, digits and
  // '_' only (SQL reads 'a.b' as table b of schema a, and 'a-b' as a subtraction).
  if (!SPICEPOD_NAME.test(dataset)) {
    const suggestion = dataset.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 128);
    throw new WriterOptionsError(
      'dataset',
      `Dataset name '${dataset}' is not one a spicepod can name, so no reader could serve it; use up to 128 letters, digits and '_' (such as '${suggestion}').`,
    );
  }
}

function assertEngine(engine: string): asserts engine is FileFormat {
  if (engine !== 'duckdb' && engine !== 'sqlite') {
    throw new WriterOptionsError(
      'engine',
      `Engine '${engine}' is not one the writer produces; use 'duckdb' or 'sqlite'.`,
    );
  }
}

/**
 * The engine a source will be published as: the given one (checked against a file's header), else
 * `duckdb` for a query and the header's engine for a file.
 */
export function resolveEngine(dataset: string, source: SnapshotSource, engine?: string): FileFormat {
  if (engine !== undefined) assertEngine(engine);
  if ('sql' in source) return engine ?? 'duckdb';
  const format = readSourceFormat(dataset, source.file);
  if (engine !== undefined && engine !== format) {
    throw new SourceFileError(
      dataset,
      source.file,
      `it is a ${FILE_FORMAT_NAMES[format]} database, not a ${FILE_FORMAT_NAMES[engine]} one; publish it with engine '${format}' or convert it`,
    );
  }
  return format;
}

function readSourceFormat(dataset: string, file: string): FileFormat {
  let format: string;
  try {
    format = readDatabaseHeader(file).format;
  } catch (error) {
    throw new SourceFileError(dataset, file, `it cannot be read (${messageOf(error)}); check the path`, {
      cause: error,
    });
  }
  if (format !== 'duckdb' && format !== 'sqlite') {
    throw new SourceFileError(
      dataset,
      file,
      'it is neither a DuckDB nor an SQLite database file; give the path of a database file',
    );
  }
  return format;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Throws unless no engine side file (`.wal`, `-wal`, `-shm`, `-journal`) sits beside `path`. */
export function assertNoSideFiles(path: string, engine: FileFormat): void {
  for (const suffix of SIDE_FILE_SUFFIXES[engine]) {
    if (existsSync(`${path}${suffix}`)) {
      throw new SnapshotFileError(
        path,
        `'${basename(path)}${suffix}' was left beside it; the file must be self-contained (checkpointed DuckDB, SQLite in journal_mode=DELETE)`,
      );
    }
  }
}

async function removeWithSideFiles(path: string, engine: FileFormat): Promise<void> {
  await Promise.all(
    ['', ...SIDE_FILE_SUFFIXES[engine]].map((suffix) => rm(`${path}${suffix}`, { force: true })),
  );
}

async function buildFromSql(
  dataset: string,
  sql: string,
  engine: FileFormat,
  output: string,
  notNull: readonly string[],
): Promise<void> {
  if (engine === 'duckdb') {
    await createDuckDbTable({ path: output, dataset, sql, notNull });
    return;
  }
  // A hidden scratch directory beside the output: same filesystem, removed whatever happens.
  const scratch = await mkdtemp(join(dirname(output), '.ferry-build-'));
  try {
    const staged = join(scratch, 'staged.duckdb');
    await createDuckDbTable({ path: staged, dataset, sql, notNull });
    try {
      await copyDuckDbTableToSqlite(staged, output, dataset);
    } catch (error) {
      if (error instanceof FerryError) throw error;
      throw new SnapshotQueryError(dataset, `copying the result into SQLite failed (${messageOf(error)})`, {
        cause: error,
      });
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

async function stageFile(dataset: string, file: string, engine: FileFormat, output: string): Promise<void> {
  if (engine === 'duckdb') {
    if (existsSync(`${file}.wal`)) {
      throw new SourceFileError(
        dataset,
        file,
        `a write-ahead log '${basename(file)}.wal' sits beside it, so it is open in another process or was not closed cleanly; close it (or run CHECKPOINT) and publish again`,
      );
    }
    await copyFile(file, output);
    return;
  }
  try {
    await copySqliteFile(file, output);
  } catch (error) {
    throw new SourceFileError(dataset, file, `SQLite could not copy it (${messageOf(error)})`, {
      cause: error,
    });
  }
}

/** The recorded schema and row count of a finished snapshot file (`sourceFile`: the user's file it was copied from). */
export async function inspect(
  path: string,
  dataset: string,
  engine: FileFormat,
  sourceFile: string | undefined,
): Promise<{ schema: ArrowSchema; rowCount: number }> {
  let opened: SnapshotEngine;
  try {
    opened = await openEngine(engine, path);
  } catch (error) {
    if (sourceFile === undefined) throw error;
    throw new SourceFileError(
      dataset,
      sourceFile,
      `${FILE_FORMAT_NAMES[engine]} cannot open it (${messageOf(error)})`,
      {
        cause: error,
      },
    );
  }
  try {
    if ((await opened.columns(dataset)) === undefined) {
      throw sourceFile === undefined
        ? new SnapshotFileError(path, `it has no table '${dataset}'`)
        : new SourceFileError(
            dataset,
            sourceFile,
            `it has no table named '${dataset}'; a snapshot's table is named after its dataset, so rename the table or publish under its name`,
          );
    }
    const schema = await opened.schema(dataset);
    const counted = await opened.query(`SELECT count(*) AS n FROM ${quoteIdentifier(dataset)}`);
    const rowCount = Number(counted.rows[0]?.n ?? 0);
    return { schema, rowCount };
  } finally {
    await opened.close();
  }
}

/**
 * Write a standalone snapshot file for `dataset` at `output` and describe it. From `sql`: DuckDB
 * runs the query (`CREATE TABLE <dataset> AS <sql>`, then CHECKPOINT); for `engine: 'sqlite'` the
 * rows are copied into an SQLite table. From `file`: the database is copied (DuckDB refused when a
 * `.wal` sits beside it; SQLite through the backup API, switched to journal_mode=DELETE) and must
 * hold a table named after the dataset. On failure nothing is left at `output`.
 */
export async function buildSnapshotFile(options: BuildSnapshotOptions): Promise<BuiltSnapshot> {
  const { dataset, source } = options;
  assertDatasetName(dataset);
  const output = resolve(options.output);
  if (existsSync(output)) {
    throw new WriterOptionsError(
      'output',
      `Output '${output}' already exists; choose a new path or remove it.`,
    );
  }
  if ('sql' in source && source.sql.trim() === '') {
    throw new WriterOptionsError('source', `The query for dataset '${dataset}' is empty; give one SELECT.`);
  }
  const engine = resolveEngine(dataset, source, options.engine);
  try {
    if ('sql' in source) await buildFromSql(dataset, source.sql, engine, output, options.notNull ?? []);
    else await stageFile(dataset, resolve(source.file), engine, output);
    assertNoSideFiles(output, engine);
    const { schema, rowCount } = await inspect(
      output,
      dataset,
      engine,
      'file' in source ? resolve(source.file) : undefined,
    );
    assertNoSideFiles(output, engine);
    const { size } = await stat(output);
    return { path: output, dataset, engine, schema, rowCount, size };
  } catch (error) {
    await removeWithSideFiles(output, engine);
    throw error;
  }
}
