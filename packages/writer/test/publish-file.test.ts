/**
 * publishSnapshot to file:// locations: the layout and metadata a reader validates, ids and schema
 * evolution, refusals that upload nothing, concurrent publishers racing on metadata.json, keys
 * never overwritten, and appending to a copy of the shared fixture store.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { maxMetadataBytes, type ObjectStore, parseMetadata } from '@ferry/core';
import { createFileStore } from '@ferry/store';
import { copyFixtureStore } from '@ferry/test-support';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { buildSnapshotFile, type PublishResult, publishSnapshot, snapshotKey } from '../src/index.js';
import {
  datasetOf,
  duckdb,
  keysOf,
  ordersCsv,
  ordersSql,
  readStoreMetadata,
  removeTempDirs,
  tempDir,
  verifyPublished,
  withHookBeforeMetadataPut,
  writeCsv,
} from './helpers.js';

afterAll(removeTempDirs);

async function newLocation(): Promise<{ dir: string; location: string; store: ObjectStore }> {
  const dir = await tempDir();
  const root = join(dir, 'store');
  await mkdir(root);
  const location = pathToFileURL(`${root}/`).href;
  return { dir, location, store: createFileStore({ location }) };
}

async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error('expected a rejection');
}

describe('publishSnapshot to file://', () => {
  it('publishes a CSV query: dated key, parseable metadata, matching checksum, readable table', async () => {
    const { dir, location, store } = await newLocation();
    const csv = await writeCsv(dir, 'orders.csv', ordersCsv(5));
    const progress: [number, number][] = [];
    const result = await publishSnapshot({
      dataset: 'orders',
      location,
      source: { sql: ordersSql(csv) },
      lastUpdatedAtMs: 1_795_939_199_000,
      onProgress: (bytes, total) => progress.push([bytes, total]),
    });
    expect(result).toMatchObject({ snapshotId: 0, schemaId: 0, rowCount: 5, attempts: 1 });
    await verifyPublished(store, 'orders', 'duckdb', result, 5);
    expect(await keysOf(store)).toEqual(
      [result.key, `${result.key}.ferry-blocks.json`, 'metadata.json'].sort(),
    );
    expect(progress.at(-1)).toEqual([result.size, result.size]);
    const entry = await datasetOf(store, 'orders');
    expect(entry.engine).toBe('duckdb');
    expect(entry.snapshots[0]?.lastUpdatedAtMs).toBe(1_795_939_199_000);
    const metadata = await readStoreMetadata(store);
    expect(metadata.location).toBe(location);
  });

  it('gives the next publish id + 1, records a widened schema, refuses an incompatible one before uploading', async () => {
    const { dir, location, store } = await newLocation();
    const csv = await writeCsv(dir, 'orders.csv', ordersCsv(4));
    const first = await publishSnapshot({ dataset: 'orders', location, source: { sql: ordersSql(csv) } });
    const second = await publishSnapshot({ dataset: 'orders', location, source: { sql: ordersSql(csv) } });
    expect([first.snapshotId, second.snapshotId]).toEqual([0, 1]);
    expect(second.schemaId).toBe(0);
    expect(second.key).not.toBe(first.key);

    const widened = await publishSnapshot({
      dataset: 'orders',
      location,
      source: { sql: ordersSql(csv, ", 'eu'::VARCHAR AS region") },
    });
    expect(widened).toMatchObject({ snapshotId: 2, schemaId: 1 });
    await verifyPublished(store, 'orders', 'duckdb', widened, 4);
    const entry = await datasetOf(store, 'orders');
    expect(entry.schemas.map((s) => [s.schemaId, s.schema.fields.length])).toEqual([
      [0, 6],
      [1, 7],
    ]);

    const keysBefore = await keysOf(store);
    const metadataBefore = await readFile(new URL('metadata.json', location));
    const error = await rejection(
      publishSnapshot({
        dataset: 'orders',
        location,
        source: { sql: `SELECT CAST(id AS VARCHAR) AS id FROM read_csv_auto('${csv}')` },
      }),
    );
    expect(error.code).toBe('ERR_INCOMPATIBLE_SCHEMA');
    expect(error.message).toContain("dataset 'orders'");
    expect(error.message).toContain(location);
    expect(error.message).toContain('id Utf8');
    expect(await keysOf(store)).toEqual(keysBefore);
    expect(await readFile(new URL('metadata.json', location))).toEqual(metadataBefore);
  });

  it('keeps the recorded NOT NULL columns when republishing from a query', async () => {
    const { dir, location, store } = await newLocation();
    const source = join(dir, 'items.duckdb');
    await duckdb(source, [
      'CREATE TABLE items (id BIGINT NOT NULL, label VARCHAR)',
      "INSERT INTO items VALUES (1, 'a')",
    ]);
    await publishSnapshot({ dataset: 'items', location, source: { file: source } });
    const csv = await writeCsv(dir, 'items.csv', 'id,label\n1,a\n2,b\n');
    const again = await publishSnapshot({
      dataset: 'items',
      location,
      source: {
        sql: `SELECT CAST(id AS BIGINT) AS id, CAST(label AS VARCHAR) AS label FROM read_csv_auto('${csv}')`,
      },
    });
    expect(again).toMatchObject({ snapshotId: 1, schemaId: 0 });
    await verifyPublished(store, 'items', 'duckdb', again, 2);
  });

  it('refuses a NOT NULL column the table does not have, instead of recording it nullable for good', async () => {
    const { location, store } = await newLocation();
    const sql = 'SELECT 1::BIGINT AS id, 2::BIGINT AS qty';
    for (const notNull of [['idd'], ['ID'], ['id', 'qtty']]) {
      const error = await rejection(
        publishSnapshot({ dataset: 'items', location, source: { sql }, notNull }),
      );
      expect(error.code).toBe('ERR_WRITER_OPTIONS');
      expect(error.message).toContain(`'${notNull.at(-1)}'`);
      expect(error.message).toContain("'id', 'qty'");
    }
    // Nothing published: a later publish with the right name still records id NOT NULL.
    expect(await keysOf(store)).toEqual([]);
    await publishSnapshot({ dataset: 'items', location, source: { sql }, notNull: ['id'] });
    const fields = (await datasetOf(store, 'items')).schemas[0]?.schema.fields;
    expect(fields?.map((field) => [field.name, field.nullable])).toEqual([
      ['id', false],
      ['qty', true],
    ]);
  });

  it('refuses, before uploading, a snapshot whose entry would grow metadata.json past what readers accept', async () => {
    const { location, store } = await newLocation();
    const sql = 'SELECT i::BIGINT AS id FROM range(3) t(i)';
    await publishSnapshot({ dataset: 'orders', location, source: { sql } });
    // Another dataset's properties fill the document to just under the readers' limit.
    const got = await store.get('metadata.json');
    if (got.status !== 'ok') throw new Error('no metadata.json');
    const document = JSON.parse(new TextDecoder().decode(got.body)) as Record<string, unknown>;
    document.padding = { name: 'padding', 'current-schema-id': 0, properties: { fill: '' } };
    const size = (): number => Buffer.byteLength(`${JSON.stringify(document, null, 2)}\n`);
    (document.padding as { properties: { fill: string } }).properties.fill = 'x'.repeat(
      maxMetadataBytes - 200 - size(),
    );
    const full = `${JSON.stringify(document, null, 2)}\n`;
    await store.put('metadata.json', new TextEncoder().encode(full), { ifMatch: got.etag });
    const keysBefore = await keysOf(store);

    const error = await rejection(publishSnapshot({ dataset: 'orders', location, source: { sql } }));
    expect(error.code).toBe('ERR_WRITER_METADATA_TOO_LARGE');
    expect(error.message).toContain(`${location}metadata.json`);
    // Nothing written: readers still parse the document, and no object was left behind.
    const after = await store.get('metadata.json');
    if (after.status !== 'ok') throw new Error('no metadata.json');
    expect(new TextDecoder().decode(after.body)).toBe(full);
    expect(() => parseMetadata(full, location)).not.toThrow();
    expect(await keysOf(store)).toEqual(keysBefore);
  });

  it('refuses another engine than the recorded one before uploading', async () => {
    const { location, store } = await newLocation();
    await publishSnapshot({ dataset: 'nums', location, source: { sql: 'SELECT 1::BIGINT AS n' } });
    const keysBefore = await keysOf(store);
    const error = await rejection(
      publishSnapshot({
        dataset: 'nums',
        location,
        engine: 'sqlite',
        source: { sql: 'SELECT 1::BIGINT AS n' },
      }),
    );
    expect(error.code).toBe('ERR_WRITER_ENGINE_MISMATCH');
    expect(error.message).toContain("recorded with engine 'duckdb'");
    expect(await keysOf(store)).toEqual(keysBefore);
  });

  it('publishes an existing DuckDB file and an existing SQLite file', async () => {
    const { dir, location, store } = await newLocation();
    const duck = join(dir, 'events.duckdb');
    await duckdb(duck, ['CREATE TABLE events AS SELECT range AS id, range * 1.5 AS v FROM range(10)']);
    const fromDuck = await publishSnapshot({ dataset: 'events', location, source: { file: duck } });
    await verifyPublished(store, 'events', 'duckdb', fromDuck, 10);

    const lite = join(dir, 'users.db');
    const db = new Database(lite);
    db.pragma('journal_mode = WAL');
    db.exec(
      "CREATE TABLE users (id INTEGER NOT NULL, name TEXT); INSERT INTO users VALUES (1, 'a'), (2, NULL)",
    );
    try {
      const fromLite = await publishSnapshot({ dataset: 'users', location, source: { file: lite } });
      expect(fromLite.key.endsWith('.sqlite')).toBe(true);
      await verifyPublished(store, 'users', 'sqlite', fromLite, 2);
    } finally {
      db.close();
    }
    // Two snapshots, each with its block manifest, and metadata.json.
    expect(await keysOf(store)).toHaveLength(5);
  });

  it('never overwrites an existing key: it waits for a free second', async () => {
    const { dir, location, store } = await newLocation();
    const built = await buildSnapshotFile({
      dataset: 'ticks',
      source: { sql: 'SELECT 1::BIGINT AS n' },
      output: join(dir, 'ticks.duckdb'),
    });
    const now = Date.now();
    const occupied = [0, 1000].map((offset) => snapshotKey('ticks', 'duckdb', now + offset));
    for (const key of occupied) await store.put(key, new TextEncoder().encode(`occupied ${key}`));
    const result = await publishSnapshot({ dataset: 'ticks', location, source: { file: built.path } });
    expect(occupied).not.toContain(result.key);
    for (const key of occupied) {
      const got = await store.get(key);
      expect(got.status === 'ok' && new TextDecoder().decode(got.body)).toBe(`occupied ${key}`);
    }
    await verifyPublished(store, 'ticks', 'duckdb', result, 1);
  });
});

describe('concurrent publishers on file://', () => {
  it('the loser of the metadata race reads again and appends after the winner', async () => {
    const { dir, location, store } = await newLocation();
    const csv = await writeCsv(dir, 'orders.csv', ordersCsv(3));
    let winner: Promise<PublishResult> | undefined;
    const startWinner = (): Promise<PublishResult> => {
      winner ??= publishSnapshot({ dataset: 'orders', location, source: { sql: ordersSql(csv) } });
      return winner;
    };
    // The loser has read metadata.json and uploaded its file; the winner publishes right then.
    const loserStore = withHookBeforeMetadataPut(createFileStore({ location }), async () => {
      await startWinner();
    });
    const loser = await publishSnapshot({
      dataset: 'orders',
      location: loserStore,
      source: { sql: ordersSql(csv) },
    });
    const won = await startWinner();
    expect(won).toMatchObject({ snapshotId: 0, attempts: 1 });
    expect(loser).toMatchObject({ snapshotId: 1, attempts: 2 });
    const entry = await datasetOf(store, 'orders');
    expect(entry.snapshots.map((s) => [s.snapshotId, s.uri])).toEqual([
      [0, won.uri],
      [1, loser.uri],
    ]);
    expect(entry.currentSnapshotId).toBe(1);
    await verifyPublished(store, 'orders', 'duckdb', loser, 3);
  });

  it('sets last-updated-ms when it writes metadata.json: a writer committing last never moves it back', async () => {
    const { location, store } = await newLocation();
    const sql = 'SELECT 1::BIGINT AS id';
    let winnerUpdatedMs = 0;
    // The loser has taken its key's time and uploaded; the winner publishes (later) right then.
    const loserStore = withHookBeforeMetadataPut(createFileStore({ location }), async () => {
      await publishSnapshot({ dataset: 'orders', location, source: { sql } });
      winnerUpdatedMs = (await readStoreMetadata(store)).lastUpdatedMs;
    });
    const loser = await publishSnapshot({ dataset: 'orders', location: loserStore, source: { sql } });
    const metadata = await readStoreMetadata(store);
    const entry = (await datasetOf(store, 'orders')).snapshots.find((s) => s.snapshotId === loser.snapshotId);
    expect(winnerUpdatedMs).toBeGreaterThan(entry?.timestampMs ?? Number.POSITIVE_INFINITY);
    expect(metadata.lastUpdatedMs).toBeGreaterThanOrEqual(winnerUpdatedMs);
  });

  it('several writers at once: every one succeeds and no entry is lost', async () => {
    const { dir, location, store } = await newLocation();
    const built = await buildSnapshotFile({
      dataset: 'shared',
      source: { sql: 'SELECT range AS id FROM range(3)' },
      output: join(dir, 'shared.duckdb'),
    });
    const names = ['a', 'b', 'c', 'd', 'e'];
    const copies = await Promise.all(
      names.map(async (name) => {
        const path = join(dir, `${name}.duckdb`);
        await duckdb(path, [
          `ATTACH '${built.path}' AS src (READ_ONLY)`,
          `CREATE TABLE ${name} AS FROM src.shared`,
        ]);
        return path;
      }),
    );
    const results = await Promise.all(
      names.map((name, i) =>
        publishSnapshot({ dataset: name, location, source: { file: copies[i] as string }, maxAttempts: 20 }),
      ),
    );
    const metadata = await readStoreMetadata(store);
    expect([...metadata.datasets.keys()].sort()).toEqual(names);
    for (const [i, name] of names.entries()) {
      expect(metadata.datasets.get(name)?.snapshots.map((s) => s.uri)).toEqual([results[i]?.uri]);
    }
    expect(results.reduce((sum, r) => sum + r.attempts, 0)).toBeGreaterThanOrEqual(names.length);
  });
});

describe('publishing into a copy of the fixture store', () => {
  it('appends orders snapshot 2 under the recorded schema and leaves users untouched', async () => {
    const dir = await tempDir();
    const copy = await copyFixtureStore({ kind: 'dir', dir: join(dir, 'store') });
    const store = createFileStore({ location: copy.location });
    const before = await readStoreMetadata(store);
    const csv = await writeCsv(dir, 'orders.csv', ordersCsv(9));
    const result = await publishSnapshot({
      dataset: 'orders',
      location: copy.location,
      source: { sql: ordersSql(csv) },
    });
    expect(result).toMatchObject({ snapshotId: 2, schemaId: 0, attempts: 1 });
    await verifyPublished(store, 'orders', 'duckdb', result, 9);
    const after = await readStoreMetadata(store);
    const orders = after.datasets.get('orders');
    expect(orders?.schemas).toHaveLength(1);
    expect(orders?.snapshots.slice(0, 2)).toEqual(before.datasets.get('orders')?.snapshots);
    expect(after.datasets.get('users')).toEqual(before.datasets.get('users'));

    const users = await writeCsv(dir, 'users.csv', 'id,name,score\n1,ann,1.5\n2,bo,2\n');
    const published = await publishSnapshot({
      dataset: 'users',
      location: copy.location,
      engine: 'sqlite',
      source: {
        sql: `SELECT CAST(id AS BIGINT) AS id, CAST(name AS VARCHAR) AS name, CAST(score AS DOUBLE) AS score FROM read_csv_auto('${users}')`,
      },
    });
    expect(published).toMatchObject({ snapshotId: 1, schemaId: 0 });
    await verifyPublished(store, 'users', 'sqlite', published, 2);
  });
});
