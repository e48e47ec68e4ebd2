/**
 * Latency recording for the scenarios: an HDR histogram (hdr-histogram-js) in microseconds, so
 * percentiles come from the histogram, never from sorting samples by hand. Values are reported in
 * milliseconds.
 */
import { build, type Histogram } from 'hdr-histogram-js';

export interface LatencySummary {
  readonly count: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly meanMs: number;
}

export class LatencyRecorder {
  readonly #histogram: Histogram = build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 3,
  });

  /** Records one latency given in milliseconds (kept at microsecond resolution). */
  recordMs(ms: number): void {
    this.#histogram.recordValue(Math.max(1, Math.round(ms * 1000)));
  }

  get count(): number {
    return this.#histogram.totalCount;
  }

  percentileMs(percentile: number): number {
    return this.#histogram.totalCount === 0
      ? Number.NaN
      : this.#histogram.getValueAtPercentile(percentile) / 1000;
  }

  summary(): LatencySummary {
    const h = this.#histogram;
    const empty = h.totalCount === 0;
    return {
      count: h.totalCount,
      p50Ms: this.percentileMs(50),
      p90Ms: this.percentileMs(90),
      p99Ms: this.percentileMs(99),
      maxMs: empty ? Number.NaN : h.maxValue / 1000,
      meanMs: empty ? Number.NaN : h.mean / 1000,
    };
  }
}
