/**
 * Latency recording for the scenarios: an HDR histogram (hdr-histogram-js) in microseconds, so
 * percentiles come from the histogram, never from sorting samples by hand. Values are reported in
 * milliseconds; {@link LatencySummary.percentiles} is the distribution the percentile plots draw.
 */
import { build, type Histogram } from 'hdr-histogram-js';

/** A latency at a percentile (0–100) of its distribution. */
export interface PercentilePoint {
  readonly percentile: number;
  readonly ms: number;
}

export interface LatencySummary {
  readonly count: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly meanMs: number;
  /** The distribution: the minimum, four points per "nine" from the median (50 %, 72 %, 84 %, 91 %, 95 %, …) as far as the count resolves, the maximum. */
  readonly percentiles: readonly PercentilePoint[];
}

/** Points per factor of ten in `1 - percentile` (HDR's "ticks per half distance", as quarters of a nine). */
const STEPS_PER_NINE = 4;

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

  /**
   * The distribution: the minimum (at 0), then from the median out four points per factor of ten in
   * the tail (1 − p = 10^(−x) for x = log10 2, +¼, +½, …) while the tail still holds a sample (a count
   * of n resolves up to 1 − 1/n), then the maximum (at 100).
   */
  percentiles(): PercentilePoint[] {
    const count = this.#histogram.totalCount;
    if (count === 0) return [];
    const points: PercentilePoint[] = [{ percentile: 0, ms: this.#histogram.minNonZeroValue / 1000 }];
    const deepest = Math.log10(count);
    for (let step = Math.log10(2) * STEPS_PER_NINE; step / STEPS_PER_NINE < deepest; step++) {
      const percentile = 100 * (1 - 10 ** (-step / STEPS_PER_NINE));
      points.push({ percentile, ms: this.percentileMs(percentile) });
    }
    points.push({ percentile: 100, ms: this.#histogram.maxValue / 1000 });
    return points;
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
      percentiles: this.percentiles(),
    };
  }
}
