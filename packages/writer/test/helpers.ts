/**
 * Shared test helpers: temporary directories, source files (CSV, Parquet, JSON, databases), and
 * the reader-side verification of a published snapshot (download, size, SHA-256, open with
 * @ferry/engines, check the table against the recorded schema, count rows).
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import {
  blockLayoutFor,
  blockManifestKey,
  type DatasetMetadata,
  type FileFormat,
  getDataset,
  type ObjectStore,
  type ParsedMetadata,
  parseBlockManifest,
  parseMetadata,
  recordedSchema,
} from '@ferry/core';
import { checkTableSchema, openEngine } from '@ferry/engines';
import { BlockDigester } from '@ferry/store';
import { expect } from 'vitest';
import type { PublishResult } from '../src/index.js';

const dirs: string[] = [];

export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ferry-writer-test-'));
  dirs.push(dir);
  return dir;
}

export async function removeTempDirs(): Promise<void> {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
}

/** The columns of the fixture's `orders`, as CSV text with `rows` rows (ids 1..rows). */
export function ordersCsv(rows: number, options: { nullIdAt?: number } = {}): string {
  const lines = ['id,customer,amount,placed_at,shipped,day'];
  for (let id = 1; id <= rows; id++) {
    const shownId = options.nullIdAt === id ? '' : String(id);
    lines.push(
      `${shownId},customer ${id},${id}0.25,2026-11-29 08:00:${String(id % 60).padStart(2, '0')},${id % 2 === 0},2026-11-29`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** A query over an orders CSV producing the fixture's column types. */
export function ordersSql(csvPath: string, extra = ''): string {
  return `SELECT CAST(id AS BIGINT) AS id, CAST(customer AS VARCHAR) AS customer,
    CAST(amount AS DECIMAL(18,2)) AS amount, CAST(placed_at AS TIMESTAMP) AS placed_at,
    CAST(shipped AS BOOLEAN) AS shipped, CAST(day AS DATE) AS day${extra}
    FROM read_csv_auto('${csvPath}')`;
}

export async function writeCsv(dir: string, name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

/** Run statements against a scratch DuckDB (to produce Parquet files or DuckDB databases). */
export async function duckdb(path: string, statements: readonly string[]): Promise<void> {
  const instance = await DuckDBInstance.create(path);
  const connection = await instance.connect();
  try {
    for (const sql of statements) await connection.run(sql);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

export async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of chunks) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts);
}

export async function readStoreMetadata(store: ObjectStore): Promise<ParsedMetadata> {
  const got = await store.get('metadata.json');
  if (got.status !== 'ok') throw new Error(`metadata.json is missing from ${store.location}`);
  return parseMetadata(new TextDecoder().decode(got.body), store.location);
}

export async function datasetOf(store: ObjectStore, dataset: string): Promise<DatasetMetadata> {
  const entry = getDataset(await readStoreMetadata(store), dataset);
  if (entry === undefined) throw new Error(`dataset ${dataset} is not in metadata.json`);
  return entry;
}

/**
 * Everything a reader checks, against what is really stored: the entry for `result`, the object
 * at the dated key with the recorded size and SHA-256, a table that passes checkTableSchema
 * against the recorded schema, and `rows` rows.
 */
/** The sidecar beside the snapshot describes its bytes: layout of the engine, one right digest per block. */
export async function verifyBlockManifest(
  store: ObjectStore,
  engine: FileFormat,
  result: PublishResult,
  bytes: Uint8Array,
): Promise<void> {
  expect(result.blockManifestKey).toBe(blockManifestKey(result.key));
  const got = await store.get(blockManifestKey(result.key));
  if (got.status !== 'ok') throw new Error(`no block manifest beside ${result.key}`);
  const manifest = parseBlockManifest(new TextDecoder().decode(got.body), result.key, result);
  expect(manifest).toMatchObject(blockLayoutFor(engine));
  const digester = new BlockDigester(blockLayoutFor(engine));
  digester.update(bytes);
  expect(manifest.blocks).toEqual(digester.digest());
}

export async function verifyPublished(
  store: ObjectStore,
  dataset: string,
  engine: FileFormat,
  result: PublishResult,
  rows: number,
): Promise<void> {
  expect(result.key).toMatch(
    new RegExp(
      `^month=\\d{4}-\\d{2}/day=\\d{4}-\\d{2}-\\d{2}/dataset=${dataset}/${dataset}_\\d{8}T\\d{6}Z\\.${engine}$`,
    ),
  );
  expect(result.uri).toBe(`${store.location}${result.key}`);
  const entry = await datasetOf(store, dataset);
  expect(entry.currentSnapshotId).toBe(result.snapshotId);
  expect(entry.currentSchemaId).toBe(result.schemaId);
  const snapshot = entry.snapshots.find((s) => s.snapshotId === result.snapshotId);
  expect(snapshot).toMatchObject({
    uri: result.uri,
    size: result.size,
    checksum: result.checksum,
    checksumAlgorithm: 'SHA256',
    engine,
    rowCount: rows,
  });

  const bytes = await collect(store.read(result.key));
  expect(bytes.byteLength).toBe(result.size);
  expect(createHash('sha256').update(bytes).digest('hex')).toBe(result.checksum);
  await verifyBlockManifest(store, engine, result, bytes);

  const dir = await tempDir();
  const path = join(dir, `downloaded.${engine}`);
  await writeFile(path, bytes);
  const opened = await openEngine(engine, path, { table: dataset });
  try {
    await checkTableSchema(opened, dataset, recordedSchema(entry).schema);
    const counted = await opened.query(`SELECT count(*) AS n FROM "${dataset}"`);
    expect(counted.rows[0]?.n).toBe(rows);
  } finally {
    await opened.close();
  }
}

/**
 * The same store, with `beforeMetadataPut` awaited before its first write of metadata.json: lets a
 * test make another writer win the race at exactly that moment. Everything else is delegated.
 */
export function withHookBeforeMetadataPut(
  store: ObjectStore,
  beforeMetadataPut: () => Promise<void>,
): ObjectStore {
  let fired = false;
  return {
    location: store.location,
    get: (key, options) => store.get(key, options),
    read: (key, options) => store.read(key, options),
    head: (key) => store.head(key),
    async put(key, body, options) {
      if (key === 'metadata.json' && !fired) {
        fired = true;
        await beforeMetadataPut();
      }
      return store.put(key, body, options);
    },
    list: (prefix) => store.list(prefix),
    delete: (key) => store.delete(key),
    close: () => store.close(),
  };
}

/** Every key under the store, sorted. */
export async function keysOf(store: ObjectStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const info of store.list()) keys.push(info.key);
  return keys.sort();
}
