/**
 * B1 query: latency and throughput of point lookups and a scan/aggregate through the embed API,
 * DuckDB and SQLite, at 1 and 64 concurrent clients. Baselines in the same run: the same SQL on the
 * same file through the engine library itself (`@duckdb/node-api`, `better-sqlite3`) on this
 * thread with its prepared statement reused — the best a user would write without Ferry — and the
 * hop floor of the path the query takes: a bare worker-thread echo (postMessage there and back,
 * as the DuckDB query pool talks to its workers) and a bare task through a piscina pool set up
 * like the SQLite read pool.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { DuckDBInstance } from '@duckdb/node-api';
import type { FileFormat, JsonValue } from '@ferry/core';
import Database from 'better-sqlite3';
import { Piscina } from 'piscina';
import { type BuiltFile, buildFile, keyedColumns, QUERY_COLUMNS } from '../data.js';
import { preparedRunner } from '../direct-duckdb.js';
import { formatRatio, formatValue } from '../format.js';
import { latencySeries, loggedErrorsNote, startRuntime } from '../harness.js';
import { failureNote, type LoadResult, LoadTotals, runLoad } from '../load.js';
import { type GoalCheck, type LatencyPlot, type Measurement, ratio, type Scenario } from '../scenario.js';
import { locationOf, spicepod } from '../spicepod.js';

const PREFIX = 'b1/';

/** The thread hop a query takes: the DuckDB pool's messages, or the SQLite pool's piscina tasks. */
type Hop = 'echo' | 'task';

const ENGINES: readonly { engine: FileFormat; label: string; dataset: string; hop: Hop }[] = [
  { engine: 'duckdb', label: 'DuckDB', dataset: 'q_duck', hop: 'echo' },
  { engine: 'sqlite', label: 'SQLite', dataset: 'q_lite', hop: 'task' },
];

const HOP_LABEL: Readonly<Record<Hop, string>> = {
  echo: 'bare worker echo',
  task: 'bare pool task',
};

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

/** A piscina pool configured as the SQLite read pool, running a task that returns its argument. */
function startBareTasks(): { roundTrip(): Promise<unknown>; stop(): Promise<void> } {
  const pool = new Piscina({
    filename: new URL('../bare-task.js', import.meta.url).href,
    minThreads: 0,
    maxThreads: availableParallelism(),
    idleTimeout: 30_000,
    atomics: 'sync',
  });
  let next = 0;
  return {
    roundTrip: () => pool.run({ queries: [{ sql: 'SELECT * FROM q WHERE id = ?', params: [next++] }] }),
    stop: () => pool.destroy(),
  };
}

/** The engine library on the same file, this thread, each statement prepared once and reused. */
interface Direct {
  run(sql: string, params: readonly JsonValue[]): Promise<unknown>;
  close(): void;
}

async function directDuckDb(path: string): Promise<Direct> {
  const instance = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
  const connection = await instance.connect();
  const runner = preparedRunner(connection);
  return {
    run: runner.run,
    close() {
      runner.close();
      connection.closeSync();
      instance.closeSync();
    },
  };
}

function directSqlite(path: string): Direct {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  const prepared = new Map<string, Database.Statement>();
  return {
    async run(sql, params) {
      let statement = prepared.get(sql);
      if (statement === undefined) {
        statement = db.prepare(sql);
        prepared.set(sql, statement);
      }
      return statement.all(...params);
    },
    close() {
      db.close();
    },
  };
}

interface Cell {
  readonly engine: (typeof ENGINES)[number];
  readonly query: QueryKind;
  readonly direct: LoadResult;
  /** The hop floor of the path this cell's queries take, measured in slices between the cell's. */
  readonly floor: LoadResult;
  readonly ferry1: LoadResult;
  readonly ferry64: LoadResult;
}

