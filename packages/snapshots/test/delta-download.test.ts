/**
 * Delta downloads on real files and real stores: a DuckDB or SQLite file changed in place (1 % of
 * rows appended, as an incremental writer does) and published with its block manifest beside it is
 * assembled from the live file's blocks and ranged reads of the rest, on `file://` and on the local
 * S3 (through a fault proxy that records the ranges and can fail them). Every doubt falls back to the
 * full download: no manifest, a manifest for another file, a manifest that lies about a block, a
 * failed range; the file that goes live is always the recorded one.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, statfs, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import {
  type BlockManifest,
  blockLayoutFor,
  blockManifestKey,
  type ObjectStore,
  type SnapshotEntry,
  serializeBlockManifest,
} from '@ferry/core';
import { arrowField } from '@ferry/engines';
import { BlockDigester, createFileStore, createS3Store } from '@ferry/store';
import {
  type FaultProxy,
  type LocalAws,
  localStoreParams,
  startFaultProxy,
  startLocalAws,
} from '@ferry/test-support';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  blocksPath,
  commitSnapshot,
  discardPrepared,
  downloadSnapshot,
  manifestPath,
  type SnapshotFilesOptions,
  verifySnapshot,
} from '../src/index.js';
import { DATASET, entryOf, type Kind, queryLive, RECORDED_ENTRY, sha256 } from './snapshot-support.js';

const BUCKET = 'delta';
/** The schema of these files: the versioned one with an incompressible column, so files span many blocks. */
const RECORDED = {
  schemaId: 0,
  schema: { fields: [...RECORDED_ENTRY.schema.fields, arrowField('payload', 'Utf8', false)], metadata: {} },
};

/** Rows of the first version: files of a few MiB, so they span many blocks. */
const ROWS = 200_000;

let aws: LocalAws;
let proxy: FaultProxy;
let work: string;

beforeAll(async () => {
  aws = await startLocalAws();
  await aws.createBucket(BUCKET);
  proxy = await startFaultProxy(aws.serverEndpoint);
  work = await mkdtemp(join(tmpdir(), 'ferry-delta-'));
});

