/**
 * A strict line-by-line reader of the Prometheus text format, for tests: every line must be a
 * `# HELP`, a `# TYPE` or a sample of the family declared just before it, with valid names, escaped
 * label values and a number; histogram buckets must be cumulative and end in `le="+Inf"` equal to
 * `_count`. Throws with the line number on the first violation; returns the families.
 */

export interface ParsedSample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

export interface ParsedFamily {
  readonly name: string;
  help: string | undefined;
  type: string | undefined;
  readonly samples: ParsedSample[];
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = '[a-zA-Z_][a-zA-Z0-9_]*';
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseValue(text: string, line: number): number {
  if (text === '+Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  if (text === 'NaN') return Number.NaN;
  if (!/^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text))
    throw new Error(`line ${line}: bad value '${text}'`);
  return Number(text);
}

function parseLabels(text: string, line: number): Record<string, string> {
  const labels: Record<string, string> = {};
  let rest = text;
  const pair = new RegExp(`^(${LABEL})="((?:[^"\\\\\\n]|\\\\[\\\\"n])*)"(,|$)`);
  while (rest !== '') {
    const match = pair.exec(rest);
    if (match === null) throw new Error(`line ${line}: bad labels '${text}'`);
    const [whole, name, raw] = match as unknown as [string, string, string];
    if (name in labels) throw new Error(`line ${line}: duplicate label '${name}'`);
    labels[name] = raw.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
    rest = rest.slice(whole.length);
  }
  return labels;
}

function familyOf(sampleName: string, family: ParsedFamily): boolean {
  if (sampleName === family.name) return family.type !== 'histogram';
  if (family.type === 'histogram') {
    return ['_bucket', '_sum', '_count'].some((suffix) => sampleName === family.name + suffix);
  }
  return false;
}

export function parsePrometheus(text: string): Map<string, ParsedFamily> {
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  const families = new Map<string, ParsedFamily>();
  let current: ParsedFamily | undefined;
  const lines = text.slice(0, -1).split('\n');
  lines.forEach((raw, index) => {
    const line = index + 1;
    const help = new RegExp(`^# HELP (${NAME}) (.*)$`).exec(raw);
    const type = new RegExp(`^# TYPE (${NAME}) (\\S+)$`).exec(raw);
    if (help !== null) {
      const name = help[1] as string;
      if (families.has(name)) throw new Error(`line ${line}: second HELP for ${name}`);
      current = { name, help: help[2], type: undefined, samples: [] };
      families.set(name, current);
      return;
    }
    if (type !== null) {
      const name = type[1] as string;
      if (current?.name !== name)
        throw new Error(`line ${line}: TYPE for ${name} without its HELP before it`);
      if (current.type !== undefined) throw new Error(`line ${line}: second TYPE for ${name}`);
      if (!TYPES.has(type[2] as string)) throw new Error(`line ${line}: unknown type '${type[2]}'`);
      current.type = type[2];
      return;
    }
    if (raw.startsWith('#')) throw new Error(`line ${line}: unexpected comment '${raw}'`);
    const sample = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)$`).exec(raw);
    if (sample === null) throw new Error(`line ${line}: not a sample '${raw}'`);
    const name = sample[1] as string;
    if (current === undefined || current.type === undefined || !familyOf(name, current)) {
      throw new Error(`line ${line}: sample ${name} outside its family's HELP/TYPE block`);
    }
    current.samples.push({
      name,
      labels: parseLabels(sample[2] ?? '', line),
      value: parseValue(sample[3] as string, line),
    });
  });
  for (const family of families.values()) {
    if (family.type === 'histogram') checkHistogram(family);
  }
  return families;
}

function checkHistogram(family: ParsedFamily): void {
  const series = new Map<string, ParsedSample[]>();
  for (const sample of family.samples) {
    const { le: _le, ...rest } = sample.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const list = series.get(key) ?? [];
    list.push(sample);
    series.set(key, list);
  }
  for (const samples of series.values()) {
    const buckets = samples.filter((s) => s.name.endsWith('_bucket'));
    const count = samples.find((s) => s.name.endsWith('_count'));
    if (buckets.length === 0 || count === undefined || !samples.some((s) => s.name.endsWith('_sum'))) {
      throw new Error(`${family.name}: a series lacks _bucket, _sum or _count`);
    }
    let previousBound = Number.NEGATIVE_INFINITY;
    let previousValue = 0;
    for (const bucket of buckets) {
      const bound = parseValue(bucket.labels.le ?? 'x', 0);
      if (bound <= previousBound) throw new Error(`${family.name}: buckets not in increasing le order`);
      if (bucket.value < previousValue) throw new Error(`${family.name}: buckets not cumulative`);
      previousBound = bound;
      previousValue = bucket.value;
    }
    const last = buckets[buckets.length - 1] as ParsedSample;
    if (last.labels.le !== '+Inf' || last.value !== count.value) {
      throw new Error(`${family.name}: last bucket must be le="+Inf" and equal _count`);
    }
  }
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
