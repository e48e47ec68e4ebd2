/**
 * Staleness (what the reader knows, not the data's age), on the dataset machine run on a
 * SimulatedClock with the fakes of `machine-harness.ts`, and the pure readiness crossings.
 */
import { describe, expect, it, vi } from 'vitest';
import {
  type BoundedStaleness,
  datasetStaleness,
  freshnessClock,
  isStalerThan,
  nextStaleCrossingMs,
  staleCrossings,
} from '../src/machine/index.js';
import { INTERVAL, localSnapshot, networkError, serving, start } from './machine-harness.js';

type Harness = Awaited<ReturnType<typeof serving>>;

const stalenessOf = (h: Harness) => datasetStaleness(h.status(), h.clock.now());

describe('staleness on the dataset machine', () => {
  it('a snapshot the writer has not replaced stays fresh however old it is', async () => {
    const h = await serving();
    expect(h.status()).toMatchObject({ freshAtMs: 0, storeSnapshotId: 1 });
    for (let i = 0; i < 50; i++) await h.advance(INTERVAL);
    // 500 s of clock later, the snapshot is 500 s older, but every check found nothing newer.
    expect(h.status().lastPollResult).toBe('unchanged');
    expect(stalenessOf(h)).toEqual({ stalenessMs: 0, sinceMs: 50 * INTERVAL, newerSnapshotId: null });
    await h.advance(INTERVAL - 1);
    expect(stalenessOf(h).stalenessMs).toBe(INTERVAL - 1);
  });

  it('an unreachable store: staleness grows from the last good check, and falls back once a check succeeds', async () => {
    const h = await serving();
    await h.advance(INTERVAL);
    expect(stalenessOf(h).stalenessMs).toBe(0);
    for (let i = 0; i < 5; i++) h.store.failures.push(networkError());
    for (let i = 0; i < 5; i++) await h.advance(INTERVAL);
    expect(h.status().lastPollResult).toBe('failed');
    expect(stalenessOf(h)).toMatchObject({ stalenessMs: 5 * INTERVAL, sinceMs: INTERVAL });
    await h.advance(INTERVAL);
    expect(h.status().lastPollResult).not.toBe('failed');
    expect(stalenessOf(h).stalenessMs).toBe(0);
  });

  it('a store that names no current snapshot (metadata.json gone, no entry, no current id) does not make it fresh', async () => {
    const h = await serving();
    await h.advance(INTERVAL);
    expect(stalenessOf(h).stalenessMs).toBe(0);
    h.store.exists = false;
    await h.advance(INTERVAL);
    await h.advance(INTERVAL);
    expect(h.status()).toMatchObject({ lastPollResult: 'waiting', servingSnapshotId: 1 });
    expect(stalenessOf(h)).toMatchObject({ stalenessMs: 2 * INTERVAL, sinceMs: INTERVAL });
    h.store.exists = true;
    h.store.hasEntry = false;
    await h.advance(INTERVAL);
    h.store.hasEntry = true;
    h.store.currentSnapshotId = undefined;
    h.store.touch();
    await h.advance(INTERVAL);
    expect(h.status().lastPollResult).toBe('waiting');
    expect(stalenessOf(h).stalenessMs).toBe(4 * INTERVAL);
    // The store names the served snapshot again: fresh from that check.
    h.store.currentSnapshotId = 1;
    h.store.touch();
    await h.advance(INTERVAL);
    expect(h.status().lastPollResult).toBe('same');
    expect(stalenessOf(h).stalenessMs).toBe(0);
  });

  it('a newer snapshot it knows of but refused: stale, and names it', async () => {
    const h = await serving();
    h.store.publish(2, { engine: 'sqlite' });
    await h.advance(INTERVAL);
    expect(h.status()).toMatchObject({ lastPollResult: 'refused', servingSnapshotId: 1, storeSnapshotId: 2 });
    // Every later check meets the same refused snapshot: the newer one is still not loaded.
    await h.advance(INTERVAL);
    await h.advance(INTERVAL);
    expect(h.status().lastPollResult).toBe('refused');
    expect(stalenessOf(h)).toEqual({ stalenessMs: 3 * INTERVAL, sinceMs: 0, newerSnapshotId: 2 });
  });

  it('a newer snapshot whose download fails: stale until it is loaded, then fresh from that check', async () => {
    const h = await serving();
    h.store.publish(2);
    h.downloads.failures.set(2, networkError());
    await h.advance(INTERVAL);
    expect(h.status()).toMatchObject({ lastPollResult: 'failed', servingSnapshotId: 1 });
    expect(stalenessOf(h)).toMatchObject({ stalenessMs: INTERVAL, newerSnapshotId: 2 });
    h.downloads.failures.delete(2);
    await h.advance(INTERVAL);
    expect(h.status()).toMatchObject({
      lastPollResult: 'newer',
      servingSnapshotId: 2,
      freshAtMs: 2 * INTERVAL,
    });
    expect(stalenessOf(h)).toEqual({ stalenessMs: 0, sinceMs: 2 * INTERVAL, newerSnapshotId: null });
  });

  it('a check answered with a shared read that began before it is fresh from that read, on a 304 or a full read', async () => {
    const h = await serving();
    const now = () => h.clock.now();
    h.store.sharedRead = { agoMs: 400, now };
    await h.advance(INTERVAL);
    expect(h.status()).toMatchObject({ lastPollResult: 'unchanged', freshAtMs: INTERVAL - 400 });
    h.store.touch();
    await h.advance(INTERVAL);
    expect(h.status()).toMatchObject({ lastPollResult: 'same', freshAtMs: 2 * INTERVAL - 400 });
    // A read begun after the check started vouches for no more than the check's start.
    h.store.sharedRead = { agoMs: -50, now };
    await h.advance(INTERVAL);
    expect(h.status()).toMatchObject({ lastPollResult: 'unchanged', freshAtMs: 3 * INTERVAL });
  });

  it('a newer snapshot loaded from a shared read is fresh from that read', async () => {
    const h = await serving();
    h.store.sharedRead = { agoMs: 250, now: () => h.clock.now() };
    h.store.publish(2);
    await h.advance(INTERVAL);
    expect(h.status()).toMatchObject({
      lastPollResult: 'newer',
      servingSnapshotId: 2,
      freshAtMs: INTERVAL - 250,
    });
  });

  it('a notification of a newer snapshot marks it known; the read it starts decides freshness', async () => {
    const h = await serving();
    h.store.failures.push(networkError());
    h.actor.send({ type: 'snapshot.announced', snapshotId: 5 });
    await h.settle();
    expect(stalenessOf(h).newerSnapshotId).toBe(5);
  });

  it('a rollback (the store names an older current snapshot) is a check that found nothing newer', async () => {
    const h = await serving();
    h.store.publish(0);
    await h.advance(INTERVAL);
    expect(h.status()).toMatchObject({ lastPollResult: 'older', freshAtMs: INTERVAL });
  });

  it('a snapshot restored from the live file: before its first check, staleness is its age', () => {
    const h = start({ restore: localSnapshot(2) });
    const restored = { ...h.status(), servingSnapshotId: 2, servingTimestampMs: 1_000, freshAtMs: null };
    expect(datasetStaleness(restored, 6_000)).toMatchObject({ stalenessMs: 5_000, sinceMs: 1_000 });
  });

  it('serving nothing: no staleness figure, and stale against any bound', () => {
    const s = datasetStaleness(
      { servingSnapshotId: null, servingTimestampMs: null, freshAtMs: null, storeSnapshotId: 3 },
      10,
    );
    expect(s).toEqual({ stalenessMs: null, sinceMs: null, newerSnapshotId: null });
    expect(isStalerThan(s.stalenessMs, 1_000_000)).toBe(true);
    expect(isStalerThan(999, 1_000)).toBe(false);
    expect(isStalerThan(1_001, 1_000)).toBe(true);
  });

  it('another check can hold staleness up (staleSinceMs, the hook for signed heartbeats)', () => {
    const facts = { servingSnapshotId: 4, servingTimestampMs: 0, freshAtMs: 9_000, storeSnapshotId: 4 };
    expect(datasetStaleness(facts, 10_000).stalenessMs).toBe(1_000);
    expect(datasetStaleness({ ...facts, staleSinceMs: 2_000 }, 10_000).stalenessMs).toBe(8_000);
    expect(datasetStaleness({ ...facts, staleSinceMs: null }, 10_000).stalenessMs).toBe(1_000);
  });
});

