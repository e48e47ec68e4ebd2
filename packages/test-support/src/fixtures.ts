/**
 * The shared fixture store (a Spice-layout snapshot store published under
 * `s3://example-bucket/snapshots/`) copied where a test needs it: into a bucket prefix of the local
 * S3, or into a local directory with metadata.json rewritten to that directory's `file://` URI.
 * The fixture lives in `<repo>/../shared/fixtures/spice-store` (CI clones the repo with `shared/`
 * as a sibling); `FERRY_SHARED_DIR` overrides the `shared` directory.
 */
import { existsSync } from 'node:fs';
import { chmod, copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { LocalAws } from '@ferry/local-aws';

/** The location the fixture's metadata.json records. */
export const FIXTURE_LOCATION = 's3://example-bucket/snapshots/';
const FIXTURE_NAME = 'spice-store';
const SKIPPED = new Set(['README.md']);

/** The repository root: the nearest directory above this module holding pnpm-workspace.yaml. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'pnpm-workspace.yaml'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) {
      throw new Error(
        `No pnpm-workspace.yaml above ${fileURLToPath(import.meta.url)}; run from the Ferry repository or set FERRY_SHARED_DIR.`,
      );
    }
    dir = parent;
  }
}

/** The shared directory: `FERRY_SHARED_DIR`, else the repository's sibling `shared/`. */
export function sharedDir(): string {
  const fromEnv = process.env.FERRY_SHARED_DIR;
  return fromEnv !== undefined && fromEnv !== '' ? resolve(fromEnv) : resolve(repoRoot(), '..', 'shared');
}

/** The read-only fixture store directory. */
export function fixtureStoreDir(): string {
  const dir = join(sharedDir(), 'fixtures', FIXTURE_NAME);
  if (!existsSync(join(dir, 'metadata.json'))) {
    throw new Error(
      `Fixture store not found at ${dir}; clone the shared directory next to the repository or set FERRY_SHARED_DIR to it.`,
    );
  }
  return dir;
}

/** The fixture's keys (paths relative to the store, `/`-separated, README excluded), sorted. */
export async function fixtureKeys(): Promise<string[]> {
  const root = fixtureStoreDir();
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) =>
      join(entry.parentPath, entry.name)
        .slice(root.length + 1)
        .split('\\')
        .join('/'),
    )
    .filter((key) => !SKIPPED.has(key))
    .sort();
}

/** The fixture's metadata.json text with its recorded location replaced by `location`. */
export async function fixtureMetadata(location: string = FIXTURE_LOCATION): Promise<string> {
  const text = await readFile(join(fixtureStoreDir(), 'metadata.json'), 'utf8');
  if (location === FIXTURE_LOCATION) return text;
  const quoted = JSON.stringify(location).slice(1, -1);
  return text.replaceAll(FIXTURE_LOCATION, quoted);
}

export interface CopiedFixture {
  /** The store location the copy is readable at (ends in `/`). */
  readonly location: string;
  readonly keys: readonly string[];
}

export type FixtureTarget =
  | { readonly kind: 's3'; readonly aws: LocalAws; readonly location?: string }
  | { readonly kind: 'dir'; readonly dir: string };

function splitS3Location(location: string): { bucket: string; prefix: string } {
  const match = /^s3:\/\/([^/]+)\/(.*)$/.exec(location);
  if (match === null || match[1] === undefined) {
    throw new Error(`Fixture location '${location}' is not an s3://bucket/prefix/ URI.`);
  }
  const prefix = match[2] ?? '';
  return { bucket: match[1], prefix: prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/` };
}

/** Upload the fixture store to `location` (default `s3://example-bucket/snapshots/`), creating the bucket. */
export async function copyFixtureStoreToS3(
  aws: LocalAws,
  location: string = FIXTURE_LOCATION,
): Promise<CopiedFixture> {
  const { bucket, prefix } = splitS3Location(location);
  const normalised = `s3://${bucket}/${prefix}`;
  await aws.createBucket(bucket);
  const root = fixtureStoreDir();
  const keys = await fixtureKeys();
  for (const key of keys) {
    const body =
      key === 'metadata.json' ? await fixtureMetadata(normalised) : await readFile(join(root, key));
    await aws.putObject(bucket, prefix + key, body, {
      contentType: key.endsWith('.json') ? 'application/json' : 'application/octet-stream',
    });
  }
  return { location: normalised, keys };
}

/** Copy the fixture store into `dir` (created if needed) and point its metadata.json at `dir`. */
export async function copyFixtureStoreToDir(dir: string): Promise<CopiedFixture> {
  const target = resolve(dir);
  const location = pathToFileURL(`${target}/`).href;
  const root = fixtureStoreDir();
  const keys = await fixtureKeys();
  for (const key of keys) {
    const destination = join(target, ...key.split('/'));
    await mkdir(dirname(destination), { recursive: true });
    if (key === 'metadata.json') {
      await writeFile(destination, await fixtureMetadata(location));
    } else {
      await copyFile(join(root, key), destination);
      // The fixture is read-only; the copy is the test's to change.
      await chmod(destination, 0o644);
    }
  }
  return { location, keys };
}

/** Copy the fixture store to a bucket prefix or a local directory. */
export function copyFixtureStore(target: FixtureTarget): Promise<CopiedFixture> {
  return target.kind === 's3'
    ? copyFixtureStoreToS3(target.aws, target.location)
    : copyFixtureStoreToDir(target.dir);
}
