/**
 * Generation links on a real filesystem: a link keeps naming the snapshot it was made of after
 * the live file is renamed over, names never repeat, pruning keeps the newest few, and links go
 * where they stay on the live file's filesystem.
 */
import { mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  GENERATIONS_KEPT,
  generationDirFor,
  generationsRoot,
  generationsRootFor,
  linkGeneration,
  pruneGenerations,
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

  it('live files in the data directory link under its .generations; others beside themselves', () => {
    expect(generationsRootFor(join(dir, 'a.duckdb'), dir)).toBe(generationsRoot(dir));
    expect(generationsRootFor('/srv/elsewhere/a.duckdb', dir)).toBe('/srv/elsewhere/.ferry-generations');
    expect(generationsRootFor(join(dir, '..', 'a.duckdb'), dir)).toBe(join(dir, '..', '.ferry-generations'));
  });
});
