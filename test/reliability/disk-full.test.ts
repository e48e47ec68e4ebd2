/**
 * A full disk, for real: the data directory is a small tmpfs (mounted for the test; skipped where
 * mounting is not permitted). With too little free space the download is refused before a byte is
 * fetched (the free-space check keeps a reserve); when the disk fills up during a download (the
 * proxy holds the GET while the test fills the disk) the download fails cleanly. Either way the
 * live file keeps serving, the temporary file is gone, the status and log say the disk is full and
 * name the dataset, and once space is freed the next check swaps the snapshot in.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, rm, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { useLocalAws } from '@ferry/test-support/suite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BUCKET,
  DATASET,
  nextEvent,
  publish,
  type Started,
  servedVersion,
  settledStatus,
  snapshotFile,
  spicepod,
  startRuntime,
  temporaries,
} from './support.js';

const PREFIX = 'disk-full/';
const TMPFS_BYTES = 80 * 1024 * 1024;
/** What the download's free-space check keeps beyond the snapshot (engines' default reserve). */
const RESERVE = 64 * 1024 * 1024;

const { aws, proxy } = useLocalAws({ buckets: [BUCKET], faultProxy: true });
let mountPoint: string | undefined;
let s: Started | undefined;

function tryMount(dir: string): boolean {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${TMPFS_BYTES}`, 'tmpfs', dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const probe = await mkdtemp(join(tmpdir(), 'ferry-disk-full-'));
const mounted = tryMount(probe);
if (mounted) mountPoint = probe;
else rmSync(probe, { recursive: true, force: true });

async function available(dir: string): Promise<number> {
  const space = await statfs(dir);
  return space.bavail * space.bsize;
}

/** Takes all but `leave` bytes of the free space; returns the filler's path. */
async function fill(dir: string, leave: number, name = 'filler.bin'): Promise<string> {
  const path = join(dir, name);
  const size = Math.max(0, (await available(dir)) - leave);
  try {
    await writeFile(path, Buffer.alloc(size, 1));
  } catch (error) {
    if ((error as { code?: string }).code !== 'ENOSPC') throw error;
  }
  return path;
}

beforeAll(async () => {
  if (mountPoint === undefined) return;
  await publish(aws, PREFIX, await snapshotFile('duckdb', 1));
  s = await startRuntime(spicepod(aws, { prefix: PREFIX, endpoint: proxy.endpoint, interval: '300ms' }), {
    dataDir: mountPoint,
  });
  await s.runtime.ready(DATASET, { timeoutMs: 30_000 });
});

afterAll(async () => {
  await s?.runtime.close();
  if (mountPoint !== undefined) {
    execFileSync('umount', [mountPoint]);
    await rm(mountPoint, { recursive: true, force: true });
  }
});

function started(): Started {
  if (s === undefined) throw new Error('the runtime did not start');
  return s;
}

describe.skipIf(!mounted)('disk full (data directory on an 80 MiB tmpfs)', () => {
  it('too little free space: refused before any byte is fetched; serves on; swaps once space is freed', async () => {
    const { runtime, logger, dataDir } = started();
    const before = await servedVersion(runtime);
    const filler = await fill(dataDir, 8 * 1024 * 1024);
    const mark = logger.records.length;
    const failed = settledStatus(runtime, (st) => st.lastPollResult === 'failed');
    const published = await publish(aws, PREFIX, await snapshotFile('duckdb', 2));
    const status = await failed;

    expect(await servedVersion(runtime)).toEqual(before);
    expect(status.lastError?.code).toBe('ERR_DISK_SPACE');
    expect(status.lastError?.message).toMatch(
      new RegExp(
        `^Not enough free disk space to download the snapshot of dataset '${DATASET}' into ${dataDir}: needs ${published.file.size + RESERVE} bytes, \\d+ available; `,
      ),
    );
    expect(aws.requests.count('GET', published.target)).toBe(0);
    expect(await temporaries(dataDir)).toEqual([]);
    const line = logger.since(mark).find((r) => r.message.startsWith('Not enough free disk space'));
    expect(line?.level).toBe('warn');
    expect(line?.message).toMatch(new RegExp(`\\(keeping snapshot ${before.snapshotId}\\)$`));

    const swapped = nextEvent(runtime, 'swap', (e) => e.to === published.snapshotId);
    await rm(filler);
    await swapped;
    expect(await servedVersion(runtime)).toEqual({ version: 2, snapshotId: published.snapshotId });
  });

  it('the disk fills up during the download: fails cleanly, says the disk is full, serves on, recovers', async () => {
    const { runtime, logger, dataDir } = started();
    const before = await servedVersion(runtime);
    let filler: string | undefined;
    proxy.setRules([
      {
        method: 'GET',
        target: /\.duckdb$/,
        times: 1,
        fault: { kind: 'pass' },
        // The download's free-space check has passed and its temporary file is open: fill the disk now.
        onMatch: async () => {
          filler = await fill(dataDir, 0, 'filler-2.bin');
        },
      },
    ]);
    const mark = logger.records.length;
    const failed = settledStatus(runtime, (st) => st.lastPollResult === 'failed');
    const published = await publish(aws, PREFIX, await snapshotFile('duckdb', 3));
    const status = await failed;

    expect(await servedVersion(runtime)).toEqual(before);
    expect(status.lastError?.code).toBe('ERR_DISK_SPACE');
    expect(status.lastError?.message).toMatch(
      new RegExp(
        `^The disk holding ${dataDir} filled up while the snapshot of dataset '${DATASET}' was downloaded`,
      ),
    );
    expect(await temporaries(dataDir)).toEqual([]);
    const line = logger.since(mark).find((r) => r.message.startsWith('The disk holding'));
    expect(line?.level).toBe('warn');

    const swapped = nextEvent(runtime, 'swap', (e) => e.to === published.snapshotId);
    if (filler !== undefined) await rm(filler);
    await swapped;
    expect(await servedVersion(runtime)).toEqual({ version: 3, snapshotId: published.snapshotId });
  });
});
