/**
 * Generations: a hard link of the live file per served snapshot, under a directory that holds
 * nothing else. The live path changes by rename at every swap, so it cannot name "the file of
 * snapshot N" for long; a link does, for as long as it exists, and costs no copy. Query engines
 * attach links (each query reads one generation throughout), never the live file, so the live
 * file stays the one crash-safe truth and the links are disposable: stale ones are removed at a
 * dataset's start and after each new one, keeping the last few (an engine that still holds an
 * unlinked generation open keeps reading it; its space returns when it lets go).
 *
 * Links live under `<dataDir>/.generations/<dataset>/`, or, for a live file outside the data
 * directory (a `duckdb_file` / `sqlite_file` param), in `.ferry-generations/<dataset>/` beside it:
 * a hard link must stay on the live file's filesystem.
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { dirname, extname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { Retention } from '@ferry/core/base';

/** Generations kept per dataset: the current one and a few before it. */
export const GENERATIONS_KEPT = 3;

/** The directory holding every dataset's generations for live files in `dataDir`. */
export function generationsRoot(dataDir: string): string {
  return join(resolve(dataDir), '.generations');
}

function inside(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
}

/** The root the generations of a live file go under (see the module comment). */
export function generationsRootFor(livePath: string, dataDir: string): string {
  const data = resolve(dataDir);
  return inside(data, resolve(livePath))
    ? generationsRoot(data)
    : join(dirname(resolve(livePath)), '.ferry-generations');
}

/** The dataset's own generation directory. */
export function generationDirFor(livePath: string, dataDir: string, dataset: string): string {
  return join(generationsRootFor(livePath, dataDir), dataset);
}

/**
 * Links the live file as a new generation of snapshot `snapshotId` (`<id>-<time>-<random>.<ext>`: a
 * name never used before, even across restarts; its time, `Date.now()` or just after the newest
 * link's when the wall clock stepped back, orders it newest) and removes all but the last {@link GENERATIONS_KEPT}.
 * `prune: false` leaves the removal to the caller (`pruneGenerations(dir, GENERATIONS_KEPT)`):
 * removing the last link of a large file frees its blocks, tens of ms that need not come before
 * the new generation is announced.
 */
export async function linkGeneration(
  livePath: string,
  dir: string,
  snapshotId: number,
  options: { readonly prune?: boolean } = {},
): Promise<string> {
  await mkdir(dir, { recursive: true });
  // Its time orders it newest: never before the newest link's, though the wall clock stepped back.
  const newest = (await datedGenerations(dir))[0]?.at ?? 0;
  const at = Math.max(Date.now(), newest + 1);
  const path = join(dir, `${snapshotId}-${at}-${randomBytes(4).toString('hex')}${extname(livePath)}`);
  await link(livePath, path);
  if (options.prune !== false) await pruneGenerations(dir, GENERATIONS_KEPT);
  return path;
}

/** A generation as the retention rule sees it: its snapshot, its file's inode and the disk it takes. */
export interface GenerationFile {
  readonly snapshotId: number;
  readonly ino: number;
  readonly bytes: number;
}

/**
 * The one retention rule: which of a dataset's generations, newest first (the first is the current
 * one), are held for pinned reads, as indexes into `files`. One per snapshot (a later link of a
 * snapshot already held is not), at most `retain`, and the earlier ones only while the disk they
 * take adds up to at most the budget, each file counted once (links of one file, or of the live
 * file, add nothing). The first is always held.
 */
export function heldGenerations(files: readonly GenerationFile[], retention: Retention): number[] {
  const budget = retention.diskBudgetBytes ?? Number.POSITIVE_INFINITY;
  const snapshots = new Set<number>();
  const counted = new Set<number>();
  const held: number[] = [];
  let used = 0;
  for (const [index, file] of files.entries()) {
    if (held.length >= Math.max(1, retention.retain)) break;
    if (snapshots.has(file.snapshotId)) continue;
    if (index > 0 && !counted.has(file.ino)) used += file.bytes;
    if (index > 0 && used > budget) break;
    snapshots.add(file.snapshotId);
    counted.add(file.ino);
    held.push(index);
  }
  return held;
}

/** A generation for {@link heldGenerations}, from its snapshot and its file's `stat`. */
export function generationFile(
  snapshotId: number,
  stats: { readonly ino: number; readonly blocks: number },
): GenerationFile {
  return { snapshotId, ino: stats.ino, bytes: stats.blocks * 512 };
}

/**
 * Removes the generations in `dir` the retention does not hold, never the `floor` newest (the links
 * queries in flight may still attach: {@link GENERATIONS_KEPT}).
 */
export async function pruneRetained(dir: string, retention: Retention, floor: number): Promise<void> {
  const dated = await datedGenerations(dir);
  const files: GenerationFile[] = [];
  for (const { path, snapshotId } of dated) {
    try {
      files.push(generationFile(snapshotId, await stat(path)));
    } catch (error) {
      // Removed since the listing (a prune of its own): it and the older ones hold nothing.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') break;
      throw error;
    }
  }
  const held = new Set(heldGenerations(files, retention));
  await Promise.all(
    dated
      .filter((_, index) => index >= floor && !held.has(index))
      .map(({ path }) => rm(path, { force: true })),
  );
}

/** Removes every generation in `dir` but the `keep` newest (0: all of them). */
export async function pruneGenerations(dir: string, keep: number): Promise<void> {
  const dated = await datedGenerations(dir);
  await Promise.all(dated.slice(keep).map(({ path }) => rm(path, { force: true })));
}

/** The generations in `dir`, newest first; none when it does not exist. */
async function datedGenerations(
  dir: string,
): Promise<{ readonly path: string; readonly at: number; readonly snapshotId: number }[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  // Newest first by the time in the name (a link's ctime is its inode's, shared by every link).
  const dated = names.map((name) => {
    const [, snapshotId, at] = /^(\d+)-(\d+)-/.exec(name) ?? [];
    return { path: join(dir, name), at: Number(at ?? 0), snapshotId: Number(snapshotId ?? -1) };
  });
  dated.sort((a, b) => b.at - a.at || b.path.localeCompare(a.path));
  return dated;
}
