/**
 * Snapshot files for the scenarios, built before anything is measured. DuckDB files come from the
 * writer's `buildSnapshotFile` (what a real publisher produces: no indexes, row-group zone maps);
 * SQLite files are built with an `INTEGER PRIMARY KEY`, so a point lookup is a rowid seek as it
 * would be in any SQLite table keyed by id (the writer's SQL path makes no index).
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { FileFormat } from '@ferry/core';
import { buildSnapshotFile } from '@ferry/writer';
import Database from 'better-sqlite3';

export interface Column {
  readonly name: string;
  /** SQLite declared type. */
  readonly sqliteType: 'INTEGER' | 'REAL' | 'TEXT';
  /** Value as a DuckDB expression of the row number `i`. */
  readonly duckdb: string;
  /** Value as a SQLite expression of the row number `i`. */
  readonly sqlite: string;
}

/** `id` (the key, 0 … rows-1) plus `version`, so a result shows which snapshot it came from. */
export function keyedColumns(version: number, extra: readonly Column[] = []): Column[] {
  return [
    { name: 'id', sqliteType: 'INTEGER', duckdb: 'i::BIGINT', sqlite: 'i' },
    { name: 'version', sqliteType: 'INTEGER', duckdb: `${version}::BIGINT`, sqlite: `${version}` },
    ...extra,
  ];
}

/** Columns of the query table: a low-cardinality group key, numbers to aggregate, and some text. */
export const QUERY_COLUMNS: readonly Column[] = [
  { name: 'category', sqliteType: 'TEXT', duckdb: "'c' || (i % 16)::VARCHAR", sqlite: "'c' || (i % 16)" },
  {
    name: 'amount',
    sqliteType: 'REAL',
    duckdb: '((i * 7919) % 100000 / 100.0)::DOUBLE',
    sqlite: '((i * 7919) % 100000) / 100.0',
  },
  { name: 'qty', sqliteType: 'INTEGER', duckdb: '(i % 7)::BIGINT', sqlite: 'i % 7' },
  { name: 'note', sqliteType: 'TEXT', duckdb: 'md5(i::VARCHAR)', sqlite: 'lower(hex(randomblob(16)))' },
];

export interface BuiltFile {
  readonly path: string;
  readonly engine: FileFormat;
  readonly dataset: string;
  readonly rows: number;
  readonly size: number;
}

let counter = 0;

/** Builds `<dir>/<dataset>-<n>.<ext>` holding table `dataset` with `rows` rows of `columns`. */
export async function buildFile(
  dir: string,
  engine: FileFormat,
  dataset: string,
  rows: number,
  columns: readonly Column[],
): Promise<BuiltFile> {
  const path = join(dir, `${dataset}-${++counter}.${engine}`);
  if (engine === 'duckdb') {
    const select = columns.map((column) => `${column.duckdb} AS ${column.name}`).join(', ');
    await buildSnapshotFile({
      dataset,
      engine: 'duckdb',
      source: { sql: `SELECT ${select} FROM range(${rows}) t(i)` },
      output: path,
      notNull: columns.map((column) => column.name),
    });
  } else {
    const db = new Database(path);
    try {
      db.pragma('journal_mode = DELETE');
      db.pragma('synchronous = OFF');
      const defs = columns.map((column, index) =>
        index === 0
          ? `${column.name} INTEGER PRIMARY KEY NOT NULL`
          : `${column.name} ${column.sqliteType} NOT NULL`,
      );
      db.exec(`CREATE TABLE "${dataset}" (${defs.join(', ')})`);
      const values = columns.map((column) => column.sqlite).join(', ');
      db.exec(
        `WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ${rows - 1}) ` +
          `INSERT INTO "${dataset}" SELECT ${values} FROM c`,
      );
    } finally {
      db.close();
    }
  }
  return { path, engine, dataset, rows, size: (await stat(path)).size };
}

/** Incompressible-ish DuckDB rows (random doubles and hashes) for download-size scenarios. */
export const BULK_COLUMNS: readonly Column[] = [
  { name: 'a', sqliteType: 'REAL', duckdb: 'random()', sqlite: 'random()' },
  { name: 'b', sqliteType: 'REAL', duckdb: 'random()', sqlite: 'random()' },
  { name: 's', sqliteType: 'TEXT', duckdb: 'md5(i::VARCHAR)', sqlite: 'lower(hex(randomblob(16)))' },
];

/**
 * A file of roughly `targetBytes` with `keyedColumns(version, BULK_COLUMNS)`: a small calibration
 * build gives bytes per row, then the real build scales the row count. The actual size is returned
 * (and reported).
 */
export async function buildFileOfSize(
  dir: string,
  engine: FileFormat,
  dataset: string,
  targetBytes: number,
  version = 1,
): Promise<BuiltFile> {
  const probeRows = 100_000;
  const probe = await buildFile(dir, engine, dataset, probeRows, keyedColumns(version, BULK_COLUMNS));
  const perRow = probe.size / probeRows;
  const rows = Math.max(1000, Math.round(targetBytes / perRow));
  return buildFile(dir, engine, dataset, rows, keyedColumns(version, BULK_COLUMNS));
}

/** A DuckDB file of roughly `targetBytes` (see {@link buildFileOfSize}). */
export function buildDuckDbOfSize(dir: string, dataset: string, targetBytes: number): Promise<BuiltFile> {
  return buildFileOfSize(dir, 'duckdb', dataset, targetBytes);
}
