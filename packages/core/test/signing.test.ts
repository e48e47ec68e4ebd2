/**
 * Signed snapshots, the pure part: the canonical statement text (fixed order, context line, one
 * text per statement, no forged lines), the statement compared with a metadata entry field by
 * field, the form of a trusted key and its id, the heartbeat freshness decision on a given clock,
 * and `ferry_trusted_keys` as the spicepod loader reads it (pod list, dataset override, secrets,
 * each wrong item named).
 */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadSpicepod } from '../src/config/spicepod.js';
import type { DatasetMetadata, SnapshotEntry } from '../src/metadata/types.js';
import {
  canonicalJson,
  envelopeText,
  expectedSnapshotStatement,
  type HeartbeatStatement,
  heartbeatFreshness,
  heartbeatKeyOf,
  heartbeatStatementText,
  parseEnvelope,
  parseHeartbeatStatement,
  parsePublicKeyPem,
  parseSnapshotStatement,
  signatureKeyOf,
  snapshotStatementDifference,
  snapshotStatementText,
} from '../src/signing/index.js';

const entry: SnapshotEntry = {
  snapshotId: 3,
  timestampMs: 1_764_400_000_000,
  uri: 's3://bucket/snapshots/month=2025-11/day=2025-11-29/dataset=orders/orders_20251129T070640Z.duckdb',
  checksum: 'AB'.repeat(32),
  checksumAlgorithm: 'SHA256',
  size: 1_048_576,
  engine: 'DuckDB',
};
const dataset: DatasetMetadata = {
  name: 'orders',
  schemas: [],
  currentSchemaId: 0,
  snapshots: [entry],
  currentSnapshotId: 3,
  properties: {},
};
const expected = expectedSnapshotStatement({
  keyId: '0123456789abcdef',
  location: 's3://bucket/snapshots/',
  dataset,
  entry,
  schemaSha256: 'cd'.repeat(32),
});

function publicPem(): string {
  return generateKeyPairSync('ed25519').publicKey.export({ format: 'pem', type: 'spki' }).toString();
}

describe('snapshot statement', () => {
  it('is a context line and the fields in a fixed order, values as JSON', () => {
    expect(snapshotStatementText(expected)).toBe(
      [
        'ferry-snapshot-statement-v1',
        'key-id "0123456789abcdef"',
        'location "s3://bucket/snapshots/"',
        'dataset "orders"',
        'snapshot-id 3',
        `snapshot "${entry.uri}"`,
        `sha256 "${'ab'.repeat(32)}"`,
        'size 1048576',
        'engine "duckdb"',
        `schema-sha256 "${'cd'.repeat(32)}"`,
        'timestamp-ms 1764400000000',
        'blocks-sha256 null',
        '',
      ].join('\n'),
    );
  });

  it('parses back to the same statement, and refuses other kinds, reordered or forged lines', () => {
    const text = snapshotStatementText(expected);
    expect(parseSnapshotStatement(text)).toEqual(expected);
    const lines = text.split('\n');
    const swapped = [lines[0], lines[2], lines[1], ...lines.slice(3)].join('\n');
    expect(parseSnapshotStatement(swapped)).toHaveProperty('problem');
    expect(parseSnapshotStatement(text.replace('snapshot-id 3', 'snapshot-id "3"'))).toHaveProperty(
      'problem',
    );
    expect(parseSnapshotStatement(`${text}size 1\n`)).toHaveProperty('problem');
    const heartbeat = heartbeatStatementText({
      keyId: 'k',
      location: 's3://bucket/snapshots/',
      dataset: 'orders',
      snapshotId: 3,
      sha256: 'ab',
      issuedAtMs: 1,
      validUntilMs: 2,
    });
    expect(parseSnapshotStatement(heartbeat)).toEqual({
      problem: 'the statement is not a ferry-snapshot-statement-v1',
    });
    // A newline inside a value stays inside its JSON string: no field can be forged.
    const forged = { ...expected, dataset: 'orders"\nsize 1' };
    expect(snapshotStatementText(forged).split('\n')).toHaveLength(13);
  });

  it('names the first field that differs from the metadata entry', () => {
    expect(snapshotStatementDifference(expected, expected)).toBeUndefined();
    const other = { ...expected, sha256: 'ef'.repeat(32) };
    expect(snapshotStatementDifference(other, expected)).toBe(
      `its sha256 is "${'ef'.repeat(32)}" where metadata.json records "${'ab'.repeat(32)}"`,
    );
    expect(snapshotStatementDifference({ ...expected, snapshotId: 2 }, expected)).toContain(
      'snapshot-id is 2',
    );
  });

  it('compares the block manifest digest only when the reader uses one', () => {
    const withBlocks = { ...expected, blocksSha256: '12'.repeat(32) };
    expect(snapshotStatementDifference(withBlocks, expected)).toBeUndefined();
    expect(snapshotStatementDifference(withBlocks, expected, { checkBlocks: true })).toContain(
      'blocks-sha256',
    );
  });

  it('the envelope round-trips, and the sidecar keys are beside the snapshot and under ferry-heartbeats/', () => {
    const envelope = { keyId: 'k', statement: snapshotStatementText(expected), signature: 'AAAA' };
    expect(parseEnvelope(envelopeText(envelope))).toEqual(envelope);
    expect(parseEnvelope('{"format":"other"}')).toHaveProperty('problem');
    expect(parseEnvelope('not json')).toHaveProperty('problem');
    expect(signatureKeyOf('a/orders_1.duckdb')).toBe('a/orders_1.duckdb.ferry-sig.json');
    expect(heartbeatKeyOf('orders')).toBe('ferry-heartbeats/orders.ferry-sig.json');
  });

  it('canonical JSON sorts keys at every level', () => {
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: null }] })).toBe('{"a":[{"c":null,"d":2}],"b":1}');
  });
});

