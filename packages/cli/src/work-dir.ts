/**
 * The working folder `ferry quickstart` owns. It used to delete `--dir` recursively before
 * starting, so `--dir ~/projects` lost the user's files. Now it changes only a folder it made
 * itself, which it marks with a `.ferry-quickstart` file: a missing folder is created and marked,
 * an empty one is marked (nothing in it can be lost; `--dir "$(mktemp -d)"` works), a marked one is
 * reused after removing what an earlier run left (only the entries quickstart writes), and any
 * other folder is refused before anything starts.
 */
import { lstat, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { UsageError } from './errors.js';

/** The file that marks a folder as made by `ferry quickstart`. */
export const WORK_DIR_MARKER = '.ferry-quickstart';

const MARKER_TEXT =
  'This folder was made by `ferry quickstart`, which removes and rewrites what it wrote here on each run.\n';

export interface ClaimedWorkDir {
  readonly dir: string;
  /** `created`: it did not exist; `adopted`: it was empty; `reused`: an earlier run made it. */
  readonly how: 'created' | 'adopted' | 'reused';
}

async function entriesOf(dir: string): Promise<string[] | undefined> {
  try {
    return await readdir(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ENOTDIR') {
      throw new UsageError(
        'quickstart',
        `--dir '${dir}' is a file, not a folder; pass a new or empty folder`,
      );
    }
    throw error;
  }
}

/**
 * Make `dir` the quickstart's working folder, removing only `owned` entries left by an earlier run.
 * @throws UsageError (`ERR_USAGE`, exit 2) when `dir` is a file, or a non-empty folder without the marker.
 */
export async function claimWorkDir(dir: string, owned: readonly string[]): Promise<ClaimedWorkDir> {
  const entries = await entriesOf(dir);
  if (entries === undefined) {
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, WORK_DIR_MARKER), MARKER_TEXT);
    return { dir, how: 'created' };
  }
  if (entries.length === 0) {
    await writeFile(join(dir, WORK_DIR_MARKER), MARKER_TEXT);
    return { dir, how: 'adopted' };
  }
  const marker = entries.includes(WORK_DIR_MARKER) ? await lstat(join(dir, WORK_DIR_MARKER)) : undefined;
  if (marker?.isFile() !== true) {
    throw new UsageError(
      'quickstart',
      `--dir '${dir}' is not empty and was not made by ferry quickstart (it has no ${WORK_DIR_MARKER} file), so it is left untouched; pass a new or empty folder with --dir, or leave --dir out`,
    );
  }
  for (const entry of owned) await rm(join(dir, entry), { recursive: true, force: true });
  return { dir, how: 'reused' };
}
