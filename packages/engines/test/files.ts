/**
 * Real database files for the engine tests: small DuckDB files built with a writable instance
 * then checkpointed and closed (no `.wal`), small SQLite files in `journal_mode=DELETE`, and
 * copies of the repository's fixture store's snapshot files with their recorded schemas.
 */
import { chmod, copyFile, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { ArrowSchema } from '@ferry/core';
import { fixtureStoreDir } from '@ferry/test-support';
import Database from 'better-sqlite3';

export async function makeTempDir(): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'ferry-engines-'));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** Create a DuckDB file from SQL statements, checkpoint it and close it. */
export async function makeDuckDbFile(path: string, statements: readonly string[]): Promise<void> {
  const instance = await DuckDBInstance.create(path);
  const connection = await instance.connect();
  try {
    for (const statement of statements) await connection.run(statement);
    await connection.run('CHECKPOINT');
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** Create an SQLite file from SQL statements in rollback-journal (DELETE) mode. */
export async function makeSqliteFile(path: string, statements: readonly string[]): Promise<void> {
  const db = new Database(path);
  try {
    db.pragma('journal_mode = DELETE');
    for (const statement of statements) db.exec(statement);
  } finally {
    db.close();
  }
}

export async function listDir(dir: string): Promise<string[]> {
  return (await readdir(dir)).sort();
}

export interface FixtureFile {
  readonly dataset: string;
  readonly engine: 'duckdb' | 'sqlite';
  /** A writable copy in the test's temporary directory. */
  readonly path: string;
  readonly recorded: ArrowSchema;
  readonly rowCount: number;
}

interface RecordedDataset {
  readonly engine: 'duckdb' | 'sqlite';
  readonly schemas: { 'schema-id': number; schema: ArrowSchema }[];
  readonly 'current-schema-id': number;
  readonly snapshots: { snapshot: string; 'snapshot-row-count': number }[];
}

/** Copy every snapshot file of the fixture store into `dir`, with the schema it was recorded with. */
export async function copyFixtureFiles(dir: string): Promise<FixtureFile[]> {
  const store = fixtureStoreDir();
  const metadata = JSON.parse(await readFile(join(store, 'metadata.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  const location = metadata.location as string;
  const files: FixtureFile[] = [];
  for (const [dataset, value] of Object.entries(metadata)) {
    if (typeof value !== 'object' || value === null) continue;
    const entry = value as RecordedDataset;
    const recorded = entry.schemas.find((s) => s['schema-id'] === entry['current-schema-id'])?.schema;
    if (recorded === undefined) throw new Error(`fixture dataset ${dataset} has no current schema`);
    for (const snapshot of entry.snapshots) {
      const key = snapshot.snapshot.slice(location.length);
      const path = join(dir, key.split('/').pop() as string);
      await copyFile(join(store, key), path);
      await chmod(path, 0o644);
      files.push({ dataset, engine: entry.engine, path, recorded, rowCount: snapshot['snapshot-row-count'] });
    }
  }
  return files;
}
