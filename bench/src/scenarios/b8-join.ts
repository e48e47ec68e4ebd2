/**
 * B8 join: a join of two DuckDB datasets through the embed API — an aggregate over the whole of
 * both and a selective lookup — at 1 and 16 concurrent clients. Baseline in the same run: the same
 * SQL on DuckDB directly, on this thread, with both files attached read-only behind views of the
 * same names (the statement prepared once), i.e. what Ferry's query worker does without the
 * thread hop, the catalog and the result conversion.
 */
import { DuckDBInstance } from '@duckdb/node-api';
import type { JsonValue } from '@ferry/core';
import { type BuiltFile, buildFile, keyedColumns } from '../data.js';
import { preparedRunner } from '../direct-duckdb.js';
import { formatRatio, formatValue } from '../format.js';
import { latencySeries, loggedErrorsNote, startRuntime } from '../harness.js';
import { failureNote, type LoadResult, LoadTotals, runLoad } from '../load.js';
import { type GoalCheck, type LatencyPlot, type Measurement, ratio, type Scenario } from '../scenario.js';
import { locationOf, spicepod } from '../spicepod.js';

const PREFIX = 'b8/';
const CUSTOMERS = 10_000;

interface JoinQuery {
  readonly kind: 'aggregate' | 'lookup';
  readonly label: string;
  readonly sql: string;
  params(rows: number): JsonValue[];
}

const QUERIES: readonly JoinQuery[] = [
  {
    kind: 'aggregate',
    label: 'join + aggregate',
    sql: 'SELECT c.region, count(*) AS n, sum(o.amount) AS total FROM j_orders o JOIN j_customers c ON o.customer_id = c.id GROUP BY c.region ORDER BY c.region',
    params: () => [],
  },
  {
    kind: 'lookup',
    label: 'join lookup',
    sql: 'SELECT o.id, o.amount, c.region FROM j_orders o JOIN j_customers c ON o.customer_id = c.id WHERE o.id = ?',
    params: (rows) => [Math.floor(Math.random() * rows)],
  },
];

/** DuckDB on this thread with both files attached read-only behind views: the baseline. */
async function directDuckDb(orders: BuiltFile, customers: BuiltFile) {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  for (const [alias, file, table] of [
    ['o', orders, 'j_orders'],
    ['c', customers, 'j_customers'],
  ] as const) {
    await connection.run(`ATTACH '${file.path}' AS ${alias} (READ_ONLY)`);
    await connection.run(`CREATE VIEW ${table} AS SELECT * FROM ${alias}.main.${table}`);
  }
  const runner = preparedRunner(connection);
  return {
    async run(sql: string, params: readonly JsonValue[]): Promise<void> {
      await runner.run(sql, params);
    },
    close(): void {
      runner.close();
      connection.closeSync();
      instance.closeSync();
    },
  };
}

interface Cell {
  readonly query: JoinQuery;
  readonly direct: LoadResult;
  readonly ferry1: LoadResult;
  readonly ferry16: LoadResult;
}

