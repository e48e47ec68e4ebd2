/**
 * B4 download: throughput of Ferry's whole refresh — metadata read, download, SHA-256, fsync,
 * validation (open + schema check) and swap — for large snapshots, timed from a `poll.now` command
 * to the swap event. Baseline in the same run: one plain GetObject of the same object streamed to a
 * file, on the same endpoint.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { checkSnapshotFile, openEngine } from '@ferry/engines';
import { BULK_COLUMNS, buildDuckDbOfSize, buildFile, keyedColumns } from '../data.js';
import { formatRatio, formatValue } from '../format.js';
import { loggedErrorsNote, mib, plainDownload, plainS3, startRuntime, swapTo } from '../harness.js';
import { LatencyRecorder } from '../histogram.js';
import type { GoalCheck, Measurement, Scenario } from '../scenario.js';
import { BUCKET, locationOf, spicepod } from '../spicepod.js';

const PREFIX = 'b4/';
const DATASET = 'dl';

/** What two of Ferry's steps cost on their own, on this machine: hashing the bytes and validating the file. */
async function localCosts(path: string): Promise<{ hashMs: number; checkMs: number }> {
  const bytes = await readFile(path);
  const hashStarted = performance.now();
  createHash('sha256').update(bytes).digest('hex');
  const hashMs = performance.now() - hashStarted;
  const engine = await openEngine('duckdb', path, { table: DATASET });
  const schema = await engine.schema(DATASET);
  await engine.close();
  const checkStarted = performance.now();
  await checkSnapshotFile('duckdb', path, DATASET, schema);
  return { hashMs, checkMs: performance.now() - checkStarted };
}

