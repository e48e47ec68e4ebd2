/**
 * Real files for the swap pipeline tests: versioned snapshot files (every row of version v carries
 * `version = v`, and there are `rowsOf(v)` rows, so a result proves which snapshot it came from),
 * publishing them into a `file://` or S3 store with the entry a writer would record, and probes of
 * the live file (inode, bytes, side files, temporaries).
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, readlink, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import type { ArrowSchema, JsonValue, SchemaEntry, SnapshotEntry } from '@ferry/core';
import { arrowField, openEngine } from '@ferry/engines';
import type { LocalAws } from '@ferry/test-support';
import Database from 'better-sqlite3';
import {
  downloadSnapshot,
  type LiveFileOptions,
  type PrepareControl,
  type PreparedSnapshot,
  type SnapshotFilesOptions,
  type SnapshotTarget,
  verifySnapshot,
} from '../src/index.js';

export type Kind = 'duckdb' | 'sqlite';

/** The dataset (and table) every versioned snapshot holds. */
export const DATASET = 'events';

export const RECORDED: ArrowSchema = {
  fields: [arrowField('id', 'Int64', false), arrowField('version', 'Int64', false)],
  metadata: {},
};

/** The schema entry every versioned snapshot is recorded with. */
export const RECORDED_ENTRY = { schemaId: 0, schema: RECORDED } as const;

/** Rows in the snapshot of version `v`: differs per version, so a count names its snapshot. */
export function rowsOf(version: number): number {
  return 20 + version;
}

/** The query whose answer must come wholly from one snapshot. */
export const PROBE_SQL = `SELECT count(*) AS n, min(version) AS lo, max(version) AS hi FROM ${DATASET}`;

/** Write one DuckDB file per version (checkpointed, no `.wal`) through one in-memory instance. */
async function makeDuckDbVersions(paths: ReadonlyMap<number, string>, table = DATASET): Promise<void> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    for (const [version, path] of paths) {
      await mkdir(dirname(path), { recursive: true });
      await connection.run(`ATTACH '${path.replaceAll("'", "''")}' AS snap`);
      await connection.run(`CREATE TABLE snap.${table} (id BIGINT NOT NULL, version BIGINT NOT NULL)`);
      await connection.run(
        `INSERT INTO snap.${table} SELECT i, ${version} FROM range(${rowsOf(version)}) r(i)`,
      );
      await connection.run('DETACH snap');
    }
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** Write one SQLite file per version in rollback-journal (DELETE) mode. */
async function makeSqliteVersions(paths: ReadonlyMap<number, string>, table = DATASET): Promise<void> {
  for (const [version, path] of paths) {
    await mkdir(dirname(path), { recursive: true });
    const db = new Database(path);
    try {
      db.pragma('journal_mode = DELETE');
      db.exec(`CREATE TABLE ${table} (id INTEGER NOT NULL, version INTEGER NOT NULL)`);
      const insert = db.prepare(`INSERT INTO ${table} VALUES (?, ?)`);
      db.transaction(() => {
        for (let i = 0; i < rowsOf(version); i++) insert.run(i, version);
      })();
    } finally {
      db.close();
    }
  }
}

