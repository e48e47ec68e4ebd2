/**
 * Generation links on a real filesystem: a link keeps naming the snapshot it was made of after
 * the live file is renamed over, names never repeat, pruning keeps the newest few, and links go
 * where they stay on the live file's filesystem.
 */
import { mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  GENERATIONS_KEPT,
  generationDirFor,
  generationsRoot,
  generationsRootFor,
  heldGenerations,
  linkGeneration,
  pruneGenerations,
  pruneRetained,
} from '../src/generations.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ferry-generations-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('generations', () => {
  it('a link is the snapshot it was made of, after the live file is replaced', async () => {
    const live = join(dir, 'orders.duckdb');
    const gens = generationDirFor(live, dir, 'orders');
    await writeFile(live, 'snapshot 1');
    const first = await linkGeneration(live, gens, 1);
    await writeFile(join(dir, 'next'), 'snapshot 2');
    await rename(join(dir, 'next'), live);
    const second = await linkGeneration(live, gens, 2);
    expect(await readFile(first, 'utf8')).toBe('snapshot 1');
    expect(await readFile(second, 'utf8')).toBe('snapshot 2');
    expect((await stat(second)).ino).toBe((await stat(live)).ino);
    expect(first).toMatch(/\/\.generations\/orders\/1-\d+-[0-9a-f]{8}\.duckdb$/);
    expect(await linkGeneration(live, gens, 2)).not.toBe(second);
  });

  it('keeps the newest few, and pruning to zero empties the directory', async () => {
    const live = join(dir, 'events.sqlite');
    const gens = generationDirFor(live, dir, 'events');
    await writeFile(live, 'x');
    const made: string[] = [];
    for (let index = 0; index < GENERATIONS_KEPT + 3; index++) {
      made.push(await linkGeneration(live, gens, index));
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    expect((await readdir(gens)).sort()).toEqual(
      made
        .slice(-GENERATIONS_KEPT)
        .map((path) => path.split('/').pop())
        .sort(),
    );
    await pruneGenerations(gens, 0);
    expect(await readdir(gens)).toEqual([]);
    await pruneGenerations(join(dir, 'absent'), 0);
  });

  it('with prune: false, leaves the removal to the caller', async () => {
    const live = join(dir, 'kept.duckdb');
    const gens = generationDirFor(live, dir, 'kept');
    await writeFile(live, 'x');
    for (let index = 0; index < GENERATIONS_KEPT + 2; index++) {
      await linkGeneration(live, gens, index, { prune: false });
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    expect(await readdir(gens)).toHaveLength(GENERATIONS_KEPT + 2);
    await pruneGenerations(gens, GENERATIONS_KEPT);
    expect(await readdir(gens)).toHaveLength(GENERATIONS_KEPT);
  });

  it('a link made after the wall clock stepped back is still the newest, and pruning keeps it', async () => {
    // Found reading the prune: links were ordered by the Date.now() in their names, so after a step
    // back (NTP, a VM resumed) the current snapshot's new link sorted oldest and the swap's prune
    // unlinked it while the host was handing it to the query workers.
    const live = join(dir, 'stepped.duckdb');
    const gens = generationDirFor(live, dir, 'stepped');
    await writeFile(live, 'x');
    const now = Date.now();
    const clock = vi.spyOn(Date, 'now');
    try {
      for (let index = 0; index < GENERATIONS_KEPT; index++) {
        clock.mockReturnValue(now + index);
        await linkGeneration(live, gens, index, { prune: false });
      }
      clock.mockReturnValue(now - 3_600_000);
      const current = await linkGeneration(live, gens, GENERATIONS_KEPT, { prune: false });
      await pruneRetained(gens, { retain: 1 }, GENERATIONS_KEPT);
      expect(await readdir(gens)).toContain(current.split('/').pop());
      await pruneGenerations(gens, 1);
      expect(await readdir(gens)).toEqual([current.split('/').pop()]);
    } finally {
      clock.mockRestore();
    }
  });

  it('live files in the data directory link under its .generations; others beside themselves', () => {
    expect(generationsRootFor(join(dir, 'a.duckdb'), dir)).toBe(generationsRoot(dir));
    expect(generationsRootFor('/srv/elsewhere/a.duckdb', dir)).toBe('/srv/elsewhere/.ferry-generations');
    expect(generationsRootFor(join(dir, '..', 'a.duckdb'), dir)).toBe(join(dir, '..', '.ferry-generations'));
  });
});

describe('retention (ferry_retain_snapshots, ferry_retain_disk_budget)', () => {
  const file = (snapshotId: number, ino: number, bytes: number) => ({ snapshotId, ino, bytes });

  it('holds the newest `retain` snapshots, one per snapshot, and always the current one', () => {
    const files = [file(9, 1, 100), file(8, 2, 100), file(8, 3, 100), file(7, 4, 100), file(6, 5, 100)];
    expect(heldGenerations(files, { retain: 3 })).toEqual([0, 1, 3]);
    expect(heldGenerations(files, { retain: 1 })).toEqual([0]);
    expect(heldGenerations(files, { retain: 3, diskBudgetBytes: 0 })).toEqual([0]);
    expect(heldGenerations([], { retain: 3 })).toEqual([]);
  });

  it('counts the disk of the earlier ones against the budget, each file once, the current one free', () => {
    // The current one is large and free; the earlier ones take 100 each, and two links share a file.
    const files = [file(9, 1, 10_000), file(8, 2, 100), file(7, 2, 100), file(6, 3, 100), file(5, 4, 100)];
    expect(heldGenerations(files, { retain: 10, diskBudgetBytes: 199 })).toEqual([0, 1, 2]);
    expect(heldGenerations(files, { retain: 10, diskBudgetBytes: 200 })).toEqual([0, 1, 2, 3]);
    expect(heldGenerations(files, { retain: 10 })).toEqual([0, 1, 2, 3, 4]);
    // The oldest go first: a budget never skips one to hold an older one.
    const uneven = [file(9, 1, 0), file(8, 2, 300), file(7, 3, 50)];
    expect(heldGenerations(uneven, { retain: 10, diskBudgetBytes: 100 })).toEqual([0]);
  });

  it('prunes real links past the budget, oldest first, never the newest few queries in flight attach', async () => {
    const live = join(dir, 'budget.duckdb');
    const gens = generationDirFor(live, dir, 'budget');
    // Each snapshot a file of its own of 64 KiB (what a swap leaves: a new file renamed over the live path).
    const made: string[] = [];
    for (let id = 1; id <= 6; id++) {
      await writeFile(join(dir, 'next'), Buffer.alloc(64 * 1024, id));
      await rename(join(dir, 'next'), live);
      made.push(await linkGeneration(live, gens, id, { prune: false }));
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const names = async () => (await readdir(gens)).map((name) => Number(name.split('-')[0])).sort();
    const perFile = (await stat(made[0] as string)).blocks * 512;
    expect(perFile).toBeGreaterThanOrEqual(64 * 1024);
    // Five may be held, but the budget takes three earlier files.
    await pruneRetained(gens, { retain: 5, diskBudgetBytes: 3 * perFile }, 2);
    expect(await names()).toEqual([3, 4, 5, 6]);
    // A budget below one file: only the floor is left.
    await pruneRetained(gens, { retain: 5, diskBudgetBytes: perFile - 1 }, 2);
    expect(await names()).toEqual([5, 6]);
    await pruneRetained(gens, { retain: 5, diskBudgetBytes: 0 }, 0);
    expect(await names()).toEqual([6]);
  });
});
