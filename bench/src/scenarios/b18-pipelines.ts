/**
 * B18 result pipelines: what `runtime.query()`'s own pipeline (the query worker turns engine
 * values into JSON rows, posted as one message) saves over the Arrow pipeline every other answer
 * takes (the worker builds Arrow batches and their IPC; the host decodes them). Issue 36 asks for
 * one pipeline unless a measurement shows the second pays: this is that measurement. Both sides
 * run in the same runtime on the same statements, alternating, one client at a time: `query()`,
 * against `queryArrow()` followed by the cheapest conversion of its table into row objects
 * (apache-arrow's `toJSON()` per row: a floor, since JSON rows would still need 64-bit integers,
 * dates and decimals turned into the JSON answer's values). Latency p50 and CPU per query (every
 * thread of this process: the host, the query workers, the engines).
 */

import { formatRatio, formatValue } from '../format.js';
import { loggedErrorsNote, startRuntime } from '../harness.js';
import { LatencyRecorder } from '../histogram.js';
import { publishQueryDatasets } from '../query-datasets.js';
import { type GoalCheck, type Measurement, ratio, type Scenario } from '../scenario.js';

const PREFIX = 'b18/';
const DUCK = 'p_duck';
const LITE = 'p_lite';

interface Cell {
  readonly label: string;
  sql(rows: number): string;
}

const randomId = (rows: number) => Math.floor(Math.random() * rows);

const CELLS: readonly Cell[] = [
  { label: 'DuckDB point lookup', sql: (rows) => `SELECT * FROM ${DUCK} WHERE id = ${randomId(rows)}` },
  { label: 'SQLite point lookup', sql: (rows) => `SELECT * FROM ${LITE} WHERE id = ${randomId(rows)}` },
  {
    label: 'DuckDB 1,000 rows',
    sql: (rows) => {
      const from = randomId(rows - 1_000);
      return `SELECT * FROM ${DUCK} WHERE id >= ${from} AND id < ${from + 1_000} ORDER BY id`;
    },
  },
  {
    label: 'SQLite 1,000 rows',
    sql: (rows) => {
      const from = randomId(rows - 1_000);
      return `SELECT * FROM ${LITE} WHERE id >= ${from} AND id < ${from + 1_000} ORDER BY id`;
    },
  },
];

interface Side {
  readonly latency: LatencyRecorder;
  cpuMicros: number;
  queries: number;
}

const side = (): Side => ({ latency: new LatencyRecorder(), cpuMicros: 0, queries: 0 });

/** Runs `once` for `ms` (one at a time), adding its latencies and this process's CPU to `into`. */
async function slice(ms: number, once: () => Promise<unknown>, into: Side): Promise<void> {
  const cpu = process.cpuUsage();
  const until = performance.now() + ms;
  while (performance.now() < until) {
    const began = performance.now();
    await once();
    into.latency.recordMs(performance.now() - began);
    into.queries++;
  }
  const used = process.cpuUsage(cpu);
  into.cpuMicros += used.user + used.system;
}

export const b18: Scenario = {
  id: 'b18',
  title: 'B18 result pipelines',
  measures:
    '`runtime.query()` (JSON rows made in the query worker) against the Arrow pipeline (`queryArrow()`, then each row as an object): p50 latency and CPU per query, one client, point lookups and 1,000-row reads on DuckDB and SQLite',
  baseline:
    '`queryArrow()` + `toArray().map(row => row.toJSON())` on the same statements, same runtime, alternating slices',
  goal: 'keep the second pipeline only where it pays: `query()` CPU per query ≤ 0.9 × the Arrow pipeline’s on every cell',
  async run(context) {
    const rows = context.quick ? 20_000 : 200_000;
    const rounds = context.quick ? 3 : 6;
    const sliceMs = context.quick ? 300 : 700;
    const { pod } = await publishQueryDatasets(context, PREFIX, { duckdb: DUCK, sqlite: LITE }, rows, {
      resultsCache: false,
    });
    const { runtime, logger } = await startRuntime(context, pod);
    const measurements: Measurement[] = [];
    const goals: GoalCheck[] = [];
    try {
      await runtime.ready(undefined, { timeoutMs: 120_000 });
      for (const cell of CELLS) {
        const viaRows = async () => (await runtime.query(cell.sql(rows))).rows.length;
        const viaArrow = async () => {
          const { table } = await runtime.queryArrow(cell.sql(rows));
          return table.toArray().map((row) => row.toJSON()).length;
        };
        // Same answer on both sides, and every path warm (pools, prepared parsers, shapes).
        const probe = cell.sql(rows);
        const [a, b] = [
          (await runtime.query(probe)).rows.length,
          (await runtime.queryArrow(probe)).table.numRows,
        ];
        if (a !== b) throw new Error(`B18 ${cell.label}: query() answered ${a} rows, queryArrow() ${b}`);
        for (let k = 0; k < 50; k++) await Promise.all([viaRows(), viaArrow()]);
        const mine = side();
        const theirs = side();
        for (let round = 0; round < rounds; round++) {
          await slice(sliceMs, viaRows, mine);
          await slice(sliceMs, viaArrow, theirs);
        }
        const cpu = mine.cpuMicros / mine.queries;
        const cpuBase = theirs.cpuMicros / theirs.queries;
        const p50 = mine.latency.summary().p50Ms * 1_000;
        const p50Base = theirs.latency.summary().p50Ms * 1_000;
        const cpuRatio = ratio(cpu, cpuBase);
        context.log(
          `${cell.label}: CPU ${cpu.toFixed(0)} vs ${cpuBase.toFixed(0)} µs, p50 ${p50.toFixed(0)} vs ${p50Base.toFixed(0)} µs`,
        );
        measurements.push(
          {
            group: cell.label,
            metric: 'CPU per query, all threads',
            unit: 'µs',
            value: cpu,
            baseline: cpuBase,
            baselineLabel: 'Arrow pipeline',
            ratio: cpuRatio,
          },
          {
            group: cell.label,
            metric: 'p50 latency, 1 client',
            unit: 'µs',
            value: p50,
            baseline: p50Base,
            baselineLabel: 'Arrow pipeline',
            ratio: ratio(p50, p50Base),
          },
        );
        goals.push({
          goal: `${cell.label}: query() CPU per query ≤ 0.9 × the Arrow pipeline’s`,
          measured: `${formatValue(cpu, 'µs')} vs ${formatValue(cpuBase, 'µs')} = ${formatRatio(cpuRatio)}`,
          met: cpuRatio <= 0.9,
        });
      }
    } finally {
      await runtime.close();
    }
    const errors = loggedErrorsNote(logger);
    return {
      measurements,
      goals,
      notes: [
        `Tables: ${rows.toLocaleString('en-US')} rows each (the B1 columns); a new literal every query, the results cache off (every query runs).`,
        `${rounds} rounds of a ${sliceMs} ms slice per side and cell, alternating; CPU is process.cpuUsage() over the slice (every thread of the process) divided by the queries it ran.`,
        ...(errors === undefined ? [] : [errors]),
      ],
    };
  },
};
