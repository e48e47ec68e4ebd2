/**
 * `liveSignatureProblem`, the check a restart makes of the live file under `ferry_trusted_keys`:
 * the signature recorded in its manifest must verify with a key trusted now and describe the file
 * the manifest records (a real Ed25519 key pair, the writer's statement format).
 */
import { snapshotStatementText } from '@ferry/core';
import {
  generateSigningKeyPair,
  readSigningKey,
  schemaSha256,
  signStatement,
  TrustedKeySet,
} from '@ferry/store/signing';
import { describe, expect, it } from 'vitest';
import { type LiveSnapshot, liveSignatureProblem } from '../src/index.js';
import { DATASET, RECORDED } from './snapshot-support.js';

const pair = generateSigningKeyPair();
const key = readSigningKey(pair.privatePem, 'test key');
const live: LiveSnapshot = {
  snapshotId: 7,
  timestampMs: 1_764_400_007_000,
  uri: 's3://bucket/events_7.duckdb',
  checksum: 'AB'.repeat(32),
  size: 4096,
  schema: RECORDED,
};
const signatureOf = (snapshot: LiveSnapshot) =>
  signStatement(
    key,
    snapshotStatementText({
      keyId: pair.keyId,
      location: 's3://bucket/',
      dataset: DATASET,
      snapshotId: snapshot.snapshotId,
      uri: snapshot.uri,
      sha256: snapshot.checksum.toLowerCase(),
      size: snapshot.size,
      engine: 'duckdb',
      schemaSha256: schemaSha256(snapshot.schema),
      timestampMs: snapshot.timestampMs,
      blocksSha256: null,
    }),
  );

describe('liveSignatureProblem', () => {
  const trusted = new TrustedKeySet([pair.publicPem]);

  it('serves a live file whose recorded signature verifies and describes it', () => {
    expect(liveSignatureProblem({ ...live, signature: signatureOf(live) }, DATASET, trusted)).toBeUndefined();
  });

  it('refuses one never verified, one signed by a key not trusted now, and one whose signature is of another file', () => {
    expect(liveSignatureProblem(live, DATASET, trusted)).toMatch(/was not verified when it was downloaded/);
    const other = new TrustedKeySet([generateSigningKeyPair().publicPem]);
    expect(liveSignatureProblem({ ...live, signature: signatureOf(live) }, DATASET, other)).toMatch(
      `is signed by key ${pair.keyId}`,
    );
    // A valid signature of the same id, moved beside another file (another checksum).
    const moved = { ...live, checksum: 'CD'.repeat(32), signature: signatureOf(live) };
    expect(liveSignatureProblem(moved, DATASET, trusted)).toBe(
      `has a signature of another snapshot (its sha256 is "${'ab'.repeat(32)}" where the live file's manifest records "${'cd'.repeat(32)}")`,
    );
    expect(liveSignatureProblem({ ...live, signature: signatureOf(live) }, 'orders', trusted)).toMatch(
      /another snapshot \(its dataset is "events" where the live file's manifest records "orders"\)/,
    );
  });
});
