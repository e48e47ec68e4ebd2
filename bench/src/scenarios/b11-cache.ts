/**
 * B11 cache: what Spice's SQL results cache (on by default) costs a query it cannot answer, and what
 * it saves one it can. Two runtimes serve the same published DuckDB and SQLite files in one
 * process, one with `runtime.caching.sql_results` on (the default) and one with it off (the
 * baseline, same run); point lookups of ids never asked before (every one a miss) alternate
 * between them in short slices. A repeated lookup measures the hit.
 */
import type { FileFormat } from '@ferry/core';
import { buildFile, keyedColumns, QUERY_COLUMNS } from '../data.js';
import { formatRatio, formatValue } from '../format.js';
import { loggedErrorsNote, startRuntime } from '../harness.js';
import { failureNote, type LoadResult, LoadTotals, runLoad } from '../load.js';
import { type GoalCheck, type Measurement, ratio, type Scenario } from '../scenario.js';
import { locationOf, spicepod } from '../spicepod.js';

const PREFIX = 'b11/';
const ENGINES: readonly { engine: FileFormat; label: string; dataset: string }[] = [
  { engine: 'duckdb', label: 'DuckDB', dataset: 'c_duck' },
  { engine: 'sqlite', label: 'SQLite', dataset: 'c_lite' },
];

interface Cell {
  readonly label: string;
  readonly off: LoadResult;
  readonly miss: LoadResult;
  readonly hit: LoadResult;
}

export const b11: Scenario = {
  id: 'b11',
  title: 'B11 cache',
  measures:
    'p50/p99 latency of point lookups the results cache cannot answer (each id asked once) with the cache on, and of a repeated lookup it answers, DuckDB and SQLite, 1 client, through the embed API',
  baseline:
    'the same lookups on a runtime with the cache off (runtime.caching.sql_results.enabled: false), same files, same process, interleaved',
  goal: 'a miss costs no measurable latency: p50 with the cache on ≤ 1.05× with it off; a hit is reported against a miss',
  async run(context) {
    const rows = context.quick ? 50_000 : 1_000_000;
    const rounds = context.quick ? 2 : 4;
    const slice = context.quick ? { warmupMs: 100, durationMs: 500 } : { warmupMs: 200, durationMs: 1500 };
    for (const { engine, dataset } of ENGINES) {
      context.log(`building the ${rows}-row ${engine} file`);
      const file = await buildFile(context.workDir, engine, dataset, rows, keyedColumns(1, QUERY_COLUMNS));
      await context.aws.publish({ dataset, location: locationOf(PREFIX), file: file.path, engine });
    }
    const pod = (resultsCache: boolean) =>
      spicepod({
        aws: context.aws.info,
        prefix: PREFIX,
        direct: true,
        resultsCache,
        datasets: ENGINES.map(({ engine, dataset }) => ({ name: dataset, engine, interval: '1h' })),
      });
    const on = await startRuntime(context, `${pod(true)}`);
    const off = await startRuntime(context, pod(false));
    const cells: Cell[] = [];
    try {
      await Promise.all([
        on.runtime.ready(undefined, { timeoutMs: 120_000 }),
        off.runtime.ready(undefined, { timeoutMs: 120_000 }),
      ]);
      for (const { label, dataset } of ENGINES) {
        const sql = `SELECT * FROM ${dataset} WHERE id = ?`;
        // Every lookup asks an id not asked before on that runtime: each one a miss (and stored).
        let nextOn = 0;
        let nextOff = 0;
        const missOn = () => on.runtime.query(sql, [nextOn++ % rows]);
        const missOff = () => off.runtime.query(sql, [nextOff++ % rows]);
        const hit = () => on.runtime.query(sql, [rows - 1]);
        for (let n = 0; n < 20; n++) await Promise.all([missOn(), missOff()]);
        await hit();
        await new Promise((resolve) => setImmediate(resolve));
        const totals = { off: new LoadTotals(), miss: new LoadTotals(), hit: new LoadTotals() };
        for (let round = 0; round < rounds; round++) {
          await runLoad({ clients: 1, ...slice, operation: missOff }, totals.off);
          await runLoad({ clients: 1, ...slice, operation: missOn }, totals.miss);
          await runLoad({ clients: 1, ...slice, operation: hit }, totals.hit);
        }
        const cell = {
          label,
          off: totals.off.result(),
          miss: totals.miss.result(),
          hit: totals.hit.result(),
        };
        cells.push(cell);
        context.log(
          `${label}: off p50 ${cell.off.latency.p50Ms.toFixed(3)} ms, miss p50 ${cell.miss.latency.p50Ms.toFixed(3)} ms, hit p50 ${cell.hit.latency.p50Ms.toFixed(3)} ms`,
        );
      }
    } finally {
      await on.runtime.close();
      await off.runtime.close();
    }
    const measurements: Measurement[] = [];
    const goals: GoalCheck[] = [];
    const counters = on.runtime.metrics().resultsCache;
    const notes: string[] = [
      `Tables: ${rows.toLocaleString('en-US')} rows each; a lookup answers one row. ${rounds} interleaved round(s) of ${slice.durationMs / 1000} s per path.`,
      `The cache-on runtime ended holding ${counters.entries.toLocaleString('en-US')} results (${formatValue(counters.bytes / 2 ** 20, 'MiB')} of ${formatValue(counters.maxBytes / 2 ** 20, 'MiB')}), ${counters.evictions.toLocaleString('en-US')} evicted; ${counters.hits.toLocaleString('en-US')} hits of ${(counters.hits + counters.misses).toLocaleString('en-US')} lookups.`,
      "A miss pays for the key (the statement's datasets and their snapshots, its parameters as JSON) and, after its answer, for storing the result; a hit is answered on the host without a query worker.",
    ];
    for (const cell of cells) {
      const group = `${cell.label} point lookup`;
      const missRatio = ratio(cell.miss.latency.p50Ms, cell.off.latency.p50Ms);
      measurements.push(
        {
          group,
          metric: 'p50 latency of a miss, cache on',
          unit: 'ms',
          value: cell.miss.latency.p50Ms,
          baseline: cell.off.latency.p50Ms,
          baselineLabel: 'cache off',
          ratio: missRatio,
        },
        {
          group,
          metric: 'p99 latency of a miss, cache on',
          unit: 'ms',
          value: cell.miss.latency.p99Ms,
          baseline: cell.off.latency.p99Ms,
          baselineLabel: 'cache off',
          ratio: ratio(cell.miss.latency.p99Ms, cell.off.latency.p99Ms),
        },
        {
          group,
          metric: 'p50 latency of a hit',
          unit: 'ms',
          value: cell.hit.latency.p50Ms,
          baseline: cell.miss.latency.p50Ms,
          baselineLabel: 'a miss, cache on',
          ratio: ratio(cell.hit.latency.p50Ms, cell.miss.latency.p50Ms),
        },
      );
      goals.push({
        goal: `${group}: p50 of a miss with the cache on ≤ 1.05× with the cache off`,
        measured: `${formatValue(cell.miss.latency.p50Ms, 'ms')} vs ${formatValue(cell.off.latency.p50Ms, 'ms')} = ${formatRatio(missRatio)}`,
        met: missRatio <= 1.05,
      });
      const failure = failureNote(group, cell.off, cell.miss, cell.hit);
      if (failure !== undefined) notes.push(failure);
    }
    for (const started of [on, off]) {
      const logged = loggedErrorsNote(started.logger);
      if (logged !== undefined) notes.push(logged);
    }
    return { measurements, goals, notes, raw: { rows, rounds, cells, counters } };
  },
};
