/** The Prometheus text formatter: exact output, escaping, histogram samples, and a strict re-parse. */
import { describe, expect, it } from 'vitest';
import { formatMetrics, Histogram } from '../src/index.js';
import { parsePrometheus, sampleValue } from './prometheus-parser.js';

describe('formatMetrics', () => {
  it('writes HELP, TYPE and samples with escaped label values', () => {
    const text = formatMetrics([
      {
        name: 'ferry_demo_total',
        help: 'A demo counter.\nSecond line with a \\ backslash.',
        type: 'counter',
        samples: [
          { labels: { dataset: 'orders', note: 'a "quoted"\nvalue \\ here' }, value: 3 },
          { labels: { dataset: 'users' }, value: 0 },
        ],
      },
      { name: 'ferry_demo_gauge', help: 'A gauge.', type: 'gauge', samples: [{ value: 1.5 }] },
    ]);
    expect(text).toBe(
      [
        '# HELP ferry_demo_total A demo counter.\\nSecond line with a \\\\ backslash.',
        '# TYPE ferry_demo_total counter',
        'ferry_demo_total{dataset="orders",note="a \\"quoted\\"\\nvalue \\\\ here"} 3',
        'ferry_demo_total{dataset="users"} 0',
        '# HELP ferry_demo_gauge A gauge.',
        '# TYPE ferry_demo_gauge gauge',
        'ferry_demo_gauge 1.5',
        '',
      ].join('\n'),
    );
    const parsed = parsePrometheus(text);
    expect(parsed.get('ferry_demo_total')?.samples[0]?.labels.note).toBe('a "quoted"\nvalue \\ here');
  });

  it('refuses invalid metric and label names', () => {
    expect(() => formatMetrics([{ name: 'bad-name', help: 'x', type: 'gauge', samples: [] }])).toThrow(
      /bad-name/,
    );
    expect(() =>
      formatMetrics([
        { name: 'ok', help: 'x', type: 'gauge', samples: [{ labels: { 'a-b': '1' }, value: 1 }] },
      ]),
    ).toThrow(/a-b/);
  });
});

describe('Histogram', () => {
  it('gives cumulative buckets ending in +Inf, a sum and a count per label set', () => {
    const histogram = new Histogram([0.1, 1]);
    histogram.observe(0.05, { outcome: 'ok' });
    histogram.observe(0.5, { outcome: 'ok' });
    histogram.observe(5, { outcome: 'ok' });
    histogram.observe(0.01, { outcome: 'error' });
    const text = formatMetrics([
      { name: 'q_seconds', help: 'Query time.', type: 'histogram', samples: histogram.samples() },
    ]);
    const parsed = parsePrometheus(text);
    expect(sampleValue(parsed, 'q_seconds_bucket', { outcome: 'ok', le: '0.1' })).toBe(1);
    expect(sampleValue(parsed, 'q_seconds_bucket', { outcome: 'ok', le: '1' })).toBe(2);
    expect(sampleValue(parsed, 'q_seconds_bucket', { outcome: 'ok', le: '+Inf' })).toBe(3);
    expect(sampleValue(parsed, 'q_seconds_count', { outcome: 'ok' })).toBe(3);
    expect(sampleValue(parsed, 'q_seconds_sum', { outcome: 'ok' })).toBeCloseTo(5.55);
    expect(sampleValue(parsed, 'q_seconds_count', { outcome: 'error' })).toBe(1);
  });
});

describe('parsePrometheus (the test parser itself)', () => {
  it('rejects a sample outside its family, a missing TYPE and non-cumulative buckets', () => {
    expect(() => parsePrometheus('x 1\n')).toThrow(/outside/);
    expect(() => parsePrometheus('# HELP x h\nx 1\n')).toThrow(/outside/);
    expect(() =>
      parsePrometheus(
        '# HELP h h\n# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n',
      ),
    ).toThrow(/cumulative/);
  });
});
