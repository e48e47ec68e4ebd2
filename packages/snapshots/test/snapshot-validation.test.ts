/**
 * Download and validation against a real local S3 (fauxqs): every way a snapshot can fail leaves
 * the live file byte-identical on the same inode, with the exact message and no temporary file;
 * a good snapshot is swapped in; the shared fixture store, mirrored under another location, is
 * read through the keys metadata.json resolves to.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  type ArrowSchema,
  currentSnapshot,
  getDataset,
  type ObjectStore,
  parseMetadata,
  type ReadOptions,
  recordedSchema,
  resolveSnapshotKey,
  type SnapshotEntry,
} from '@ferry/core';
import { arrowField } from '@ferry/engines';
import { createS3Store } from '@ferry/store';
import {
  copyFixtureStore,
  fixtureMetadata,
  type LocalAws,
  localStoreParams,
  startLocalAws,
} from '@ferry/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkLiveFile,
  commitSnapshot,
  discardPrepared,
  downloadSnapshot,
  manifestPath,
  restoreLocal,
  SnapshotCheckers,
  type SnapshotFilesOptions,
  type SnapshotTarget,
  verifySnapshot,
} from '../src/index.js';
import {
  DATASET,
  entryOf,
  type Kind,
  liveState,
  namesIn,
  prepare,
  publishToS3,
  queryLive,
  RECORDED_ENTRY,
  sha256,
  sideFiles,
  snapshotKey,
  versionBytes,
} from './snapshot-support.js';

const BUCKET = 'validation';

let aws: LocalAws;
let work: string;

beforeAll(async () => {
  aws = await startLocalAws();
  await aws.createBucket(BUCKET);
  work = await mkdtemp(join(tmpdir(), 'ferry-snapshot-validation-'));
});

afterAll(async () => {
  await aws?.close();
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

function s3Store(location: string): ObjectStore {
  return createS3Store({
    location,
    ...localStoreParams(aws),
    maxAttempts: 1,
  });
}

/** `store` whose ranged or whole reads are cut short where `cutAt` says (bytes to deliver). */
function cuttingStore(store: ObjectStore, cutAt: (options: ReadOptions) => number | undefined): ObjectStore {
  return {
    location: store.location,
    get: (key, options) => store.get(key, options),
    async *read(key, options = {}) {
      const limit = cutAt(options);
      let sent = 0;
      for await (const chunk of store.read(key, options)) {
        if (limit !== undefined && sent + chunk.byteLength >= limit) {
          yield chunk.subarray(0, limit - sent);
          return;
        }
        sent += chunk.byteLength;
        yield chunk;
      }
    },
    head: (key) => store.head(key),
    put: (key, body, options) => store.put(key, body, options),
    list: (prefix) => store.list(prefix),
    delete: (key) => store.delete(key),
    close: () => store.close(),
  };
}

const tempMark = '.ferry-tmp-';

