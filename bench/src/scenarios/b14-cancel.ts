/**
 * B14 cancel: how long a statement stopped by the query timeout keeps running past it, on each
 * engine. A runtime with a short `queryTimeoutMs` runs runaway statements (a DuckDB cross join with
 * `range(10^12)`, an unbounded recursive CTE in SQLite) one after another; each answer's time past
 * the limit is how long the statement kept its core at most (the limit's own timer, the stop inside
 * the engine — DuckDB's interrupt, SQLite's progress handler — and the answer's way back). Then the
 * process's CPU over the next second says whether anything still runs. The baseline is the limit
 * itself: the answer's time is reported against it.
 */
import type { FileFormat } from '@ferry/core';
import { buildFile, keyedColumns } from '../data.js';
import { formatValue } from '../format.js';
import { loggedErrorsNote, startRuntime } from '../harness.js';
import { type GoalCheck, type Measurement, median, type Scenario } from '../scenario.js';
import { locationOf, spicepod } from '../spicepod.js';

const PREFIX = 'b14/';
const TIMEOUT_MS = 500;
const ENGINES: readonly { engine: FileFormat; label: string; dataset: string; runaway: string }[] = [
  {
    engine: 'duckdb',
    label: 'DuckDB',
    dataset: 'k_duck',
    runaway: 'SELECT count(*) AS n FROM k_duck, range(1000000000000) t(i)',
  },
  {
    engine: 'sqlite',
    label: 'SQLite',
    dataset: 'k_lite',
    runaway:
      'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c, k_lite',
  },
];

interface Cell {
  readonly label: string;
  /** Each runaway's answer time past the limit, ms. */
  readonly overshootMs: number[];
  /** Cores busy over the second after the last runaway answered. */
  readonly busyAfter: number;
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

/** Cores this process kept busy (all its threads) over `ms`. */
async function busyOver(ms: number): Promise<number> {
  const before = process.cpuUsage();
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / (performance.now() - started);
}

export const b14: Scenario = {
  id: 'b14',
  title: 'B14 cancel',
  measures:
    'how long a runaway statement runs past the query timeout before its answer (ERR_QUERY_TIMEOUT), DuckDB and SQLite, through the embed API; the process CPU over the second after',
  baseline: `the limit itself (queryTimeoutMs = ${TIMEOUT_MS} ms), set in the same run`,
  goal: 'a stopped statement keeps its core ≤ 100 ms past the limit (p99 of the overshoot), and nothing runs after (≤ 0.05 of a core over the next second)',
  async run(context) {
    const runs = context.quick ? 4 : 20;
    for (const { engine, dataset } of ENGINES) {
      const file = await buildFile(context.workDir, engine, dataset, 1_000, keyedColumns(1));
      await context.aws.publish({ dataset, location: locationOf(PREFIX), file: file.path, engine });
    }
    const started = await startRuntime(
      context,
      spicepod({
        aws: context.aws.info,
        prefix: PREFIX,
        direct: true,
        resultsCache: false,
        datasets: ENGINES.map(({ engine, dataset }) => ({ name: dataset, engine, interval: '1h' })),
      }),
      { queryTimeoutMs: TIMEOUT_MS },
    );
    const cells: Cell[] = [];
    try {
      await started.runtime.ready(undefined, { timeoutMs: 120_000 });
      for (const { label, dataset, runaway } of ENGINES) {
        // Warm: the statement's route and its worker started.
        await started.runtime.query(`SELECT count(*) AS n FROM ${dataset}`);
        await started.runtime.query(runaway).catch(() => undefined);
        const overshootMs: number[] = [];
        for (let run = 0; run < runs; run++) {
          const began = performance.now();
          const failure = await started.runtime.query(runaway).then(
            () => undefined,
            (error: unknown) => error as { code?: string },
          );
          if (failure?.code !== 'ERR_QUERY_TIMEOUT')
            throw new Error(`${label}: the runaway ended with ${failure?.code}`);
          overshootMs.push(performance.now() - began - TIMEOUT_MS);
        }
        const busyAfter = await busyOver(1_000);
        cells.push({ label, overshootMs, busyAfter });
        context.log(
          `${label}: overshoot p50 ${median(overshootMs).toFixed(1)} ms, p99 ${percentile(overshootMs, 99).toFixed(1)} ms; ${busyAfter.toFixed(3)} cores busy after`,
        );
      }
    } finally {
      await started.runtime.close();
    }
    const measurements: Measurement[] = [];
    const goals: GoalCheck[] = [];
    for (const cell of cells) {
      const p99 = percentile(cell.overshootMs, 99);
      measurements.push(
        {
          group: `${cell.label} runaway`,
          metric: 'answer time past the limit, p50',
          unit: 'ms',
          value: median(cell.overshootMs),
          baseline: TIMEOUT_MS,
          baselineLabel: 'the limit',
          ratio: (median(cell.overshootMs) + TIMEOUT_MS) / TIMEOUT_MS,
        },
        {
          group: `${cell.label} runaway`,
          metric: 'answer time past the limit, p99',
          unit: 'ms',
          value: p99,
          baseline: TIMEOUT_MS,
          baselineLabel: 'the limit',
          ratio: (p99 + TIMEOUT_MS) / TIMEOUT_MS,
        },
        {
          group: `${cell.label} runaway`,
          metric: 'cores busy over the second after',
          unit: 'x',
          value: cell.busyAfter,
        },
      );
      goals.push(
        {
          goal: `${cell.label}: a stopped statement answers ≤ 100 ms past the limit (p99)`,
          measured: formatValue(p99, 'ms'),
          met: p99 <= 100,
        },
        {
          goal: `${cell.label}: ≤ 0.05 of a core busy over the second after`,
          measured: `${cell.busyAfter.toFixed(3)} cores`,
          met: cell.busyAfter <= 0.05,
        },
      );
    }
    const notes = [
      `${runs} runaway statements per engine, one at a time, limit ${TIMEOUT_MS} ms. The time past the limit bounds how long the statement kept its core: it includes the limit's timer firing late on a loaded machine.`,
    ];
    const logged = loggedErrorsNote(started.logger);
    if (logged !== undefined) notes.push(logged);
    return { measurements, goals, notes, raw: { timeoutMs: TIMEOUT_MS, cells } };
  },
};
