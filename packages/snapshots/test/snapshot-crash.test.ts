/**
 * Crash safety of a swap: a child process (test/snapshot-crash/swap-child.mjs, on the built dist)
 * swaps snapshot 2 over snapshot 1 and stops at a named point; the test checks where it stands,
 * kills it with SIGKILL, and shows the live file is a complete published snapshot, restoreLocal
 * names it (finishing an interrupted manifest promotion) and every leftover is removed.
 */
import { execFileSync, fork } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createFileStore } from '@ferry/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  commitSnapshot,
  manifestPath,
  nextManifestPath,
  restoreLocal,
  type SnapshotFilesOptions,
  type SnapshotTarget,
} from '../src/index.js';
import {
  DATASET,
  liveState,
  namesIn,
  PROBE_SQL,
  type PublishedDir,
  prepare,
  publishToDir,
  queryLive,
  RECORDED_ENTRY,
  rowsOf,
  sha256,
  sideFiles,
} from './snapshot-support.js';

const here = dirname(fileURLToPath(import.meta.url));
const packageDir = dirname(here);
const CHILD = join(here, 'snapshot-crash', 'swap-child.mjs');
const PART_SIZE = 64 * 1024;
const KIND = 'duckdb';

type StopPoint = 'download' | 'prepared' | 'staged' | 'renamed' | 'promoted';

/** Newest modification time of the files under `dir`. */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/** The child imports dist: build it when it is missing or older than the sources (CI builds first). */
function ensureDistBuilt(): void {
  const buildInfo = join(packageDir, 'dist', '.tsbuildinfo');
  if (existsSync(buildInfo) && statSync(buildInfo).mtimeMs >= newestMtime(join(packageDir, 'src'))) return;
  const tsc = join(packageDir, '..', '..', 'node_modules', 'typescript', 'bin', 'tsc');
  execFileSync(process.execPath, [tsc, '-b', packageDir], { stdio: 'inherit' });
}

interface Paused {
  readonly paused: StopPoint;
  readonly bytes?: number;
  readonly tempPath?: string;
}

