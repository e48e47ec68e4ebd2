/** The fixture store copied to a bucket prefix and to a local directory. */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  copyFixtureStore,
  FIXTURE_LOCATION,
  fixtureKeys,
  fixtureStoreDir,
  type LocalAws,
  startLocalAws,
} from '../src/index.js';

interface Snapshot {
  readonly snapshot: string;
  readonly 'snapshot-checksum': string;
  readonly 'snapshot-size': number;
}

function snapshotsOf(metadata: Record<string, unknown>): Snapshot[] {
  return Object.values(metadata).flatMap((value) =>
    value !== null && typeof value === 'object' && 'snapshots' in value
      ? (value.snapshots as Snapshot[])
      : [],
  );
}

let aws: LocalAws;
const dirs: string[] = [];

beforeAll(async () => {
  aws = await startLocalAws();
});

afterAll(async () => {
  await aws.close();
});

afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('fixture store', () => {
  it('lists the fixture without its README', async () => {
    const keys = await fixtureKeys();
    expect(keys).toContain('metadata.json');
    expect(keys).not.toContain('README.md');
    expect(keys.filter((k) => k.endsWith('.duckdb') || k.endsWith('.sqlite'))).toHaveLength(3);
  });

  it('uploads to s3://example-bucket/snapshots/ by default', async () => {
    const copied = await copyFixtureStore({ kind: 's3', aws });
    expect(copied.location).toBe(FIXTURE_LOCATION);
    const keys = await aws.listKeys('example-bucket', 'snapshots/');
    expect(keys).toEqual(copied.keys.map((k) => `snapshots/${k}`));
    const metadata = new TextDecoder().decode(
      await aws.getObject('example-bucket', 'snapshots/metadata.json'),
    );
    expect(metadata).toBe(await readFile(join(fixtureStoreDir(), 'metadata.json'), 'utf8'));
  });

  it('rewrites the recorded location when uploading elsewhere', async () => {
    const copied = await copyFixtureStore({ kind: 's3', aws, location: 's3://other/deep/prefix' });
    expect(copied.location).toBe('s3://other/deep/prefix/');
    const text = new TextDecoder().decode(await aws.getObject('other', 'deep/prefix/metadata.json'));
    expect(text).not.toContain('example-bucket');
    for (const snapshot of snapshotsOf(JSON.parse(text) as Record<string, unknown>)) {
      expect(snapshot.snapshot.startsWith('s3://other/deep/prefix/month=')).toBe(true);
    }
  });

  it('copies to a directory with metadata.json pointing at its file:// URI and exact files', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ferry fixture '));
    dirs.push(dir);
    const copied = await copyFixtureStore({ kind: 'dir', dir });
    expect(copied.location).toMatch(/^file:\/\/\/.*ferry%20fixture%20.*\/$/);
    const metadata = JSON.parse(await readFile(join(dir, 'metadata.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(metadata.location).toBe(copied.location);
    const snapshots = snapshotsOf(metadata);
    expect(snapshots).toHaveLength(3);
    for (const snapshot of snapshots) {
      expect(snapshot.snapshot.startsWith(copied.location)).toBe(true);
      const path = new URL(snapshot.snapshot);
      const bytes = await readFile(path);
      expect(bytes.byteLength).toBe(snapshot['snapshot-size']);
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(snapshot['snapshot-checksum']);
      expect((await stat(path)).mode & 0o200).toBe(0o200);
    }
  });
});
