/**
 * The after-download file check without an engine instance per file. Opening a DuckDB instance on
 * a file costs 10–30 ms on top of reading its catalog (1–3 ms), and it came after the download, on
 * every swap. A checker is made ahead (while the download runs): for DuckDB one small in-memory
 * instance, its catalog query warmed up, that ATTACHes each file read-only, reads the table's
 * columns, checks them against the recorded schema and DETACHes it — so what is left once the
 * bytes are on disk is the attach and the catalog read (~3 ms). Kept for a whole dataset thread it
 * would cost ~3 MiB of memory per dataset, so each download makes its own. It is locked down like the query namespaces: no extension loading, file access
 * only under the directory the files are downloaded into, configuration locked. SQLite files open
 * in well under a millisecond and are checked by {@link checkSnapshotFile} as before.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { ArrowSchema, EngineName, FileFormat } from '@ferry/core/base';
import { duckDbOpenFailure, readDuckDbColumns } from './duckdb-engine.js';
import { DUCKDB_EXTENSIONS_OFF, lockDownDuckDb } from './duckdb-lockdown.js';
import { duckdb } from './duckdb-node.js';
import { quoteLiteral } from './engine.js';
import { assertDuckDbFile } from './file-header.js';
import { checkSnapshotFile } from './open-engine.js';
import { checkTableSchema } from './schema-check.js';

const { DuckDBInstance } = duckdb;
type DuckDBInstance = InstanceType<typeof DuckDBInstance>;

export interface SnapshotChecker {
  readonly kind: FileFormat;
  /**
   * Step 5 of the spec's validation, as {@link checkSnapshotFile}: `path` (under the checker's
   * directory) read-only, `table` against the recorded schema. Rejects with
   * `ERR_SNAPSHOT_NOT_A_DATABASE`, `ERR_SNAPSHOT_MISSING_TABLE` or `ERR_SNAPSHOT_SCHEMA_MISMATCH`
   * (a `SnapshotRejectedError`), or an open / I/O error. Checks run one at a time.
   */
  check(path: string, table: string, recorded: ArrowSchema): Promise<void>;
  /** Releases the checker (idempotent); a check in progress finishes first. */
  close(): Promise<void>;
}

class DuckDbChecker implements SnapshotChecker {
  readonly kind = 'duckdb' as const;
  readonly #instance: DuckDBInstance;
  readonly #connection: DuckDBConnection;
  #checks = 0;
  #last: Promise<unknown> = Promise.resolve();
  #closed: Promise<void> | undefined;

  constructor(instance: DuckDBInstance, connection: DuckDBConnection) {
    this.#instance = instance;
    this.#connection = connection;
  }

  check(path: string, table: string, recorded: ArrowSchema): Promise<void> {
    const run = this.#last.then(() => this.#check(path, table, recorded));
    // The chain only orders the checks: a failed check is its caller's (returned below), not the next one's.
    this.#last = run.catch(() => undefined);
    return run;
  }

  async #check(path: string, table: string, recorded: ArrowSchema): Promise<void> {
    if (this.#closed !== undefined) throw new Error('The snapshot checker is closed.');
    assertDuckDbFile(path);
    const alias = `ferry_check_${++this.#checks}`;
    try {
      await this.#connection.run(`ATTACH ${quoteLiteral(path)} AS ${alias} (READ_ONLY)`);
    } catch (error) {
      throw duckDbOpenFailure(path, error);
    }
    try {
      const columns = await readDuckDbColumns(this.#connection, table, alias);
      await checkTableSchema({ kind: 'duckdb', path, columns: async () => columns }, table, recorded);
    } finally {
      await this.#connection.run(`DETACH ${alias}`);
    }
  }

  close(): Promise<void> {
    this.#closed ??= this.#last.then(() => {
      this.#connection.closeSync();
      this.#instance.closeSync();
    });
    return this.#closed;
  }
}

/** SQLite (and Turso) files: opening one is cheap, so each check opens it. */
const sqliteChecker: SnapshotChecker = {
  kind: 'sqlite',
  check: (path, table, recorded) => checkSnapshotFile('sqlite', path, table, recorded),
  close: async () => undefined,
};

/**
 * A checker for files of `kind` downloaded under `directory` (a DuckDB checker cannot read files
 * elsewhere). Close it when done.
 */
export async function createSnapshotChecker(kind: EngineName, directory: string): Promise<SnapshotChecker> {
  if (kind !== 'duckdb') return sqliteChecker;
  const instance = await DuckDBInstance.create(':memory:', { ...DUCKDB_EXTENSIONS_OFF, threads: '1' });
  let connection: DuckDBConnection | undefined;
  try {
    connection = await instance.connect();
    await lockDownDuckDb(connection, { allowedDirectories: [directory] });
    // A new instance's first catalog query costs ~8 ms (the first bind of duckdb_columns()):
    // pay it now, while the download runs, not after it. `memory` is this instance's database.
    await readDuckDbColumns(connection, 'ferry_warm_up', 'memory');
    return new DuckDbChecker(instance, connection);
  } catch (error) {
    connection?.closeSync();
    instance.closeSync();
    throw error;
  }
}
