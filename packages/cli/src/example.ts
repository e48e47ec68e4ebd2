/**
 * `ferry serve --example`: a store anyone can serve at once. The repository's fixture store
 * (packages/test-support/fixtures/spice-store, Spice's layout: `orders` in DuckDB, `users` in
 * SQLite) names `s3://example-bucket/snapshots/` in its metadata.json, so it cannot be served as it
 * is; this copies it into a folder of its own (kept like quickstart's, with a marker), rewrites its
 * metadata.json to the copy's `file://` location and writes the spicepod that serves it
 * (examples/README.md shows it).
 */
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { UsageError } from './errors.js';
import { claimWorkDir, type WorkDirOwner } from './work-dir.js';

/** Where the fixture store sits beside this package in Ferry's repository (src/ and dist/ alike). */
const FIXTURE_STORE = fileURLToPath(new URL('../../test-support/fixtures/spice-store/', import.meta.url));

export const EXAMPLE_DIR = '.ferry/example';
const OWNER: WorkDirOwner = {
  command: 'serve',
  title: 'ferry serve --example',
  marker: '.ferry-example',
  flag: '--example-dir',
};
const SPICEPOD = 'spicepod.yaml';
const STORE = 'store';
const DATA = 'data';

/** The spicepod that serves the example store at `location`. */
export function exampleSpicepod(location: string): string {
  return [
    '# Written by `ferry serve --example`: the repository fixture store, copied beside this file.',
    'version: v1',
    'kind: Spicepod',
    'name: example',
    'snapshots:',
    '  enabled: true',
    `  location: ${location}`,
    'datasets:',
    '  - from: postgres:public.orders # recorded, never contacted',
    '    name: orders',
    '    acceleration:',
    '      engine: duckdb',
    '      mode: file',
    '      refresh_mode: snapshot',
    '      refresh_check_interval: 10s',
    '      snapshots: enabled',
    '  - from: postgres:public.users',
    '    name: users',
    '    acceleration:',
    '      engine: sqlite',
    '      mode: file',
    '      refresh_mode: snapshot',
    '      refresh_check_interval: 10s',
    '      snapshots: enabled',
    '',
  ].join('\n');
}

/** Lays the example out in `dir` (made, or reused when an earlier --example made it); returns its spicepod and data folder. */
export async function layOutExample(
  dir: string,
): Promise<{ readonly spicepod: string; readonly dataDir: string }> {
  const target = resolve(dir);
  let metadata: string;
  try {
    metadata = await readFile(join(FIXTURE_STORE, 'metadata.json'), 'utf8');
  } catch {
    throw new UsageError(
      'serve',
      `--example serves the fixture store of Ferry's repository (${FIXTURE_STORE}), which this installation does not have; run it from a clone, or serve your own spicepod`,
    );
  }
  await claimWorkDir(target, [SPICEPOD, STORE, DATA], OWNER);
  const store = join(target, STORE);
  const location = pathToFileURL(`${store}/`).href;
  const recorded = (JSON.parse(metadata) as { location: string }).location;
  await mkdir(store, { recursive: true });
  await cp(FIXTURE_STORE, store, {
    recursive: true,
    filter: (source) => !source.endsWith('README.md') && !source.endsWith('metadata.json'),
  });
  await writeFile(join(store, 'metadata.json'), metadata.replaceAll(recorded, location));
  const spicepod = join(target, SPICEPOD);
  await writeFile(spicepod, exampleSpicepod(location));
  return { spicepod, dataDir: join(target, DATA) };
}