afterAll(async () => {
  await proxy?.close();
  await aws?.close();
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

/** Version 1 with `ROWS` rows, then each next version with 1 % more appended in place. */
async function versions(kind: Kind, dir: string, count: number): Promise<Uint8Array[]> {
  await mkdir(dir, { recursive: true });
  const path = join(dir, `v.${kind}`);
  const out: Uint8Array[] = [];
  for (let v = 1; v <= count; v++) {
    const from = v === 1 ? 0 : ROWS + (v - 2) * (ROWS / 100);
    const to = v === 1 ? ROWS : from + ROWS / 100;
    if (kind === 'duckdb') {
      const instance = await DuckDBInstance.create(path);
      const connection = await instance.connect();
      if (v === 1)
        await connection.run(
          `CREATE TABLE ${DATASET} (id BIGINT NOT NULL, version BIGINT NOT NULL, payload VARCHAR NOT NULL)`,
        );
      await connection.run(
        `INSERT INTO ${DATASET} SELECT i, ${v}, md5(i::VARCHAR) FROM range(${from}, ${to}) r(i)`,
      );
      await connection.run('CHECKPOINT');
      connection.closeSync();
      instance.closeSync();
    } else {
      const db = new Database(path);
      db.pragma('journal_mode = DELETE');
      if (v === 1) {
        db.exec(
          `CREATE TABLE ${DATASET} (id INTEGER NOT NULL, version INTEGER NOT NULL, payload TEXT NOT NULL)`,
        );
      }
      const insert = db.prepare(`INSERT INTO ${DATASET} VALUES (?, ?, ?)`);
      db.transaction(() => {
        for (let i = from; i < to; i++)
          insert.run(i, v, sha256(new TextEncoder().encode(String(i))).slice(0, 32));
      })();
      db.close();
    }
    out.push(await readFile(path));
  }
  return out;
}

function manifestOf(kind: Kind, bytes: Uint8Array): BlockManifest {
  const layout = blockLayoutFor(kind);
  const digester = new BlockDigester(layout);
  digester.update(bytes);
  return { ...layout, size: bytes.byteLength, checksum: sha256(bytes), blocks: digester.digest() };
}

interface Published {
  readonly entry: SnapshotEntry;
  readonly key: string;
}

/** Puts `bytes` (and its manifest, unless `manifest: null`) under `location`. */
async function publish(
  store: ObjectStore,
  kind: Kind,
  id: number,
  bytes: Uint8Array,
  manifest: BlockManifest | string | null = manifestOf(kind, bytes),
): Promise<Published> {
  const key = `month=2026-12/day=2026-12-02/dataset=${DATASET}/${DATASET}_20261202T0000${String(id).padStart(2, '0')}Z.${kind}`;
  await store.put(key, bytes);
  if (manifest !== null) {
    const text = typeof manifest === 'string' ? manifest : serializeBlockManifest(manifest, kind);
    await store.put(blockManifestKey(key), new TextEncoder().encode(text));
  }
  return { entry: entryOf(id, store.location, key, bytes), key };
}

async function swapIn(
  options: SnapshotFilesOptions,
  published: Published & { readonly blocksSha256?: string | null },
) {
  const downloaded = await downloadSnapshot(options, published);
  const prepared = await verifySnapshot(options, downloaded, RECORDED);
  await commitSnapshot(options, prepared);
  return downloaded.transfer;
}

async function countLive(options: SnapshotFilesOptions): Promise<number> {
  const rows = await queryLive(options, `SELECT count(*) AS n FROM ${DATASET}`);
  return Number(rows[0]?.n);
}

const stores = {
  file: async (dir: string) => {
    await mkdir(join(dir, 'store'), { recursive: true });
    return createFileStore({ location: pathToFileURL(`${join(dir, 'store')}/`).href });
  },
  s3: async (dir: string) =>
    createS3Store({
      location: `s3://${BUCKET}/${dir.split('/').at(-1)}/`,
      ...localStoreParams(aws),
      endpoint: proxy.endpoint,
      maxAttempts: 1,
    }),
};

describe.each<[Kind, keyof typeof stores]>([
  ['duckdb', 'file'],
  ['sqlite', 'file'],
  ['duckdb', 's3'],
  ['sqlite', 's3'],
])('delta download of %s snapshots on %s', (kind, storeKind) => {
  let dir: string;
  let store: ObjectStore;
  let options: SnapshotFilesOptions;
  let files: Uint8Array[];

  beforeAll(async () => {
    dir = await mkdtemp(join(work, `${kind}-${storeKind}-`));
    store = await stores[storeKind](dir);
    files = await versions(kind, join(dir, 'build'), 7);
    options = {
      dataset: DATASET,
      engine: kind,
      table: DATASET,
      livePath: join(dir, 'data', `${DATASET}.${kind}`),
      store,
      partSize: 256 * 1024,
    };
  });

  afterAll(async () => {
    await store?.close();
  });

  it('the first download is whole and keeps the manifest beside the live file; the next one fetches only changed blocks', async () => {
    const first = await swapIn(options, await publish(store, kind, 1, files[0] as Uint8Array));
    expect(first).toMatchObject({
      mode: 'full',
      reusedBytes: 0,
      fallback: 'no earlier snapshot is held locally',
    });
    expect(JSON.parse(await readFile(blocksPath(options.livePath), 'utf8')).checksum).toBe(
      sha256(files[0] as Uint8Array),
    );

    const second = files[1] as Uint8Array;
    const published = await publish(store, kind, 2, second);
    const transfer = await swapIn(options, published);
    expect(transfer.mode).toBe('delta');
    expect(transfer.reusedBytes + transfer.fetchedBytes).toBe(second.byteLength);
    // 1 % of rows appended: most of the file is reused.
    expect(transfer.reusedBytes).toBeGreaterThan(0.8 * second.byteLength);
    expect(sha256(await readFile(options.livePath))).toBe(sha256(second));
    expect(await countLive(options)).toBe(ROWS + ROWS / 100);
    if (storeKind === 's3') {
      const ranged = proxy.requests({
        method: 'GET',
        target: `${BUCKET}/${store.location.split('/')[3]}/${published.key}`,
      });
      expect(ranged.length).toBeGreaterThan(0);
      expect(ranged.every((r) => /^bytes=\d+-\d+$/.test(r.headers.range ?? ''))).toBe(true);
    }
  });

  it('a snapshot without a manifest (a Spice writer) is downloaded whole and still served', async () => {
    const transfer = await swapIn(options, await publish(store, kind, 3, files[2] as Uint8Array, null));
    expect(transfer).toMatchObject({
      mode: 'full',
      fallback: 'the snapshot has no block manifest',
      doubtful: false,
    });
    expect(await countLive(options)).toBe(ROWS + 2 * (ROWS / 100));
    // Nothing describes the new live file: the next delta computes its blocks once, from the file.
    await expect(readFile(blocksPath(options.livePath), 'utf8')).rejects.toThrow();
    const next = await swapIn(options, await publish(store, kind, 4, files[3] as Uint8Array));
    expect(next.mode).toBe('delta');
    expect(JSON.parse(await readFile(blocksPath(options.livePath), 'utf8')).checksum).toBe(
      sha256(files[3] as Uint8Array),
    );
  });

  it('a manifest of another file, or one that lies about a block, falls back to the whole file', async () => {
    const fifth = files[4] as Uint8Array;
    const other = { ...manifestOf(kind, fifth), checksum: sha256(files[0] as Uint8Array) };
    const wrong = await swapIn(options, await publish(store, kind, 5, fifth, other));
    expect(wrong).toMatchObject({ mode: 'full', doubtful: true });
    expect(wrong.fallback).toContain("its checksum is not the snapshot's");
    expect(sha256(await readFile(options.livePath))).toBe(sha256(fifth));

    // The manifest claims every block is the live file's: the assembly's SHA-256 cannot match.
    const sixth = files[5] as Uint8Array;
    const held = manifestOf(kind, fifth);
    const lying = {
      ...manifestOf(kind, sixth),
      blocks: manifestOf(kind, sixth).blocks.map((d, i) => held.blocks[i] ?? d),
    };
    const lied = await swapIn(options, await publish(store, kind, 6, sixth, lying));
    expect(lied).toMatchObject({ mode: 'full', doubtful: true });
    expect(lied.fallback).toMatch(/SHA-256 .* is not the recorded/);
    expect(sha256(await readFile(options.livePath))).toBe(sha256(sixth));
    expect(await countLive(options)).toBe(ROWS + 5 * (ROWS / 100));
  });

  it.runIf(storeKind === 's3')('a failed range falls back to the whole file', async () => {
    const next = files[6] as Uint8Array;
    const published = await publish(store, kind, 7, next);
    // The delta's ranged reads are refused; the full download that follows passes.
    const remove = proxy.addRule({
      name: 'range-refused',
      method: 'GET',
      target: new RegExp(`${published.key.replaceAll('.', '\\.')}$`),
      times: 1,
      fault: { kind: 'error', status: 403, code: 'AccessDenied' },
    });
    try {
      const transfer = await swapIn(options, published);
      expect(proxy.hits('range-refused')).toBeGreaterThanOrEqual(1);
      expect(transfer).toMatchObject({ mode: 'full', doubtful: true });
      expect(transfer.fallback).toContain('assembling it failed');
      expect(sha256(await readFile(options.livePath))).toBe(sha256(next));
    } finally {
      remove();
    }
  });
});

describe('delta download: a kept block manifest of another file', () => {
  it("is ignored: the live file's blocks are computed from it, and the delta still works", async () => {
    const dir = await mkdtemp(join(work, 'stale-blocks-'));
    const store = await stores.file(dir);
    const files = await versions('duckdb', join(dir, 'build'), 2);
    const options: SnapshotFilesOptions = {
      dataset: DATASET,
      engine: 'duckdb',
      table: DATASET,
      livePath: join(dir, 'data', `${DATASET}.duckdb`),
      store,
    };
    try {
      await swapIn(options, await publish(store, 'duckdb', 1, files[0] as Uint8Array));
      await writeFile(
        blocksPath(options.livePath),
        serializeBlockManifest(manifestOf('duckdb', files[1] as Uint8Array)),
      );
      const transfer = await swapIn(options, await publish(store, 'duckdb', 2, files[1] as Uint8Array));
      expect(transfer.mode).toBe('delta');
      expect(sha256(await readFile(options.livePath))).toBe(sha256(files[1] as Uint8Array));
    } finally {
      await store.close();
    }
  });
});

describe('delta download: the live file whose blocks are hashed', () => {
  let dir: string;
  let store: ObjectStore;
  let files: Uint8Array[];
  let options: SnapshotFilesOptions;

  beforeAll(async () => {
    dir = await mkdtemp(join(work, 'held-'));
    store = await stores.file(dir);
    files = await versions('sqlite', join(dir, 'build'), 2);
  });

  afterAll(async () => {
    await store?.close();
  });

  async function holdFirst(name: string): Promise<void> {
    options = {
      dataset: DATASET,
      engine: 'sqlite',
      table: DATASET,
      livePath: join(dir, name, `${DATASET}.sqlite`),
      store,
      reserveBytes: 0,
    };
    await swapIn(options, await publish(store, 'sqlite', 1, files[0] as Uint8Array));
  }

  it('is never cut into more blocks than a manifest may list: a 5 GiB live file and a manifest of 4 KiB blocks fall back at once', async () => {
    await holdFirst('large');
    // The live file is a 5 GiB snapshot (sparse here) that its manifest describes.
    const large = 5 * 1024 ** 3;
    await truncate(options.livePath, large);
    const info = await stat(options.livePath, { bigint: true });
    const kept = JSON.parse(await readFile(manifestPath(options.livePath), 'utf8'));
    kept.mtimeNs = String(info.mtimeNs);
    kept.snapshot.size = large;
    await writeFile(manifestPath(options.livePath), JSON.stringify(kept));
    await rm(blocksPath(options.livePath));
    // A smaller snapshot whose manifest cuts 4 KiB blocks: the live file would be 1.3 million of them.
    const second = files[1] as Uint8Array;
    const small = { headerSize: 0, blockSize: 4096 };
    const digester = new BlockDigester(small);
    digester.update(second);
    const published = await publish(store, 'sqlite', 2, second, {
      ...small,
      size: second.byteLength,
      checksum: sha256(second),
      blocks: digester.digest(),
    });
    const downloaded = await downloadSnapshot(options, published);
    try {
      expect(downloaded.transfer).toMatchObject({ mode: 'full', doubtful: false });
      expect(downloaded.transfer.fallback).toMatch(/the live file has 1310720 blocks .*more than \d+/);
      // Nothing of it was hashed or kept.
      await expect(stat(blocksPath(options.livePath))).rejects.toThrow(/ENOENT/);
      expect(downloaded.digest).toBe(sha256(second));
    } finally {
      await discardPrepared(downloaded);
    }
  });

  it('with a signed blocks-sha256, uses only the manifest it names: none when it names none', async () => {
    await holdFirst('signed');
    const second = files[1] as Uint8Array;
    const published = await publish(store, 'sqlite', 2, second);
    const signed = sha256(
      new TextEncoder().encode(serializeBlockManifest(manifestOf('sqlite', second), 'sqlite')),
    );
    const downloaded = await downloadSnapshot(options, { ...published, blocksSha256: null });
    expect(downloaded.transfer).toMatchObject({ mode: 'full', doubtful: true });
    expect(downloaded.transfer.fallback).toContain("the writer's signed statement names no block manifest");
    await discardPrepared(downloaded);
    const delta = await swapIn(options, { ...published, blocksSha256: signed });
    expect(delta.mode).toBe('delta');
    expect(sha256(await readFile(options.livePath))).toBe(sha256(second));
  });

  it('reads no manifest larger than one of 4 KiB blocks could be for the snapshot', async () => {
    await holdFirst('padded');
    const second = files[1] as Uint8Array;
    // Valid, but 4 MiB of it is an unknown key: 30 times what a manifest of this 9 MB file can need.
    const padded = serializeBlockManifest(manifestOf('sqlite', second)).replace(
      '{',
      `{"padding":"${'x'.repeat(4 * 1024 * 1024)}",`,
    );
    const transfer = await swapIn(options, await publish(store, 'sqlite', 2, second, padded));
    expect(transfer).toMatchObject({ mode: 'full', doubtful: true });
    expect(transfer.fallback).toMatch(/is \d+ bytes, more than the \d+ allowed/);
    expect(sha256(await readFile(options.livePath))).toBe(sha256(second));
  });

  it('whose blocks cannot be kept falls back to the whole file instead of failing the swap', async () => {
    await holdFirst('unkept');
    // No kept manifest, and the place its replacement is written through is taken (by a directory).
    await rm(blocksPath(options.livePath));
    await mkdir(`${blocksPath(options.livePath)}.tmp`);
    const second = files[1] as Uint8Array;
    const transfer = await swapIn(options, await publish(store, 'sqlite', 2, second));
    expect(transfer).toMatchObject({ mode: 'full', doubtful: true });
    expect(transfer.fallback).toMatch(/the live file's blocks could not be read or kept \(.*EISDIR/);
    expect(sha256(await readFile(options.livePath))).toBe(sha256(second));
  });
});

/** A small tmpfs for a real full disk (mounting needs privileges: the test is skipped without them). */
function mountTmpfs(dir: string, bytes: number): boolean {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('delta download: the disk fills up during the assembly', () => {
  let disk: string;
  let mounted = false;

  beforeAll(async () => {
    disk = await mkdtemp(join(tmpdir(), 'ferry-delta-full-'));
    mounted = mountTmpfs(disk, 24 * 1024 * 1024);
  });

  afterAll(async () => {
    if (mounted) execFileSync('umount', [disk]);
    await rm(disk, { recursive: true, force: true });
  });

  it.for<[string, number]>([
    ['while the file is assembled', 1024 * 1024],
    ["while the live file's blocks are kept", 0],
  ])('fails as a full disk %s, without downloading the whole file after it', async ([_, leave], { skip }) => {
    if (!mounted) skip();
    const dir = await mkdtemp(join(work, 'full-'));
    const live = await mkdtemp(join(disk, 'live-'));
    const store = await stores.s3(dir);
    const files = await versions('sqlite', join(dir, 'build'), 2);
    const options: SnapshotFilesOptions = {
      dataset: DATASET,
      engine: 'sqlite',
      table: DATASET,
      livePath: join(live, `${DATASET}.sqlite`),
      store,
      reserveBytes: 0,
    };
    try {
      await swapIn(options, await publish(store, 'sqlite', 1, files[0] as Uint8Array));
      const second = files[1] as Uint8Array;
      const published = await publish(store, 'sqlite', 2, second);
      // None kept: the delta computes the live file's blocks and keeps them before it assembles.
      if (leave === 0) await rm(blocksPath(options.livePath));
      // The free-space check passes; while the manifest is read, the disk fills up to `leave` bytes.
      const filler = join(disk, 'filler.bin');
      const remove = proxy.addRule({
        name: `fill-disk-${leave}`,
        method: 'GET',
        target: new RegExp(`${blockManifestKey(published.key).replaceAll('.', '\\.')}$`),
        times: 1,
        fault: { kind: 'pass' },
        onMatch: async () => {
          const { bavail, bsize } = await statfs(disk);
          await writeFile(filler, Buffer.alloc(bavail * bsize - leave, 1)).catch((error) => {
            if (error.code !== 'ENOSPC') throw error;
          });
        },
      });
      const since = proxy.requests().length;
      try {
        await expect(downloadSnapshot(options, published)).rejects.toMatchObject({ code: 'ERR_DISK_SPACE' });
      } finally {
        remove();
      }
      expect(proxy.hits(`fill-disk-${leave}`)).toBe(1);
      // Only the changed blocks were asked for: no whole download followed the full disk.
      const asked = proxy
        .requests()
        .slice(since)
        .filter((r) => r.method === 'GET' && r.target.endsWith(published.key))
        .map((r) => /^bytes=(\d+)-(\d+)$/.exec(r.headers.range ?? ''))
        .reduce((sum, m) => sum + (m === null ? second.byteLength : Number(m[2]) - Number(m[1]) + 1), 0);
      expect(asked).toBeLessThan(second.byteLength / 4);
      // Nothing is left behind but the live file (and what describes it) and the filler.
      expect((await readdir(live)).filter((name) => name.includes('.ferry-tmp-'))).toEqual([]);
      expect(sha256(await readFile(options.livePath))).toBe(sha256(files[0] as Uint8Array));
    } finally {
      await store.close();
      await rm(join(disk, 'filler.bin'), { force: true });
      await rm(live, { recursive: true, force: true });
    }
  });
});