describe('staleness bounds', () => {
  const at = (stalenessMs: number | null, dataset = 'orders'): BoundedStaleness => ({
    dataset,
    stalenessMs,
    maxStalenessMs: 30_000,
  });

  it('one crossing per direction, none while a side holds', () => {
    let stale: ReadonlySet<string> = new Set();
    const seen: string[] = [];
    for (const ms of [0, 29_000, 30_000, 30_001, 45_000, 60_000, null, 12, 5]) {
      const next = staleCrossings(stale, [at(ms), at(0, 'users')]);
      stale = next.stale;
      seen.push(...next.crossings.map((c) => `${c.dataset} ${c.direction} ${c.stalenessMs}`));
    }
    expect(seen).toEqual(['orders stale 30001', 'orders fresh 12']);
  });

  it('the next look is due when the first fresh dataset would cross', () => {
    expect(nextStaleCrossingMs([at(10_000), at(25_000, 'users'), at(40_000, 'late')])).toBe(5_001);
    expect(nextStaleCrossingMs([at(40_000), at(null, 'users')])).toBeUndefined();
  });
});

describe('the freshness clock', () => {
  it('is the same for every step of the wall clock, back or forward, and never goes back', () => {
    const wall = vi.spyOn(Date, 'now');
    try {
      const before = freshnessClock();
      wall.mockReturnValue(Date.now() - 3_600_000);
      const afterStepBack = freshnessClock();
      wall.mockReturnValue(Date.now() + 3_600_000);
      const afterStepForward = freshnessClock();
      expect(afterStepBack).toBeGreaterThanOrEqual(before);
      expect(afterStepForward).toBeGreaterThanOrEqual(afterStepBack);
      expect(afterStepForward - before).toBeLessThan(1_000);
    } finally {
      wall.mockRestore();
    }
  });
});