/** Run the child until it reports `stopAt`; resolves with its report and a `kill` that waits for the exit. */
function runChild(
  options: SnapshotFilesOptions,
  swap: object,
  stopAt: StopPoint,
): Promise<{ report: Paused; kill: () => Promise<NodeJS.Signals | null> }> {
  const { store: _store, ...plain } = options;
  const child = fork(CHILD, [], {
    env: {
      ...process.env,
      FERRY_STOP_AT: stopAt,
      FERRY_SWAP: JSON.stringify({ ...swap, options: { ...plain, partSize: PART_SIZE, concurrency: 2 } }),
    },
    stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.once('exit', (_code, signal) => resolve(signal)),
  );
  return new Promise((resolve, reject) => {
    child.once('message', (message: Paused | { done: true }) => {
      if ('paused' in message && message.paused === stopAt) {
        resolve({
          report: message,
          kill: () => {
            child.kill('SIGKILL');
            return exited;
          },
        });
      } else {
        reject(new Error(`child reported ${JSON.stringify(message)} instead of pausing at ${stopAt}`));
      }
    });
    child.once('exit', (code, signal) =>
      reject(new Error(`child exited (${code ?? signal}) before pausing at ${stopAt}: ${stderr}`)),
    );
  });
}

let work: string;
let published: PublishedDir;

beforeAll(async () => {
  ensureDistBuilt();
  work = await mkdtemp(join(tmpdir(), 'ferry-snapshot-crash-'));
  published = await publishToDir(KIND, join(work, 'store'), [1, 2]);
});

afterAll(async () => {
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

function targetOf(version: number): SnapshotTarget {
  const found = published.entries.get(version);
  if (found === undefined) throw new Error(`version ${version} is not published`);
  return found;
}

describe('a swap killed with SIGKILL', () => {
  let cases = 0;

  async function setUp(initial: number | undefined): Promise<{ dir: string; options: SnapshotFilesOptions }> {
    const dir = join(work, `live-${++cases}`);
    await mkdir(dir);
    const store = createFileStore({ location: published.location });
    const options: SnapshotFilesOptions = {
      dataset: DATASET,
      engine: KIND,
      table: DATASET,
      livePath: join(dir, `${DATASET}.${KIND}`),
      store,
    };
    if (initial !== undefined) {
      await commitSnapshot(options, await prepare(options, targetOf(initial), RECORDED_ENTRY));
    }
    return { dir, options };
  }

  const swapTo2 = () => ({ location: published.location, target: targetOf(2), recorded: RECORDED_ENTRY });

  /** What the parent sees at each point before the kill, proving the child stopped where it says. */
  async function expectAt(point: StopPoint, report: Paused, options: SnapshotFilesOptions): Promise<void> {
    const live = options.livePath;
    const temps = (await namesIn(dirname(live))).filter((name) => name.includes('.ferry-tmp-2-'));
    switch (point) {
      case 'download':
        expect(report.bytes).toBe(PART_SIZE);
        expect(temps).toHaveLength(1);
        expect((await stat(join(dirname(live), temps[0] as string))).size).toBe(PART_SIZE);
        break;
      case 'prepared':
        expect(report.tempPath).toBe(join(dirname(live), temps[0] as string));
        expect(sha256(await readFile(report.tempPath as string))).toBe(sha256(bytesOf(2)));
        expect(existsSync(nextManifestPath(live))).toBe(false);
        break;
      case 'staged':
        expect(temps).toHaveLength(1);
        expect(existsSync(nextManifestPath(live))).toBe(true);
        expect((await liveState(live)).sha).toBe(sha256(bytesOf(1)));
        break;
      case 'renamed':
        expect(temps).toEqual([]);
        expect(existsSync(nextManifestPath(live))).toBe(true);
        expect((await liveState(live)).sha).toBe(sha256(bytesOf(2)));
        break;
      case 'promoted':
        expect(existsSync(nextManifestPath(live))).toBe(false);
        expect(JSON.parse(await readFile(manifestPath(live), 'utf8'))).toMatchObject({
          snapshot: { snapshotId: 2 },
        });
        break;
    }
  }

  function bytesOf(version: number): Uint8Array {
    const bytes = published.bytes.get(version);
    if (bytes === undefined) throw new Error(`version ${version} is not published`);
    return bytes;
  }

  it.each<[StopPoint, number]>([
    ['download', 1],
    ['prepared', 1],
    ['staged', 1],
    ['renamed', 2],
    ['promoted', 2],
  ])('at %s leaves a complete snapshot (%i) that restoreLocal names', async (point, expected) => {
    const { dir, options } = await setUp(1);
    const before = await liveState(options.livePath);
    const { report, kill } = await runChild(options, swapTo2(), point);
    await expectAt(point, report, options);
    expect(await kill()).toBe('SIGKILL');

    const after = await liveState(options.livePath);
    expect(after.sha).toBe(sha256(bytesOf(expected)));
    if (expected === 1) expect(after.ino).toBe(before.ino);
    const restored = await restoreLocal(options);
    expect(restored).toMatchObject({ snapshotId: expected, checksum: sha256(bytesOf(expected)) });
    expect(await namesIn(dir)).toEqual([`${DATASET}.${KIND}`, `${DATASET}.${KIND}.ferry.json`]);
    expect(await restoreLocal(options)).toEqual(restored);
    expect(await queryLive(options, PROBE_SQL)).toEqual([
      { n: rowsOf(expected), lo: expected, hi: expected },
    ]);
    expect(await sideFiles(dir)).toEqual([]);
  });

  it('during the first download leaves no live file, and restoreLocal returns null', async () => {
    const { dir, options } = await setUp(undefined);
    const { report, kill } = await runChild(options, swapTo2(), 'download');
    await expectAt('download', report, options);
    expect(await kill()).toBe('SIGKILL');
    expect(await restoreLocal(options)).toBeNull();
    expect(await namesIn(dir)).toEqual([]);
  });
});
