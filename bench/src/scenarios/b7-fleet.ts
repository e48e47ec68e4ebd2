/**
 * B7 fleet freshness: three readers, each with its own SQS queue subscribed to one SNS topic that
 * the bucket's metadata.json notifications are published to (Spice's fan-out), against a single
 * reader set up the same way in the same run. Measured per publish: from the metadata.json write
 * (fauxqs's timestamp of the upload) to the swap of the LAST reader to serve the new snapshot.
 * The readers are three runtimes in this process (each its own coordinator and dataset threads,
 * its own queue and data directory), so they share this machine's cores, as readers on one host do.
 */
import { availableParallelism } from 'node:os';
import type { Runtime } from '@ferry/runtime';
import { buildFile, keyedColumns, QUERY_COLUMNS } from '../data.js';
import { formatRatio, formatValue } from '../format.js';
import { latencySeries, mib, type StartedRuntime, sleep, startRuntime, swapTo } from '../harness.js';
import { LatencyRecorder } from '../histogram.js';
import type { GoalCheck, Measurement, Scenario, ScenarioContext } from '../scenario.js';
import { BUCKET, locationOf, spicepod } from '../spicepod.js';

const DATASET = 'fleet';
const READERS = 3;

interface PhaseResult {
  /** Per publish: freshness of each reader, ms. */
  readonly samples: number[][];
  readonly size: number;
  readonly problems: string[];
}

/** Readers on their own queues (raw and enveloped delivery alternate) publishing `publishes` times. */
async function runPhase(
  context: ScenarioContext,
  name: string,
  readers: number,
  files: readonly string[],
  publishes: number,
): Promise<PhaseResult> {
  const prefix = `b7-${name}/`;
  const location = locationOf(prefix);
  const topicArn = await context.aws.createTopic(`bench-b7-${name}`);
  const queues: string[] = [];
  for (let index = 0; index < readers; index++) {
    const queueUrl = await context.aws.createQueue(`bench-b7-${name}-${index}`);
    await context.aws.subscribe(topicArn, queueUrl, index % 2 === 0);
    queues.push(queueUrl);
  }
  const bridge = await context.aws.bridgeMetadataToTopic(BUCKET, prefix, topicArn);
  const first = await context.aws.publish({
    dataset: DATASET,
    location,
    file: files[0] ?? '',
    engine: 'duckdb',
  });
  const started: StartedRuntime[] = [];
  const samples: number[][] = [];
  const problems: string[] = [];
  let size = first.size;
  try {
    for (const queueUrl of queues) {
      started.push(
        await startRuntime(
          context,
          spicepod({
            aws: context.aws.info,
            prefix,
            direct: true,
            queueUrl,
            // The poll is only a safety net: too slow to ever be what saw the change.
            datasets: [{ name: DATASET, engine: 'duckdb', interval: '10m' }],
          }),
        ),
      );
    }
    const runtimes: Runtime[] = started.map((reader) => reader.runtime);
    await Promise.all(runtimes.map((runtime) => runtime.ready(DATASET, { timeoutMs: 60_000 })));
    let snapshotId = first.snapshotId;
    for (let n = 1; n <= publishes; n++) {
      snapshotId += 1;
      const swaps = runtimes.map((runtime) => swapTo(runtime, DATASET, snapshotId, 60_000));
      const reply = await context.aws.publish({
        dataset: DATASET,
        location,
        file: files[n % 2] ?? '',
        engine: 'duckdb',
        keepLast: 3,
      });
      size = reply.size;
      const freshness = (await Promise.all(swaps)).map((at) => at - reply.metadataWrittenAtMs);
      samples.push(freshness);
      context.log(`${name} #${n}: served after ${freshness.map((ms) => `${ms} ms`).join(', ')}`);
      await sleep(200 + Math.random() * (context.quick ? 300 : 1000));
    }
  } finally {
    await Promise.all(started.map((reader) => reader.runtime.close()));
    await context.aws.stopBridge(bridge);
  }
  for (const [index, reader] of started.entries()) {
    if (reader.logger.counts.error > 0 || reader.logger.counts.warn > 0) {
      problems.push(`${name} reader ${index + 1}: ${reader.logger.problems.join(' | ')}`);
    }
  }
  return { samples, size, problems };
}

