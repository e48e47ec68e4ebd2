/**
 * Serving across swaps on real files (DuckDB and SQLite) from a `file://` store: the read-only
 * guard's refusals, a lease that keeps reading the old snapshot (and its unlinked inode) until it
 * is released, 50 swaps under continuous queries with every result coming wholly from one
 * snapshot, a bounded drain on close, and restoreLocal after a restart.
 */
import { copyFile, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ObjectStore } from '@ferry/core';
import { createFileStore } from '@ferry/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  commitSnapshot,
  type LocalSnapshot,
  manifestPath,
  nextManifestPath,
  prepareSnapshot,
  restoreLocal,
  ServingEngine,
  type SnapshotFilesOptions,
} from '../src/index.js';
import {
  DATASET,
  deletedFilesHeld,
  type Kind,
  liveState,
  namesIn,
  PROBE_SQL,
  type PublishedDir,
  publishToDir,
  RECORDED,
  RECORDED_ENTRY,
  rowsOf,
  sha256,
  sideFiles,
} from './snapshot-support.js';

const SWAPS = 50;
const onLinux = process.platform === 'linux';
const tail =
  "are not permitted when refresh_mode is 'snapshot'; the accelerator is driven exclusively from the snapshot store";

let work: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'ferry-snapshot-serving-'));
});

