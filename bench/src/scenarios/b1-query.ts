/**
 * B1 query: latency and throughput of point lookups and a scan/aggregate through the embed API,
 * DuckDB and SQLite, at 1 and 64 concurrent clients. Baselines in the same run: the same SQL on the
 * same file through the engine library directly on one thread, and a bare worker-thread echo (the
 * floor of any thread hop).
 */
import { Worker } from 'node:worker_threads';
import type { FileFormat, JsonValue } from '@ferry/core';
import { openEngine } from '@ferry/engines';
import { type BuiltFile, buildFile, keyedColumns, QUERY_COLUMNS } from '../data.js';
import { formatRatio, formatValue } from '../format.js';
import { loggedErrorsNote, startRuntime } from '../harness.js';
import { failureNote, type LoadResult, LoadTotals, runLoad } from '../load.js';
import { type GoalCheck, type Measurement, ratio, type Scenario } from '../scenario.js';
import { locationOf, spicepod } from '../spicepod.js';

const PREFIX = 'b1/';
const ENGINES: readonly { engine: FileFormat; label: string; dataset: string }[] = [
  { engine: 'duckdb', label: 'DuckDB', dataset: 'q_duck' },
  { engine: 'sqlite', label: 'SQLite', dataset: 'q_lite' },
];

interface QueryKind {
  readonly kind: 'point' | 'scan';
  readonly label: string;
  sql(table: string): string;
  params(rows: number): JsonValue[];
}

const QUERIES: readonly QueryKind[] = [
  {
    kind: 'point',
    label: 'point lookup',
    sql: (table) => `SELECT * FROM ${table} WHERE id = ?`,
    params: (rows) => [Math.floor(Math.random() * rows)],
  },
  {
    kind: 'scan',
    label: 'scan/aggregate',
    sql: (table) =>
      `SELECT category, count(*) AS n, sum(amount) AS total, avg(qty) AS mean_qty FROM ${table} GROUP BY category ORDER BY category`,
    params: () => [],
  },
];

/** A bare worker that echoes each message: `roundTrip()` is one postMessage there and back. */
function startEcho(): { roundTrip(): Promise<void>; stop(): Promise<number> } {
  const worker = new Worker(new URL('../echo-worker.js', import.meta.url));
  const pending = new Map<number, () => void>();
  worker.on('message', (message: { id: number }) => {
    pending.get(message.id)?.();
    pending.delete(message.id);
  });
  let next = 0;
  return {
    roundTrip: () =>
      new Promise<void>((resolve) => {
        const id = next++;
        pending.set(id, resolve);
        worker.postMessage({ id, sql: 'SELECT * FROM q WHERE id = ?', params: [id] });
      }),
    stop: () => worker.terminate(),
  };
}

interface Cell {
  readonly engine: (typeof ENGINES)[number];
  readonly query: QueryKind;
  readonly direct: LoadResult;
  readonly ferry1: LoadResult;
  readonly ferry64: LoadResult;
}

