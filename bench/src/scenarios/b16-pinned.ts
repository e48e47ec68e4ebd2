/**
 * B16 pinned: pinned reads (`X-Ferry-Snapshot`, the embed option `snapshots`) while snapshots swap
 * once a second (issue 31: "a swap still never waits for pinned readers, and pinned reads never
 * block a swap"). 64 clients run reports — a first point lookup at the current snapshot, then
 * twenty more pinned to the snapshot it read — beside 64 clients reading the current snapshot; the
 * baseline is the same swaps with the same 128 clients none of which pins, as interleaved slices.
 * Measured: the swap latency (metadata.json written → the runtime's swap event), the unpinned
 * clients' latency, the pinned clients' latency, and whether every pinned answer read its pin's
 * version (a pin that would read another snapshot counts as wrong). A report that outlives the
 * snapshots held (`ferry_retain_snapshots: 4`) is answered `ERR_SNAPSHOT_GONE`, counted as such,
 * and starts over.
 *
 * Then, with no load, held snapshots reopened on demand against kept attached (issue 31: "measure
 * both"): after each of a few swaps, the first query pinned to the snapshot just replaced opens
 * what it reads (DuckDB: an instance for that set of pins with the pinned file attached; SQLite: a
 * connection attaching it) — the cost a reader that reopened held snapshots on demand would pay
 * per query — and the next ones find it kept, as a reader that kept held snapshots attached would.
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
import { LatencyRecorder } from '../histogram.js';
import { LoadTotals, runLoad } from '../load.js';
import { type GoalCheck, type LatencyPlot, type Measurement, ratio, type Scenario } from '../scenario.js';
import { BUCKET, locationOf, spicepod } from '../spicepod.js';

const PREFIX = 'b16/';
const CLIENTS = 64;
/** Pinned lookups per report after its first (unpinned) one. */
const REPORT = 20;
/** Snapshots held for pins: a report outlives a few swaps under load. */
const RETAIN = 4;
const ENGINES: readonly { engine: FileFormat; label: string; dataset: string }[] = [
  { engine: 'duckdb', label: 'DuckDB', dataset: 'p_duck' },
  { engine: 'sqlite', label: 'SQLite', dataset: 'p_lite' },
];

/** Swaps after which the first pinned query (reopened) and the next ones (kept) are timed. */
const REOPENS = 8;
/** Queries timed on the kept instance or connection after each reopen. */
const KEPT_QUERIES = 5;

/** One slice's figures: the unpinned clients', the pinned ones' (absent in the baseline), the swaps'. */
interface Phase {
  readonly plain: LoadTotals;
  readonly pinned: LoadTotals;
  readonly swap: LatencyRecorder;
  publishes: number;
  swaps: number;
  wrong: number;
  gone: number;
}

const newPhase = (): Phase => ({
  plain: new LoadTotals(),
  pinned: new LoadTotals(),
  swap: new LatencyRecorder(),
  publishes: 0,
  swaps: 0,
  wrong: 0,
  gone: 0,
});

