import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type Restart, Supervisor } from '../src/common/supervisor.js';
import { within } from '../src/common/within.js';

describe('Supervisor', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A supervised "thread" on the fake clock: its starts, and what each death reported. */
  function supervised(delaysMs: readonly number[], resetAfterMs?: number) {
    const starts: number[] = [];
    const reports: Restart[] = [];
    const supervisor = new Supervisor({
      delaysMs,
      ...(resetAfterMs === undefined ? {} : { resetAfterMs }),
      now: () => Date.now(),
      restart: () => {
        starts.push(Date.now());
        supervisor.started();
      },
    });
    const die = () => supervisor.died((restart) => reports.push(restart));
    supervisor.started();
    return { supervisor, starts, reports, die };
  }

  it('reports each death before its restart, and restarts after the delay of its place in a row', () => {
    const { starts, reports, die } = supervised([1_000, 2_000, 5_000]);
    const t0 = Date.now();
    die();
    expect(reports).toEqual([{ delayMs: 1_000, inARow: 1 }]);
    expect(starts).toEqual([]);
    vi.advanceTimersByTime(999);
    expect(starts).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(starts).toEqual([t0 + 1_000]);
    die();
    vi.advanceTimersByTime(2_000);
    die();
    vi.advanceTimersByTime(5_000);
    die();
    // The last delay repeats.
    expect(reports.map((each) => each.delayMs)).toEqual([1_000, 2_000, 5_000, 5_000]);
    expect(reports.map((each) => each.inARow)).toEqual([1, 2, 3, 4]);
  });

  it('restarts at once for a delay of 0, within the death', () => {
    const { starts, reports, die } = supervised([0, 1_000]);
    die();
    expect(reports).toEqual([{ delayMs: 0, inARow: 1 }]);
    expect(starts).toHaveLength(1);
    die();
    expect(starts).toHaveLength(1);
    vi.advanceTimersByTime(1_000);
    expect(starts).toHaveLength(2);
  });

  it('counts a thread that ran longer than the reset window as healthy again', () => {
    const { reports, die } = supervised([1_000, 2_000, 5_000], 60_000);
    die();
    vi.advanceTimersByTime(1_000);
    die();
    vi.advanceTimersByTime(2_000 + 60_001);
    die();
    expect(reports.map((each) => each.delayMs)).toEqual([1_000, 2_000, 1_000]);
    expect(reports.at(-1)?.inARow).toBe(1);
  });

  it('once closed, cancels a pending restart and ignores later deaths', () => {
    const { supervisor, starts, reports, die } = supervised([1_000]);
    die();
    expect(supervisor.pending).toBe(true);
    supervisor.close();
    expect(supervisor.pending).toBe(false);
    vi.advanceTimersByTime(10_000);
    die();
    vi.advanceTimersByTime(10_000);
    expect(starts).toEqual([]);
    expect(reports).toHaveLength(1);
  });
});

describe('within', () => {
  it('answers done when the work settles first, failed work included', async () => {
    await expect(within(Promise.resolve(1), 10_000)).resolves.toBe('done');
    await expect(within(Promise.reject(new Error('no')), 10_000)).resolves.toBe('done');
  });

  it('answers timeout when the work outlasts the limit', async () => {
    const started = performance.now();
    await expect(within(new Promise(() => undefined), 30)).resolves.toBe('timeout');
    expect(performance.now() - started).toBeGreaterThanOrEqual(29);
  });

  it('leaves no timer behind once the work settled', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const before = timers();
    let finish: () => void = () => undefined;
    const waited = within(
      new Promise<void>((resolve) => {
        finish = resolve;
      }),
      60_000,
    );
    expect(timers()).toBe(before + 1);
    finish();
    await expect(waited).resolves.toBe('done');
    expect(timers()).toBe(before);
  });
});
