/**
 * A dataset machine's persisted snapshot (`actor.getPersistedSnapshot()`) round-trips through JSON
 * and restores with `createActor(machine, { snapshot })`: it serves the same snapshot with the same
 * ETag and counters, and its next check comes when it was due (the poll timer is an invoked actor,
 * which XState restarts; a delay would be lost). On a SimulatedClock; the restored actor runs on a
 * second clock set to the same time, as a new process would.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { deferred, FakeStore, INTERVAL, networkError, serving, start } from './machine-harness.js';

/** The actor's persisted snapshot after a trip through JSON text, and the clock time it was taken at. */
function persist(h: ReturnType<typeof start>) {
  const persisted: unknown = h.actor.getPersistedSnapshot();
  const text = JSON.stringify(persisted);
  // Nothing is lost on the way: the context holds no functions or handles.
  expect(JSON.parse(text)).toEqual(persisted);
  const atMs = h.clock.now();
  h.actor.stop();
  return { snapshot: JSON.parse(text) as unknown, atMs };
}

function clockAt(ms: number): SimulatedClock {
  const clock = new SimulatedClock();
  clock.set(ms);
  return clock;
}

describe('dataset machine: persisted snapshots', () => {
  it('a serving dataset (ETag, counters) restores, serves the same id and polls on schedule with its ETag', async () => {
    const h = await serving();
    await h.advance(INTERVAL);
    await h.advance(3_000);
    const before = h.status();
    expect(before).toMatchObject({
      servingSnapshotId: 1,
      lastPollResult: 'unchanged',
      nextPollDueMs: 2 * INTERVAL,
    });
    expect(before.etag).not.toBeNull();
    const { snapshot, atMs } = persist(h);

    const restored = start({ store: h.store, snapshot, clock: clockAt(atMs) });
    expect(restored.status()).toEqual(before);
    expect(restored.actor.getSnapshot().matches({ serving: 'scheduled' })).toBe(true);

    const reads = h.store.reads.length;
    await restored.advance(2 * INTERVAL - atMs - 1);
    expect(h.store.reads).toHaveLength(reads);
    await restored.advance(1);
    expect(h.store.reads.slice(reads)).toEqual([
      { dataset: 'orders', trigger: 'schedule', ifNoneMatch: before.etag },
    ]);
    expect(restored.status()).toMatchObject({
      lastPollResult: 'unchanged',
      counters: { ...before.counters, polls: before.counters.polls + 1 },
      nextPollDueMs: 3 * INTERVAL,
    });

    // It keeps behaving: a newer snapshot is found, downloaded, verified and swapped in.
    h.store.publish(2);
    await restored.advance(INTERVAL);
    expect(restored.status()).toMatchObject({ servingSnapshotId: 2, lastPollResult: 'newer' });
  });

  it('a dataset waiting for its first snapshot restores mid-wait and checks when the check was due', async () => {
    const store = new FakeStore();
    const h = start({ store });
    await h.settle();
    await h.advance(4_000);
    expect(h.status()).toMatchObject({ state: 'waiting', nextPollDueMs: INTERVAL });
    const { snapshot, atMs } = persist(h);

    const restored = start({ store, snapshot, clock: clockAt(atMs) });
    expect(restored.actor.getSnapshot().matches({ waiting: 'scheduled' })).toBe(true);
    store.publish(0);
    await restored.advance(INTERVAL - atMs - 1);
    expect(store.reads).toHaveLength(1);
    await restored.advance(1);
    expect(store.reads).toHaveLength(2);
    expect(restored.status()).toMatchObject({ state: 'serving', servingSnapshotId: 0 });
  });

  it('a retry backing off restores and retries when the backoff ends', async () => {
    const h = await serving({ input: { bootstrapOnFailure: 'retry' } });
    h.downloads.failures.set(2, networkError());
    h.store.publish(2);
    await h.advance(INTERVAL);
    expect(h.actor.getSnapshot().matches({ serving: 'backingOff' })).toBe(true);
    expect(h.status().nextPollDueMs).toBe(INTERVAL + 1000);
    const { snapshot, atMs } = persist(h);

    h.downloads.failures.clear();
    const restored = start({ store: h.store, downloads: h.downloads, snapshot, clock: clockAt(atMs) });
    await restored.advance(999);
    expect(restored.status().servingSnapshotId).toBe(1);
    await restored.advance(1);
    expect(restored.status()).toMatchObject({
      servingSnapshotId: 2,
      nextPollDueMs: INTERVAL + 1000 + INTERVAL,
    });
  });

  it('a snapshot taken while the metadata read is in flight restores and reads again', async () => {
    const h = await serving();
    h.store.gate = deferred();
    h.actor.send({ type: 'poll.now' });
    await h.until(() => h.store.reads.length === 2);
    const { snapshot, atMs } = persist(h);
    h.store.gate.resolve();
    h.store.gate = undefined;
    h.store.publish(2);

    const restored = start({ store: h.store, snapshot, clock: clockAt(atMs) });
    await restored.settle();
    expect(h.store.reads).toHaveLength(3);
    expect(h.store.reads[2]).toEqual(h.store.reads[1]);
    expect(restored.status()).toMatchObject({ servingSnapshotId: 2, state: 'serving' });
  });
});
