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
import { link, mkdir, readdir, rm } from 'node:fs/promises';
import { dirname, extname, isAbsolute, join, relative, resolve, sep } from 'node:path';

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
 * Links the live file as a new generation of snapshot `snapshotId` (`<id>-<random>.<ext>`: a name
 * never used before, even across restarts) and removes all but the last {@link GENERATIONS_KEPT}.
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
  const path = join(dir, `${snapshotId}-${Date.now()}-${randomBytes(4).toString('hex')}${extname(livePath)}`);
  await link(livePath, path);
  if (options.prune !== false) await pruneGenerations(dir, GENERATIONS_KEPT);
  return path;
}

/** Removes every generation in `dir` but the `keep` newest (0: all of them). */
export async function pruneGenerations(dir: string, keep: number): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  // Newest first by the time in the name (a link's ctime is its inode's, shared by every link).
  const dated = names.map((name) => ({
    path: join(dir, name),
    at: Number(/^\d+-(\d+)-/.exec(name)?.[1] ?? 0),
  }));
  dated.sort((a, b) => b.at - a.at || b.path.localeCompare(a.path));
  await Promise.all(dated.slice(keep).map(({ path }) => rm(path, { force: true })));
}