export const b4: Scenario = {
  id: 'b4',
  title: 'B4 download',
  measures:
    'throughput of download + hash + fsync + validation + swap of large DuckDB snapshots (poll.now → swap event)',
  baseline: 'a plain GetObject of the same object streamed to a file (no hash, no fsync)',
  goal: 'Ferry throughput ≥ 0.85× the plain GetObject',
  async run(context) {
    const plan = context.quick
      ? [
          { label: '8 MiB', bytes: 8 * 2 ** 20, repeats: 1 },
          { label: '24 MiB', bytes: 24 * 2 ** 20, repeats: 1 },
        ]
      : [
          { label: '64 MiB', bytes: 64 * 2 ** 20, repeats: 3 },
          { label: '512 MiB', bytes: 512 * 2 ** 20, repeats: 2 },
        ];
    const location = locationOf(PREFIX);
    const seed = await buildFile(context.workDir, 'duckdb', DATASET, 1000, keyedColumns(1, BULK_COLUMNS));
    await context.aws.publish({ dataset: DATASET, location, file: seed.path, engine: 'duckdb' });
    const { runtime, logger } = await startRuntime(
      context,
      spicepod({
        aws: context.aws.info,
        prefix: PREFIX,
        direct: true,
        datasets: [{ name: DATASET, engine: 'duckdb', interval: '1h' }],
      }),
      { metadataWindowMs: 0 },
    );
    const s3 = plainS3(context.aws, true);
    const measurements: Measurement[] = [];
    const goals: GoalCheck[] = [];
    const notes: string[] = [];
    const raw: Record<string, unknown> = {};
    try {
      await runtime.ready(DATASET, { timeoutMs: 60_000 });
      for (const step of plan) {
        context.log(`building a ~${step.label} DuckDB file`);
        const file = await buildDuckDbOfSize(context.workDir, DATASET, step.bytes);
        const ferryTimes = new LatencyRecorder();
        const plainTimes = new LatencyRecorder();
        const syncedTimes = new LatencyRecorder();
        const prepareTimes = new LatencyRecorder();
        const runs: { ferryMs: number; plainMs: number; syncedMs: number; prepareMs: number }[] = [];
        for (let repeat = 0; repeat < step.repeats; repeat++) {
          const reply = await context.aws.publish({
            dataset: DATASET,
            location,
            file: file.path,
            engine: 'duckdb',
          });
          const key = `${PREFIX}${reply.key}`;
          const plainMs = await plainDownload(s3, key, join(context.workDir, 'plain.download'));
          const syncedMs = await plainDownload(s3, key, join(context.workDir, 'plain.download'), true);
          const before = runtime.metrics().downloadSeconds;
          const swapped = swapTo(runtime, DATASET, reply.snapshotId, 600_000);
          const began = performance.now();
          await runtime.send(DATASET, 'poll.now');
          await swapped;
          const ferryMs = performance.now() - began;
          const prepareMs = (runtime.metrics().downloadSeconds - before) * 1000;
          ferryTimes.recordMs(ferryMs);
          plainTimes.recordMs(plainMs);
          syncedTimes.recordMs(syncedMs);
          prepareTimes.recordMs(prepareMs);
          runs.push({ ferryMs, plainMs, syncedMs, prepareMs });
          context.log(
            `${step.label} #${repeat + 1}: Ferry ${ferryMs.toFixed(0)} ms (prepare ${prepareMs.toFixed(0)} ms), plain GetObject ${plainMs.toFixed(0)} ms, with fsync ${syncedMs.toFixed(0)} ms`,
          );
        }
        const { hashMs, checkMs } = await localCosts(file.path);
        // Throughput from the median (p50) time of the repeats.
        const mibs = (ms: number) => mib(file.size) / (ms / 1000);
        const ferryMs = ferryTimes.percentileMs(50);
        const plainMs = plainTimes.percentileMs(50);
        const syncedMs = syncedTimes.percentileMs(50);
        const prepareMs = prepareTimes.percentileMs(50);
        const ferry = mibs(ferryMs);
        const plain = mibs(plainMs);
        const r = ferry / plain;
        const group = `${step.label} snapshot (${formatValue(mib(file.size), 'MiB')})`;
        measurements.push(
          {
            group,
            metric: `throughput (p50 of ${step.repeats})`,
            unit: 'MiB/s',
            value: ferry,
            baseline: plain,
            baselineLabel: 'plain GetObject',
            ratio: r,
          },
          {
            group,
            metric: `throughput (p50 of ${step.repeats}) against a durable plain download`,
            unit: 'MiB/s',
            value: ferry,
            baseline: mibs(syncedMs),
            baselineLabel: 'plain GetObject + fsync',
            ratio: ferry / mibs(syncedMs),
          },
          {
            group,
            metric: 'time: whole refresh (poll.now → swap event)',
            unit: 'ms',
            value: ferryMs,
            baseline: plainMs,
            baselineLabel: 'plain GetObject',
            ratio: ferryMs / plainMs,
          },
          {
            group,
            metric: 'time: prepare step (download, SHA-256, fsync, open + schema check)',
            unit: 'ms',
            value: prepareMs,
            baseline: syncedMs,
            baselineLabel: 'plain GetObject + fsync',
            ratio: prepareMs / syncedMs,
          },
          {
            group,
            metric: 'time: after prepare (metadata read, rename + directory fsync, engine reopen, events)',
            unit: 'ms',
            value: ferryMs - prepareMs,
          },
          { group, metric: 'cost measured alone: SHA-256 of the bytes in memory', unit: 'ms', value: hashMs },
          {
            group,
            metric: 'cost measured alone: open + schema check of the file',
            unit: 'ms',
            value: checkMs,
          },
        );
        goals.push({
          goal: `${step.label}: throughput ≥ 0.85× plain GetObject`,
          measured: `${formatValue(ferry, 'MiB/s')} vs ${formatValue(plain, 'MiB/s')} = ${formatRatio(r)}`,
          met: r >= 0.85,
        });
        raw[step.label] = { size: file.size, runs, hashMs, checkMs };
        await context.aws.deletePrefix(BUCKET, `${PREFIX}month=`);
      }
    } finally {
      s3.destroy();
      await runtime.close();
    }
    notes.push(
      'Ferry is timed from runtime.send(poll.now) to the swap event: one conditional metadata.json GET, then the parallel ranged download (8 MiB parts, 4 at a time) with SHA-256 while streaming, fsync, size/digest checks, opening the file and checking its schema, the atomic rename + directory fsync, and reopening the engine.',
      'The plain GetObject (and the same followed by an fsync) run right before each Ferry refresh of the same object; all talk to fauxqs directly (no counting proxy). The goal compares against the plain GetObject without fsync, as stated.',
    );
    const logged = loggedErrorsNote(logger);
    if (logged !== undefined) notes.push(logged);
    return { measurements, goals, notes, raw };
  },
};