function makeVersions(kind: Kind, paths: ReadonlyMap<number, string>, table = DATASET): Promise<void> {
  return kind === 'duckdb' ? makeDuckDbVersions(paths, table) : makeSqliteVersions(paths, table);
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** The key a writer would publish snapshot `id` of the dataset under. */
export function snapshotKey(kind: Kind, id: number): string {
  const stamp = `20261129T${String(Math.floor(id / 60) % 24).padStart(2, '0')}${String(id % 60).padStart(2, '0')}00Z`;
  return `month=2026-11/day=2026-11-29/dataset=${DATASET}/${DATASET}_${stamp}.${kind}`;
}

/** The entry a writer records for `bytes` published at `location` + `key`. */
export function entryOf(id: number, location: string, key: string, bytes: Uint8Array): SnapshotEntry {
  return {
    snapshotId: id,
    timestampMs: 1_795_939_200_000 + id * 1000,
    uri: `${location}${key}`,
    checksum: sha256(bytes),
    checksumAlgorithm: 'SHA256',
    size: bytes.byteLength,
  };
}

/** A `file://` store directory with versioned snapshots published in it. */
export interface PublishedDir {
  readonly location: string;
  readonly entries: ReadonlyMap<number, { readonly entry: SnapshotEntry; readonly key: string }>;
  readonly bytes: ReadonlyMap<number, Uint8Array>;
}

/** Build version files straight into a `file://` store directory (snapshot id = version). */
export async function publishToDir(
  kind: Kind,
  storeDir: string,
  versions: readonly number[],
): Promise<PublishedDir> {
  const location = pathToFileURL(`${storeDir}/`).href;
  const paths = new Map(versions.map((v) => [v, join(storeDir, ...snapshotKey(kind, v).split('/'))]));
  await makeVersions(kind, paths);
  const entries = new Map<number, { entry: SnapshotEntry; key: string }>();
  const bytes = new Map<number, Uint8Array>();
  for (const [version, path] of paths) {
    const body = await readFile(path);
    const key = snapshotKey(kind, version);
    entries.set(version, { entry: entryOf(version, location, key, body), key });
    bytes.set(version, body);
  }
  return { location, entries, bytes };
}

/** Upload `body` to the local S3 and return its entry. */
export async function publishToS3(
  aws: LocalAws,
  bucket: string,
  prefix: string,
  id: number,
  key: string,
  body: Uint8Array,
): Promise<SnapshotEntry> {
  await aws.putObject(bucket, prefix + key, body);
  return entryOf(id, `s3://${bucket}/${prefix}`, key, body);
}

/** Build one versioned snapshot file in `dir` and return its bytes. */
export async function versionBytes(
  kind: Kind,
  dir: string,
  version: number,
  table = DATASET,
): Promise<Uint8Array> {
  const path = join(dir, `build-${kind}-${table}-${version}.${kind}`);
  await makeVersions(kind, new Map([[version, path]]), table);
  return readFile(path);
}

/** What a test compares before and after: the live file's inode and exact bytes. */
export async function liveState(path: string): Promise<{ ino: number; sha: string }> {
  return { ino: (await stat(path)).ino, sha: sha256(await readFile(path)) };
}

const SIDE_FILE = /(-wal|-shm|-journal|\.wal)$/;

/** Engine side files in `dir` (there must never be any). */
export async function sideFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((name) => SIDE_FILE.test(name));
}

/** Every name in `dir`, sorted. */
export async function namesIn(dir: string): Promise<string[]> {
  return (await readdir(dir)).sort();
}

/** Open file descriptors of this process that point at a deleted file under `dir` (Linux only). */
export async function deletedFilesHeld(dir: string): Promise<string[]> {
  const held: string[] = [];
  for (const fd of await readdir('/proc/self/fd')) {
    try {
      const target = await readlink(`/proc/self/fd/${fd}`);
      if (target.startsWith(dir) && target.endsWith(' (deleted)')) held.push(target);
    } catch {
      // The descriptor closed while listing.
    }
  }
  return held;
}

/** Download then verify, as the dataset machine runs the two steps: ready for `commitSnapshot`. */
export async function prepare(
  options: SnapshotFilesOptions,
  target: SnapshotTarget,
  recorded: SchemaEntry,
  control: PrepareControl = {},
): Promise<PreparedSnapshot> {
  const downloaded = await downloadSnapshot(options, target, control);
  return verifySnapshot(
    options,
    downloaded,
    recorded,
    control.signal === undefined ? {} : { signal: control.signal },
  );
}

/** The rows `sql` returns from the live file, read by its engine (opened and closed for this). */
export async function queryLive(
  options: LiveFileOptions,
  sql: string,
): Promise<readonly Record<string, JsonValue>[]> {
  const engine = await openEngine(options.engine, options.livePath, { table: options.table });
  try {
    return (await engine.query(sql)).rows;
  } finally {
    await engine.close();
  }
}
