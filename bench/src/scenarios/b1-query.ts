/**
 * B1 query: the query path against the engines called directly, through the embed API
 * (`runtime.query`), on 200,000-row DuckDB and SQLite files. Baselines in the same run: the same SQL
 * on the same file through the engine library on this thread — the best a user would write
 * without Ferry (a prepared statement reused for bound parameters; `runAndReadAll(text)` /
 * `prepare(text).all()` for a text seen once) — a single-threaded one for the 64-client
 * scans (DuckDB `threads=1`), and the hop floor: the larger of a bare worker echo and a bare piscina
 * task, the two ways a query leaves this thread.
 *
 * Cells: point lookups with a bound parameter on both engines; a DuckDB aggregate with a literal in
 * its text (a new text every query, as dashboards send them); an SQLite aggregate with a bound
 * parameter; and texts seen for the first time: new literals (a shape seen before) and new shapes
 * (a new alias: parsed from scratch) of the aggregate on both engines. Then overload: a runtime
 * admitting `CAP` queries at once under 4 × `CAP` clients, against the same runtime at `CAP` clients.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import type { FileFormat, JsonValue } from '@ferry/core';
import { QueryRejectedError, type Runtime } from '@ferry/runtime';
import { queryAdmission } from '@ferry/runtime/testing';
import Database from 'better-sqlite3';
import { Piscina } from 'piscina';
import { preparedRunner } from '../direct-duckdb.js';
import { formatRatio, formatValue } from '../format.js';
import { latencySeries, loggedErrorsNote, startRuntime } from '../harness.js';
import { LatencyRecorder } from '../histogram.js';
import { failureNote, type LoadResult, LoadTotals, runLoad } from '../load.js';
import { publishQueryDatasets } from '../query-datasets.js';
import { type GoalCheck, type LatencyPlot, type Measurement, ratio, type Scenario } from '../scenario.js';

const PREFIX = 'b1/';
const DUCK = 'q_duck';
const LITE = 'q_lite';
/** Queries the overload runtime admits at once; its load is four times as many clients. */
const CAP = 16;

/** The aggregate every aggregate cell runs; `literal` in its WHERE, `alias` for its sum. */
function aggregate(table: string, literal: string, alias = 'total'): string {
  return `SELECT category, count(*) AS n, sum(amount) AS ${alias}, avg(qty) AS mean_qty FROM ${table} WHERE qty < ${literal} GROUP BY category ORDER BY category`;
}

/** One way to run a cell's statement: its text and parameters for the n-th query. */
type Statement = (n: number) => { readonly sql: string; readonly params: readonly JsonValue[] };

interface CellSpec {
  readonly id: string;
  readonly label: string;
  readonly engine: FileFormat;
  readonly kind: 'point' | 'aggregate';
  /** How the text varies: a bound parameter, a new literal (its shape known), a new shape. */
  readonly text: 'bound' | 'literal' | 'new shape';
  readonly statement: Statement;
  /** Judged at 64 clients (the first-seen cells are judged at 1 client only). */
  readonly clients64: boolean;
  /** Judged against direct + 2 floors (else: against 1.2 × direct, a text seen for the first time). */
  readonly floorGoal: boolean;
}

let rowCount = 200_000;
const randomId = () => Math.floor(Math.random() * rowCount);

