/**
 * Recognise a database file by its header before an engine opens it, so a file of the wrong
 * engine (or not a database at all: an HTML error page, an empty download) is rejected as
 * `ERR_SNAPSHOT_NOT_A_DATABASE` instead of failing in an engine-specific way. SQLite would even
 * accept an empty file as an empty database. Also reads SQLite's WAL flag: a WAL-mode file cannot
 * be read without creating `-wal`/`-shm` side files, and the spec requires `journal_mode=DELETE`.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import {
  FILE_FORMAT_NAMES,
  type FileFormat,
  SnapshotRejectedError,
  SnapshotRejectionCode,
} from '@ferry/core/base';
import { EngineOpenError } from './errors.js';

export type DatabaseFormat = FileFormat | 'unknown';

export interface DatabaseHeader {
  readonly format: DatabaseFormat;
  /** SQLite only: bytes 18–19 (write/read format versions) are 2, i.e. the file is in WAL mode. */
  readonly sqliteWal: boolean;
}

const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
const DUCKDB_MAGIC = Buffer.from('DUCK', 'latin1');

/** Read the first bytes of `path`; a missing or unreadable file is an {@link EngineOpenError}. */
export function readDatabaseHeader(path: string): DatabaseHeader {
  const bytes = Buffer.alloc(100);
  let length: number;
  try {
    const fd = openSync(path, 'r');
    try {
      length = readSync(fd, bytes, 0, bytes.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new EngineOpenError(
      path,
      code === 'ENOENT'
        ? 'the file does not exist; check the path'
        : `the file cannot be read (${code ?? String(error)})`,
      { cause: error },
    );
  }
  const header = bytes.subarray(0, length);
  if (header.length >= 20 && header.subarray(0, 16).equals(SQLITE_MAGIC)) {
    return { format: 'sqlite', sqliteWal: header[18] === 2 || header[19] === 2 };
  }
  if (header.length >= 12 && header.subarray(8, 12).equals(DUCKDB_MAGIC)) {
    return { format: 'duckdb', sqliteWal: false };
  }
  return { format: 'unknown', sqliteWal: false };
}

const describe = (format: DatabaseFormat): string =>
  format === 'unknown' ? 'not a database file' : `a ${FILE_FORMAT_NAMES[format]} file`;

export function notADatabase(
  path: string,
  expected: string,
  found: string,
  cause?: unknown,
): SnapshotRejectedError {
  return new SnapshotRejectedError(
    SnapshotRejectionCode.notADatabase,
    `'${path}' is ${found}, not a ${expected} database; publish the snapshot as a ${expected} file (the dataset's engine).`,
    { cause },
  );
}

/** Throw `ERR_SNAPSHOT_NOT_A_DATABASE` unless `path` starts with a DuckDB header. */
export function assertDuckDbFile(path: string): void {
  const { format } = readDatabaseHeader(path);
  if (format !== 'duckdb') throw notADatabase(path, 'DuckDB', describe(format));
}

/** Throw `ERR_SNAPSHOT_NOT_A_DATABASE` unless `path` is an SQLite file in rollback-journal mode. */
export function assertSqliteFile(path: string): void {
  const { format, sqliteWal } = readDatabaseHeader(path);
  if (format !== 'sqlite') throw notADatabase(path, 'SQLite', describe(format));
  if (sqliteWal) {
    throw new SnapshotRejectedError(
      SnapshotRejectionCode.notADatabase,
      `'${path}' is an SQLite database in WAL mode, which cannot be read without creating -wal/-shm files; publish the snapshot with journal_mode=DELETE.`,
    );
  }
}