describe('trusted key form', () => {
  it('accepts an Ed25519 public key and ids it by its first 8 bytes', () => {
    const { publicKey } = generateKeyPairSync('ed25519');
    const pem = publicKey.export({ format: 'pem', type: 'spki' }).toString();
    const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12);
    const parsed = parsePublicKeyPem(pem);
    expect(parsed).toEqual({ pem, keyId: raw.subarray(0, 8).toString('hex') });
    expect(parsePublicKeyPem(pem.trim().replace(/\n/g, '\\n'))).toEqual(parsed);
  });

  it('refuses a private key, another algorithm, and text that is not PEM', () => {
    const pair = generateKeyPairSync('ed25519');
    const privatePem = pair.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    expect(parsePublicKeyPem(privatePem)).toHaveProperty(
      'problem',
      expect.stringContaining('is a private key'),
    );
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;
    expect(parsePublicKeyPem(ec.export({ format: 'pem', type: 'spki' }).toString())).toHaveProperty(
      'problem',
      expect.stringContaining('is not an Ed25519 public key'),
    );
    expect(parsePublicKeyPem('ssh-ed25519 AAAA')).toHaveProperty(
      'problem',
      expect.stringContaining('is not PEM'),
    );
  });
});

describe('heartbeat freshness', () => {
  const statement: HeartbeatStatement = {
    keyId: 'k',
    location: 's3://bucket/snapshots/',
    dataset: 'orders',
    snapshotId: 3,
    sha256: 'ab',
    issuedAtMs: 1_000_000,
    validUntilMs: 1_600_000,
  };
  const judge = (
    nowMs: number,
    servingSnapshotId: number | null,
    s: typeof statement | { problem: string } = statement,
  ) =>
    heartbeatFreshness({
      dataset: 'orders',
      location: 's3://bucket/snapshots/',
      statement: s,
      nowMs,
      servingSnapshotId,
      graceMs: 20_000,
    });

  it('is fresh until the statement expires, then stale naming the expiry', () => {
    expect(judge(1_600_000, 3)).toEqual({ stale: false, validUntilMs: 1_600_000, snapshotId: 3 });
    const late = judge(1_600_001, 3);
    // Staleness counts from the signing: nothing the store said since can be trusted.
    expect(late).toMatchObject({ stale: true, sinceMs: 1_000_000 });
    expect(late.stale && late.reason).toContain('heartbeat statement expired at 1970-01-01T00:26:40.000Z');
  });

  it('is stale without a statement it can trust', () => {
    expect(judge(1_000_000, 3, { problem: 'there is no heartbeat statement' })).toEqual({
      stale: true,
      reason: 'there is no heartbeat statement',
    });
    expect(judge(1_000_000, 3, { ...statement, dataset: 'other' })).toMatchObject({ stale: true });
  });

  it('is stale when the statement names a newer snapshot than the one served, past the grace', () => {
    expect(judge(1_010_000, 2)).toMatchObject({ stale: false });
    const frozen = judge(1_030_000, 2);
    expect(frozen.stale && frozen.reason).toContain('names snapshot 3, but the dataset serves snapshot 2');
    expect(frozen).toMatchObject({ sinceMs: 1_000_000 });
    expect(judge(1_030_000, 4)).toMatchObject({ stale: false });
    // While nothing is served yet (bootstrapping) there is nothing to compare.
    expect(judge(1_030_000, null)).toMatchObject({ stale: false });
  });

  it('counts the grace from the first statement that named the newer snapshot, however recently it was re-signed', () => {
    const resigned = { ...statement, issuedAtMs: 1_029_000, validUntilMs: 1_629_000 };
    const input = {
      dataset: 'orders',
      location: 's3://bucket/snapshots/',
      statement: resigned,
      nowMs: 1_030_000,
      servingSnapshotId: 2,
      graceMs: 20_000,
    };
    expect(heartbeatFreshness(input)).toMatchObject({ stale: false });
    const behind = heartbeatFreshness({ ...input, behindSinceMs: 1_000_000 });
    expect(behind.stale && behind.reason).toContain('names snapshot 3, but the dataset serves snapshot 2');
    expect(behind).toMatchObject({ sinceMs: 1_000_000 });
  });

  it('is stale past the grace when the statement names the served id with another SHA-256 (an id reused)', () => {
    const input = {
      dataset: 'orders',
      location: 's3://bucket/snapshots/',
      statement,
      servingSnapshotId: 3,
      graceMs: 20_000,
    };
    expect(heartbeatFreshness({ ...input, nowMs: 1_030_000, servingChecksum: 'AB' })).toMatchObject({
      stale: false,
    });
    expect(heartbeatFreshness({ ...input, nowMs: 1_010_000, servingChecksum: 'cd' })).toMatchObject({
      stale: false,
    });
    const reused = heartbeatFreshness({ ...input, nowMs: 1_030_000, servingChecksum: 'cd' });
    expect(reused.stale && reused.reason).toContain(
      'names snapshot 3 of SHA-256 ab, but the dataset serves snapshot 3 of SHA-256 cd',
    );
  });

  it('parses its own text', () => {
    expect(parseHeartbeatStatement(heartbeatStatementText(statement))).toEqual(statement);
  });
});

