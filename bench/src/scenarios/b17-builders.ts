/**
 * B17 Arrow builders: what it costs to build one record batch of an SQLite result with the
 * engines' own column builders (`RecordBatchBuilder`, `arrow-results.ts`: what the SQLite workers
 * and Flight SQL's metadata answers use) against apache-arrow's own builders (`makeBuilder`) on
 * the same rows, in the same thread, alternating. The rows are what an SQLite worker hands the
 * builder: INTEGER as numbers (an Int64 column: apache-arrow's wants bigint, so its side converts
 * them, as it would have to in the worker), REAL, TEXT with nulls. Issue 36 keeps our builders only
 * where they are measured faster: this is that measurement, at the sizes the query path sees (a
 * point lookup, a small range, a page, a large answer).
 */

import { RecordBatchBuilder, recordBatchOf } from '@ferry/engines/namespaces';
import * as arrow from 'apache-arrow';
import { formatRatio, formatValue } from '../format.js';
import { type GoalCheck, type Measurement, median, ratio, type Scenario } from '../scenario.js';

type Row = readonly [number, number, string, string | null];

const SCHEMA = new arrow.Schema([
  new arrow.Field('id', new arrow.Int64(), true),
  new arrow.Field('amount', new arrow.Float64(), true),
  new arrow.Field('note', new arrow.Utf8(), true),
  new arrow.Field('category', new arrow.Utf8(), true),
]);

function rowsOf(count: number): Row[] {
  return Array.from({ length: count }, (_, i) => [
    i * 7,
    i * 1.25,
    `note number ${i} of the table`,
    i % 10 === 0 ? null : `cat-${i % 13}`,
  ]);
}

function ours(rows: readonly Row[]): arrow.RecordBatch {
  const builder = new RecordBatchBuilder(SCHEMA);
  for (const row of rows) builder.appendRow(row);
  return builder.flush();
}

function apacheArrow(rows: readonly Row[]): arrow.RecordBatch {
  const builders = SCHEMA.fields.map((field) => arrow.makeBuilder({ type: field.type, nullValues: [null] }));
  const [id, amount, note, category] = builders as [
    arrow.Builder,
    arrow.Builder,
    arrow.Builder,
    arrow.Builder,
  ];
  for (const row of rows) {
    id.append(BigInt(row[0]));
    amount.append(row[1]);
    note.append(row[2]);
    category.append(row[3]);
  }
  return recordBatchOf(
    SCHEMA,
    rows.length,
    builders.map((builder) => builder.finish().flush()),
  );
}

/** The batch as rows of JSON text: both sides must build the same batch. */
function rowsText(batch: arrow.RecordBatch): string {
  return JSON.stringify(
    batch.toArray().map((row) => row.toJSON()),
    (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value),
  );
}

/** Microseconds per batch: `calls` builds, after as many to warm up. */
function timed(
  build: (rows: readonly Row[]) => arrow.RecordBatch,
  rows: readonly Row[],
  calls: number,
): number {
  for (let i = 0; i < calls; i++) build(rows);
  const began = performance.now();
  for (let i = 0; i < calls; i++) build(rows);
  return ((performance.now() - began) * 1_000) / calls;
}

export const b17: Scenario = {
  id: 'b17',
  title: 'B17 Arrow builders',
  measures:
    'µs to build one record batch of an SQLite-shaped result (Int64, Float64, two Utf8 with nulls) with the engines’ column builders, at 1, 21, 1,000 and 100,000 rows',
  baseline:
    'apache-arrow’s own builders (makeBuilder, append, finish) on the same rows, same thread, alternating',
  goal: 'at every size: our builders ≤ 1.0 × apache-arrow’s time (else the query path uses apache-arrow’s)',
  async run(context) {
    const sizes = context.quick ? [1, 21, 1_000, 10_000] : [1, 21, 1_000, 100_000];
    const rounds = context.quick ? 3 : 7;
    const measurements: Measurement[] = [];
    const goals: GoalCheck[] = [];
    for (const size of sizes) {
      const rows = rowsOf(size);
      if (rowsText(ours(rows)) !== rowsText(apacheArrow(rows))) {
        throw new Error(`B17: the two builders disagree on a batch of ${size} rows`);
      }
      // About 50 ms of building per side and round.
      const calls = Math.max(5, Math.round(50_000 / (size * 1.5 + 20)));
      const mine: number[] = [];
      const theirs: number[] = [];
      for (let round = 0; round < rounds; round++) {
        mine.push(timed(ours, rows, calls));
        theirs.push(timed(apacheArrow, rows, calls));
      }
      const value = median(mine);
      const baseline = median(theirs);
      const r = ratio(value, baseline);
      const group = `${size.toLocaleString('en-US')} row(s)`;
      context.log(`${group}: ${value.toFixed(1)} µs vs apache-arrow ${baseline.toFixed(1)} µs`);
      measurements.push({
        group,
        metric: 'build time per batch (median of rounds)',
        unit: 'µs',
        value,
        baseline,
        baselineLabel: 'apache-arrow builders',
        ratio: r,
      });
      goals.push({
        goal: `${group}: our builders ≤ 1.0 × apache-arrow’s time`,
        measured: `${formatValue(value, 'µs')} vs ${formatValue(baseline, 'µs')} = ${formatRatio(r)}`,
        met: r <= 1.0,
      });
    }
    return {
      measurements,
      goals,
      notes: [
        `${rounds} rounds per size, each ~50 ms of builds per side after as many to warm up; the median round counts.`,
        'Both sides end in the same RecordBatch (checked row by row before timing); IPC encoding, the same for both, is not timed.',
      ],
    };
  },
};