afterAll(async () => {
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

describe.each<Kind>(['duckdb', 'sqlite'])('ServingEngine (%s)', (kind) => {
  let published: PublishedDir;
  let store: ObjectStore;
  let cases = 0;

  beforeAll(async () => {
    const storeDir = join(work, `${kind}-store`);
    published = await publishToDir(
      kind,
      storeDir,
      Array.from({ length: SWAPS + 1 }, (_, i) => i + 1),
    );
    store = createFileStore({ location: published.location });
  });

  afterAll(async () => {
    await store?.close();
  });

  /** A fresh live directory for one test, with helpers to install versions into it. */
  async function liveDir(): Promise<{
    dir: string;
    options: SnapshotFilesOptions;
    install: (version: number) => Promise<LocalSnapshot>;
  }> {
    const dir = join(work, `${kind}-live-${++cases}`);
    await mkdir(dir);
    const options: SnapshotFilesOptions = {
      dataset: DATASET,
      engine: kind,
      table: DATASET,
      livePath: join(dir, `${DATASET}.${kind}`),
      store,
    };
    const install = async (version: number): Promise<LocalSnapshot> => {
      const target = published.entries.get(version);
      if (target === undefined) throw new Error(`version ${version} is not published`);
      const prepared = await prepareSnapshot(options, target, RECORDED_ENTRY);
      return commitSnapshot(options, prepared);
    };
    return { dir, options, install };
  }

  function bytesOf(version: number): Uint8Array {
    const bytes = published.bytes.get(version);
    if (bytes === undefined) throw new Error(`version ${version} is not published`);
    return bytes;
  }

  it('refuses writes and other statements with the guard messages, naming the table', async () => {
    const { dir, options, install } = await liveDir();
    await install(1);
    const before = await liveState(options.livePath);
    const serving = await ServingEngine.open(options);
    try {
      await expect(serving.query(`INSERT INTO ${DATASET} VALUES (1, 1)`)).rejects.toMatchObject({
        code: 'ERR_WRITE_REJECTED',
        message: `writes to accelerated table ${DATASET} ${tail}`,
      });
      await expect(serving.query(`DELETE FROM main.${DATASET} WHERE id = 1`)).rejects.toMatchObject({
        code: 'ERR_WRITE_REJECTED',
        message: `deletes on accelerated table main.${DATASET} ${tail}`,
      });
      await expect(serving.query(`DROP TABLE ${DATASET}`)).rejects.toMatchObject({
        code: 'ERR_STATEMENT_REJECTED',
        message:
          'DROP statements are not permitted on a read-only snapshot replica; send a single SELECT (or WITH … SELECT) query instead.',
      });
      const lease = serving.acquire();
      await expect(lease.query(`UPDATE ${DATASET} SET version = 0`)).rejects.toMatchObject({
        code: 'ERR_WRITE_REJECTED',
        message: `updates on accelerated table ${DATASET} ${tail}`,
      });
      expect((await lease.query(PROBE_SQL)).rows).toEqual([{ n: rowsOf(1), lo: 1, hi: 1 }]);
      await lease.release();
    } finally {
      await serving.close();
    }
    expect(await liveState(options.livePath)).toEqual(before);
    expect(await sideFiles(dir)).toEqual([]);
  });

  it('lets a lease finish on the old snapshot and releases the old inode when it lets go', async () => {
    const { dir, options, install } = await liveDir();
    await install(1);
    const serving = await ServingEngine.open(options);
    try {
      const lease = serving.acquire();
      expect(lease.generation).toBe(1);
      await install(2);
      expect(await serving.swap()).toBe(2);
      expect((await serving.query(PROBE_SQL)).rows).toEqual([{ n: rowsOf(2), lo: 2, hi: 2 }]);
      expect((await lease.query(PROBE_SQL)).rows).toEqual([{ n: rowsOf(1), lo: 1, hi: 1 }]);
      expect(serving.openGenerations).toBe(2);
      if (onLinux) expect(await deletedFilesHeld(dir)).toEqual([`${options.livePath} (deleted)`]);
      await lease.release();
      expect(serving.openGenerations).toBe(1);
      if (onLinux) expect(await deletedFilesHeld(dir)).toEqual([]);
      await expect(lease.query(PROBE_SQL)).rejects.toMatchObject({ code: 'ERR_ENGINE_CLOSED' });
      expect(await sideFiles(dir)).toEqual([]);
    } finally {
      await serving.close();
    }
    expect(serving.openGenerations).toBe(0);
  });

  it(`swaps ${SWAPS} snapshots under continuous queries: no failure, every result from one snapshot`, async () => {
    const { dir, options, install } = await liveDir();
    await install(1);
    const serving = await ServingEngine.open(options);
    const failures: unknown[] = [];
    const seen = new Set<number>();
    let queries = 0;
    let swapping = true;

    // Yield to I/O callbacks: SQLite answers synchronously, so a loop would otherwise starve the swaps.
    const yieldToIo = () => new Promise(setImmediate);

    /** One query per call; a result must be wholly one snapshot, and never older than the last. */
    const reader = async (): Promise<void> => {
      let last = 0;
      while (swapping) {
        try {
          const [row] = (await serving.query(PROBE_SQL)).rows;
          const { n, lo, hi } = row as { n: number; lo: number; hi: number };
          if (lo !== hi || n !== rowsOf(lo) || lo < last) failures.push({ n, lo, hi, last });
          last = lo;
          seen.add(lo);
          queries++;
        } catch (error) {
          failures.push(error);
        }
        await yieldToIo();
      }
    };

    /** Two queries on one lease with swaps free to happen between them: both must see one snapshot. */
    const leaseReader = async (): Promise<void> => {
      while (swapping) {
        const lease = serving.acquire();
        try {
          const [first] = (await lease.query(`SELECT max(version) AS v FROM ${DATASET}`)).rows;
          await yieldToIo();
          const [second] = (await lease.query(PROBE_SQL)).rows;
          const { n, lo, hi } = second as { n: number; lo: number; hi: number };
          if (lo !== hi || n !== rowsOf(lo) || first?.v !== lo) failures.push({ first, second });
          queries += 2;
        } catch (error) {
          failures.push(error);
        } finally {
          await lease.release();
        }
        await yieldToIo();
      }
    };

    const readers = [reader(), reader(), leaseReader(), leaseReader()];
    try {
      for (let version = 2; version <= SWAPS + 1; version++) {
        await install(version);
        expect(await serving.swap()).toBe(version);
        expect((await serving.query(PROBE_SQL)).rows).toEqual([
          { n: rowsOf(version), lo: version, hi: version },
        ]);
        expect(await sideFiles(dir)).toEqual([]);
      }
    } finally {
      swapping = false;
      await Promise.all(readers);
      await serving.close();
    }
    expect(failures).toEqual([]);
    expect(queries).toBeGreaterThan(SWAPS * 2);
    expect(seen.size).toBeGreaterThan(SWAPS / 2);
    expect(serving.openGenerations).toBe(0);
    if (onLinux) expect(await deletedFilesHeld(dir)).toEqual([]);
    expect(await namesIn(dir)).toEqual([`${DATASET}.${kind}`, `${DATASET}.${kind}.ferry.json`]);
    expect((await liveState(options.livePath)).sha).toBe(sha256(bytesOf(SWAPS + 1)));
    expect((await restoreLocal(options))?.snapshotId).toBe(SWAPS + 1);
  });

  it('close refuses new queries and waits for leases to be released', async () => {
    const { options, install } = await liveDir();
    await install(1);
    const serving = await ServingEngine.open(options);
    const lease = serving.acquire();
    let closed = false;
    const closing = serving.close().then(() => {
      closed = true;
    });
    await expect(serving.query(PROBE_SQL)).rejects.toMatchObject({ code: 'ERR_ENGINE_CLOSED' });
    expect(() => serving.acquire()).toThrow(expect.objectContaining({ code: 'ERR_ENGINE_CLOSED' }));
    expect((await lease.query(PROBE_SQL)).rows).toEqual([{ n: rowsOf(1), lo: 1, hi: 1 }]);
    expect(closed).toBe(false);
    await lease.release();
    await closing;
    expect(serving.openGenerations).toBe(0);
  });

  it('close stops waiting after drainTimeoutMs and closes the engine under a forgotten lease', async () => {
    const { options, install } = await liveDir();
    await install(1);
    const serving = await ServingEngine.open({ ...options, drainTimeoutMs: 50 });
    const lease = serving.acquire();
    await serving.close();
    expect(serving.openGenerations).toBe(0);
    await expect(lease.query(PROBE_SQL)).rejects.toMatchObject({ code: 'ERR_ENGINE_CLOSED' });
  });

  it('restoreLocal serves the live file of a previous run at once', async () => {
    const { dir, options, install } = await liveDir();
    const installed = await install(3);
    // A killed run's leftovers, and side files that an engine could mix into the live file.
    await writeFile(`${options.livePath}.ferry-tmp-4-0badcafe`, 'partial');
    await writeFile(`${options.livePath}-journal`, 'stale');
    await writeFile(`${options.livePath}.wal`, 'stale');
    const restored = await restoreLocal(options);
    expect(restored).toEqual(installed);
    expect(restored).toMatchObject({
      snapshotId: 3,
      checksum: sha256(bytesOf(3)),
      schema: RECORDED,
      schemaId: 0,
    });
    expect(await namesIn(dir)).toEqual([`${DATASET}.${kind}`, `${DATASET}.${kind}.ferry.json`]);
    const serving = await ServingEngine.open(options);
    try {
      expect((await serving.query(PROBE_SQL)).rows).toEqual([{ n: rowsOf(3), lo: 3, hi: 3 }]);
    } finally {
      await serving.close();
    }
  });

  it('restoreLocal recognises a copied live file by its SHA-256 and records its new inode', async () => {
    const { options, install } = await liveDir();
    await install(3);
    await copyFile(options.livePath, `${options.livePath}.copy`);
    await rename(`${options.livePath}.copy`, options.livePath);
    const { ino } = await stat(options.livePath);
    expect((await restoreLocal(options))?.snapshotId).toBe(3);
    const manifest = JSON.parse(await readFile(manifestPath(options.livePath), 'utf8')) as { inode: number };
    expect(manifest.inode).toBe(ino);
  });

  it('restoreLocal returns null for a live file that matches no manifest, and for no live file', async () => {
    const { dir, options, install } = await liveDir();
    await install(3);
    await writeFile(options.livePath, bytesOf(4));
    await writeFile(nextManifestPath(options.livePath), '{"format":1,');
    expect(await restoreLocal(options)).toBeNull();
    expect(await namesIn(dir)).toEqual([`${DATASET}.${kind}`]);

    const other = await liveDir();
    await other.install(3);
    await rm(other.options.livePath);
    expect(await restoreLocal(other.options)).toBeNull();
    expect(await namesIn(other.dir)).toEqual([]);
  });
});