describe('ferry_trusted_keys in the spicepod', () => {
  function load(
    params: Record<string, unknown>,
    datasetParams?: Record<string, unknown>,
    env: Record<string, string> = {},
  ) {
    const pod = {
      version: 'v1',
      kind: 'Spicepod',
      name: 'signed',
      snapshots: { location: 's3://bucket/prefix/', params },
      datasets: [
        {
          from: 'postgres:public.orders',
          name: 'orders',
          ...(datasetParams === undefined ? {} : { params: datasetParams }),
          acceleration: { engine: 'duckdb', mode: 'file', refresh_mode: 'snapshot', snapshots: 'enabled' },
        },
      ],
    };
    return loadSpicepod(stringify(pod), { file: 'spicepod.yaml', env });
  }

  it('gives each dataset the pod keys, with secrets resolved', () => {
    const first = publicPem();
    const second = publicPem();
    const load1 = load({ ferry_trusted_keys: [first, `\${secrets:WRITER_KEY}`] }, undefined, {
      WRITER_KEY: second,
    });
    expect(load1.errors).toEqual([]);
    expect(load1.datasets[0]?.trustedKeys?.map((key) => key.pem)).toEqual([first, second]);
    expect(load1.config?.snapshots?.trustedKeys).toHaveLength(2);
  });

  it("a dataset's own list replaces the pod's", () => {
    const pod = publicPem();
    const own = publicPem();
    const loaded = load({ ferry_trusted_keys: [pod] }, { ferry_trusted_keys: [own] });
    expect(loaded.errors).toEqual([]);
    expect(loaded.datasets[0]?.trustedKeys?.map((key) => key.pem)).toEqual([own]);
  });

  it('unset: no trusted keys, snapshots are not verified', () => {
    expect(load({}).datasets[0]?.trustedKeys).toBeUndefined();
  });

  it('names the exact item that is not an Ed25519 public key, and refuses an empty list', () => {
    const loaded = load({ ferry_trusted_keys: [publicPem(), 'not a key'] });
    expect(loaded.fatal).toBe(true);
    expect(loaded.errors.map((issue) => issue.path)).toEqual(['snapshots.params.ferry_trusted_keys[1]']);
    expect(loaded.errors[0]?.message).toContain('is not PEM');
    expect(load({ ferry_trusted_keys: [] }).errors[0]?.message).toContain('is an empty list');
    const bad = load(
      {},
      { ferry_trusted_keys: ['-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----'] },
    );
    expect(bad.errors[0]?.path).toBe('datasets[0].params.ferry_trusted_keys[0]');
    expect(bad.errors[0]?.message).toContain('is a private key');
    expect(bad.datasets).toEqual([]);
  });
});
