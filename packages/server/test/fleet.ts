/**
 * A fleet of tiny datasets for the inspector's scale tests: a `file://` snapshot store holding one
 * small SQLite snapshot per dataset (each built by the writer, its table named after the dataset)
 * and one metadata.json naming all of them, written once — so a store of hundreds of datasets
 * takes seconds, not one conditional metadata rewrite per dataset. Each entry is made by core's
 * `appendSnapshot`, exactly what a publish writes; later snapshots go through the writer's
 * `publishSnapshot` as usual.
 */
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { appendSnapshot } from '@ferry/core';
import { type SpicepodDatasetSpec, spicepodYaml } from '@ferry/test-support';
import { buildSnapshotFile, type PublishResult, publishSnapshot, snapshotKey } from '@ferry/writer';

export interface Fleet {
  /** The store's `file://` location (ends in `/`). */
  readonly location: string;
  readonly dir: string;
  /** The datasets with a snapshot in the store, in order. */
  readonly names: readonly string[];
  /** Publishes a new snapshot of `name` (rows carry `version`) with the writer. */
  publish(name: string, version: number): Promise<PublishResult>;
  remove(): Promise<void>;
}

/** `ds_0000`, `ds_0001`, … */
export function fleetNames(count: number, prefix = 'ds_'): string[] {
  return Array.from({ length: count }, (_, index) => `${prefix}${String(index).padStart(4, '0')}`);
}

const TIMESTAMP_MS = Date.UTC(2026, 11, 1, 8, 0, 0);

function rowsSql(version: number): string {
  return `SELECT i::BIGINT AS id, ${version}::BIGINT AS version FROM range(3) t(i)`;
}

/**
 * Builds the store: one SQLite snapshot per name (built with the writer from a 3-row query), all
 * current at once in one metadata.json.
 */
export async function buildFleet(names: readonly string[]): Promise<Fleet> {
  const dir = await mkdtemp(join(tmpdir(), 'ferry-fleet-'));
  const location = pathToFileURL(`${dir}/`).href;
  const scratch = join(dir, '.build');
  await mkdir(scratch);
  const document: Record<string, unknown> = { 'format-version': 1, location };
  let lastUpdated = 0;
  for (const name of names) {
    const built = await buildSnapshotFile({
      dataset: name,
      source: { sql: rowsSql(1) },
      engine: 'sqlite',
      output: join(scratch, `${name}.sqlite`),
    });
    const key = snapshotKey(name, 'sqlite', TIMESTAMP_MS);
    const target = join(dir, ...key.split('/'));
    await mkdir(dirname(target), { recursive: true });
    await copyFile(built.path, target);
    const checksum = createHash('sha256')
      .update(await readFile(target))
      .digest('hex');
    const single = appendSnapshot(undefined, {
      location,
      dataset: name,
      engine: 'sqlite',
      schema: built.schema,
      uri: `${location}${key}`,
      checksum,
      size: built.size,
      rowCount: built.rowCount,
      timestampMs: TIMESTAMP_MS,
    });
    document[name] = single[name];
    lastUpdated = Math.max(lastUpdated, Number(single['last-updated-ms']));
  }
  document['last-updated-ms'] = lastUpdated;
  await rm(scratch, { recursive: true, force: true });
  // Written aside and renamed into place, as a writer does.
  const staged = join(dir, '.metadata.json.tmp');
  await writeFile(staged, JSON.stringify(document));
  await rename(staged, join(dir, 'metadata.json'));
  return {
    location,
    dir,
    names,
    publish: (name, version) =>
      publishSnapshot({ dataset: name, location, engine: 'sqlite', source: { sql: rowsSql(version) } }),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** A spicepod serving `datasets` (SQLite, snapshot mode, `interval` between polls) from `fleet`. */
export function fleetSpicepod(
  fleet: Pick<Fleet, 'location'>,
  datasets: readonly string[],
  interval: string,
  extra: readonly SpicepodDatasetSpec[] = [],
): string {
  return spicepodYaml({
    name: 'inspector-fleet',
    location: fleet.location,
    datasets: [...datasets.map((name) => ({ name, engine: 'sqlite' as const, interval })), ...extra],
  });
}