describe.each<Kind>(['duckdb', 'sqlite'])('prepareSnapshot from S3 (%s)', (kind) => {
  const prefix = `${kind}/`;
  const location = `s3://${BUCKET}/${prefix}`;
  const engineName = kind === 'duckdb' ? 'DuckDB' : 'SQLite';
  let dir: string;
  let options: SnapshotFilesOptions;
  let livePath: string;
  let good: SnapshotTarget;
  let goodBytes: Uint8Array;
  let store: ObjectStore;

  const target = (entry: SnapshotEntry): SnapshotTarget => ({
    entry,
    key: resolveSnapshotKey(location, entry.uri),
  });

  beforeAll(async () => {
    dir = await mkdtemp(join(work, `${kind}-`));
    livePath = join(dir, 'live', `${DATASET}.${kind}`);
    store = s3Store(location);
    options = { dataset: DATASET, engine: kind, table: DATASET, livePath, store };
    const first = await versionBytes(kind, dir, 1);
    goodBytes = await versionBytes(kind, dir, 2);
    const firstEntry = await publishToS3(aws, BUCKET, prefix, 1, snapshotKey(kind, 1), first);
    good = target(await publishToS3(aws, BUCKET, prefix, 2, snapshotKey(kind, 2), goodBytes));
    await commitSnapshot(options, await prepare(options, target(firstEntry), RECORDED_ENTRY));
  });

  afterAll(async () => {
    await store?.close();
  });

  /** Run `attempt` and check: the rejection, then an untouched live file and no leftovers. */
  async function expectRefused(
    attempt: () => Promise<unknown>,
    expected: Readonly<Record<string, unknown>>,
  ): Promise<unknown> {
    const before = await liveState(livePath);
    const error = await attempt().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject(expected);
    expect(await liveState(livePath)).toEqual(before);
    expect(await namesIn(join(dir, 'live'))).toEqual([`${DATASET}.${kind}`, `${DATASET}.${kind}.ferry.json`]);
    expect((await restoreLocal(options))?.snapshotId).toBe(1);
    return error;
  }

  it('refuses a HEAD size that differs from the recorded size', async () => {
    const entry = { ...good.entry, size: good.entry.size + 1 };
    await expectRefused(() => prepare(options, target(entry), RECORDED_ENTRY), {
      code: 'ERR_SNAPSHOT_SIZE_MISMATCH',
      message: `Snapshot ${entry.uri} size mismatch. expected=${entry.size} actual=${goodBytes.byteLength}`,
    });
  });

  it('refuses an unsupported checksum algorithm before downloading', async () => {
    const entry = { ...good.entry, checksumAlgorithm: 'MD5' };
    aws.requests.clear();
    await expectRefused(() => prepare(options, target(entry), RECORDED_ENTRY), {
      code: 'ERR_SNAPSHOT_CHECKSUM_ALGORITHM',
      message: `Snapshot ${entry.uri} uses unsupported checksum algorithm MD5`,
    });
    expect(aws.requests.list()).toEqual([]);
  });

  it('accepts the algorithm name in any case', async () => {
    const prepared = await prepare(
      options,
      target({ ...good.entry, checksumAlgorithm: 'sha256' }),
      RECORDED_ENTRY,
    );
    await discardPrepared(prepared);
    expect(await namesIn(join(dir, 'live'))).toEqual([`${DATASET}.${kind}`, `${DATASET}.${kind}.ferry.json`]);
  });

  it('downloads and verifies as two steps: the download leaves an unverified temporary file beside the live one, a failed verification deletes it', async () => {
    const before = await liveState(livePath);
    const recorded = sha256(new TextEncoder().encode('another file'));
    const downloaded = await downloadSnapshot(options, target({ ...good.entry, checksum: recorded }));
    expect(downloaded.digest).toBe(sha256(goodBytes));
    expect((await namesIn(join(dir, 'live'))).filter((name) => name.includes(tempMark))).toHaveLength(1);
    expect(await liveState(livePath)).toEqual(before);
    await expect(verifySnapshot(options, downloaded, RECORDED_ENTRY)).rejects.toMatchObject({
      code: 'ERR_SNAPSHOT_CHECKSUM_MISMATCH',
    });
    expect(await namesIn(join(dir, 'live'))).toEqual([`${DATASET}.${kind}`, `${DATASET}.${kind}.ferry.json`]);

    const aborted = new AbortController();
    const again = await downloadSnapshot(options, good);
    aborted.abort(new Error('stopped'));
    await expect(verifySnapshot(options, again, RECORDED_ENTRY, { signal: aborted.signal })).rejects.toThrow(
      'stopped',
    );
    expect(await namesIn(join(dir, 'live'))).toEqual([`${DATASET}.${kind}`, `${DATASET}.${kind}.ferry.json`]);
    expect(await liveState(livePath)).toEqual(before);
  });

  it.skipIf(kind !== 'duckdb')(
    'verifies with the checker it is given (kept warm by its caller), and leaves it open',
    async () => {
      const checkers = new SnapshotCheckers();
      try {
        const downloaded = await downloadSnapshot(options, good);
        checkers.warm(kind, dirname(downloaded.tempPath));
        const prepared = await checkers.use(kind, dirname(downloaded.tempPath), async (checker) => {
          const verified = await verifySnapshot(options, downloaded, RECORDED_ENTRY, { checker });
          // Still open: the next verification reuses it.
          await checker.check(verified.tempPath, DATASET, RECORDED_ENTRY.schema);
          return verified;
        });
        await discardPrepared(prepared);
        expect(await namesIn(join(dir, 'live'))).toEqual([
          `${DATASET}.${kind}`,
          `${DATASET}.${kind}.ferry.json`,
        ]);
      } finally {
        await checkers.close();
      }
    },
  );

  it('refuses a digest that differs from the recorded checksum', async () => {
    const recorded = sha256(new TextEncoder().encode('another file'));
    const entry = { ...good.entry, checksum: recorded };
    await expectRefused(() => prepare(options, target(entry), RECORDED_ENTRY), {
      code: 'ERR_SNAPSHOT_CHECKSUM_MISMATCH',
      message: `Snapshot ${entry.uri} checksum mismatch. expected=${recorded} actual=${sha256(goodBytes)}`,
    });
  });

  it('refuses a table whose real schema differs from the recorded one', async () => {
    const recorded: ArrowSchema = {
      fields: [arrowField('id', 'Int64', false), arrowField('version', 'Utf8', false)],
      metadata: {},
    };
    const column = kind === 'duckdb' ? 'BIGINT' : 'INTEGER';
    await expectRefused(() => prepare(options, good, { schemaId: 0, schema: recorded }), {
      code: 'ERR_SNAPSHOT_SCHEMA_MISMATCH',
      message:
        `Table '${DATASET}' in '${good.entry.uri}' does not match the recorded schema: field 'version' is ` +
        `${column} in the file, which cannot store the recorded type Utf8; publish a snapshot whose table ` +
        'matches the schema recorded in metadata.json.',
    });
  });

  it('refuses a file without the dataset table', async () => {
    const bytes = await versionBytes(kind, dir, 3, 'other');
    const entry = await publishToS3(aws, BUCKET, prefix, 3, 'other-table', bytes);
    await expectRefused(() => prepare(options, target(entry), RECORDED_ENTRY), {
      code: 'ERR_SNAPSHOT_MISSING_TABLE',
      message: `'${entry.uri}' has no table '${DATASET}'; a snapshot must contain a table named after its dataset.`,
    });
  });

  it('refuses a file that is not a database although its checksum matches', async () => {
    const bytes = new TextEncoder().encode('<html><body>Access Denied</body></html>');
    const entry = await publishToS3(aws, BUCKET, prefix, 4, 'not-a-database', bytes);
    await expectRefused(() => prepare(options, target(entry), RECORDED_ENTRY), {
      code: 'ERR_SNAPSHOT_NOT_A_DATABASE',
      message: `'${entry.uri}' is not a database file, not a ${engineName} database; publish the snapshot as a ${engineName} file (the dataset's engine).`,
    });
  });

  it('refuses a missing object (404)', async () => {
    const entry = entryOf(5, location, 'deleted-by-lifecycle', goodBytes);
    await expectRefused(() => prepare(options, target(entry), RECORDED_ENTRY), {
      code: 'ERR_SNAPSHOT_OBJECT_MISSING',
      message: `Snapshot ${entry.uri} of dataset '${DATASET}' is listed in metadata.json but the object does not exist; publish a new snapshot or restore the object.`,
    });
  });

  it('fails a body that ends early (one read)', async () => {
    const half = Math.floor(goodBytes.byteLength / 2);
    const cut = { ...options, store: cuttingStore(store, () => half) };
    await expectRefused(() => prepare(cut, good, RECORDED_ENTRY), {
      code: 'ERR_DOWNLOAD_TRUNCATED',
      message: `Download of snapshot ${good.entry.uri} for dataset '${DATASET}' ended after ${half} of ${goodBytes.byteLength} bytes; the connection was cut or the object changed, so download it again.`,
    });
  });

  it('fails a ranged part that ends early (parallel reads)', async () => {
    const cut = {
      ...options,
      partSize: 4096,
      store: cuttingStore(store, (range) => (range.start === 4096 ? 1000 : undefined)),
    };
    await expectRefused(() => prepare(cut, good, RECORDED_ENTRY), {
      code: 'ERR_STORE',
      message: `Store read of ${good.entry.uri} failed (bytes 4096-8191 returned 1000 bytes instead of 4096; the object changed or is not the recorded size); it is transient, so retry later.`,
    });
  });

  it('refuses to start without free space for the file and the reserve', async () => {
    const reserveBytes = Number.MAX_SAFE_INTEGER - goodBytes.byteLength;
    const error = await expectRefused(() => prepare({ ...options, reserveBytes }, good, RECORDED_ENTRY), {
      code: 'ERR_DISK_SPACE',
      needed: Number.MAX_SAFE_INTEGER,
    });
    const { available } = error as { available: number };
    expect(available).toBeGreaterThan(0);
    expect((error as Error).message).toBe(
      `Not enough free disk space to download the snapshot of dataset '${DATASET}' into ${join(dir, 'live')}: ` +
        `needs ${Number.MAX_SAFE_INTEGER} bytes, ${available} available; free space there or point the ` +
        "dataset's file param (duckdb_file / sqlite_file) at a larger volume.",
    );
  });

  it('stops when aborted mid-download and deletes the partial file', async () => {
    const controller = new AbortController();
    const seen: number[] = [];
    const reason = new Error('dataset stopping');
    const attempt = () =>
      prepare({ ...options, partSize: 4096, concurrency: 2 }, good, RECORDED_ENTRY, {
        signal: controller.signal,
        onProgress: ({ bytes }) => {
          seen.push(bytes);
          controller.abort(reason);
        },
      });
    expect(await expectRefused(attempt, {})).toBe(reason);
    expect(seen).toEqual([4096]);
  });

  it('swaps a valid snapshot in: exact bytes on a new inode, manifest recorded, nothing left over', async () => {
    const before = await liveState(livePath);
    const progress: number[] = [];
    const prepared = await prepare({ ...options, partSize: 4096 }, good, RECORDED_ENTRY, {
      onProgress: ({ bytes, total }) => {
        expect(total).toBe(goodBytes.byteLength);
        progress.push(bytes);
      },
    });
    expect(prepared.tempPath.startsWith(`${livePath}${tempMark}2-`)).toBe(true);
    expect(await liveState(livePath)).toEqual(before);
    const snapshot = await commitSnapshot(options, prepared);
    expect(snapshot).toMatchObject({
      snapshotId: 2,
      checksum: sha256(goodBytes),
      size: goodBytes.byteLength,
    });
    expect(progress.at(-1)).toBe(goodBytes.byteLength);
    const after = await liveState(livePath);
    expect(after).toEqual({ ino: prepared.inode, sha: sha256(goodBytes) });
    expect(after.ino).not.toBe(before.ino);
    expect(await namesIn(join(dir, 'live'))).toEqual([`${DATASET}.${kind}`, `${DATASET}.${kind}.ferry.json`]);
    expect(manifestPath(livePath)).toBe(`${livePath}.ferry.json`);
    expect((await restoreLocal(options))?.snapshotId).toBe(2);
    expect(await queryLive(options, 'SELECT count(*) AS n, max(version) AS v FROM events')).toEqual([
      { n: 22, v: 2 },
    ]);
    expect(await sideFiles(join(dir, 'live'))).toEqual([]);
  });
});

