/**
 * After a restart, on real files (DuckDB and SQLite) from a `file://` store: restoreLocal names the
 * snapshot the live file holds (by inode, else by SHA-256), cleans a killed run's leftovers, and
 * forgets manifests that describe no file; checkLiveFile proves the file still reads with its
 * schema; warm checkers are kept per directory, reused and closed when idle.
 */
import { copyFile, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ObjectStore } from '@ferry/core';
import { arrowField } from '@ferry/engines';
import { createFileStore } from '@ferry/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkLiveFile,
  commitSnapshot,
  type LocalSnapshot,
  manifestPath,
  nextManifestPath,
  restoreLocal,
  SnapshotCheckers,
  type SnapshotFilesOptions,
} from '../src/index.js';
import {
  DATASET,
  type Kind,
  namesIn,
  PROBE_SQL,
  type PublishedDir,
  prepare,
  publishToDir,
  queryLive,
  RECORDED,
  RECORDED_ENTRY,
  rowsOf,
  sha256,
} from './snapshot-support.js';

let work: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'ferry-snapshot-restore-'));
});

afterAll(async () => {
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

describe.each<Kind>(['duckdb', 'sqlite'])('restoring a live file (%s)', (kind) => {
  let published: PublishedDir;
  let store: ObjectStore;
  let cases = 0;

  beforeAll(async () => {
    const storeDir = join(work, `${kind}-store`);
    published = await publishToDir(kind, storeDir, [1, 2, 3, 4]);
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
      const prepared = await prepare(options, target, RECORDED_ENTRY);
      return commitSnapshot(options, prepared);
    };
    return { dir, options, install };
  }

  function bytesOf(version: number): Uint8Array {
    const bytes = published.bytes.get(version);
    if (bytes === undefined) throw new Error(`version ${version} is not published`);
    return bytes;
  }

  it('restoreLocal serves the live file of a previous run at once', async () => {
    const { dir, options, install } = await liveDir();
    const installed = await install(3);
    // A killed run's leftovers, and side files that an engine could mix into the live file.
    await writeFile(`${options.livePath}.ferry-tmp-4-0badcafe`, 'partial');
    // Killed while the live file's block digests were kept (a delta download computes them once).
    await writeFile(`${options.livePath}.ferry-blocks.json.tmp`, '{"ferry-block-manifest":1,"blo');
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
    expect(await queryLive(options, PROBE_SQL)).toEqual([{ n: rowsOf(3), lo: 3, hi: 3 }]);
    await checkLiveFile(options, installed.schema);
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

  it('checkLiveFile refuses a live file that no longer has the recorded table or schema', async () => {
    const { options, install } = await liveDir();
    const installed = await install(2);
    const wider = { ...RECORDED, fields: [...RECORDED.fields, arrowField('extra', 'Int64', false)] };
    await expect(checkLiveFile(options, wider)).rejects.toMatchObject({
      code: 'ERR_SNAPSHOT_SCHEMA_MISMATCH',
    });
    await expect(checkLiveFile({ ...options, table: 'missing' }, installed.schema)).rejects.toMatchObject({
      code: 'ERR_SNAPSHOT_MISSING_TABLE',
    });
  });

  it('SnapshotCheckers keeps one warm checker per directory, reuses it, and closes it when idle', async () => {
    const { dir, options, install } = await liveDir();
    const installed = await install(1);
    const checkers = new SnapshotCheckers({ idleMs: 50 });
    try {
      checkers.warm(kind, dir);
      const first = await checkers.use(kind, dir, async (checker) => {
        await checkLiveFile(options, installed.schema, { checker });
        return checker;
      });
      const second = await checkers.use(kind, dir, async (checker) => checker);
      expect(second).toBe(first);
      expect(checkers.size).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(checkers.size).toBe(0);
      if (kind === 'duckdb') {
        await expect(first.check(options.livePath, DATASET, RECORDED)).rejects.toThrow(/closed/);
      }
    } finally {
      await checkers.close();
    }
    await expect(checkers.use(kind, dir, async () => undefined)).rejects.toThrow(/closed/);
  });
});
