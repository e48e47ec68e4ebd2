/**
 * B3 freshness: time from the metadata.json write (fauxqs's timestamp of that upload) to the first
 * query that sees the new rows, with SQS notifications and with polling. Baseline in the same run:
 * the raw download time (one plain GetObject to a file) of the same snapshot object. The S3 → SQS
 * hop is the test bridge's (fauxqs delivers no bucket notifications): its own latency, from the
 * write to its SendMessage being acknowledged, is measured per publish and reported apart.
 */
import { join } from 'node:path';
import type { Runtime } from '@ferry/runtime';
import { buildFile, keyedColumns, QUERY_COLUMNS } from '../data.js';
import { formatValue } from '../format.js';
import { latencySeries, mib, plainDownload, plainS3, sleep, startRuntime } from '../harness.js';
import { LatencyRecorder } from '../histogram.js';
import type { GoalCheck, Measurement, Scenario } from '../scenario.js';
import { BUCKET, locationOf, spicepod } from '../spicepod.js';

const DATASET = 'fresh';
const POLL_INTERVAL = '1s';
/** The goal: SQS freshness p50 at most this much over the raw download p50. */
const BUDGET_MS = 150;

/**
 * Queries every few ms until a result shows `version`; resolves with `Date.now()` of that result.
 * A failed probe is counted in `failures` (and the probing goes on).
 */
async function firstQuerySeeing(
  runtime: Runtime,
  version: number,
  timeoutMs: number,
  failures: string[],
): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const result = await runtime.query(`SELECT max(version) AS v FROM ${DATASET}`);
      if ((result.rows[0] as { v?: number } | undefined)?.v === version) return Date.now();
    } catch (error) {
      failures.push((error as Error).message);
    }
    if (Date.now() > deadline) throw new Error(`no query saw version ${version} within ${timeoutMs} ms`);
    await sleep(5);
  }
}