const CELLS: readonly CellSpec[] = [
  {
    id: 'duck-point',
    label: 'DuckDB point lookup, bound parameter',
    engine: 'duckdb',
    kind: 'point',
    text: 'bound',
    statement: () => ({ sql: `SELECT * FROM ${DUCK} WHERE id = ?`, params: [randomId()] }),
    clients64: true,
    floorGoal: true,
  },
  {
    id: 'lite-point',
    label: 'SQLite point lookup, bound parameter',
    engine: 'sqlite',
    kind: 'point',
    text: 'bound',
    statement: () => ({ sql: `SELECT * FROM ${LITE} WHERE id = ?`, params: [randomId()] }),
    clients64: true,
    floorGoal: true,
  },
  {
    id: 'duck-agg-literal',
    label: 'DuckDB aggregate, a literal in its text (a new text every query)',
    engine: 'duckdb',
    kind: 'aggregate',
    text: 'literal',
    statement: (n) => ({ sql: aggregate(DUCK, String(7 + n)), params: [] }),
    clients64: true,
    floorGoal: true,
  },
  {
    id: 'lite-agg-bound',
    label: 'SQLite aggregate, bound parameter',
    engine: 'sqlite',
    kind: 'aggregate',
    text: 'bound',
    statement: () => ({ sql: aggregate(LITE, '?'), params: [100] }),
    clients64: true,
    floorGoal: true,
  },
  {
    id: 'duck-agg-shape',
    label: 'DuckDB aggregate, a new shape every query (first seen)',
    engine: 'duckdb',
    kind: 'aggregate',
    text: 'new shape',
    statement: (n) => ({ sql: aggregate(DUCK, '100', `total_${n}`), params: [] }),
    clients64: false,
    floorGoal: false,
  },
  {
    id: 'lite-agg-literal',
    label: 'SQLite aggregate, a literal in its text (a new text every query)',
    engine: 'sqlite',
    kind: 'aggregate',
    text: 'literal',
    statement: (n) => ({ sql: aggregate(LITE, String(7 + n)), params: [] }),
    clients64: false,
    floorGoal: false,
  },
  {
    id: 'lite-agg-shape',
    label: 'SQLite aggregate, a new shape every query (first seen)',
    engine: 'sqlite',
    kind: 'aggregate',
    text: 'new shape',
    statement: (n) => ({ sql: aggregate(LITE, '100', `total_${n}`), params: [] }),
    clients64: false,
    floorGoal: false,
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

/** The engine library on the same file, this thread. */
interface Direct {
  /** A statement prepared once and reused (bound parameters), or the text run as it is. */
  run(sql: string, params: readonly JsonValue[], prepared: boolean): Promise<unknown>;
  close(): void;
}

async function directDuckDb(path: string, threads?: number): Promise<Direct> {
  const instance = await DuckDBInstance.create(path, {
    access_mode: 'READ_ONLY',
    ...(threads === undefined ? {} : { threads: String(threads) }),
  });
  const connection: DuckDBConnection = await instance.connect();
  const runner = preparedRunner(connection);
  return {
    run: async (sql, params, prepared) =>
      prepared ? runner.run(sql, params) : (await connection.runAndReadAll(sql)).getRowObjectsJson(),
    close() {
      runner.close();
      connection.closeSync();
      instance.closeSync();
    },
  };
}

function directSqlite(path: string): Direct {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  const statements = new Map<string, Database.Statement>();
  return {
    async run(sql, params, prepared) {
      if (!prepared) return db.prepare(sql).all(...params);
      let statement = statements.get(sql);
      if (statement === undefined) {
        statement = db.prepare(sql);
        statements.set(sql, statement);
      }
      return statement.all(...params);
    },
    close() {
      db.close();
    },
  };
}

interface Cell {
  readonly spec: CellSpec;
  readonly direct: LoadResult;
  /** The single-threaded direct baseline of the 64-client goal (DuckDB threads=1; SQLite is one thread). */
  readonly single: LoadResult | undefined;
  readonly ferry1: LoadResult;
  readonly ferry64: LoadResult | undefined;
}

interface Overload {
  readonly atCap: LoadResult;
  readonly admitted: LoadResult;
  readonly refusals: number;
  readonly refusalLatency: ReturnType<LatencyRecorder['summary']>;
  readonly maxAdmitted: number;
}

/**
 * `clients` closed-loop clients of the overload runtime for `durationMs`: a refused query is
 * counted with the time its refusal took, and its client waits 2 ms (a client honouring
 * Retry-After would wait its seconds; this keeps the refused ones asking).
 */
async function overloadWindow(
  runtime: Runtime,
  clients: number,
  durationMs: number,
  statement: Statement,
): Promise<{ admitted: LoadResult; refusals: number; refusal: LatencyRecorder; maxAdmitted: number }> {
  const totals = new LoadTotals();
  const refusal = new LatencyRecorder();
  let refusals = 0;
  let maxAdmitted = 0;
  let n = 0;
  const sampler = setInterval(() => {
    maxAdmitted = Math.max(maxAdmitted, queryAdmission(runtime).inFlight);
  }, 5);
  const until = performance.now() + durationMs;
  totals.clients = clients;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < until) {
        const { sql, params } = statement(n++);
        const began = performance.now();
        try {
          await runtime.query(sql, params);
          totals.latency.recordMs(performance.now() - began);
          totals.completed++;
        } catch (error) {
          if (!(error instanceof QueryRejectedError)) {
            totals.failed++;
            if (totals.errors.length < 5) totals.errors.push((error as Error).message);
            continue;
          }
          refusals++;
          refusal.recordMs(performance.now() - began);
          await new Promise((resolve) => setTimeout(resolve, 2));
        }
      }
    }),
  );
  clearInterval(sampler);
  totals.measuredMs += durationMs;
  return { admitted: totals.result(), refusals, refusal, maxAdmitted };
}

