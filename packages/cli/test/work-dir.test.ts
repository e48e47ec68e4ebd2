/** The quickstart's working folder on a real filesystem: what it creates, adopts, reuses and refuses. */
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { claimWorkDir, UsageError, WORK_DIR_MARKER } from '../src/index.js';
import { snapshotOf } from './helpers.js';

const OWNED = ['spicepod.yaml', 'data'];
const dirs: string[] = [];

async function scratch(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ferry-work-dir-'));
  dirs.push(dir);
  return dir;
}

afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('claimWorkDir', () => {
  it('creates a missing folder (and its parents) and marks it', async () => {
    const dir = join(await scratch(), 'a', 'quickstart');
    expect(await claimWorkDir(dir, OWNED)).toEqual({ dir, how: 'created' });
    expect(await readdir(dir)).toEqual([WORK_DIR_MARKER]);
  });

  it('adopts an empty folder and marks it', async () => {
    const dir = await scratch();
    expect(await claimWorkDir(dir, OWNED)).toEqual({ dir, how: 'adopted' });
    expect(await readdir(dir)).toEqual([WORK_DIR_MARKER]);
  });

  it('reuses a folder it marked, removing only what quickstart writes there', async () => {
    const dir = join(await scratch(), 'quickstart');
    await claimWorkDir(dir, OWNED);
    await writeFile(join(dir, 'spicepod.yaml'), 'old');
    await mkdir(join(dir, 'data', 'nested'), { recursive: true });
    await writeFile(join(dir, 'data', 'nested', 'orders.duckdb'), 'stale');
    await writeFile(join(dir, 'notes.txt'), 'mine');
    expect(await claimWorkDir(dir, OWNED)).toEqual({ dir, how: 'reused' });
    expect((await readdir(dir)).sort()).toEqual([WORK_DIR_MARKER, 'notes.txt']);
    expect(await readFile(join(dir, 'notes.txt'), 'utf8')).toBe('mine');
  });

  it('refuses a non-empty folder it did not make, naming it and the fix, and changes nothing', async () => {
    const dir = await scratch();
    await writeFile(join(dir, 'spicepod.yaml'), 'the user’s own pod');
    await mkdir(join(dir, 'data'));
    await writeFile(join(dir, 'data', 'precious.duckdb'), new Uint8Array([1, 2, 3]));
    const before = await snapshotOf(dir);
    const mtime = (await stat(dir)).mtimeMs;
    const refused = claimWorkDir(dir, OWNED);
    await expect(refused).rejects.toBeInstanceOf(UsageError);
    await expect(refused).rejects.toThrow(
      `--dir '${dir}' is not empty and was not made by ferry quickstart (it has no ${WORK_DIR_MARKER} file), so it is left untouched; pass a new or empty folder with --dir, or leave --dir out`,
    );
    expect(await snapshotOf(dir)).toEqual(before);
    expect((await stat(dir)).mtimeMs).toBe(mtime);
  });

  it('refuses a folder whose marker is not a file', async () => {
    const dir = await scratch();
    await mkdir(join(dir, WORK_DIR_MARKER));
    await writeFile(join(dir, 'spicepod.yaml'), 'x');
    await expect(claimWorkDir(dir, OWNED)).rejects.toThrow(
      /is not empty and was not made by ferry quickstart/,
    );
    expect(await readFile(join(dir, 'spicepod.yaml'), 'utf8')).toBe('x');
  });

  it('refuses a file', async () => {
    const file = join(await scratch(), 'file');
    await writeFile(file, 'x');
    await expect(claimWorkDir(file, OWNED)).rejects.toThrow(`--dir '${file}' is a file, not a folder`);
    expect(await readFile(file, 'utf8')).toBe('x');
  });
});