export const b3: Scenario = {
  id: 'b3',
  title: 'B3 freshness',
  measures:
    'time from the metadata.json write to the first query that sees the new rows, with SQS notifications and with polling (1 s)',
  baseline: 'the raw download time of the same file (one GetObject streamed to a file)',
  goal: `SQS: p50 freshness ≤ raw download p50 + ${BUDGET_MS} ms`,
  async run(context) {
    const rows = context.quick ? 20_000 : 300_000;
    const publishes = context.quick ? 2 : 10;
    context.log(`building two ${rows}-row DuckDB versions`);
    const versions = [1, 2];
    const files: string[] = [];
    for (const version of versions) {
      files.push(
        (await buildFile(context.workDir, 'duckdb', DATASET, rows, keyedColumns(version, QUERY_COLUMNS)))
          .path,
      );
    }
    const s3 = plainS3(context.aws, true);
    const recorders = { sqs: new LatencyRecorder(), poll: new LatencyRecorder() };
    const raw = new LatencyRecorder();
    const bridgeHop = new LatencyRecorder();
    const bridgeSamples: number[] = [];
    const written: number[] = [];
    const samples: Record<string, number[]> = { sqs: [], poll: [], raw: [] };
    let size = 0;
    const notes: string[] = [];
    const failures: string[] = [];

    for (const mode of ['sqs', 'poll'] as const) {
      const prefix = `b3-${mode}/`;
      const location = locationOf(prefix);
      let queueUrl: string | undefined;
      let bridge: number | undefined;
      if (mode === 'sqs') {
        queueUrl = await context.aws.createQueue('bench-b3');
        bridge = await context.aws.bridgeMetadata(BUCKET, prefix, queueUrl);
      }
      await context.aws.publish({ dataset: DATASET, location, file: files[0] ?? '', engine: 'duckdb' });
      const { runtime, logger } = await startRuntime(
        context,
        spicepod({
          aws: context.aws.info,
          prefix,
          direct: true,
          ...(queueUrl === undefined ? {} : { queueUrl }),
          // With SQS the poll is only a safety net: make it too slow to ever be what saw the change.
          datasets: [{ name: DATASET, engine: 'duckdb', interval: mode === 'sqs' ? '10m' : POLL_INTERVAL }],
        }),
      );
      try {
        await runtime.ready(DATASET, { timeoutMs: 60_000 });
        for (let n = 1; n <= publishes; n++) {
          const version = versions[n % 2] ?? 1;
          const seen = firstQuerySeeing(runtime, version, 60_000, failures);
          const reply = await context.aws.publish({
            dataset: DATASET,
            location,
            file: files[n % 2] ?? '',
            engine: 'duckdb',
            keepLast: 3,
          });
          const seenAt = await seen;
          const freshness = seenAt - reply.metadataWrittenAtMs;
          size = reply.size;
          recorders[mode].recordMs(freshness);
          if (mode === 'sqs') written.push(reply.metadataWrittenAtMs);
          samples[mode]?.push(freshness);
          // The baseline: the same object fetched plainly, right after (nothing else is moving).
          const rawMs = await plainDownload(
            s3,
            `${prefix}${reply.key}`,
            join(context.workDir, 'raw.download'),
          );
          raw.recordMs(rawMs);
          samples.raw?.push(rawMs);
          context.log(`${mode} #${n}: visible after ${freshness} ms (raw download ${rawMs.toFixed(1)} ms)`);
          // A random pause so publishes fall at different phases of the poll grid.
          await sleep(200 + Math.random() * (context.quick ? 300 : 1000));
        }
      } finally {
        await runtime.close();
        if (bridge !== undefined) {
          const sent = await context.aws.bridgeSent(bridge);
          for (const at of written) {
            const match = sent.find(([eventAtMs]) => eventAtMs === at);
            if (match === undefined) continue;
            bridgeHop.recordMs(match[1] - match[0]);
            bridgeSamples.push(match[1] - match[0]);
          }
          await context.aws.stopBridge(bridge);
        }
      }
      if (logger.counts.error > 0) {
        notes.push(`${mode}: runtime logged ${logger.counts.error} errors: ${logger.problems.join(' | ')}`);
      }
    }
    s3.destroy();
    if (failures.length > 0)
      notes.push(`${failures.length} probe queries failed: ${failures.slice(0, 3).join('; ')}`);

    const sqs = recorders.sqs.summary();
    const poll = recorders.poll.summary();
    const rawSummary = raw.summary();
    const over = sqs.p50Ms - rawSummary.p50Ms;
    const hop = bridgeHop.percentileMs(50);
    const measurements: Measurement[] = [
      {
        group: 'SQS notifications',
        metric: 'freshness p50',
        unit: 'ms',
        kind: 'latency',
        value: sqs.p50Ms,
        baseline: rawSummary.p50Ms,
        baselineLabel: 'raw download p50',
        ratio: sqs.p50Ms / rawSummary.p50Ms,
      },
      {
        group: 'SQS notifications',
        metric: 'freshness max',
        unit: 'ms',
        kind: 'latency',
        value: sqs.maxMs,
        baseline: rawSummary.maxMs,
        baselineLabel: 'raw download max',
        ratio: sqs.maxMs / rawSummary.maxMs,
      },
      {
        group: 'SQS notifications',
        metric: 'freshness p50 minus raw download p50',
        unit: 'ms',
        value: over,
        baseline: BUDGET_MS,
        baselineLabel: 'goal budget',
        ratio: over / BUDGET_MS,
      },
      {
        group: 'SQS notifications',
        metric: 'the test bridge alone: metadata.json write → its SendMessage acknowledged, p50',
        unit: 'ms',
        value: hop,
      },
      {
        group: 'SQS notifications',
        metric: "Ferry's part: freshness p50 minus the bridge's p50 minus raw download p50",
        unit: 'ms',
        value: over - hop,
        baseline: BUDGET_MS,
        baselineLabel: 'goal budget',
        ratio: (over - hop) / BUDGET_MS,
      },
      {
        group: `polling every ${POLL_INTERVAL}`,
        metric: 'freshness p50',
        unit: 'ms',
        kind: 'latency',
        value: poll.p50Ms,
        baseline: rawSummary.p50Ms,
        baselineLabel: 'raw download p50',
        ratio: poll.p50Ms / rawSummary.p50Ms,
      },
      {
        group: `polling every ${POLL_INTERVAL}`,
        metric: 'freshness max',
        unit: 'ms',
        kind: 'latency',
        value: poll.maxMs,
        baseline: rawSummary.maxMs,
        baselineLabel: 'raw download max',
        ratio: poll.maxMs / rawSummary.maxMs,
      },
    ];
    const goals: GoalCheck[] = [
      {
        goal: `SQS: freshness p50 ≤ raw download p50 + ${BUDGET_MS} ms`,
        measured: `${formatValue(sqs.p50Ms, 'ms')} − ${formatValue(rawSummary.p50Ms, 'ms')} = ${formatValue(over, 'ms')} over (of which the test bridge ${formatValue(hop, 'ms')})`,
        met: over <= BUDGET_MS,
      },
    ];
    notes.unshift(
      `${publishes} publishes per mode of a ${formatValue(mib(size), 'MiB')} DuckDB snapshot (${rows.toLocaleString('en-US')} rows); a probe queries every 5 ms; freshness = completion of the first query showing the new version − fauxqs's timestamp of the metadata.json upload (same clock).`,
      `Polling mode: refresh_check_interval ${POLL_INTERVAL} (expected ≈ half an interval plus the download on average).`,
      "SQS mode: the test bridge (@ferry/local-aws) turns fauxqs's record of the upload into an S3 event at once (no polling interval): one HEAD of metadata.json and one SendMessage, measured apart above. A real S3 takes its own, usually longer, time to deliver an event notification; the consumer's long poll (WaitTimeSeconds 20) returns as soon as the message arrives.",
    );
    const latencies = [
      {
        title: 'metadata.json write → first query seeing the new rows',
        series: [
          latencySeries('SQS notifications', sqs),
          latencySeries(`polling every ${POLL_INTERVAL}`, poll),
          latencySeries('raw download of the snapshot (baseline)', rawSummary),
        ],
      },
    ];
    return { measurements, goals, notes, latencies, raw: { size, samples, bridgeMs: bridgeSamples } };
  },
};