export const b1: Scenario = {
  id: 'b1',
  title: 'B1 query',
  measures:
    'latency (p50/p99) and throughput of point lookups and a scan/aggregate, 1 and 64 concurrent clients, DuckDB and SQLite, through the embed API',
  baseline:
    '(a) the same SQL on the same file through the engine library directly, one thread; (b) a bare worker-thread echo (postMessage round trip)',
  goal: 'latency added over direct ≤ 1.2× the echo floor; throughput at 64 clients: point lookups ≥ 0.9× direct single-thread, scans/aggregates ≥ 1.7× (SQLite pool) / ≥ 1.0× (DuckDB) direct single-thread',
  async run(context) {
    const rows = context.quick ? 20_000 : 200_000;
    const rounds = context.quick ? 1 : 2;
    const short = context.quick ? { warmupMs: 200, durationMs: 600 } : { warmupMs: 300, durationMs: 1200 };
    const long = context.quick ? { warmupMs: 500, durationMs: 1000 } : { warmupMs: 2000, durationMs: 2000 };

    context.log(`building ${rows}-row DuckDB and SQLite files`);
    const files = new Map<FileFormat, BuiltFile>();
    for (const { engine, dataset } of ENGINES) {
      const file = await buildFile(context.workDir, engine, dataset, rows, keyedColumns(1, QUERY_COLUMNS));
      files.set(engine, file);
      await context.aws.publish({ dataset, location: locationOf(PREFIX), file: file.path, engine });
    }

    const { runtime, logger } = await startRuntime(
      context,
      spicepod({
        aws: context.aws.info,
        prefix: PREFIX,
        direct: true,
        datasets: ENGINES.map(({ engine, dataset }) => ({ name: dataset, engine, interval: '1m' })),
      }),
    );
    const echoWorker = startEcho();
    const echo = new LoadTotals();
    const cells: Cell[] = [];
    try {
      await runtime.ready(undefined, { timeoutMs: 120_000 });
      for (const engineInfo of ENGINES) {
        const db = await openEngine(engineInfo.engine, files.get(engineInfo.engine)?.path ?? '', {
          table: engineInfo.dataset,
        });
        try {
          for (const query of QUERIES) {
            const sql = query.sql(engineInfo.dataset);
            const viaFerry = () => runtime.query(sql, query.params(rows));
            const viaEngine = () => db.query(sql, query.params(rows));
            // Prime both paths: the first queries start pool threads and open files.
            for (let n = 0; n < 20; n++) await Promise.all([viaFerry(), viaEngine()]);
            const totals = { direct: new LoadTotals(), ferry1: new LoadTotals(), ferry64: new LoadTotals() };
            // Interleaved slices, so load from other work on the machine falls on every side alike.
            for (let round = 0; round < rounds; round++) {
              await runLoad({ clients: 1, ...short, operation: viaEngine }, totals.direct);
              await runLoad({ clients: 1, ...short, operation: viaFerry }, totals.ferry1);
              await runLoad({ clients: 1, ...short, operation: echoWorker.roundTrip }, echo);
              await runLoad({ clients: 64, ...long, operation: viaFerry }, totals.ferry64);
            }
            const cell: Cell = {
              engine: engineInfo,
              query,
              direct: totals.direct.result(),
              ferry1: totals.ferry1.result(),
              ferry64: totals.ferry64.result(),
            };
            cells.push(cell);
            context.log(
              `${engineInfo.label} ${query.label}: direct p50 ${cell.direct.latency.p50Ms.toFixed(3)} ms ${Math.round(cell.direct.throughput)} ops/s; Ferry 1 client p50 ${cell.ferry1.latency.p50Ms.toFixed(3)} ms; 64 clients ${Math.round(cell.ferry64.throughput)} ops/s`,
            );
          }
        } finally {
          await db.close();
        }
      }
    } finally {
      await echoWorker.stop();
      await runtime.close();
    }
    const echoResult = echo.result();

    const measurements: Measurement[] = [
      {
        group: 'baseline: bare worker echo',
        metric: 'round trip p50',
        unit: 'ms',
        value: echoResult.latency.p50Ms,
      },
      {
        group: 'baseline: bare worker echo',
        metric: 'round trip p99',
        unit: 'ms',
        value: echoResult.latency.p99Ms,
      },
    ];
    const goals: GoalCheck[] = [];
    const notes: string[] = [
      `Tables: ${rows.toLocaleString('en-US')} rows (id, version, category, amount, qty, note); DuckDB file ${formatValue(
        (files.get('duckdb')?.size ?? 0) / 2 ** 20,
        'MiB',
      )}, SQLite file ${formatValue((files.get('sqlite')?.size ?? 0) / 2 ** 20, 'MiB')} (INTEGER PRIMARY KEY on id).`,
      `Echo floor: p50 ${echoResult.latency.p50Ms.toFixed(3)} ms, p99 ${echoResult.latency.p99Ms.toFixed(3)} ms over ${echoResult.completed} round trips.`,
      'Direct baseline: one client issuing queries back to back on this thread through @ferry/engines (DuckDB may still use its own threads inside one query).',
      `Each cell interleaves ${rounds} round(s) of: direct (1 client, ${short.durationMs / 1000} s), Ferry (1 client, ${short.durationMs / 1000} s), echo (${short.durationMs / 1000} s), Ferry (64 clients, ${long.durationMs / 1000} s after ${long.warmupMs / 1000} s of warm-up); results are the sums of the slices.`,
    ];
    for (const cell of cells) {
      const group = `${cell.engine.label} ${cell.query.label}`;
      const baseLabel = 'direct, 1 thread';
      const added = cell.ferry1.latency.p50Ms - cell.direct.latency.p50Ms;
      const addedRatio = ratio(added, echoResult.latency.p50Ms);
      const tputRatio = ratio(cell.ferry64.throughput, cell.direct.throughput);
      measurements.push(
        {
          group,
          metric: 'p50 latency, 1 client',
          unit: 'ms',
          value: cell.ferry1.latency.p50Ms,
          baseline: cell.direct.latency.p50Ms,
          baselineLabel: baseLabel,
          ratio: ratio(cell.ferry1.latency.p50Ms, cell.direct.latency.p50Ms),
        },
        {
          group,
          metric: 'p99 latency, 1 client',
          unit: 'ms',
          value: cell.ferry1.latency.p99Ms,
          baseline: cell.direct.latency.p99Ms,
          baselineLabel: baseLabel,
          ratio: ratio(cell.ferry1.latency.p99Ms, cell.direct.latency.p99Ms),
        },
        {
          group,
          metric: 'latency added over direct (p50), ratio to echo p50',
          unit: 'ms',
          value: added,
          baseline: echoResult.latency.p50Ms,
          baselineLabel: 'echo p50',
          ratio: addedRatio,
        },
        {
          group,
          metric: 'throughput, 1 client',
          unit: 'ops/s',
          value: cell.ferry1.throughput,
          baseline: cell.direct.throughput,
          baselineLabel: baseLabel,
          ratio: ratio(cell.ferry1.throughput, cell.direct.throughput),
        },
        {
          group,
          metric: 'throughput, 64 clients',
          unit: 'ops/s',
          value: cell.ferry64.throughput,
          baseline: cell.direct.throughput,
          baselineLabel: baseLabel,
          ratio: tputRatio,
        },
        {
          group,
          metric: 'p50 latency, 64 clients',
          unit: 'ms',
          value: cell.ferry64.latency.p50Ms,
          baseline: cell.direct.latency.p50Ms,
          baselineLabel: baseLabel,
          ratio: ratio(cell.ferry64.latency.p50Ms, cell.direct.latency.p50Ms),
        },
        {
          group,
          metric: 'p99 latency, 64 clients',
          unit: 'ms',
          value: cell.ferry64.latency.p99Ms,
          baseline: cell.direct.latency.p99Ms,
          baselineLabel: baseLabel,
          ratio: ratio(cell.ferry64.latency.p99Ms, cell.direct.latency.p99Ms),
        },
      );
      goals.push({
        goal: `${group}: latency added over direct ≤ 1.2× echo floor`,
        measured: `${formatValue(added, 'ms')} added vs echo ${formatValue(echoResult.latency.p50Ms, 'ms')} = ${formatRatio(addedRatio)}`,
        met: addedRatio <= 1.2,
      });
      const target = cell.query.kind === 'point' ? 0.9 : cell.engine.engine === 'sqlite' ? 1.7 : 1.0;
      goals.push({
        goal: `${group}: throughput at 64 clients ≥ ${target}× direct single-thread`,
        measured: `${formatValue(cell.ferry64.throughput, 'ops/s')} vs ${formatValue(cell.direct.throughput, 'ops/s')} = ${formatRatio(tputRatio)}`,
        met: tputRatio >= target,
      });
      const failure = failureNote(group, cell.ferry1, cell.ferry64, cell.direct);
      if (failure !== undefined) notes.push(failure);
    }
    const logged = loggedErrorsNote(logger);
    if (logged !== undefined) notes.push(logged);
    return {
      measurements,
      goals,
      notes,
      raw: {
        rows,
        echo: echoResult,
        cells: cells.map((cell) => ({ ...cell, query: cell.query.kind, engine: cell.engine.engine })),
      },
    };
  },
};
