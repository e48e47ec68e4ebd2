/**
 * What a scenario is and what it reports. Every number a scenario prints is a {@link Measurement}
 * taken in this run, with the baseline it is compared to (also measured in this run) and the ratio;
 * goals are reported as met or not, never asserted, and a goal stated for a size this run did not
 * reach is reported as not judged (`GoalCheck.at`, `verdictOf` in `harness.ts`).
 */
import type { AwsControl } from './aws-client.js';
import type { PercentilePoint } from './histogram.js';

export type Unit = 'ms' | 's' | 'ops/s' | 'rows/s' | 'MiB/s' | 'MiB' | '%' | 'count' | 'x' | 'µs';

export interface Measurement {
  /** What was measured, e.g. `DuckDB point lookup`. */
  readonly group: string;
  /** The metric, e.g. `p50 latency, 1 client`. */
  readonly metric: string;
  readonly unit: Unit;
  /** Ferry's value. */
  readonly value: number;
  /** The baseline's value, measured in the same run, when the metric has one. */
  readonly baseline?: number;
  readonly baselineLabel?: string;
  /** `value / baseline` unless the scenario defines it otherwise (then it says so in `metric`). */
  readonly ratio?: number;
  /**
   * `latency`: a percentile of a latency distribution the scenario plots in full (`latencies`); the
   * chart shows it there, on the percentile plot, not as a bar.
   */
  readonly kind?: 'latency';
}

export interface GoalCheck {
  readonly goal: string;
  /** The measured value the goal is judged on, formatted. */
  readonly measured: string;
  /** Whether the measured value meets the goal (the verdict only where {@link GoalCheck.at} allows). */
  readonly met: boolean;
  /**
   * The size the goal is stated for (`100` `datasets`, `512` `MiB`) and the size this run measured
   * (`ran`). A run smaller than the goal's size reports its figures and the goal as "not judged at
   * this size": a 3-dataset run says nothing about 100 datasets.
   */
  readonly at?: { readonly size: number; readonly unit: string; readonly ran: number };
}

/** One latency distribution (from its HDR histogram) on a percentile plot. */
export interface LatencySeries {
  readonly name: string;
  readonly count: number;
  readonly percentiles: readonly PercentilePoint[];
}

/** Latency distributions compared on one percentile plot (Ferry against its baselines). */
export interface LatencyPlot {
  readonly title: string;
  readonly series: readonly LatencySeries[];
}

export interface Series {
  readonly name: string;
  readonly points: readonly (readonly [number, number])[];
}

/** A line chart over time (soak); bar charts are drawn from the measurements. */
export interface LineChart {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly Series[];
}

export interface ScenarioOutcome {
  readonly measurements: readonly Measurement[];
  readonly goals: readonly GoalCheck[];
  readonly notes: readonly string[];
  readonly lineChart?: LineChart;
  /** Percentile plots of the latencies the scenario recorded. */
  readonly latencies?: readonly LatencyPlot[];
  /** Anything else worth keeping in the JSON (per-run raw numbers). */
  readonly raw?: unknown;
}

export interface ScenarioResult extends ScenarioOutcome {
  readonly id: string;
  readonly title: string;
  readonly measures: string;
  readonly baseline: string;
  readonly goal: string;
  readonly quick: boolean;
  readonly startedAt: string;
  readonly durationMs: number;
  /** 1-minute load average before and after: other work on the machine shows here. */
  readonly loadAverage: { readonly before: number; readonly after: number };
}

export interface ScenarioContext {
  readonly aws: AwsControl;
  readonly quick: boolean;
  /** A fresh directory for this scenario's files (removed afterwards). */
  readonly workDir: string;
  readonly minutes: number | undefined;
  /** Progress on stderr. */
  log(message: string): void;
}

export interface Scenario {
  readonly id: string;
  readonly title: string;
  readonly measures: string;
  readonly baseline: string;
  readonly goal: string;
  run(context: ScenarioContext): Promise<ScenarioOutcome>;
}

/** Ratio helper that never divides by zero silently. */
export function ratio(value: number, baseline: number): number {
  return baseline === 0 ? Number.NaN : value / baseline;
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}
