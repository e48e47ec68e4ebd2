/**
 * Reads a Prometheus text exposition for tests through `prom2javascript` (a parser not written
 * here): families by name with their type, and every sample flattened the way the text format
 * writes it (a histogram as `_bucket` samples with an `le` label, then `_sum` and `_count`), so
 * tests look values up by sample name and labels.
 */
import { getMetricsFromIterator, type PromHistogramData } from 'prom2javascript';

export interface ParsedSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface ParsedFamily {
  readonly name: string;
  readonly help: string;
  /** `counter`, `gauge`, `histogram`, `summary` or `untyped`. */
  readonly type: string;
  readonly samples: readonly ParsedSample[];
}

export async function parsePrometheus(text: string): Promise<Map<string, ParsedFamily>> {
  const parsed = await getMetricsFromIterator(text.split('\n')[Symbol.iterator]());
  const families = new Map<string, ParsedFamily>();
  for (const [name, family] of Object.entries(parsed)) {
    const samples: ParsedSample[] = [];
    for (const data of family.data) {
      const labels = data.labels;
      if (family.type === 'histogram') {
        const histogram = data as PromHistogramData;
        for (const [le, count] of Object.entries(histogram.buckets)) {
          samples.push({ name: `${name}_bucket`, labels: { ...labels, le }, value: count });
        }
        samples.push({ name: `${name}_sum`, labels, value: histogram.sum ?? Number.NaN });
        samples.push({ name: `${name}_count`, labels, value: histogram.count });
      } else if ('value' in data) {
        samples.push({ name, labels, value: data.value });
      }
    }
    families.set(name, { name, help: family.help, type: family.type, samples });
  }
  return families;
}

/** The value of the sample `name` whose labels include `labels`, or undefined. */
export function sampleValue(
  families: Map<string, ParsedFamily>,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  for (const family of families.values()) {
    for (const sample of family.samples) {
      if (sample.name !== name) continue;
      if (Object.entries(labels).every(([key, value]) => sample.labels[key] === value)) return sample.value;
    }
  }
  return undefined;
}
