/**
 * B9 HTTP: `ferry serve` (the CLI, in a process of its own, with the spicepod a user writes: the
 * results cache on, as in Spice) under two loads over HTTP — a mixed one (point lookups and GROUP BY
 * aggregates on a DuckDB and an SQLite dataset) and a cheap one (issue 36's: a single-table
 * aggregate, point lookups and a small range) — every statement a text with its literals in it (as
 * `POST /v1/sql` carries them), 64 clients with keep-alive connections, against the plain server a
 * user would write instead: `node:http` calling DuckDB and better-sqlite3 directly on the same files
 * (`plain-server.ts`, also a process of its own). The same server in Ferry's thread shape
 * (`threaded-server.ts`: the engines in worker threads, rows answered as JSON from there) runs the
 * loads too: its ratio to the plain server is the floor the design puts under Ferry's. A second
 * `ferry serve` with the results cache off runs the same loads. The clients run in this process and read every body whole; windows alternate
 * between the servers.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { post } from '../burst.js';
import { formatRatio, formatValue } from '../format.js';
import { latencySeries } from '../harness.js';
import { failureNote, type LoadResult, LoadTotals, runLoad } from '../load.js';
import { publishQueryDatasets, queryDatasetsPod } from '../query-datasets.js';
import { type GoalCheck, type LatencyPlot, type Measurement, ratio, type Scenario } from '../scenario.js';
import { startFerryServe, startServerProcess, stop, waitReady } from '../serve-process.js';

const PREFIX = 'b9/';
const DUCK = 'h_duck';
const LITE = 'h_lite';
/** B9's tables: the DuckDB and the SQLite dataset (each file's table has the dataset's name). */
export const B9_TABLES = { duckdb: DUCK, sqlite: LITE } as const;
const CLIENTS = 64;

export interface Kind {
  readonly label: string;
  sql(n: number, rows: number): string;
}

const aggregate = (table: string, n: number) =>
  `SELECT category, count(*) AS n, sum(amount) AS total, avg(qty) AS mean_qty FROM ${table} WHERE qty < ${7 + n} GROUP BY category ORDER BY category`;

/**
 * The mixed load, in turn: each client's n-th request is kind n % 4, with new literals every time.
 * Its aggregates' literal is the request's number, counted over all 64 clients of a window: every
 * text is new, so Ferry's results cache misses (cache on and off measure alike). (Until 2026-12-05
 * these notes said the clients sent the same texts at once; `/metrics` showed no hit in a window.)
 */
const MIXED: readonly Kind[] = [
  {
    label: 'DuckDB point lookup',
    sql: (_n, rows) => `SELECT * FROM ${DUCK} WHERE id = ${Math.floor(Math.random() * rows)}`,
  },
  {
    label: 'SQLite point lookup',
    sql: (_n, rows) => `SELECT * FROM ${LITE} WHERE id = ${Math.floor(Math.random() * rows)}`,
  },
  { label: 'DuckDB aggregate', sql: (n) => aggregate(DUCK, n) },
  { label: 'SQLite aggregate', sql: (n) => aggregate(LITE, n) },
];

const randomId = (rows: number) => Math.floor(Math.random() * rows);

/**
 * The cheap load (issue 36's check, on B9's tables): statements whose engine time is small, so what
 * a query costs around its engine decides the throughput. Every text is new (the aggregate's
 * literal has six decimals), so the results cache misses as it would on a miss-heavy load.
 */
export const CHEAP: readonly Kind[] = [
  {
    label: 'DuckDB single-table aggregate',
    sql: () =>
      `SELECT count(*) AS n, sum(amount) AS s FROM ${DUCK} WHERE amount > ${(Math.random() * 1000).toFixed(6)}`,
  },
  {
    label: 'SQLite point lookup',
    sql: (_n, rows) => `SELECT note FROM ${LITE} WHERE id = ${randomId(rows)}`,
  },
  {
    label: 'DuckDB point lookup',
    sql: (_n, rows) => `SELECT category, amount FROM ${DUCK} WHERE id = ${randomId(rows)}`,
  },
  {
    label: 'SQLite small range',
    sql: (_n, rows) => {
      const k = randomId(rows);
      return `SELECT id, note FROM ${LITE} WHERE id BETWEEN ${k} AND ${k + 20}`;
    },
  },
];

const LOADS = [
  { name: 'mixed load', kinds: MIXED },
  { name: 'cheap load', kinds: CHEAP },
] as const;

