/**
 * A closed-loop load generator: `clients` concurrent callers each run `operation` back to back for
 * a warm-up and then a measured window. An operation counts when it completes inside the window
 * (whenever it started), so throughput is the steady-state completion rate even when one operation
 * takes longer than the window at high concurrency; its latency goes into an HDR histogram.
 * Failures are counted (with the first few messages kept), never thrown.
 *
 * Several windows can feed one {@link LoadTotals}: scenarios interleave Ferry and its baseline in
 * short slices, so noise from other work on a shared machine falls on both alike.
 */
import { performance } from 'node:perf_hooks';
import { LatencyRecorder, type LatencySummary } from './histogram.js';

export interface LoadOptions {
  readonly clients: number;
  readonly warmupMs: number;
  readonly durationMs: number;
  /** One operation; `client` is the caller's index, `n` its running count. */
  readonly operation: (client: number, n: number) => Promise<unknown>;
  /** Pause between two operations of a client; default 0. */
  readonly thinkMs?: number;
}

export interface LoadResult {
  readonly clients: number;
  readonly latency: LatencySummary;
  /** Completed operations per second over the measured windows. */
  readonly throughput: number;
  readonly completed: number;
  readonly failed: number;
  readonly errors: readonly string[];
  readonly measuredMs: number;
}

/** What one or more measured windows of the same load add up to. */
export class LoadTotals {
  readonly latency = new LatencyRecorder();
  readonly errors: string[] = [];
  completed = 0;
  failed = 0;
  measuredMs = 0;
  clients = 0;

  result(): LoadResult {
    return {
      clients: this.clients,
      latency: this.latency.summary(),
      throughput: this.measuredMs === 0 ? Number.NaN : this.completed / (this.measuredMs / 1000),
      completed: this.completed,
      failed: this.failed,
      errors: [...this.errors],
      measuredMs: this.measuredMs,
    };
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Runs one window and adds it to `totals` (a fresh one by default); returns the totals so far. */
export async function runLoad(options: LoadOptions, totals = new LoadTotals()): Promise<LoadResult> {
  const start = performance.now();
  const measureFrom = start + options.warmupMs;
  const measureTo = measureFrom + options.durationMs;
  totals.clients = options.clients;

  async function client(index: number): Promise<void> {
    for (let n = 0; ; n++) {
      const began = performance.now();
      if (began >= measureTo) return;
      try {
        await options.operation(index, n);
        const ended = performance.now();
        if (ended >= measureFrom && ended <= measureTo) {
          totals.latency.recordMs(ended - began);
          totals.completed++;
        }
      } catch (error) {
        const ended = performance.now();
        if (ended >= measureFrom && ended <= measureTo) {
          totals.failed++;
          if (totals.errors.length < 5) totals.errors.push((error as Error).message ?? String(error));
        }
      }
      if (options.thinkMs !== undefined && options.thinkMs > 0) await sleep(options.thinkMs);
    }
  }

  await Promise.all(Array.from({ length: options.clients }, (_, index) => client(index)));
  totals.measuredMs += options.durationMs;
  return totals.result();
}

/** A note naming the failed operations of `results`, or undefined when none failed. */
export function failureNote(group: string, ...results: readonly LoadResult[]): string | undefined {
  const failed = results.reduce((sum, result) => sum + result.failed, 0);
  if (failed === 0) return undefined;
  return `${group}: ${failed} failed queries (${results.flatMap((result) => result.errors).join('; ')})`;
}
