/**
 * A small writer of the Prometheus text exposition format (version 0.0.4): one `# HELP` and one
 * `# TYPE` line per family, then its samples, label values escaped. No client library: the server
 * exposes a handful of families, built fresh on every scrape from the runtime's counters.
 */

export type MetricType = 'counter' | 'gauge' | 'histogram';

export type Labels = Readonly<Record<string, string>>;

export interface Sample {
  /** Appended to the family name: `_bucket`, `_sum`, `_count` for histograms; empty otherwise. */
  readonly suffix?: string;
  readonly labels?: Labels;
  readonly value: number;
}

export interface MetricFamily {
  readonly name: string;
  readonly help: string;
  readonly type: MetricType;
  readonly samples: readonly Sample[];
}

/** The content type a scraper expects for this format. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

function escapeHelp(text: string): string {
  return text.replaceAll('\\', '\\\\').replaceAll('\n', '\\n');
}

function escapeLabelValue(text: string): string {
  return text.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n');
}

export function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

function formatLabels(labels: Labels | undefined): string {
  const entries = Object.entries(labels ?? {});
  if (entries.length === 0) return '';
  for (const [name] of entries) {
    if (!LABEL_NAME.test(name) || name.startsWith('__'))
      throw new Error(`Invalid Prometheus label name '${name}'.`);
  }
  return `{${entries.map(([name, value]) => `${name}="${escapeLabelValue(value)}"`).join(',')}}`;
}

/** Renders families in the text format; the output ends with a newline. */
export function formatMetrics(families: readonly MetricFamily[]): string {
  const lines: string[] = [];
  for (const family of families) {
    if (!NAME.test(family.name)) throw new Error(`Invalid Prometheus metric name '${family.name}'.`);
    lines.push(`# HELP ${family.name} ${escapeHelp(family.help)}`);
    lines.push(`# TYPE ${family.name} ${family.type}`);
    for (const sample of family.samples) {
      lines.push(
        `${family.name}${sample.suffix ?? ''}${formatLabels(sample.labels)} ${formatValue(sample.value)}`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

/** Default latency buckets, in seconds. */
export const DEFAULT_SECONDS_BUCKETS: readonly number[] = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];

interface Series {
  readonly labels: Labels;
  /** Per-bucket (not cumulative) counts; the last slot is +Inf. */
  readonly counts: number[];
  sum: number;
  count: number;
}

/** A histogram with fixed buckets, one series per distinct label set. */
export class Histogram {
  readonly #buckets: readonly number[];
  readonly #series = new Map<string, Series>();

  constructor(buckets: readonly number[] = DEFAULT_SECONDS_BUCKETS) {
    this.#buckets = [...buckets].sort((a, b) => a - b);
  }

  observe(value: number, labels: Labels = {}): void {
    const key = JSON.stringify(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)));
    let series = this.#series.get(key);
    if (series === undefined) {
      series = { labels, counts: new Array<number>(this.#buckets.length + 1).fill(0), sum: 0, count: 0 };
      this.#series.set(key, series);
    }
    let index = this.#buckets.findIndex((bound) => value <= bound);
    if (index === -1) index = this.#buckets.length;
    series.counts[index] = (series.counts[index] ?? 0) + 1;
    series.sum += value;
    series.count += 1;
  }

  /** The `_bucket` (cumulative, ending in `le="+Inf"`), `_sum` and `_count` samples. */
  samples(): Sample[] {
    const samples: Sample[] = [];
    for (const series of this.#series.values()) {
      let cumulative = 0;
      const bounds = [...this.#buckets, Number.POSITIVE_INFINITY];
      bounds.forEach((bound, i) => {
        cumulative += series.counts[i] ?? 0;
        samples.push({
          suffix: '_bucket',
          labels: { ...series.labels, le: formatValue(bound) },
          value: cumulative,
        });
      });
      samples.push({ suffix: '_sum', labels: series.labels, value: series.sum });
      samples.push({ suffix: '_count', labels: series.labels, value: series.count });
    }
    return samples;
  }
}