const SIDES = ['plain', 'threaded', 'ferry', 'ferryNoCache'] as const;
type Side = (typeof SIDES)[number];
const SIDE_LABELS: Readonly<Record<Side, string>> = {
  plain: 'plain server',
  threaded: "plain server in Ferry's threads",
  ferry: 'ferry serve',
  ferryNoCache: 'ferry serve, results cache off',
};

export const b9: Scenario = {
  id: 'b9',
  title: 'B9 HTTP',
  measures: `throughput and p99 over HTTP on \`ferry serve\` with the default spicepod, ${CLIENTS} keep-alive clients, literal texts: a mixed load (point lookups and aggregates on a DuckDB and an SQLite dataset) and a cheap one (a single-table aggregate, point lookups, a small range)`,
  baseline:
    'a plain node:http server calling DuckDB (runAndReadAll(text)) and better-sqlite3 (prepare(text).all()) directly on the same files, in its own process',
  goal: 'on each load, at default settings: throughput ≥ 1.0 × the plain server, p99 ≤ 1.5 × its p99',
  async run(context) {
    const rows = context.quick ? 20_000 : 200_000;
    const rounds = context.quick ? 1 : 2;
    const window = context.quick
      ? { warmupMs: 1_000, durationMs: 2_000 }
      : { warmupMs: 2_000, durationMs: 4_000 };
    const { files, pod } = await publishQueryDatasets(context, PREFIX, { duckdb: DUCK, sqlite: LITE }, rows, {
      resultsCache: true,
    });
    const podPath = join(context.workDir, 'spicepod.yaml');
    await writeFile(podPath, pod);
    const noCachePath = join(context.workDir, 'spicepod-no-cache.yaml');
    await writeFile(
      noCachePath,
      queryDatasetsPod(context, PREFIX, { duckdb: DUCK, sqlite: LITE }, { resultsCache: false }),
    );
    const env = { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
    const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
    const children: ChildProcess[] = [];
    const totals = LOADS.map((load) => ({
      all: Object.fromEntries(SIDES.map((side) => [side, new LoadTotals()])) as Record<Side, LoadTotals>,
      kinds: Object.fromEntries(
        SIDES.map((side) => [side, load.kinds.map(() => new LoadTotals())]),
      ) as Record<Side, LoadTotals[]>,
    }));
    try {
      context.log('starting ferry serve (default spicepod and cache off) and the plain server');
      const served = await startFerryServe(podPath, join(context.workDir, 'data'), env);
      children.push(served.child);
      const noCache = await startFerryServe(noCachePath, join(context.workDir, 'data-no-cache'), env);
      children.push(noCache.child);
      // The two baselines: node:http on the same files, plain and in Ferry's thread shape.
      const startBaseline = async (script: string): Promise<string> => {
        const started = await startServerProcess(
          [
            fileURLToPath(new URL(`../${script}`, import.meta.url)),
            files.get('duckdb')?.path ?? '',
            files.get('sqlite')?.path ?? '',
            LITE,
          ],
          env,
        );
        children.push(started.child);
        return started.url;
      };
      const baseline = { url: await startBaseline('plain-server.js') };
      const threaded = { url: await startBaseline('threaded-server.js') };
      const base: Record<Side, URL> = {
        plain: new URL(baseline.url),
        threaded: new URL(threaded.url),
        ferry: new URL(served.url),
        ferryNoCache: new URL(noCache.url),
      };
      await waitReady(agent, base.ferry);
      await waitReady(agent, base.ferryNoCache);
      for (const [loadIndex, load] of LOADS.entries()) {
        const figures = totals[loadIndex] as (typeof totals)[number];
        const operation = (side: Side) => {
          let n = 0;
          return async () => {
            const index = n % load.kinds.length;
            const kind = load.kinds[index] as Kind;
            const began = performance.now();
            const answer = await post(base[side], kind.sql(n++, rows), agent);
            if (answer.error !== undefined) throw new Error(`${kind.label}: ${answer.error}`);
            if (answer.status !== 200) throw new Error(`${kind.label} answered ${answer.status}`);
            (figures.kinds[side][index] as LoadTotals).latency.recordMs(performance.now() - began);
          };
        };
        // Warm every server on this load: pool threads, prepared parsers, connections.
        for (const side of SIDES) {
          await runLoad({ clients: CLIENTS, warmupMs: 0, durationMs: 1_000, operation: operation(side) });
        }
        for (let round = 0; round < rounds; round++) {
          for (const side of SIDES) {
            context.log(`${load.name}, round ${round + 1}: ${SIDE_LABELS[side]}`);
            await runLoad({ clients: CLIENTS, ...window, operation: operation(side) }, figures.all[side]);
          }
        }
      }
    } finally {
      agent.destroy();
      await Promise.all(children.map((child) => stop(child)));
    }
    const measurements: Measurement[] = [];
    const goals: GoalCheck[] = [];
    const latencies: LatencyPlot[] = [];
    const notes = [
      `Tables: ${rows.toLocaleString('en-US')} rows each (the B1 columns); every request a new text (its id or its WHERE literal: the mixed load's aggregates take the request's number, counted over all clients; the cheap load's aggregate a literal with six decimals), so the results cache misses.`,
      `${rounds} round(s) of a ${window.durationMs / 1000} s window per server and load after ${window.warmupMs / 1000} s of warm-up, alternating; ${CLIENTS} closed-loop clients in this process, one keep-alive connection each, reading every body whole.`,
      "The plain server runs DuckDB statements on 4 connections of one instance and SQLite statements on its event loop; the plain server in Ferry's threads runs them in worker threads as Ferry does (one DuckDB worker with 4 connections, a piscina pool of one better-sqlite3 worker per core), each answering its rows' JSON text: the floor of Ferry's thread shape. Ferry is `ferry serve` with the spicepod a user writes (nothing under `runtime`: the results cache on, as in Spice; the goals are judged on it); a second `ferry serve` has `runtime.caching.sql_results.enabled: false`.",
    ];
    const raw: Record<string, unknown> = {};
    for (const [loadIndex, load] of LOADS.entries()) {
      const figures = totals[loadIndex] as (typeof totals)[number];
      const plainResult: LoadResult = figures.all.plain.result();
      raw[load.name] = Object.fromEntries(SIDES.map((side) => [side, figures.all[side].result()]));
      for (const side of ['threaded', 'ferry', 'ferryNoCache'] as const) {
        const result: LoadResult = figures.all[side].result();
        const tput = ratio(result.throughput, plainResult.throughput);
        const p99 = ratio(result.latency.p99Ms, plainResult.latency.p99Ms);
        const group = `${load.name}, ${CLIENTS} clients, ${SIDE_LABELS[side]}`;
        measurements.push(
          {
            group,
            metric: 'throughput',
            unit: 'ops/s',
            value: result.throughput,
            baseline: plainResult.throughput,
            baselineLabel: 'plain server',
            ratio: tput,
          },
          {
            group,
            metric: 'p50 latency',
            unit: 'ms',
            kind: 'latency',
            value: result.latency.p50Ms,
            baseline: plainResult.latency.p50Ms,
            baselineLabel: 'plain server',
            ratio: ratio(result.latency.p50Ms, plainResult.latency.p50Ms),
          },
          {
            group,
            metric: 'p99 latency',
            unit: 'ms',
            kind: 'latency',
            value: result.latency.p99Ms,
            baseline: plainResult.latency.p99Ms,
            baselineLabel: 'plain server',
            ratio: p99,
          },
        );
        if (side === 'ferry') {
          goals.push(
            {
              goal: `${load.name}, default spicepod: throughput ≥ 1.0 × the plain server`,
              measured: `${formatValue(result.throughput, 'ops/s')} vs ${formatValue(plainResult.throughput, 'ops/s')} = ${formatRatio(tput)}`,
              met: tput >= 1.0,
            },
            {
              goal: `${load.name}, default spicepod: p99 ≤ 1.5 × the plain server's p99`,
              measured: `${formatValue(result.latency.p99Ms, 'ms')} vs ${formatValue(plainResult.latency.p99Ms, 'ms')} = ${formatRatio(p99)}`,
              met: p99 <= 1.5,
            },
          );
          for (const [index, kind] of load.kinds.entries()) {
            const mine = (figures.kinds.ferry[index] as LoadTotals).latency.summary();
            const theirs = (figures.kinds.plain[index] as LoadTotals).latency.summary();
            measurements.push({
              group: `${load.name}: ${kind.label}`,
              metric: 'p50 latency (warm-up included)',
              unit: 'ms',
              kind: 'latency',
              value: mine.p50Ms,
              baseline: theirs.p50Ms,
              baselineLabel: 'plain server',
              ratio: ratio(mine.p50Ms, theirs.p50Ms),
            });
          }
        }
        const failure = failureNote(group, result, plainResult);
        if (failure !== undefined) notes.push(failure);
      }
      latencies.push({
        title: `${load.name}, ${CLIENTS} clients`,
        series: SIDES.map((side) => latencySeries(SIDE_LABELS[side], figures.all[side].result().latency)),
      });
    }
    return { measurements, goals, notes, latencies, raw };
  },
};
