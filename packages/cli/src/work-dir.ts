/**
 * The working folder `ferry quickstart` owns. It used to delete `--dir` recursively before
 * starting, so `--dir ~/projects` lost the user's files. Now it changes only a folder it made
 * itself, which it marks with a `.ferry-quickstart` file: a missing folder is created and marked,
 * an empty one is marked (nothing in it can be lost; `--dir "$(mktemp -d)"` works), a marked one is
 * reused after removing what an earlier run left (only the entries quickstart writes), and any
 * other folder is refused before anything starts. `ferry serve --example` keeps its folder the
 * same way, with a marker of its own.
 */
import { lstat, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { UsageError } from './errors.js';

/** The file that marks a folder as made by `ferry quickstart`. */
export const WORK_DIR_MARKER = '.ferry-quickstart';

/** Which command owns a working folder: its name, its marker file, and the flag that names the folder. */
export interface WorkDirOwner {
  readonly command: 'quickstart' | 'serve';
  /** How the command is named in messages (`ferry quickstart`, `ferry serve --example`). */
  readonly title: string;
  readonly marker: string;
  /** The flag a user moves the folder with, or how it is chosen. */
  readonly flag: string;
}

export const QUICKSTART_OWNER: WorkDirOwner = {
  command: 'quickstart',
  title: 'ferry quickstart',
  marker: WORK_DIR_MARKER,
  flag: '--dir',
};

const markerText = (owner: WorkDirOwner): string =>
  `This folder was made by \`${owner.title}\`, which removes and rewrites what it wrote here on each run.\n`;

export interface ClaimedWorkDir {
  readonly dir: string;
  /** `created`: it did not exist; `adopted`: it was empty; `reused`: an earlier run made it. */
  readonly how: 'created' | 'adopted' | 'reused';
}

async function entriesOf(dir: string, owner: WorkDirOwner): Promise<string[] | undefined> {
  try {
    return await readdir(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ENOTDIR') {
      throw new UsageError(
        owner.command,
        `${owner.flag} '${dir}' is a file, not a folder; pass a new or empty folder`,
      );
    }
    throw error;
  }
}

/**
 * Make `dir` the quickstart's working folder, removing only `owned` entries left by an earlier run.
 * @throws UsageError (`ERR_USAGE`, exit 2) when `dir` is a file, or a non-empty folder without the marker.
 */
export async function claimWorkDir(
  dir: string,
  owned: readonly string[],
  owner: WorkDirOwner = QUICKSTART_OWNER,
): Promise<ClaimedWorkDir> {
  const entries = await entriesOf(dir, owner);
  if (entries === undefined) {
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, owner.marker), markerText(owner));
    return { dir, how: 'created' };
  }
  if (entries.length === 0) {
    await writeFile(join(dir, owner.marker), markerText(owner));
    return { dir, how: 'adopted' };
  }
  const marker = entries.includes(owner.marker) ? await lstat(join(dir, owner.marker)) : undefined;
  if (marker?.isFile() !== true) {
    throw new UsageError(
      owner.command,
      `${owner.flag} '${dir}' is not empty and was not made by ${owner.title} (it has no ${owner.marker} file), so it is left untouched; pass a new or empty folder with ${owner.flag}, or leave ${owner.flag} out`,
    );
  }
  for (const entry of owned) await rm(join(dir, entry), { recursive: true, force: true });
  return { dir, how: 'reused' };
}
