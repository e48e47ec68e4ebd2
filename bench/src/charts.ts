/**
 * The results folder's charts, as Vega-Lite specs rendered to SVG by Vega's headless renderer (no
 * browser, no canvas; the specs carry their data inline and the loader refuses to fetch anything).
 * Per scenario one SVG:
 *
 * - a percentile plot for each set of latency distributions the scenario recorded (Ferry against
 *   its baselines, from the HDR histograms: x in "nines", y on a log scale), so a latency is read as
 *   the distribution it is, not as one bar;
 * - every other measurement as a pair of bars (Ferry, the baseline), each pair on its own axis with
 *   its unit — a throughput and a file size are never drawn on one scale — with the value at the end
 *   of each bar (the axis leaves room for it) and the ratio in the pair's title;
 * - for the soak run, its lines over time.
 */
import { loader, parse, View } from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import { formatRatio, formatValue } from './format.js';
import type { LatencyPlot, LineChart, Measurement, ScenarioResult } from './scenario.js';

const FERRY = '#2b6cb0';
const BASELINE = '#a0aec0';
const SERIES = ['#2b6cb0', '#c05621', '#2f855a', '#6b46c1', '#b83280', '#718096'];
const PANEL_WIDTH = 500;

type Spec = Record<string, unknown>;

/** Every panel has its own scales and legend: nothing is compared across panels by position. */
const INDEPENDENT = {
  scale: { x: 'independent', y: 'independent', color: 'independent' },
  axis: { x: 'independent', y: 'independent' },
  legend: { color: 'independent' },
};

/** The fraction of a pair's axis left beyond its longest bar, for the value written after it. */
const LABEL_ROOM = 0.45;

/** `text` broken at spaces into lines of at most `width` characters (titles are never cut). */
function wrap(text: string, width = 88): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(line);
  return lines;
}

function barPair(measurement: Measurement): Spec {
  const values = [
    {
      side: 'Ferry',
      role: 'Ferry',
      value: measurement.value,
      label: formatValue(measurement.value, measurement.unit),
    },
    ...(measurement.baseline === undefined
      ? []
      : [
          {
            side: measurement.baselineLabel ?? 'baseline',
            role: 'baseline',
            value: measurement.baseline,
            label: formatValue(measurement.baseline, measurement.unit),
          },
        ]),
  ].map((row) => ({ ...row, value: Number.isFinite(row.value) ? row.value : 0 }));
  const high = Math.max(0, ...values.map((row) => row.value));
  const low = Math.min(0, ...values.map((row) => row.value));
  const span = high - low;
  // An all-zero pair (no failed queries) still gets a readable axis: 0 to 1.
  const domain = span === 0 ? [0, 1] : [low < 0 ? low - span * LABEL_ROOM : 0, high + span * LABEL_ROOM];
  // A fixed band for the bar names, so the bars of every pair start at the same x.
  const y = {
    field: 'side',
    type: 'nominal',
    sort: null,
    title: null,
    axis: { labelLimit: 230, minExtent: 230, maxExtent: 230 },
  };
  // SI prefixes (12k) for large numbers only: on 0.05 ms they would read as "50m".
  const format = Math.max(Math.abs(low), high) >= 10_000 ? '~s' : ',~r';
  return {
    title: {
      text: wrap(`${measurement.group}: ${measurement.metric}`),
      subtitle:
        measurement.ratio === undefined
          ? ''
          : `ratio ${formatRatio(measurement.ratio)} (Ferry / ${measurement.baselineLabel ?? 'baseline'})`,
      anchor: 'start',
    },
    width: PANEL_WIDTH,
    height: { step: 18 },
    data: { values },
    layer: [
      {
        mark: { type: 'bar', height: 14 },
        encoding: {
          y,
          x: {
            field: 'value',
            type: 'quantitative',
            scale: { domain, nice: false },
            axis: {
              title: measurement.unit,
              tickCount: 5,
              format,
              grid: true,
              ...(measurement.unit === 'count' ? { tickMinStep: 1 } : {}),
            },
          },
          color: {
            field: 'role',
            type: 'nominal',
            scale: { domain: ['Ferry', 'baseline'], range: [FERRY, BASELINE] },
            legend: null,
          },
        },
      },
      {
        mark: {
          type: 'text',
          baseline: 'middle',
          align: { expr: "datum.value < 0 ? 'right' : 'left'" },
          dx: { expr: 'datum.value < 0 ? -4 : 4' },
        },
        encoding: { y, x: { field: 'value', type: 'quantitative' }, text: { field: 'label' } },
      },
    ],
  };
}

/** `-log10(1 - p)`: 50 % → 0.3, 90 % → 1, 99 % → 2; the maximum sits where the count's resolution ends. */
function ninesOf(percentile: number, count: number): number {
  return percentile >= 100 ? Math.log10(Math.max(2, count)) : -Math.log10(1 - percentile / 100);
}