export const b7: Scenario = {
  id: 'b7',
  title: 'B7 fleet freshness',
  measures: `time from the metadata.json write until the last of ${READERS} readers serves the new snapshot, each reader on its own SQS queue subscribed to one SNS topic`,
  baseline: 'one reader set up the same way (its own queue on its own topic), same snapshots, same run',
  goal: `the last of ${READERS} readers: p50 freshness ≤ 2 × the single reader's p50`,
  async run(context) {
    const rows = context.quick ? 2_000 : 200_000;
    const publishes = context.quick ? 3 : 20;
    context.log(`building two ${rows}-row DuckDB versions`);
    const files: string[] = [];
    for (const version of [1, 2]) {
      files.push(
        (await buildFile(context.workDir, 'duckdb', DATASET, rows, keyedColumns(version, QUERY_COLUMNS)))
          .path,
      );
    }
    const single = await runPhase(context, 'single', 1, files, publishes);
    const fleet = await runPhase(context, 'fleet', READERS, files, publishes);

    const singleRecorder = new LatencyRecorder();
    for (const [ms] of single.samples) if (ms !== undefined) singleRecorder.recordMs(ms);
    const last = new LatencyRecorder();
    const spread = new LatencyRecorder();
    for (const publish of fleet.samples) {
      last.recordMs(Math.max(...publish));
      spread.recordMs(Math.max(...publish) - Math.min(...publish));
    }
    const s = singleRecorder.summary();
    const l = last.summary();
    const measurements: Measurement[] = [
      { group: '1 reader', metric: 'freshness p50', unit: 'ms', kind: 'latency', value: s.p50Ms },
      { group: '1 reader', metric: 'freshness p99', unit: 'ms', kind: 'latency', value: s.p99Ms },
      {
        group: `${READERS} readers, last to serve`,
        metric: 'freshness p50',
        unit: 'ms',
        kind: 'latency',
        value: l.p50Ms,
        baseline: s.p50Ms,
        baselineLabel: '1 reader p50',
        ratio: l.p50Ms / s.p50Ms,
      },
      {
        group: `${READERS} readers, last to serve`,
        metric: 'freshness p99',
        unit: 'ms',
        kind: 'latency',
        value: l.p99Ms,
        baseline: s.p99Ms,
        baselineLabel: '1 reader p99',
        ratio: l.p99Ms / s.p99Ms,
      },
      {
        group: `${READERS} readers`,
        metric: 'spread (last − first to serve) p50',
        unit: 'ms',
        value: spread.summary().p50Ms,
      },
    ];
    const ratioP50 = l.p50Ms / s.p50Ms;
    const goals: GoalCheck[] = [
      {
        goal: `${READERS} readers: last reader's p50 ≤ 2 × 1 reader's p50`,
        measured: `${formatValue(l.p50Ms, 'ms')} vs ${formatValue(s.p50Ms, 'ms')} = ${formatRatio(ratioP50)}`,
        met: ratioP50 <= 2,
      },
    ];
    const notes = [
      `${publishes} publishes per phase of a ${formatValue(mib(fleet.size), 'MiB')} DuckDB snapshot (${rows.toLocaleString('en-US')} rows); freshness = the reader's swap event − fauxqs's timestamp of the metadata.json upload (same clock); refresh_check_interval 10m, so every swap came from a notification.`,
      "Each reader has its own queue subscribed to the phase's SNS topic (raw message delivery on the 1st and 3rd, the SNS envelope on the 2nd); the bridge publishes the S3 event to the topic and fauxqs delivers it to every queue.",
      `With ${publishes} samples, p99 is the slowest publish. The ${READERS} readers share this machine's ${availableParallelism()} cores: each validates (SHA-256, schema) and swaps the same snapshot at the same moment, so on fewer cores than readers the ratio is mostly CPU contention; the spread shows how close together the topic's deliveries land.`,
      ...single.problems,
      ...fleet.problems,
    ];
    const latencies = [
      {
        title: 'metadata.json write → a reader serving it (SNS → its own SQS queue)',
        series: [
          latencySeries(`${READERS} readers: the last to serve`, l),
          latencySeries('1 reader (baseline)', s),
        ],
      },
    ];
    return { measurements, goals, notes, latencies, raw: { single: single.samples, fleet: fleet.samples } };
  },
};
