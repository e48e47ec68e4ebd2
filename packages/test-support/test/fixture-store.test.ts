/**
 * The committed fixture store is what its metadata.json says (every snapshot file with its recorded
 * size and SHA-256, at a key of the published layout, nothing unlisted), and it is exactly what
 * `fixtures/make-spice-store.mjs` makes: a hand-edited file, a regenerated file with stale metadata
 * or a script change without regenerating all fail here.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { FIXTURE_LOCATION, fixtureKeys, fixtureStoreDir } from '../src/index.js';

const SCRIPT = fileURLToPath(new URL('../fixtures/make-spice-store.mjs', import.meta.url));
const KEY = /^month=(\d{4}-\d{2})\/day=(\1-\d{2})\/dataset=([a-z]+)\/\3_(\d{8}T\d{6}Z)\.(duckdb|sqlite)$/;

interface Snapshot {
  readonly 'snapshot-id': number;
  readonly 'timestamp-ms': number;
  readonly snapshot: string;
  readonly 'snapshot-checksum': string;
  readonly 'snapshot-checksum-algorithm': string;
  readonly 'snapshot-size': number;
  readonly 'snapshot-engine': string;
  readonly 'snapshot-row-count': number;
}

interface Dataset {
  readonly name: string;
  readonly engine: string;
  readonly snapshots: readonly Snapshot[];
  readonly 'current-snapshot-id': number;
}

async function metadata(): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(join(fixtureStoreDir(), 'metadata.json'), 'utf8')) as Record<
    string,
    unknown
  >;
}

function datasetsOf(doc: Record<string, unknown>): Dataset[] {
  return Object.values(doc).filter(
    (value): value is Dataset => value !== null && typeof value === 'object' && 'snapshots' in value,
  );
}

/** `20261129T080000Z` as epoch ms. */
function stampMs(stamp: string): number {
  const [, y, mo, d, h, mi, s] = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(stamp) ?? [];
  return Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
}

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('the committed fixture store', () => {
  it('records orders (duckdb, snapshots 0 and 1, current 1) and users (sqlite, snapshot 0)', async () => {
    const doc = await metadata();
    expect(doc['format-version']).toBe(1);
    expect(doc.location).toBe(FIXTURE_LOCATION);
    const summary = datasetsOf(doc).map((d) => ({
      name: d.name,
      engine: d.engine,
      current: d['current-snapshot-id'],
      rows: d.snapshots.map((s) => [s['snapshot-id'], s['snapshot-engine'], s['snapshot-row-count']]),
    }));
    expect(summary).toEqual([
      {
        name: 'orders',
        engine: 'duckdb',
        current: 1,
        rows: [
          [0, 'duckdb', 5],
          [1, 'duckdb', 8],
        ],
      },
      { name: 'users', engine: 'sqlite', current: 0, rows: [[0, 'sqlite', 3]] },
    ]);
  });

  it('holds every recorded snapshot at its dated key with its recorded size and SHA-256, and nothing else', async () => {
    const snapshots = datasetsOf(await metadata()).flatMap((d) =>
      d.snapshots.map((s) => ({ dataset: d.name, ...s })),
    );
    const recordedKeys: string[] = [];
    for (const snapshot of snapshots) {
      expect(snapshot.snapshot.startsWith(FIXTURE_LOCATION)).toBe(true);
      const key = snapshot.snapshot.slice(FIXTURE_LOCATION.length);
      const match = KEY.exec(key);
      expect(match, key).not.toBeNull();
      const [, month, day, dataset, stamp, ext] = match as RegExpExecArray;
      expect(dataset).toBe(snapshot.dataset);
      expect(ext).toBe(snapshot['snapshot-engine']);
      expect(`${stamp?.slice(0, 4)}-${stamp?.slice(4, 6)}`).toBe(month);
      expect(`${month}-${stamp?.slice(6, 8)}`).toBe(day);
      expect(stampMs(stamp as string)).toBe(snapshot['timestamp-ms']);
      const bytes = await readFile(join(fixtureStoreDir(), ...key.split('/')));
      expect(bytes.byteLength, key).toBe(snapshot['snapshot-size']);
      expect(snapshot['snapshot-checksum-algorithm']).toBe('SHA256');
      expect(createHash('sha256').update(bytes).digest('hex'), key).toBe(snapshot['snapshot-checksum']);
      recordedKeys.push(key);
    }
    expect((await fixtureKeys()).filter((key) => key !== 'metadata.json')).toEqual(recordedKeys.sort());
  });

  it('is exactly what fixtures/make-spice-store.mjs makes', async () => {
    const out = await mkdtemp(join(tmpdir(), 'ferry-fixture-regen-'));
    dirs.push(out);
    await promisify(execFile)(process.execPath, [SCRIPT, out]);
    for (const key of await fixtureKeys()) {
      const made = await readFile(join(out, ...key.split('/')));
      const committed = await readFile(join(fixtureStoreDir(), ...key.split('/')));
      expect(
        made.equals(committed),
        `${key} differs from the script's output; regenerate with 'pnpm fixtures' and commit`,
      ).toBe(true);
    }
  });
});