function percentilePlot(plot: LatencyPlot): Spec {
  const values = plot.series.flatMap((series) =>
    series.percentiles
      .filter((point) => Number.isFinite(point.ms) && point.ms > 0)
      .map((point) => ({
        series: `${series.name} (${series.count.toLocaleString('en-US')} samples)`,
        nines: ninesOf(point.percentile, series.count),
        percentile: point.percentile,
        ms: point.ms,
      })),
  );
  const deepest = Math.max(1, ...values.map((value) => value.nines));
  // One tick and grid line per power of ten (a log axis would draw nine per decade).
  const lowest = Math.floor(Math.log10(Math.min(...values.map((value) => value.ms))));
  const highest = Math.ceil(Math.log10(Math.max(...values.map((value) => value.ms))));
  const decades = Array.from({ length: highest - lowest + 1 }, (_, index) => 10 ** (lowest + index));
  const ticks = [Math.log10(2), ...Array.from({ length: Math.floor(deepest) }, (_, index) => index + 1)];
  return {
    title: {
      text: wrap(plot.title),
      subtitle: 'latency at each percentile, from the minimum (left edge) to the maximum (last point)',
      anchor: 'start',
    },
    width: PANEL_WIDTH,
    height: 240,
    data: { values },
    mark: { type: 'line', point: { size: 18 }, strokeWidth: 1.5 },
    encoding: {
      x: {
        field: 'nines',
        type: 'quantitative',
        scale: { domain: [0, Math.ceil(deepest * 4) / 4], nice: false },
        axis: {
          title: 'percentile',
          values: ticks,
          labelExpr: "format(100 * (1 - pow(10, -datum.value)), '.3~f') + '%'",
          labelOverlap: false,
          grid: true,
        },
      },
      y: {
        field: 'ms',
        type: 'quantitative',
        scale: { type: 'log', domain: [10 ** lowest, 10 ** highest] },
        axis: { title: 'ms (log scale)', grid: true, format: '~g', values: decades },
      },
      color: {
        field: 'series',
        type: 'nominal',
        sort: null,
        scale: { range: SERIES },
        legend: { orient: 'bottom', direction: 'vertical', title: null, labelLimit: PANEL_WIDTH },
      },
      tooltip: [
        { field: 'series' },
        { field: 'percentile', format: '.4~f' },
        { field: 'ms', format: '.4~g' },
      ],
    },
  };
}

function linePlot(chart: LineChart): Spec {
  const values = chart.series.flatMap((series) =>
    series.points.map(([x, y]) => ({ series: series.name, x, y })),
  );
  return {
    title: { text: wrap(chart.title, 160), anchor: 'start' },
    width: PANEL_WIDTH * 2 + 60,
    height: 260,
    data: { values },
    mark: { type: 'line', strokeWidth: 1.5 },
    encoding: {
      x: { field: 'x', type: 'quantitative', axis: { title: chart.xLabel, grid: true } },
      y: { field: 'y', type: 'quantitative', axis: { title: chart.yLabel, grid: true } },
      color: {
        field: 'series',
        type: 'nominal',
        sort: null,
        scale: { range: SERIES },
        legend: { orient: 'bottom', title: null },
      },
    },
  };
}

/** The chart of one scenario's result (see the module comment). */
export function scenarioChart(result: ScenarioResult): TopLevelSpec {
  const latencies = result.latencies ?? [];
  const bars = result.measurements.filter((m) => !(m.kind === 'latency' && latencies.length > 0));
  const sections: Spec[] = [];
  if (result.lineChart !== undefined) sections.push(linePlot(result.lineChart));
  if (latencies.length > 0) {
    sections.push({ columns: 2, concat: latencies.map(percentilePlot), resolve: INDEPENDENT });
  }
  if (bars.length > 0) sections.push({ columns: 2, concat: bars.map(barPair), resolve: INDEPENDENT });
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: `${result.title}${result.quick ? ' (quick)' : ''}`,
      subtitle: `${result.startedAt}, 1-min load average ${result.loadAverage.before} before, ${result.loadAverage.after} after`,
      anchor: 'start',
      fontSize: 16,
    },
    background: 'white',
    padding: 16,
    spacing: 28,
    config: {
      font: 'sans-serif',
      view: { stroke: null },
      concat: { spacing: 40 },
      axis: { labelFontSize: 11, titleFontSize: 11, titleFontWeight: 'normal' },
      title: { fontSize: 12, subtitleFontSize: 11, subtitleColor: '#4a5568' },
      legend: { labelFontSize: 11 },
    },
    vconcat: sections,
    resolve: INDEPENDENT,
  } as unknown as TopLevelSpec;
}

/** A loader that loads nothing: every chart's data is inline, so nothing is fetched at run time. */
const OFFLINE = Object.assign(loader(), {
  load: () => Promise.reject(new Error('Benchmark charts carry their data inline; they load nothing.')),
});

/** Vega-Lite's logger, made strict: a spec it has to warn about is a bug in this module. */
function strictLogger() {
  const refuse = (...message: readonly unknown[]): never => {
    throw new Error(`Vega-Lite refused a benchmark chart: ${message.map(String).join(' ')}`);
  };
  let current = 2;
  const logger = {
    level(level?: number) {
      if (level === undefined) return current;
      current = level;
      return logger;
    },
    error: refuse,
    warn: refuse,
    info: () => logger,
    debug: () => logger,
  };
  return logger;
}

/** The SVG of a Vega-Lite spec (Vega's headless renderer). */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const compiled = compile(spec, { logger: strictLogger() as never }).spec;
  const view = new View(parse(compiled), { renderer: 'none', loader: OFFLINE });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
