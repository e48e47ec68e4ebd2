/**
 * B11 cache: what Spice's SQL results cache (on by default) costs a query it cannot answer, and what
 * it saves one it can. Two runtimes serve the same published DuckDB and SQLite files in one
 * process, one with `runtime.caching.sql_results` on (the default) and one with it off (the
 * baseline, same run); point lookups of ids never asked before (every one a miss) alternate
 * between them in short slices. A repeated lookup measures the hit. A stampede — 64 clients asking
 * one aggregate over and over, as a dashboard's viewers do — measures how often the statement runs
 * with the cache on: once per `item_ttl` (1 s by default), the requests arriving while it runs
 * waiting for its answer; the same clients on the cache-off runtime are the baseline.
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

/** Clients of the stampede: as many as B9 sends. */
const STAMPEDE_CLIENTS = 64;

interface Stampede {
  readonly label: string;
  readonly on: LoadResult;
  readonly off: LoadResult;
  /** Runs of the statement on the cache-on runtime (its cache's misses) during the window. */
  readonly runs: number;
}

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
    'p50/p99 latency of point lookups the results cache cannot answer (each id asked once) with the cache on, and of a repeated lookup it answers, DuckDB and SQLite, 1 client, through the embed API; how often a stampede (64 clients repeating one aggregate) runs it',
  baseline:
    'the same lookups on a runtime with the cache off (runtime.caching.sql_results.enabled: false), same files, same process, interleaved',
  goal: 'a miss costs no measurable latency: p50 with the cache on ≤ 1.05× with it off; a hit is reported against a miss; a stampede runs its statement at most twice per item_ttl',
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
    const stampedes: Stampede[] = [];
    const stampedeMs = context.quick ? 1_000 : 4_000;
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
      for (const { label, dataset } of ENGINES) {
        const sql = `SELECT category, count(*) AS n, sum(amount) AS total FROM ${dataset} GROUP BY category ORDER BY category`;
        // Its datasets known (it ran once), so the cache-on runtime can key the first requests too.
        await on.runtime.query(sql, [], { noCache: true });
        await off.runtime.query(sql);
        const window = { clients: STAMPEDE_CLIENTS, warmupMs: 0, durationMs: stampedeMs };
        const before = on.runtime.metrics().resultsCache.misses;
        const stampedeOn = await runLoad({ ...window, operation: () => on.runtime.query(sql) });
        const runs = on.runtime.metrics().resultsCache.misses - before;
        const stampedeOff = await runLoad({ ...window, operation: () => off.runtime.query(sql) });
        stampedes.push({ label, on: stampedeOn, off: stampedeOff, runs });
        context.log(`${label} stampede: ${runs} run(s) in ${stampedeMs} ms with the cache on`);
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
    for (const stampede of stampedes) {
      const group = `${stampede.label} stampede (${STAMPEDE_CLIENTS} clients, one aggregate)`;
      // Each item_ttl (1 s) the answer expires and the statement runs once more.
      const periods = Math.ceil(stampedeMs / 1_000);
      measurements.push(
        {
          group,
          metric: 'runs of the statement, cache on',
          unit: 'count',
          value: stampede.runs,
          baseline: stampede.off.completed + stampede.off.failed,
          baselineLabel: 'cache off (one per request)',
          ratio: ratio(stampede.runs, stampede.off.completed + stampede.off.failed),
        },
        {
          group,
          metric: 'throughput, cache on',
          unit: 'ops/s',
          value: stampede.on.throughput,
          baseline: stampede.off.throughput,
          baselineLabel: 'cache off',
          ratio: ratio(stampede.on.throughput, stampede.off.throughput),
        },
      );
      goals.push({
        goal: `${group}: at most two runs per item_ttl with the cache on`,
        measured: `${stampede.runs} run(s) in ${periods} s`,
        met: stampede.runs <= 2 * periods,
      });
      const failure = failureNote(group, stampede.on, stampede.off);
      if (failure !== undefined) notes.push(failure);
    }
    for (const started of [on, off]) {
      const logged = loggedErrorsNote(started.logger);
      if (logged !== undefined) notes.push(logged);
    }
    return { measurements, goals, notes, raw: { rows, rounds, cells, stampedes, counters } };
  },
};