describe('the fixture store mirrored to another bucket', () => {
  it('downloads each dataset through the key resolved against the recorded location', async () => {
    const mirror = 's3://mirror/copied/snapshots/';
    await copyFixtureStore({ kind: 's3', aws, location: mirror });
    // The mirror keeps the original metadata.json, which records s3://example-bucket/snapshots/.
    await aws.putObject('mirror', 'copied/snapshots/metadata.json', await fixtureMetadata());
    const store = s3Store(mirror);
    const dir = await mkdtemp(join(work, 'fixture-'));
    try {
      const got = await store.get('metadata.json');
      if (got.status !== 'ok') throw new Error(`metadata.json: ${got.status}`);
      const metadata = parseMetadata(JSON.parse(new TextDecoder().decode(got.body)), mirror);
      expect(metadata.location).toBe('s3://example-bucket/snapshots/');
      for (const [name, engine, rows] of [
        ['orders', 'duckdb', 8],
        ['users', 'sqlite', 3],
      ] as const) {
        const dataset = getDataset(metadata, name);
        const entry = dataset === undefined ? undefined : currentSnapshot(dataset);
        if (dataset === undefined || entry === undefined) throw new Error(`fixture has no current ${name}`);
        expect(() => resolveSnapshotKey(store.location, entry.uri)).toThrow();
        const schema = recordedSchema(dataset);
        const options = {
          dataset: name,
          engine,
          table: name,
          livePath: join(dir, `${name}.${engine}`),
          store,
        };
        const key = resolveSnapshotKey(metadata.location, entry.uri);
        const prepared = await prepare(options, { entry, key }, schema);
        await commitSnapshot(options, prepared);
        expect((await liveState(options.livePath)).sha).toBe(entry.checksum);
        expect(await queryLive(options, `SELECT count(*) AS n FROM ${name}`)).toEqual([{ n: rows }]);
        await checkLiveFile(options, schema.schema);
        expect(await restoreLocal(options)).toMatchObject({ snapshotId: entry.snapshotId, uri: entry.uri });
      }
      expect(await sideFiles(dir)).toEqual([]);
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