export const b8: Scenario = {
  id: 'b8',
  title: 'B8 join',
  measures:
    'latency (p50/p99) and throughput of a join of two DuckDB datasets (aggregate over both, selective lookup), 1 and 16 clients, through the embed API',
  baseline:
    'the same SQL on DuckDB directly on one thread, both files attached read-only behind views of the same names, the statement prepared once',
  goal: 'a two-dataset join: Ferry ≤ 1.1× the same join run directly on the engine with both files attached (p50 latency at 1 client, the aggregate and the lookup); throughput at 16 clients is reported',
  async run(context) {
    const rows = context.quick ? 50_000 : 1_000_000;
    const rounds = context.quick ? 1 : 2;
    const short = context.quick ? { warmupMs: 200, durationMs: 600 } : { warmupMs: 300, durationMs: 1500 };
    const long = context.quick ? { warmupMs: 300, durationMs: 800 } : { warmupMs: 1000, durationMs: 2000 };

    context.log(`building the ${rows}-row orders and ${CUSTOMERS}-row customers DuckDB files`);
    const orders = await buildFile(context.workDir, 'duckdb', 'j_orders', rows, [
      ...keyedColumns(1),
      {
        name: 'customer_id',
        sqliteType: 'INTEGER',
        duckdb: `(i % ${CUSTOMERS})::BIGINT`,
        sqlite: `i % ${CUSTOMERS}`,
      },
      { name: 'amount', sqliteType: 'REAL', duckdb: '((i * 7919) % 100000 / 100.0)::DOUBLE', sqlite: '0' },
    ]);
    const customers = await buildFile(context.workDir, 'duckdb', 'j_customers', CUSTOMERS, [
      ...keyedColumns(1),
      { name: 'region', sqliteType: 'TEXT', duckdb: "'r' || (i % 12)::VARCHAR", sqlite: "'r'" },
    ]);
    for (const file of [orders, customers]) {
      await context.aws.publish({
        dataset: file.dataset,
        location: locationOf(PREFIX),
        file: file.path,
        engine: 'duckdb',
      });
    }
    const { runtime, logger } = await startRuntime(
      context,
      spicepod({
        aws: context.aws.info,
        prefix: PREFIX,
        direct: true,
        datasets: [orders, customers].map((file) => ({
          name: file.dataset,
          engine: 'duckdb',
          interval: '1m',
        })),
      }),
    );
    const direct = await directDuckDb(orders, customers);
    const cells: Cell[] = [];
    try {
      await runtime.ready(undefined, { timeoutMs: 120_000 });
      for (const query of QUERIES) {
        const viaFerry = () => runtime.query(query.sql, query.params(rows));
        const viaDirect = () => direct.run(query.sql, query.params(rows));
        // Prime both paths: workers, attachments, prepared statements.
        for (let n = 0; n < 10; n++) await Promise.all([viaFerry(), viaDirect()]);
        const totals = { direct: new LoadTotals(), ferry1: new LoadTotals(), ferry16: new LoadTotals() };
        for (let round = 0; round < rounds; round++) {
          await runLoad({ clients: 1, ...short, operation: viaDirect }, totals.direct);
          await runLoad({ clients: 1, ...short, operation: viaFerry }, totals.ferry1);
          await runLoad({ clients: 16, ...long, operation: viaFerry }, totals.ferry16);
        }
        const cell: Cell = {
          query,
          direct: totals.direct.result(),
          ferry1: totals.ferry1.result(),
          ferry16: totals.ferry16.result(),
        };
        cells.push(cell);
        context.log(
          `${query.label}: direct p50 ${cell.direct.latency.p50Ms.toFixed(3)} ms ${Math.round(cell.direct.throughput)} ops/s; Ferry p50 ${cell.ferry1.latency.p50Ms.toFixed(3)} ms; 16 clients ${Math.round(cell.ferry16.throughput)} ops/s`,
        );
      }
    } finally {
      direct.close();
      await runtime.close();
    }

    const measurements: Measurement[] = [];
    const goals: GoalCheck[] = [];
    const latencies: LatencyPlot[] = cells.map((cell) => ({
      title: `DuckDB ${cell.query.label}`,
      series: [
        latencySeries('Ferry, 1 client', cell.ferry1.latency),
        latencySeries('Ferry, 16 clients', cell.ferry16.latency),
        latencySeries('direct, 1 thread', cell.direct.latency),
      ],
    }));
    const notes: string[] = [
      `Tables: j_orders ${rows.toLocaleString('en-US')} rows (${formatValue(orders.size / 2 ** 20, 'MiB')}), j_customers ${CUSTOMERS.toLocaleString('en-US')} rows; the aggregate joins every order to its customer and groups by region (12 groups), the lookup joins one order by id.`,
      `Each cell interleaves ${rounds} round(s) of: direct (1 client, ${short.durationMs / 1000} s), Ferry (1 client, ${short.durationMs / 1000} s), Ferry (16 clients, ${long.durationMs / 1000} s after ${long.warmupMs / 1000} s of warm-up).`,
      'Ferry runs the join in its DuckDB query worker: both datasets attached at their current generation, the statement prepared once per connection; results are converted to JSON-safe rows on the worker and cloned to the host.',
    ];
    for (const cell of cells) {
      const group = `DuckDB ${cell.query.label}`;
      const base = 'direct, 1 thread';
      const latencyRatio = ratio(cell.ferry1.latency.p50Ms, cell.direct.latency.p50Ms);
      const tputRatio = ratio(cell.ferry16.throughput, cell.direct.throughput);
      measurements.push(
        {
          group,
          metric: 'p50 latency, 1 client',
          unit: 'ms',
          kind: 'latency',
          value: cell.ferry1.latency.p50Ms,
          baseline: cell.direct.latency.p50Ms,
          baselineLabel: base,
          ratio: latencyRatio,
        },
        {
          group,
          metric: 'p99 latency, 1 client',
          unit: 'ms',
          kind: 'latency',
          value: cell.ferry1.latency.p99Ms,
          baseline: cell.direct.latency.p99Ms,
          baselineLabel: base,
          ratio: ratio(cell.ferry1.latency.p99Ms, cell.direct.latency.p99Ms),
        },
        {
          group,
          metric: 'throughput, 1 client',
          unit: 'ops/s',
          value: cell.ferry1.throughput,
          baseline: cell.direct.throughput,
          baselineLabel: base,
          ratio: ratio(cell.ferry1.throughput, cell.direct.throughput),
        },
        {
          group,
          metric: 'throughput, 16 clients',
          unit: 'ops/s',
          value: cell.ferry16.throughput,
          baseline: cell.direct.throughput,
          baselineLabel: base,
          ratio: tputRatio,
        },
        {
          group,
          metric: 'p99 latency, 16 clients',
          unit: 'ms',
          kind: 'latency',
          value: cell.ferry16.latency.p99Ms,
          baseline: cell.direct.latency.p99Ms,
          baselineLabel: base,
          ratio: ratio(cell.ferry16.latency.p99Ms, cell.direct.latency.p99Ms),
        },
      );
      goals.push({
        goal: `${group}: p50 latency at 1 client ≤ 1.1× the same join run directly (both files attached)`,
        measured: `${formatValue(cell.ferry1.latency.p50Ms, 'ms')} vs ${formatValue(cell.direct.latency.p50Ms, 'ms')} = ${formatRatio(latencyRatio)}`,
        met: latencyRatio <= 1.1,
      });
      const failure = failureNote(group, cell.ferry1, cell.ferry16, cell.direct);
      if (failure !== undefined) notes.push(failure);
    }
    const logged = loggedErrorsNote(logger);
    if (logged !== undefined) notes.push(logged);
    return {
      measurements,
      goals,
      notes,
      latencies,
      raw: { rows, customers: CUSTOMERS, cells: cells.map((cell) => ({ ...cell, query: cell.query.kind })) },
    };
  },
};