export const b16: Scenario = {
  id: 'b16',
  title: 'B16 pinned',
  measures: `swap latency and query latency while snapshots swap once a second, ${CLIENTS} clients pinning a snapshot (reports of ${REPORT + 1} point lookups) and ${CLIENTS} not`,
  baseline: `the same swaps with ${2 * CLIENTS} clients none of which pins (interleaved slices)`,
  goal: 'swap p99 ≤ 1.5× and unpinned query p99 ≤ 1.5× the no-pin figures; every pinned answer reads its pin; 0 failed queries',
  async run(context) {
    const rows = context.quick ? 20_000 : 200_000;
    const rounds = context.quick ? 1 : 3;
    const sliceMs = context.quick ? 3_000 : 8_000;
    const warmupMs = context.quick ? 500 : 1_000;
    const queueUrl = await context.aws.createQueue('bench-b16');
    const bridge = await context.aws.bridgeMetadata(BUCKET, PREFIX, queueUrl);

    const files = await buildTwoVersions(context, ENGINES, rows, [PREFIX]);

    const { runtime, logger } = await startRuntime(
      context,
      spicepod({
        aws: context.aws.info,
        prefix: PREFIX,
        direct: true,
        queueUrl,
        params: { ferry_retain_snapshots: String(RETAIN) },
        datasets: ENGINES.map(({ engine, dataset }) => ({ name: dataset, engine, interval: '1s' })),
      }),
    );
    const results = new Map<string, Phase>();
    const reopens = new Map<string, { reopened: LatencyRecorder; kept: LatencyRecorder }>();
    try {
      await runtime.ready(undefined, { timeoutMs: 120_000 });
      for (const { engine, dataset, label } of ENGINES) {
        const sql = `SELECT id, version FROM ${dataset} WHERE id = ?`;
        const phases = { none: newPhase(), pins: newPhase() };
        const lookup = async (pin: number | undefined) => {
          const id = Math.floor(Math.random() * rows);
          const result = await runtime.query(
            sql,
            [id],
            pin === undefined ? {} : { snapshots: { [dataset]: pin } },
          );
          const row = result.rows[0] as { id?: number; version?: number } | undefined;
          if (row?.id !== id) throw new Error(`wrong row for id ${id}: ${JSON.stringify(result.rows)}`);
          return { version: row.version, snapshotId: result.datasets[0]?.snapshotId };
        };
        // Unmeasured: both kinds of reader once, so the first measured slice does not pay the first
        // queries' preparation (the no-pin slice runs first in every round).
        await runLoad({
          clients: 2 * CLIENTS,
          warmupMs: 0,
          durationMs: 2 * warmupMs,
          operation: async (client) => {
            const first = await lookup(undefined);
            if (client % 2 === 1) await lookup(first.snapshotId);
          },
        });
        for (let round = 0; round < rounds; round++) {
          for (const pinning of [false, true]) {
            const phase = pinning ? phases.pins : phases.none;
            // Each publish's metadata.json write → the swap event that serves it.
            const written = new Map<number, number>();
            const swapped = new Map<number, number>();
            const off = runtime.on('swap', (event) => {
              if (event.dataset !== dataset) return;
              phase.swaps++;
              swapped.set(event.to, Date.now());
            });
            const publisher = publishEverySecond(context.aws, {
              dataset,
              engine,
              location: locationOf(PREFIX),
              files: [...(files.get(engine) ?? [])].reverse(),
              keepLast: RETAIN + 2,
              onReply: (reply) => written.set(reply.snapshotId, reply.metadataWrittenAtMs),
            });
            // A pinning client's report: its snapshot, that snapshot's version, lookups left.
            const reports = Array.from({ length: CLIENTS }, () => ({ pin: 0, version: 0, left: 0 }));
            const plain = runLoad(
              {
                clients: pinning ? CLIENTS : 2 * CLIENTS,
                warmupMs,
                durationMs: sliceMs,
                operation: () => lookup(undefined),
              },
              phase.plain,
            );
            const pinned = pinning
              ? runLoad(
                  {
                    clients: CLIENTS,
                    warmupMs,
                    durationMs: sliceMs,
                    operation: async (client) => {
                      const report = reports[client] as { pin: number; version: number; left: number };
                      if (report.left === 0) {
                        const first = await lookup(undefined);
                        report.pin = first.snapshotId ?? 0;
                        report.version = first.version ?? 0;
                        report.left = REPORT;
                        return;
                      }
                      report.left--;
                      try {
                        const answer = await lookup(report.pin);
                        if (answer.version !== report.version || answer.snapshotId !== report.pin) {
                          phase.wrong++;
                          throw new Error(
                            `pinned to ${report.pin} (version ${report.version}), read ${answer.snapshotId} (version ${answer.version})`,
                          );
                        }
                      } catch (error) {
                        // A report that outlived the snapshots held (410): the designed answer, not
                        // a failure; the client starts a new report.
                        if ((error as { code?: string }).code !== 'ERR_SNAPSHOT_GONE') throw error;
                        phase.gone++;
                        report.left = 0;
                      }
                    },
                  },
                  phase.pinned,
                )
              : Promise.resolve();
            await Promise.all([plain, pinned]);
            const { count, last } = await publisher.stop();
            phase.publishes += count;
            if (last !== undefined) {
              const serving = runtime.status(dataset).status?.servingSnapshotId ?? -1;
              if (serving < last.snapshotId) await swapTo(runtime, dataset, last.snapshotId, 60_000);
            }
            off();
            for (const [snapshotId, at] of swapped) {
              const from = written.get(snapshotId);
              if (from !== undefined) phase.swap.recordMs(Math.max(0, at - from));
            }
          }
        }
        // Reopened on demand against kept attached: no load, one swap at a time.
        const reopen = { reopened: new LatencyRecorder(), kept: new LatencyRecorder() };
        reopens.set(engine, reopen);
        const timedPin = async (pin: number, into: LatencyRecorder) => {
          const began = performance.now();
          const read = await lookup(pin);
          into.recordMs(performance.now() - began);
          if (read.snapshotId !== pin) throw new Error(`pinned to ${pin}, read ${read.snapshotId}`);
        };
        for (let index = 0; index < (context.quick ? 3 : REOPENS); index++) {
          const before = runtime.status(dataset).status?.servingSnapshotId ?? -1;
          const published = await context.aws.publish({
            dataset,
            location: locationOf(PREFIX),
            engine,
            file: [...(files.get(engine) ?? [])][index % 2] ?? '',
            keepLast: RETAIN + 2,
          });
          await swapTo(runtime, dataset, published.snapshotId, 60_000);
          await timedPin(before, reopen.reopened);
          for (let kept = 0; kept < KEPT_QUERIES; kept++) await timedPin(before, reopen.kept);
        }
        context.log(
          `${label} pinned to the snapshot just replaced: first query (reopened) p50 ${reopen.reopened.percentileMs(50).toFixed(2)} ms, next ones (kept) p50 ${reopen.kept.percentileMs(50).toFixed(2)} ms`,
        );
        for (const [key, phase] of Object.entries(phases)) {
          results.set(`${engine}:${key}`, phase);
          const plainLoad = phase.plain.result();
          context.log(
            `${label} ${key === 'pins' ? 'with pins' : 'no pins'}: unpinned p99 ${plainLoad.latency.p99Ms.toFixed(3)} ms, swap p99 ${phase.swap.percentileMs(99).toFixed(1)} ms, ${phase.swaps} swaps of ${phase.publishes} publishes${key === 'pins' ? `, pinned p99 ${phase.pinned.result().latency.p99Ms.toFixed(3)} ms, ${phase.wrong} wrong, ${phase.gone} gone` : ''}`,
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
      `${rows.toLocaleString('en-US')}-row tables; a publish a second (SQS notifications plus a 1 s poll), ferry_retain_snapshots: ${RETAIN}; ${rounds} interleaved round(s) of a no-pin slice (${2 * CLIENTS} unpinned clients) and a pin slice (${CLIENTS} pinning, ${CLIENTS} not), each ${sliceMs / 1000} s measured after ${warmupMs / 1000} s of warm-up. A pinning client's report: one lookup at the current snapshot, then ${REPORT} pinned to it. Swap latency: fauxqs's timestamp of the metadata.json upload → the runtime's swap event.`,
    ];
    for (const { engine, label } of ENGINES) {
      const none = results.get(`${engine}:none`);
      const pins = results.get(`${engine}:pins`);
      if (none === undefined || pins === undefined) continue;
      const group = `${label} with pinned readers`;
      const baselineLabel = 'no pins';
      const plainPins = pins.plain.result();
      const plainNone = none.plain.result();
      const pinned = pins.pinned.result();
      const swapPins = pins.swap.summary();
      const swapNone = none.swap.summary();
      const swapRatio = ratio(swapPins.p99Ms, swapNone.p99Ms);
      const queryRatio = ratio(plainPins.latency.p99Ms, plainNone.latency.p99Ms);
      latencies.push(
        {
          title: `${label}: point lookups during swaps`,
          series: [
            latencySeries('unpinned, beside pinned readers', plainPins.latency),
            latencySeries('pinned readers', pinned.latency),
            latencySeries('unpinned, no pins (baseline)', plainNone.latency),
          ],
        },
        {
          title: `${label}: swap latency (metadata.json written → swap)`,
          series: [latencySeries('with pinned readers', swapPins), latencySeries('no pins', swapNone)],
        },
      );
      measurements.push(
        {
          group,
          metric: 'swap p50',
          unit: 'ms',
          kind: 'latency',
          value: swapPins.p50Ms,
          baseline: swapNone.p50Ms,
          baselineLabel,
          ratio: ratio(swapPins.p50Ms, swapNone.p50Ms),
        },
        {
          group,
          metric: 'swap p99',
          unit: 'ms',
          kind: 'latency',
          value: swapPins.p99Ms,
          baseline: swapNone.p99Ms,
          baselineLabel,
          ratio: swapRatio,
        },
        {
          group,
          metric: 'unpinned query p99',
          unit: 'ms',
          kind: 'latency',
          value: plainPins.latency.p99Ms,
          baseline: plainNone.latency.p99Ms,
          baselineLabel,
          ratio: queryRatio,
        },
        {
          group,
          metric: 'pinned query p99',
          unit: 'ms',
          kind: 'latency',
          value: pinned.latency.p99Ms,
          baseline: plainNone.latency.p99Ms,
          baselineLabel: 'unpinned, no pins',
          ratio: ratio(pinned.latency.p99Ms, plainNone.latency.p99Ms),
        },
        {
          group,
          metric: 'throughput (all clients)',
          unit: 'ops/s',
          value: plainPins.throughput + pinned.throughput,
          baseline: plainNone.throughput,
          baselineLabel,
          ratio: ratio(plainPins.throughput + pinned.throughput, plainNone.throughput),
        },
        {
          group,
          metric: 'swaps done / publishes',
          unit: 'count',
          value: pins.swaps,
          baseline: pins.publishes,
          baselineLabel: 'publishes',
          ratio: ratio(pins.swaps, pins.publishes),
        },
      );
      const failed = plainPins.failed + pinned.failed;
      goals.push(
        {
          goal: `${label}: swap p99 with pinned readers ≤ 1.5× without`,
          measured: `${formatValue(swapPins.p99Ms, 'ms')} vs ${formatValue(swapNone.p99Ms, 'ms')} = ${formatRatio(swapRatio)}`,
          met: swapRatio <= 1.5,
        },
        {
          goal: `${label}: unpinned query p99 beside pinned readers ≤ 1.5× without`,
          measured: `${formatValue(plainPins.latency.p99Ms, 'ms')} vs ${formatValue(plainNone.latency.p99Ms, 'ms')} = ${formatRatio(queryRatio)}`,
          met: queryRatio <= 1.5,
        },
        {
          goal: `${label}: every pinned answer reads its pin; 0 failed queries (a pin gone, 410, is not a failure)`,
          measured: `${pins.wrong} wrong, ${pins.gone} pins gone, ${failed} failed of ${plainPins.completed + pinned.completed + failed}`,
          met: pins.wrong === 0 && failed === 0,
        },
      );
      const reopen = reopens.get(engine);
      if (reopen !== undefined) {
        const reopened = reopen.reopened.summary();
        const kept = reopen.kept.summary();
        measurements.push({
          group: `${label}: a held snapshot reopened on demand vs kept attached`,
          metric: 'pinned query p50',
          unit: 'ms',
          kind: 'latency',
          value: reopened.p50Ms,
          baseline: kept.p50Ms,
          baselineLabel: 'kept attached',
          ratio: ratio(reopened.p50Ms, kept.p50Ms),
        });
      }
      for (const result of [plainPins, pinned, plainNone]) {
        if (result.errors.length > 0) notes.push(`${label} errors: ${result.errors.join('; ')}`);
      }
    }
    const logged = loggedErrorsNote(logger);
    if (logged !== undefined) notes.push(logged);
    const raw: Record<string, unknown> = Object.fromEntries(
      [...results].map(([key, phase]) => [
        key,
        {
          plain: phase.plain.result(),
          pinned: phase.pinned.result(),
          swap: phase.swap.summary(),
          publishes: phase.publishes,
          swaps: phase.swaps,
          wrong: phase.wrong,
          gone: phase.gone,
        },
      ]),
    );
    for (const [engine, reopen] of reopens) {
      raw[`${engine}:reopen`] = { reopened: reopen.reopened.summary(), kept: reopen.kept.summary() };
    }
    return { measurements, goals, notes, latencies, raw };
  },
};
