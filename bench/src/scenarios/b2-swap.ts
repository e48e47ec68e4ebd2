/**
 * B2 swap: p99 query latency and failed queries while snapshots swap about once a second (SQS
 * notifications, so each publish is picked up at once), against the same load with no swaps. In the
 * baseline the publisher does the very same work, to a location Ferry does not watch, so the only
 * difference between the two phases is Ferry's own download, validation and swap. The two phases
 * run as interleaved slices so other work on the machine falls on both.
 */
import type { FileFormat } from '@ferry/core';
import { formatRatio, formatValue } from '../format.js';
import {
  buildTwoVersions,
  latencySeries,
  loggedErrorsNote,
  publishEverySecond,
  startRuntime,
  swapTo,
} from '../harness.js';
import { type LoadResult, LoadTotals, runLoad } from '../load.js';
import { type GoalCheck, type LatencyPlot, type Measurement, ratio, type Scenario } from '../scenario.js';
import { BUCKET, locationOf, spicepod } from '../spicepod.js';

const PREFIX = 'b2/';
const DECOY = 'b2-decoy/';
const CLIENTS = 8;
const ENGINES: readonly { engine: FileFormat; label: string; dataset: string }[] = [
  { engine: 'duckdb', label: 'DuckDB', dataset: 's_duck' },
  { engine: 'sqlite', label: 'SQLite', dataset: 's_lite' },
];

interface Phase {
  readonly load: LoadResult;
  readonly publishes: number;
  readonly swaps: number;
  readonly wrong: number;
}

