/**
 * What a scenario is and what it reports. Every number a scenario prints is a {@link Measurement}
 * taken in this run, with the baseline it is compared to (also measured in this run) and the ratio;
 * goals are reported as met or not, never asserted.
 */
import type { AwsControl } from './aws-client.js';

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
}

export interface GoalCheck {
  readonly goal: string;
  /** The measured value the goal is judged on, formatted. */
  readonly measured: string;
  readonly met: boolean;
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