export const b1: Scenario = {
  id: 'b1',
  title: 'B1 query',
  measures:
    'latency (p50/p99) and throughput of point lookups and aggregates, 1 and 64 clients, DuckDB and SQLite, bound parameters and literal texts, through the embed API; texts seen for the first time; admission under 4 × the in-flight cap',
  baseline:
    'the engine library on the same file on one thread (a prepared statement reused; `runAndReadAll(text)` / `prepare(text).all()` for a text seen once), single-threaded for 64-client aggregates (DuckDB threads=1); the hop floor = max(bare worker echo, bare piscina task)',
  goal: '1 client p50 ≤ direct + 2 floors (both point lookups, the DuckDB aggregate with a literal, the SQLite aggregate bound); a text seen for the first time ≤ 1.2 × the engine run on that text; 64 clients: point lookups ≥ 1.0 × direct single-thread, aggregates ≥ 1.8 × a single-threaded direct baseline; overload: never more than the cap in flight, refusals at once, throughput at 4 × the cap ≥ 0.9 × at the cap',
  async run(context) {
    rowCount = context.quick ? 20_000 : 200_000;
    const rows = rowCount;
    const rounds = context.quick ? 1 : 2;
    const short = context.quick ? { warmupMs: 200, durationMs: 600 } : { warmupMs: 300, durationMs: 1200 };
    const long = context.quick ? { warmupMs: 500, durationMs: 1000 } : { warmupMs: 2000, durationMs: 2000 };
    const floorSlice = context.quick
      ? { warmupMs: 100, durationMs: 300 }
      : { warmupMs: 200, durationMs: 600 };

    const { files, pod } = await publishQueryDatasets(context, PREFIX, { duckdb: DUCK, sqlite: LITE }, rows);
    const { runtime, logger } = await startRuntime(context, pod);
    const echo = startEcho();
    const tasks = startBareTasks();
    const echoTotals = new LoadTotals();
    const taskTotals = new LoadTotals();
    const cells: Cell[] = [];
    let overload: Overload | undefined;
    try {
      await runtime.ready(undefined, { timeoutMs: 120_000 });
      const direct = {
        duckdb: await directDuckDb(files.get('duckdb')?.path ?? ''),
        duckdbSingle: await directDuckDb(files.get('duckdb')?.path ?? '', 1),
        sqlite: directSqlite(files.get('sqlite')?.path ?? ''),
      };
      try {
        for (const spec of CELLS) {
          const { statement } = spec;
          const prepared = spec.text === 'bound';
          let n = 0;
          const viaFerry = () => {
            const { sql, params } = statement(n++);
            return runtime.query(sql, params);
          };
          const engineOf = (single: boolean): Direct =>
            spec.engine === 'duckdb' ? (single ? direct.duckdbSingle : direct.duckdb) : direct.sqlite;
          const viaEngine = (single: boolean) => () => {
            const { sql, params } = statement(n++);
            return engineOf(single).run(sql, params, prepared);
          };
          // Prime every path: the first queries start pool threads, open files, prepare statements.
          for (let k = 0; k < 20; k++) {
            await Promise.all([viaFerry(), viaEngine(false)(), echo.roundTrip(), tasks.roundTrip()]);
          }
          const totals = {
            direct: new LoadTotals(),
            single: new LoadTotals(),
            ferry1: new LoadTotals(),
            ferry64: new LoadTotals(),
          };
          // Interleaved slices, so load from other work on the machine falls on every side alike.
          for (let round = 0; round < rounds; round++) {
            await runLoad({ clients: 1, ...short, operation: viaEngine(false) }, totals.direct);
            await runLoad({ clients: 1, ...short, operation: viaFerry }, totals.ferry1);
            await runLoad({ clients: 1, ...floorSlice, operation: echo.roundTrip }, echoTotals);
            await runLoad({ clients: 1, ...floorSlice, operation: tasks.roundTrip }, taskTotals);
            if (spec.clients64) {
              if (spec.kind === 'aggregate' && spec.engine === 'duckdb') {
                await runLoad({ clients: 1, ...short, operation: viaEngine(true) }, totals.single);
              }
              await runLoad({ clients: 64, ...long, operation: viaFerry }, totals.ferry64);
            }
          }
          const directResult = totals.direct.result();
          const cell: Cell = {
            spec,
            direct: directResult,
            single: !spec.clients64
              ? undefined
              : spec.kind === 'aggregate' && spec.engine === 'duckdb'
                ? totals.single.result()
                : directResult,
            ferry1: totals.ferry1.result(),
            ferry64: spec.clients64 ? totals.ferry64.result() : undefined,
          };
          cells.push(cell);
          context.log(
            `${spec.label}: direct p50 ${cell.direct.latency.p50Ms.toFixed(3)} ms; Ferry 1 client p50 ${cell.ferry1.latency.p50Ms.toFixed(3)} ms${cell.ferry64 === undefined ? '' : `; 64 clients ${Math.round(cell.ferry64.throughput)} ops/s vs single-thread ${Math.round(cell.single?.throughput ?? Number.NaN)} ops/s`}`,
          );
        }
      } finally {
        direct.duckdb.close();
        direct.duckdbSingle.close();
        direct.sqlite.close();
      }
    } finally {
      await Promise.all([echo.stop(), tasks.stop()]);
      await runtime.close();
    }

    // Overload: a runtime admitting CAP queries, at CAP clients and at 4 × CAP.
    context.log(`overload: a runtime admitting ${CAP} queries, at ${CAP} and ${4 * CAP} clients`);
    const capped = await startRuntime(context, pod, { maxQueriesInFlight: CAP });
    try {
      await capped.runtime.ready(undefined, { timeoutMs: 120_000 });
      const statement: Statement = (n) =>
        n % 2 === 0
          ? { sql: aggregate(DUCK, String(7 + n)), params: [] }
          : { sql: `SELECT * FROM ${LITE} WHERE id = ?`, params: [randomId()] };
      for (let k = 0; k < 50; k++) {
        const { sql, params } = statement(k);
        await capped.runtime.query(sql, params);
      }
      const duration = context.quick ? 1_500 : 4_000;
      const atCap = await overloadWindow(capped.runtime, CAP, duration, statement);
      const over = await overloadWindow(capped.runtime, 4 * CAP, duration, statement);
      overload = {
        atCap: atCap.admitted,
        admitted: over.admitted,
        refusals: over.refusals,
        refusalLatency: over.refusal.summary(),
        maxAdmitted: Math.max(atCap.maxAdmitted, over.maxAdmitted),
      };
    } finally {
      await capped.runtime.close();
    }

    const echoFloor = echoTotals.result();
    const taskFloor = taskTotals.result();
    const floor = Math.max(echoFloor.latency.p50Ms, taskFloor.latency.p50Ms);
    const measurements: Measurement[] = [
      {
        group: 'hop floor',
        metric: 'bare worker echo p50',
        unit: 'ms',
        kind: 'latency',
        value: echoFloor.latency.p50Ms,
      },
      {
        group: 'hop floor',
        metric: 'bare piscina task p50',
        unit: 'ms',
        kind: 'latency',
        value: taskFloor.latency.p50Ms,
      },
      { group: 'hop floor', metric: 'floor = the larger p50', unit: 'ms', kind: 'latency', value: floor },
    ];
    const goals: GoalCheck[] = [];
    const latencies: LatencyPlot[] = cells.map((cell) => ({
      title: cell.spec.label,
      series: [
        latencySeries('Ferry, 1 client', cell.ferry1.latency),
        ...(cell.ferry64 === undefined ? [] : [latencySeries('Ferry, 64 clients', cell.ferry64.latency)]),
        latencySeries('direct, 1 thread', cell.direct.latency),
        latencySeries('bare worker echo', echoFloor.latency),
        latencySeries('bare piscina task', taskFloor.latency),
      ],
    }));
    if (overload !== undefined) {
      latencies.push({
        title: `overload: cap ${CAP}`,
        series: [
          latencySeries(`admitted, ${CAP} clients`, overload.atCap.latency),
          latencySeries(`admitted, ${4 * CAP} clients`, overload.admitted.latency),
          latencySeries(`refused, ${4 * CAP} clients`, overload.refusalLatency),
        ],
      });
    }
    const notes: string[] = [
      `Tables: ${rows.toLocaleString('en-US')} rows (id, version, category, amount, qty, note); DuckDB file ${formatValue(
        (files.get('duckdb')?.size ?? 0) / 2 ** 20,
        'MiB',
      )}, SQLite file ${formatValue((files.get('sqlite')?.size ?? 0) / 2 ** 20, 'MiB')} (INTEGER PRIMARY KEY on id).`,
      'Direct baseline: one client on this thread through the engine library on the same file. Bound parameters: the statement prepared once and reused (DuckDB: bind, runAndReadAll, getRowObjectsJson; SQLite: all()). A literal or a new shape: the text run as it is (DuckDB runAndReadAll(text); SQLite prepare(text).all()), each query a new text. The 64-client aggregate baseline is single-threaded: DuckDB with threads=1 (SQLite is single-threaded).',
      `Hop floor: the larger p50 of a bare worker echo (postMessage there and back) and a bare piscina task (atomics 'sync', ${availableParallelism()} threads), each measured in slices between every cell's slices.`,
      `Each cell interleaves ${rounds} round(s) of: direct (1 client, ${short.durationMs / 1000} s), Ferry (1 client, ${short.durationMs / 1000} s), the two floors (${floorSlice.durationMs / 1000} s each) and, for the cells judged at 64 clients, the single-threaded baseline and Ferry at 64 clients (${long.durationMs / 1000} s after ${long.warmupMs / 1000} s of warm-up); results are the sums of the slices.`,
    ];
    for (const cell of cells) {
      const { spec } = cell;
      const group = spec.label;
      const directP50 = cell.direct.latency.p50Ms;
      const ferry = cell.ferry1.latency.p50Ms;
      const added = ferry - directP50;
      measurements.push(
        {
          group,
          metric: 'p50 latency, 1 client',
          unit: 'ms',
          kind: 'latency',
          value: ferry,
          baseline: directP50,
          baselineLabel: 'direct, 1 thread',
          ratio: ratio(ferry, directP50),
        },
        {
          group,
          metric: 'p99 latency, 1 client',
          unit: 'ms',
          kind: 'latency',
          value: cell.ferry1.latency.p99Ms,
          baseline: cell.direct.latency.p99Ms,
          baselineLabel: 'direct, 1 thread',
          ratio: ratio(cell.ferry1.latency.p99Ms, cell.direct.latency.p99Ms),
        },
        {
          group,
          metric: 'latency added over direct (p50), in hop floors',
          unit: 'ms',
          value: added,
          baseline: floor,
          baselineLabel: 'hop floor p50',
          ratio: ratio(added, floor),
        },
      );
      if (spec.floorGoal) {
        const limit = directP50 + 2 * floor;
        goals.push({
          goal: `${group}: p50 at 1 client ≤ direct + 2 floors`,
          measured: `${formatValue(ferry, 'ms')} vs ${formatValue(directP50, 'ms')} + 2 × ${formatValue(floor, 'ms')} = ${formatValue(limit, 'ms')} (${formatValue(added, 'ms')} added = ${formatRatio(ratio(added, floor))} floors)`,
          met: ferry <= limit,
        });
      }
      if (spec.text !== 'bound') {
        goals.push({
          goal: `${group}: a text seen for the first time, p50 ≤ 1.2 × the engine run on that text`,
          measured: `${formatValue(ferry, 'ms')} vs ${formatValue(directP50, 'ms')} = ${formatRatio(ratio(ferry, directP50))}`,
          met: ratio(ferry, directP50) <= 1.2,
        });
      }
      if (cell.ferry64 !== undefined && cell.single !== undefined) {
        const tput = ratio(cell.ferry64.throughput, cell.single.throughput);
        const target = spec.kind === 'point' ? 1.0 : 1.8;
        const baseLabel =
          spec.engine === 'duckdb' && spec.kind === 'aggregate' ? 'direct, threads=1' : 'direct, 1 thread';
        measurements.push(
          {
            group,
            metric: 'throughput, 64 clients',
            unit: 'ops/s',
            value: cell.ferry64.throughput,
            baseline: cell.single.throughput,
            baselineLabel: baseLabel,
            ratio: tput,
          },
          {
            group,
            metric: 'p99 latency, 64 clients',
            unit: 'ms',
            kind: 'latency',
            value: cell.ferry64.latency.p99Ms,
          },
        );
        goals.push({
          goal: `${group}: throughput at 64 clients ≥ ${target.toFixed(1)} × ${baseLabel}`,
          measured: `${formatValue(cell.ferry64.throughput, 'ops/s')} vs ${formatValue(cell.single.throughput, 'ops/s')} = ${formatRatio(tput)}`,
          met: tput >= target,
        });
      }
      const failure = failureNote(
        group,
        cell.ferry1,
        ...(cell.ferry64 === undefined ? [] : [cell.ferry64]),
        cell.direct,
      );
      if (failure !== undefined) notes.push(failure);
    }
    if (overload !== undefined) {
      const group = `overload: cap ${CAP}, ${4 * CAP} clients`;
      const { atCap, admitted, refusals, refusalLatency } = overload;
      const offered = admitted.completed + refusals;
      const kept = ratio(admitted.throughput, atCap.throughput);
      measurements.push(
        {
          group,
          metric: 'throughput admitted, 4 × cap clients',
          unit: 'ops/s',
          value: admitted.throughput,
          baseline: atCap.throughput,
          baselineLabel: `${CAP} clients`,
          ratio: kept,
        },
        { group, metric: 'refused', unit: '%', value: offered === 0 ? 0 : (100 * refusals) / offered },
        { group, metric: 'refusal p50', unit: 'ms', kind: 'latency', value: refusalLatency.p50Ms },
        { group, metric: 'refusal p99', unit: 'ms', kind: 'latency', value: refusalLatency.p99Ms },
        {
          group,
          metric: 'admitted p50',
          unit: 'ms',
          value: admitted.latency.p50Ms,
          baseline: atCap.latency.p50Ms,
          baselineLabel: `${CAP} clients`,
        },
        {
          group,
          metric: 'admitted p99',
          unit: 'ms',
          value: admitted.latency.p99Ms,
          baseline: atCap.latency.p99Ms,
          baselineLabel: `${CAP} clients`,
        },
        {
          group,
          metric: 'most queries admitted at once (sampled)',
          unit: 'count',
          value: overload.maxAdmitted,
        },
      );
      goals.push(
        {
          goal: `${group}: never more than the cap in flight`,
          measured: `at most ${overload.maxAdmitted} admitted (sampled every 5 ms) of a cap of ${CAP}`,
          met: overload.maxAdmitted <= CAP,
        },
        {
          goal: `${group}: a query past the cap is refused at once (refusal p99 ≤ 1 ms)`,
          measured: `${refusals} refused, p99 ${formatValue(refusalLatency.p99Ms, 'ms')}`,
          met: refusals > 0 && refusalLatency.p99Ms <= 1,
        },
        {
          goal: `${group}: throughput of the admitted queries ≥ 0.9 × at the cap`,
          measured: `${formatValue(admitted.throughput, 'ops/s')} vs ${formatValue(atCap.throughput, 'ops/s')} = ${formatRatio(kept)}`,
          met: kept >= 0.9,
        },
      );
      notes.push(
        `Overload: a second runtime on the same files with maxQueriesInFlight ${CAP}; the load alternates the DuckDB aggregate with a literal and the SQLite point lookup; a refused client waits 2 ms and asks again (one honouring Retry-After would wait its seconds). Admitted p50/p99 at ${4 * CAP} clients: ${formatValue(admitted.latency.p50Ms, 'ms')} / ${formatValue(admitted.latency.p99Ms, 'ms')} (at ${CAP} clients: ${formatValue(atCap.latency.p50Ms, 'ms')} / ${formatValue(atCap.latency.p99Ms, 'ms')}).`,
      );
      const failure = failureNote(group, admitted, atCap);
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
        floor: { echo: echoFloor, task: taskFloor },
        cells: cells.map((cell) => ({ ...cell, spec: { ...cell.spec, statement: undefined } })),
        overload,
      },
    };
  },
};