export const b2: Scenario = {
  id: 'b2',
  title: 'B2 swap',
  measures: `p99 query latency and failed queries (point lookups, ${CLIENTS} clients) while snapshots swap once a second`,
  baseline:
    'the same load with no swaps (the publisher runs the same uploads to a location Ferry does not watch)',
  goal: 'p99 ≤ 1.5× the no-swap p99; 0 failed queries',
  async run(context) {
    const rows = context.quick ? 20_000 : 200_000;
    const rounds = context.quick ? 1 : 3;
    const sliceMs = context.quick ? 2_000 : 5_000;
    const warmupMs = context.quick ? 300 : 500;
    const queueUrl = await context.aws.createQueue('bench-b2');
    const bridge = await context.aws.bridgeMetadata(BUCKET, PREFIX, queueUrl);

    const files = await buildTwoVersions(context, ENGINES, rows, [PREFIX, DECOY]);

    const { runtime, logger } = await startRuntime(
      context,
      spicepod({
        aws: context.aws.info,
        prefix: PREFIX,
        direct: true,
        queueUrl,
        datasets: ENGINES.map(({ engine, dataset }) => ({ name: dataset, engine, interval: '1s' })),
      }),
    );
    const results = new Map<string, Phase>();
    try {
      await runtime.ready(undefined, { timeoutMs: 120_000 });
      for (const { engine, dataset, label } of ENGINES) {
        const sql = `SELECT id, version FROM ${dataset} WHERE id = ?`;
        const phases = {
          quiet: { totals: new LoadTotals(), publishes: 0, swaps: 0, wrong: 0 },
          busy: { totals: new LoadTotals(), publishes: 0, swaps: 0, wrong: 0 },
        };
        // Interleaved slices (no swaps, swaps, no swaps, …) so other work on the machine falls on both.
        for (let round = 0; round < rounds; round++) {
          for (const swapping of [false, true]) {
            const phase = swapping ? phases.busy : phases.quiet;
            const off = runtime.on('swap', (event) => {
              if (event.dataset === dataset) phase.swaps++;
            });
            const publisher = publishEverySecond(context.aws, {
              dataset,
              engine,
              location: locationOf(swapping ? PREFIX : DECOY),
              files: [...(files.get(engine) ?? [])].reverse(),
              keepLast: 4,
            });
            await runLoad(
              {
                clients: CLIENTS,
                warmupMs,
                durationMs: sliceMs,
                operation: async () => {
                  const id = Math.floor(Math.random() * rows);
                  const result = await runtime.query(sql, [id]);
                  const row = result.rows[0] as { id?: number; version?: number } | undefined;
                  if (row?.id !== id || (row.version !== 1 && row.version !== 2)) {
                    phase.wrong++;
                    throw new Error(`wrong result for id ${id}: ${JSON.stringify(result.rows)}`);
                  }
                },
              },
              phase.totals,
            );
            const { count, last } = await publisher.stop();
            phase.publishes += count;
            // The next quiet slice must not see this slice's last swap.
            if (swapping && last !== undefined) {
              const serving = runtime.status(dataset).status?.servingSnapshotId ?? -1;
              if (serving < last.snapshotId) await swapTo(runtime, dataset, last.snapshotId, 60_000);
            }
            off();
          }
        }
        for (const [key, phase] of Object.entries(phases)) {
          const load = phase.totals.result();
          results.set(`${engine}:${key === 'busy'}`, {
            load,
            publishes: phase.publishes,
            swaps: phase.swaps,
            wrong: phase.wrong,
          });
          context.log(
            `${label} ${key === 'busy' ? 'swaps' : 'no swaps'}: p99 ${load.latency.p99Ms.toFixed(3)} ms, ${load.failed} failed, ${phase.publishes} publishes, ${phase.swaps} swaps`,
          );
        }
      }
    } finally {
      await runtime.close();
      await context.aws.stopBridge(bridge);
    }

    const measurements: Measurement[] = [];
    const goals: GoalCheck[] = [];
    const latencies: LatencyPlot[] = [];
    const notes: string[] = [
      `${rows.toLocaleString('en-US')}-row tables, ${CLIENTS} clients running point lookups back to back; ${rounds} interleaved round(s) of a no-swap slice and a swap slice, each ${sliceMs / 1000} s measured after ${warmupMs / 1000} s of warm-up; SQS notifications plus a 1 s poll.`,
    ];
    for (const { engine, label } of ENGINES) {
      const quiet = results.get(`${engine}:false`);
      const busy = results.get(`${engine}:true`);
      if (quiet === undefined || busy === undefined) continue;
      const baselineLabel = 'no swaps';
      const group = `${label} under swaps`;
      const p99Ratio = ratio(busy.load.latency.p99Ms, quiet.load.latency.p99Ms);
      latencies.push({
        title: `${label}: point lookups, ${CLIENTS} clients`,
        series: [
          latencySeries('Ferry while snapshots swap', busy.load.latency),
          latencySeries('Ferry, no swaps', quiet.load.latency),
        ],
      });
      measurements.push(
        {
          group,
          metric: 'p50 latency',
          unit: 'ms',
          kind: 'latency',
          value: busy.load.latency.p50Ms,
          baseline: quiet.load.latency.p50Ms,
          baselineLabel,
          ratio: ratio(busy.load.latency.p50Ms, quiet.load.latency.p50Ms),
        },
        {
          group,
          metric: 'p99 latency',
          unit: 'ms',
          kind: 'latency',
          value: busy.load.latency.p99Ms,
          baseline: quiet.load.latency.p99Ms,
          baselineLabel,
          ratio: p99Ratio,
        },
        {
          group,
          metric: 'max latency',
          unit: 'ms',
          kind: 'latency',
          value: busy.load.latency.maxMs,
          baseline: quiet.load.latency.maxMs,
          baselineLabel,
          ratio: ratio(busy.load.latency.maxMs, quiet.load.latency.maxMs),
        },
        {
          group,
          metric: 'throughput',
          unit: 'ops/s',
          value: busy.load.throughput,
          baseline: quiet.load.throughput,
          baselineLabel,
          ratio: ratio(busy.load.throughput, quiet.load.throughput),
        },
        {
          group,
          metric: 'failed queries',
          unit: 'count',
          value: busy.load.failed,
          baseline: quiet.load.failed,
          baselineLabel,
        },
        {
          group,
          metric: 'swaps done / publishes',
          unit: 'count',
          value: busy.swaps,
          baseline: busy.publishes,
          baselineLabel: 'publishes',
          ratio: ratio(busy.swaps, busy.publishes),
        },
      );
      goals.push(
        {
          goal: `${label}: p99 under swaps ≤ 1.5× no-swap p99`,
          measured: `${formatValue(busy.load.latency.p99Ms, 'ms')} vs ${formatValue(quiet.load.latency.p99Ms, 'ms')} = ${formatRatio(p99Ratio)}`,
          met: p99Ratio <= 1.5,
        },
        {
          goal: `${label}: 0 failed queries under swaps`,
          measured: `${busy.load.failed} failed (${busy.wrong} wrong results) of ${busy.load.completed + busy.load.failed}`,
          met: busy.load.failed === 0,
        },
      );
      if (busy.load.errors.length > 0) notes.push(`${label} errors: ${busy.load.errors.join('; ')}`);
    }
    const logged = loggedErrorsNote(logger);
    if (logged !== undefined) notes.push(logged);
    return { measurements, goals, notes, latencies, raw: Object.fromEntries(results) };
  },
};
