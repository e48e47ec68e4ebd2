/**
 * The dataset machine with `signaturesRequired` (`ferry_trusted_keys`): a candidate is
 * authenticated after its engine and schema and before its download; a signature refusal is
 * routed like a schema mismatch (refused, not retried, the dataset keeps what it serves), a store
 * error reading the signature like a failed download; rollback stays refused without a check.
 */
import { describe, expect, it } from 'vitest';
import { SnapshotRejectedError, SnapshotRejectionCode } from '../src/errors.js';
import { INTERVAL, networkError, OLDER, serving, start } from './machine-harness.js';

function unsigned(id: number): SnapshotRejectedError {
  return new SnapshotRejectedError(
    SnapshotRejectionCode.unsigned,
    `Snapshot ${id} of dataset 'orders' is not signed (s3://bucket/snapshots/orders_${id}.duckdb.ferry-sig.json does not exist)`,
  );
}

const SIGNED = { signaturesRequired: true } as const;

describe('dataset machine: signed snapshots', () => {
  it('authenticates every candidate before downloading it, and serves it when the check passes', async () => {
    const h = await serving({ input: SIGNED });
    expect(h.downloads.authenticated.map((input) => input.entry.snapshotId)).toEqual([1]);
    h.store.publish(2);
    const mark = h.steps.length;
    await h.advance(INTERVAL);
    expect(h.pathSince(mark)).toEqual([
      'polling.readingMetadata',
      'polling.comparingSnapshotIds',
      'polling.newerSnapshotFound',
      'polling.validatingCandidate',
      'polling.authenticating',
      'polling.downloading',
      'polling.verifying',
      'swapping.installing',
      'swapping.swapped',
      'serving.deciding',
      'serving.scheduled',
    ]);
    expect(h.status().servingSnapshotId).toBe(2);
  });

  it('without signaturesRequired no candidate is authenticated', async () => {
    const h = await serving();
    expect(h.downloads.authenticated).toHaveLength(0);
    expect(h.steps).not.toContain('bootstrapping.authenticating');
  });

  it('a refused signature is a refusal before download: nothing downloaded, the served snapshot kept, not retried with backoff', async () => {
    const h = await serving({ input: { ...SIGNED, bootstrapOnFailure: 'retry' } });
    h.downloads.authFailures.set(2, unsigned(2));
    h.store.publish(2);
    const mark = h.steps.length;
    await h.advance(INTERVAL);
    expect(h.pathSince(mark)).toContain('polling.candidateRefused');
    expect(h.downloads.preparedIds).toEqual([1]);
    expect(h.status()).toMatchObject({ servingSnapshotId: 1, lastPollResult: 'refused' });
    expect(h.status().lastError?.code).toBe(SnapshotRejectionCode.unsigned);
    expect(h.context().backoffAttempt).toBe(0);
    const warn = h.logs.find((entry) => entry.fields.code === SnapshotRejectionCode.unsigned);
    expect(warn?.level).toBe('warn');
    expect(warn?.message).toContain("Snapshot 2 of dataset 'orders' is not signed");
    expect(warn?.message).toContain('(keeping snapshot 1)');
    expect(warn?.fields).toMatchObject({ dataset: 'orders', snapshotId: 2 });
    expect(h.context().counters.refusals).toBe(1);
  });

  it('a refused candidate is checked again at the next poll (the ETag is dropped) and served once signed', async () => {
    const h = await serving({ input: SIGNED });
    h.downloads.authFailures.set(2, unsigned(2));
    h.store.publish(2);
    await h.advance(INTERVAL);
    h.downloads.authFailures.delete(2);
    await h.advance(INTERVAL);
    expect(h.status().servingSnapshotId).toBe(2);
  });

  it('fallback: a refused signature moves on to the next candidate while bootstrapping', async () => {
    const h = start({ input: { ...SIGNED, bootstrapOnFailure: 'fallback' } });
    h.store.publish(1);
    h.store.publish(2);
    h.downloads.authFailures.set(2, unsigned(2));
    await h.settle();
    expect(h.status().servingSnapshotId).toBe(1);
    expect(h.downloads.preparedIds).toEqual([1]);
  });

  it('a store error reading the signature is a failed download: retry backs off', async () => {
    const h = await serving({ input: { ...SIGNED, bootstrapOnFailure: 'retry' } });
    h.downloads.authFailures.set(2, networkError());
    h.store.publish(2);
    const mark = h.steps.length;
    await h.advance(INTERVAL);
    expect(h.pathSince(mark)).toContain('polling.retryScheduled');
    expect(h.status().servingSnapshotId).toBe(1);
  });

  it('rollback: an older, validly signed current snapshot is refused as older, without a signature check', async () => {
    const h = await serving({ input: SIGNED });
    h.store.publish(2);
    await h.advance(INTERVAL);
    expect(h.status().servingSnapshotId).toBe(2);
    const checks = h.downloads.authenticated.length;
    h.store.currentSnapshotId = 1;
    h.store.touch();
    await h.advance(INTERVAL);
    expect(h.status()).toMatchObject({ servingSnapshotId: 2, lastPollResult: 'older' });
    expect(h.messages('warn')).toContain(OLDER);
    expect(h.downloads.authenticated).toHaveLength(checks);
  });
});