export const b1: Scenario = {
  id: 'b1',
  title: 'B1 query',
  measures:
    'latency (p50/p99) and throughput of point lookups and a scan/aggregate, 1 and 64 concurrent clients, DuckDB and SQLite, through the embed API',
  baseline:
    '(a) the same SQL on the same file through the engine library (@duckdb/node-api, better-sqlite3) on one thread, its prepared statement reused; (b) the hop floor of the path: a bare worker-thread echo (DuckDB query pool) or a bare piscina task (SQLite read pool)',
  goal: '1 client, p50: Ferry ≤ direct + 2 × the hop floor of its path, for point lookups and scans on both engines (a scan never slower than direct + that floor: no query runs twice); 64 clients: point lookups ≥ 0.9× direct single-thread, scans/aggregates ≥ 1.8× direct (2 cores), both engines',
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
    const bareTasks = startBareTasks();
    const hops: Record<Hop, () => Promise<unknown>> = {
      echo: echoWorker.roundTrip,
      task: bareTasks.roundTrip,
    };
    const cells: Cell[] = [];
    try {
      await runtime.ready(undefined, { timeoutMs: 120_000 });
      for (const engineInfo of ENGINES) {
        const path = files.get(engineInfo.engine)?.path ?? '';
        const db = engineInfo.engine === 'duckdb' ? await directDuckDb(path) : directSqlite(path);
        const hop = hops[engineInfo.hop];
        try {
          for (const query of QUERIES) {
            const sql = query.sql(engineInfo.dataset);
            const viaFerry = () => runtime.query(sql, query.params(rows));
            const viaEngine = () => db.run(sql, query.params(rows));
            // Prime every path: the first queries start pool threads, open files, prepare statements.
            for (let n = 0; n < 20; n++) await Promise.all([viaFerry(), viaEngine(), hop()]);
            const totals = {
              direct: new LoadTotals(),
              floor: new LoadTotals(),
              ferry1: new LoadTotals(),
              ferry64: new LoadTotals(),
            };
            // Interleaved slices, so load from other work on the machine falls on every side alike.
            for (let round = 0; round < rounds; round++) {
              await runLoad({ clients: 1, ...short, operation: viaEngine }, totals.direct);
              await runLoad({ clients: 1, ...short, operation: viaFerry }, totals.ferry1);
              await runLoad({ clients: 1, ...short, operation: hop }, totals.floor);
              await runLoad({ clients: 64, ...long, operation: viaFerry }, totals.ferry64);
            }
            const cell: Cell = {
              engine: engineInfo,
              query,
              direct: totals.direct.result(),
              floor: totals.floor.result(),
              ferry1: totals.ferry1.result(),
              ferry64: totals.ferry64.result(),
            };
            cells.push(cell);
            context.log(
              `${engineInfo.label} ${query.label}: direct p50 ${cell.direct.latency.p50Ms.toFixed(3)} ms ${Math.round(cell.direct.throughput)} ops/s; ${HOP_LABEL[engineInfo.hop]} p50 ${cell.floor.latency.p50Ms.toFixed(3)} ms; Ferry 1 client p50 ${cell.ferry1.latency.p50Ms.toFixed(3)} ms; 64 clients ${Math.round(cell.ferry64.throughput)} ops/s`,
            );
          }
        } finally {
          db.close();
        }
      }
    } finally {
      await Promise.all([echoWorker.stop(), bareTasks.stop()]);
      await runtime.close();
    }

    const measurements: Measurement[] = [];
    const goals: GoalCheck[] = [];
    const latencies: LatencyPlot[] = cells.map((cell) => ({
      title: `${cell.engine.label} ${cell.query.label}`,
      series: [
        latencySeries('Ferry, 1 client', cell.ferry1.latency),
        latencySeries('Ferry, 64 clients', cell.ferry64.latency),
        latencySeries('direct, 1 thread', cell.direct.latency),
        latencySeries(`hop floor: ${HOP_LABEL[cell.engine.hop]}`, cell.floor.latency),
      ],
    }));
    const notes: string[] = [
      `Tables: ${rows.toLocaleString('en-US')} rows (id, version, category, amount, qty, note); DuckDB file ${formatValue(
        (files.get('duckdb')?.size ?? 0) / 2 ** 20,
        'MiB',
      )}, SQLite file ${formatValue((files.get('sqlite')?.size ?? 0) / 2 ** 20, 'MiB')} (INTEGER PRIMARY KEY on id).`,
      'Direct baseline: one client issuing queries back to back on this thread through the engine library on the same file, the prepared statement reused (DuckDB: prepare once, bind, runAndReadAll, getRowObjectsJson; SQLite: prepare once, all()); DuckDB may still use its own threads inside one query.',
      `Hop floor: the DuckDB path's is a bare worker-thread echo (postMessage there and back); the SQLite path's is a bare task through a piscina pool set up like the SQLite read pool (atomics 'sync', ${availableParallelism()} threads). Each is measured in slices between its cells' slices.`,
      `Each cell interleaves ${rounds} round(s) of: direct (1 client, ${short.durationMs / 1000} s), Ferry (1 client, ${short.durationMs / 1000} s), its hop floor (${short.durationMs / 1000} s), Ferry (64 clients, ${long.durationMs / 1000} s after ${long.warmupMs / 1000} s of warm-up); results are the sums of the slices.`,
    ];
    for (const cell of cells) {
      const group = `${cell.engine.label} ${cell.query.label}`;
      const baseLabel = 'direct, 1 thread';
      const hopLabel = HOP_LABEL[cell.engine.hop];
      const floor = cell.floor.latency.p50Ms;
      const direct = cell.direct.latency.p50Ms;
      const ferry = cell.ferry1.latency.p50Ms;
      const added = ferry - direct;
      const tputRatio = ratio(cell.ferry64.throughput, cell.direct.throughput);
      measurements.push(
        {
          group,
          metric: `hop floor (${hopLabel}) p50`,
          unit: 'ms',
          kind: 'latency',
          value: floor,
        },
        {
          group,
          metric: `hop floor (${hopLabel}) p99`,
          unit: 'ms',
          kind: 'latency',
          value: cell.floor.latency.p99Ms,
        },
        {
          group,
          metric: 'p50 latency, 1 client',
          unit: 'ms',
          kind: 'latency',
          value: ferry,
          baseline: direct,
          baselineLabel: baseLabel,
          ratio: ratio(ferry, direct),
        },
        {
          group,
          metric: 'p99 latency, 1 client',
          unit: 'ms',
          kind: 'latency',
          value: cell.ferry1.latency.p99Ms,
          baseline: cell.direct.latency.p99Ms,
          baselineLabel: baseLabel,
          ratio: ratio(cell.ferry1.latency.p99Ms, cell.direct.latency.p99Ms),
        },
        {
          group,
          metric: `latency added over direct (p50), in hop floors`,
          unit: 'ms',
          value: added,
          baseline: floor,
          baselineLabel: `${hopLabel} p50`,
          ratio: ratio(added, floor),
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
          kind: 'latency',
          value: cell.ferry64.latency.p50Ms,
          baseline: direct,
          baselineLabel: baseLabel,
          ratio: ratio(cell.ferry64.latency.p50Ms, direct),
        },
        {
          group,
          metric: 'p99 latency, 64 clients',
          unit: 'ms',
          kind: 'latency',
          value: cell.ferry64.latency.p99Ms,
          baseline: cell.direct.latency.p99Ms,
          baselineLabel: baseLabel,
          ratio: ratio(cell.ferry64.latency.p99Ms, cell.direct.latency.p99Ms),
        },
      );
      const limit = direct + 2 * floor;
      goals.push({
        goal: `${group}: p50 at 1 client ≤ direct + 2 × hop floor (${hopLabel})`,
        measured: `${formatValue(ferry, 'ms')} vs ${formatValue(direct, 'ms')} + 2 × ${formatValue(floor, 'ms')} = ${formatValue(limit, 'ms')} (${formatValue(added, 'ms')} added = ${formatRatio(ratio(added, floor))} floors)`,
        met: ferry <= limit,
      });
      if (cell.query.kind === 'scan') {
        goals.push({
          goal: `${group}: never slower than direct + hop floor (no query runs twice), p50 at 1 client`,
          measured: `${formatValue(ferry, 'ms')} vs ${formatValue(direct, 'ms')} + ${formatValue(floor, 'ms')} = ${formatValue(direct + floor, 'ms')}`,
          met: ferry <= direct + floor,
        });
      }
      const target = cell.query.kind === 'point' ? 0.9 : 1.8;
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
      latencies,
      raw: {
        rows,
        cells: cells.map((cell) => ({
          ...cell,
          query: cell.query.kind,
          engine: cell.engine.engine,
          hop: cell.engine.hop,
        })),
      },
    };
  },
};
