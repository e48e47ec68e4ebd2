import { afterAll, describe, expect, it } from 'vitest';
import { LiveStatus } from '../src/common/shared-slots.js';
import type { DocumentSeen } from '../src/coordinator/metadata-reader.js';
import { ParkedChecks } from '../src/coordinator/parked-checks.js';

describe('ParkedChecks (the coordinator makes parked datasets’ checks)', () => {
  let nowMs = 10_000;
  let seen: DocumentSeen | Error = { etag: '"e1"', readAtMs: 9_990 };
  let reads = 0;
  const live = LiveStatus.create(2);
  const woken: string[] = [];
  const checks = new ParkedChecks({
    read: () => {
      reads++;
      return seen instanceof Error ? Promise.reject(seen) : Promise.resolve(seen);
    },
    live,
    now: () => nowMs,
  });
  afterAll(() => checks.close());

  const park = (dataset: string, slot: number, token: number, etag: string, freshens = true): void => {
    live.park(slot, token, {
      incarnation: 1,
      polls: 4,
      lastPollAtMs: 9_000,
      nextPollDueMs: 10_000,
      freshAtMs: 9_000,
      unposted: 0,
    });
    checks.park(dataset, {
      token,
      etag,
      dueMs: 10_000,
      intervalMs: 1_000,
      freshens,
      slot,
      wake: (woke) => woken.push(`${dataset}:${woke}`),
    });
  };

  it('records an unchanged check in the slot with one read for every dataset due, and wakes none', async () => {
    park('a', 0, 1, '"e1"');
    park('b', 1, 1, '"e1"', false);
    await checks.checkDue();
    expect(reads).toBe(1);
    expect(woken).toEqual([]);
    expect(live.read(0)).toMatchObject({
      polls: 5,
      unposted: 1,
      lastPollAtMs: 10_000,
      nextPollDueMs: 11_000,
      freshAtMs: 9_990,
    });
    // Not freshened: its store was ahead of what it serves.
    expect(live.read(1)).toMatchObject({ polls: 5, unposted: 1, freshAtMs: 9_000 });
    // Nothing due before 11 000: no read.
    nowMs = 10_500;
    await checks.checkDue();
    expect(reads).toBe(1);
  });

  it('wakes, with its token, a dataset whose ETag is no longer the document’s, and forgets it', async () => {
    nowMs = 11_000;
    seen = { etag: '"e2"', readAtMs: 10_995 };
    await checks.checkDue();
    expect(woken).toEqual(['a:1', 'b:1']);
    expect(live.read(0)).toMatchObject({ polls: 5 });
    // Forgotten: a later tick reads nothing and wakes nobody.
    nowMs = 12_000;
    await checks.checkDue();
    expect(reads).toBe(2);
    expect(woken).toEqual(['a:1', 'b:1']);
  });

  it('wakes a dataset when the read fails, and one that took its slot back is not written', async () => {
    woken.length = 0;
    nowMs = 10_000;
    park('a', 0, 2, '"e2"');
    park('b', 1, 2, '"e2"');
    live.takeBack(1, 2);
    seen = new Error('store down');
    await checks.checkDue();
    expect(woken).toEqual(['a:2', 'b:2']);
    woken.length = 0;
    seen = { etag: '"e2"', readAtMs: 10_000 };
    park('a', 0, 3, '"e2"');
    park('b', 1, 3, '"e2"');
    live.takeBack(1, 3);
    await checks.checkDue();
    // b took its slot back: its check is its own again (the wake is stale, and ignored by its thread).
    expect(woken).toEqual(['b:3']);
    expect(live.read(0)).toMatchObject({ polls: 5 });
    expect(live.read(1)).toMatchObject({ polls: 4 });
  });
});
