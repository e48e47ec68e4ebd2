/**
 * The benchmark's reporting rules, on made-up results: a goal stated for a size the run did not
 * reach is "not judged at this size" (never met or not met), and the counts say so; the chart of a
 * result draws its latencies as percentile plots and everything else as bars with their values,
 * renders offline, and Vega-Lite accepts it without a warning (the renderer turns one into an error).
 */
import { describe, expect, it } from 'vitest';
import { renderSvg, scenarioChart } from '../src/charts.js';
import { latencySeries, verdictOf } from '../src/harness.js';
import { LatencyRecorder } from '../src/histogram.js';
import { consoleReport, goalCounts, scenarioMarkdown, summaryMarkdown } from '../src/report.js';
import type { GoalCheck, ScenarioResult } from '../src/scenario.js';

const at100 = (ran: number) => ({ size: 100, unit: 'datasets', ran });

function recorded(scaleMs: number, count: number) {
  const recorder = new LatencyRecorder();
  for (let n = 0; n < count; n++) recorder.recordMs(scaleMs * (1 + (n % 97) / 10));
  return recorder.summary();
}

function result(goals: readonly GoalCheck[]): ScenarioResult {
  return {
    id: 'b5',
    title: 'B5 scale',
    measures: 'm',
    baseline: 'b',
    goal: 'g',
    quick: true,
    startedAt: '2026-12-01T20:00:00.000Z',
    durationMs: 1000,
    loadAverage: { before: 1, after: 2 },
    measurements: [
      {
        group: 'DuckDB point lookup',
        metric: 'p50 latency, 1 client',
        unit: 'ms',
        kind: 'latency',
        value: 0.9,
        baseline: 0.76,
        baselineLabel: 'direct',
        ratio: 1.18,
      },
      {
        group: 'DuckDB point lookup',
        metric: 'throughput, 64 clients',
        unit: 'ops/s',
        value: 21_435,
        baseline: 50_495,
        baselineLabel: 'direct',
        ratio: 0.42,
      },
      {
        group: '3 datasets',
        metric: 'RSS added',
        unit: 'MiB',
        value: -12.5,
        baseline: 80,
        ratio: Number.NaN,
      },
      { group: '3 datasets', metric: 'idle CPU', unit: '%', value: Number.NaN },
    ],
    goals,
    notes: [],
    latencies: [
      {
        title: 'DuckDB point lookup',
        series: [
          latencySeries('Ferry, 1 client', recorded(0.9, 3000)),
          latencySeries('direct', recorded(0.7, 500)),
        ],
      },
    ],
    lineChart: {
      title: 'RSS over time',
      xLabel: 's',
      yLabel: 'MiB',
      series: [
        {
          name: 'RSS',
          points: [
            [0, 1],
            [1, 2],
          ],
        },
      ],
    },
  };
}

describe('goals and the size they are stated for', () => {
  it('a run smaller than the goal\'s size judges nothing: "not judged at this size", whatever was measured', () => {
    expect(
      verdictOf({ goal: '100 datasets: RSS ≤ 1 GiB', measured: '0.1 GiB', met: true, at: at100(3) }),
    ).toBe('not judged at this size');
    expect(verdictOf({ goal: 'g', measured: 'm', met: false, at: at100(3) })).toBe('not judged at this size');
    expect(verdictOf({ goal: 'g', measured: 'm', met: true, at: at100(100) })).toBe('met');
    expect(verdictOf({ goal: 'g', measured: 'm', met: false, at: at100(100) })).toBe('not met');
    expect(verdictOf({ goal: 'g', measured: 'm', met: true })).toBe('met');
  });

  it('the reports count judged goals only and say how many were not judged', () => {
    const quick = result([
      { goal: '100 datasets: RSS ≤ 1.0 GiB', measured: '3 datasets: 0.4 GiB', met: true, at: at100(3) },
      { goal: '100 datasets: idle CPU ≤ 1 %', measured: '3 datasets: 0.5 %', met: true, at: at100(3) },
      { goal: 'no failed queries', measured: '0', met: true },
    ]);
    expect(goalCounts(quick.goals)).toEqual({ met: 1, judged: 1, notJudged: 2 });
    const markdown = scenarioMarkdown(quick);
    expect(markdown).toContain(
      '| 100 datasets: RSS ≤ 1.0 GiB (stated at 100 datasets; this run: 3) | 3 datasets: 0.4 GiB | not judged at this size |',
    );
    expect(markdown).not.toMatch(/RSS ≤ 1.0 GiB[^\n]*\| yes \|/);
    const summary = summaryMarkdown({
      startedAt: quick.startedAt,
      quick: true,
      machine: { cpuModel: 'cpu', cores: 2, memoryGiB: 24, node: 'v20', os: 'linux', loadAverage: [1, 1, 1] },
      results: [quick],
      crashed: [],
    });
    expect(summary).toContain('| B5 scale | 1 / 1 (2 not judged at this size) | [b5.md](b5.md) |');
    expect(consoleReport(quick)).toContain('[NOT JUDGED AT THIS SIZE] 100 datasets: RSS ≤ 1.0 GiB');
  });
});

describe('the chart of a result', () => {
  it('renders offline: latencies as percentile plots, every other figure as labelled bars', async () => {
    const svg = await renderSvg(scenarioChart(result([])));
    expect(svg.startsWith('<svg')).toBe(true);
    // The percentile plot and its series, not a bar of the p50.
    expect(svg).toContain('DuckDB point lookup');
    expect(svg).toContain('Ferry, 1 client (3,000 samples)');
    expect(svg).not.toContain('p50 latency, 1 client');
    // Each bar carries its value; a value that is not a number says so.
    for (const label of ['21,435 ops/s', '50,495 ops/s', '-12.5 MiB', '80.0 MiB', 'n/a'])
      expect(svg).toContain(label);
    expect(svg).toContain('RSS over time');
    // Nothing but the SVG namespaces is a URL.
    const urls = svg.match(/https?:\/\/[^"' )]+/g) ?? [];
    expect(urls.filter((url) => !url.startsWith('http://www.w3.org/'))).toEqual([]);
  });
});
