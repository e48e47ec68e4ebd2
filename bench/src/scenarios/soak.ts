/**
 * Soak (issues 9 and 23): one swap per second per dataset (a DuckDB and a SQLite dataset) under
 * steady queries for `--minutes` (default 10; the goal's run is `--minutes 60`), sampling RSS, open
 * file descriptors (/proc/self/fd) and the files in the data directory. Baseline: the same process
 * at the start of the run's last 30 minutes (or of its second half, in a shorter run), compared with
 * its last window: RSS growth < 2 %, no growth in descriptors or files, 0 failed queries.
 */
import { readdirSync } from 'node:fs';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import type { FileFormat } from '@ferry/core';
import { buildFile, keyedColumns, QUERY_COLUMNS } from '../data.js';
import { formatValue } from '../format.js';
import { plainS3, publishEverySecond, sleep, startRuntime } from '../harness.js';
import { runLoad } from '../load.js';
import type { GoalCheck, Measurement, Scenario } from '../scenario.js';
import { BUCKET, locationOf, spicepod } from '../spicepod.js';

const PREFIX = 'soak/';
const ENGINES: readonly { engine: FileFormat; dataset: string }[] = [
  { engine: 'duckdb', dataset: 'soak_duck' },
  { engine: 'sqlite', dataset: 'soak_lite' },
];

interface Sample {
  readonly atS: number;
  readonly rssMiB: number;
  readonly heapMiB: number;
  readonly fds: number;
  readonly dataFiles: number;
  readonly swaps: number;
  /** The size of metadata.json, which grows by a snapshot entry per publish (the store contract). */
  readonly metadataKiB: number;
}

export const soak: Scenario = {
  id: 'soak',
  title: 'Soak',
  measures:
    'RSS, open file descriptors and files in the data directory during one swap per second per dataset (DuckDB + SQLite) with steady queries',
  baseline:
    'the same process at the start of the last 30 minutes (the second half of a shorter run), against the last window',
  goal: 'one hour: RSS growth over the last 30 minutes < 2 %; no growth in open file descriptors or in files in the data directory; 0 failed queries',
  async run(context) {
    const minutes = context.minutes ?? 10;
    const durationMs = minutes * 60_000;
    const rows = 20_000;
    const queueUrl = await context.aws.createQueue('bench-soak');
    const bridge = await context.aws.bridgeMetadata(BUCKET, PREFIX, queueUrl);
    const files = new Map<FileFormat, string[]>();
    for (const { engine, dataset } of ENGINES) {
      const pair: string[] = [];
      for (const version of [1, 2]) {
        pair.push(
          (await buildFile(context.workDir, engine, dataset, rows, keyedColumns(version, QUERY_COLUMNS)))
            .path,
        );
      }
      files.set(engine, pair);
      await context.aws.publish({ dataset, location: locationOf(PREFIX), file: pair[0] ?? '', engine });
    }
    const { runtime, logger, dataDir } = await startRuntime(
      context,
      spicepod({
        aws: context.aws.info,
        prefix: PREFIX,
        direct: true,
        queueUrl,
        datasets: ENGINES.map(({ engine, dataset }) => ({ name: dataset, engine, interval: '1s' })),
      }),
    );
    const samples: Sample[] = [];
    let swaps = 0;
    const swapsBy: Record<string, number> = {};
    let publishes = 0;
    let failed = 0;
    let completed = 0;
    const errors: string[] = [];
    try {
      await runtime.ready(undefined, { timeoutMs: 60_000 });
      runtime.on('swap', (event) => {
        swaps++;
        swapsBy[event.dataset] = (swapsBy[event.dataset] ?? 0) + 1;
      });
      const publishers = ENGINES.map(({ engine, dataset }) =>
        publishEverySecond(context.aws, {
          dataset,
          engine,
          location: locationOf(PREFIX),
          files: [...(files.get(engine) ?? [])].reverse(),
          keepLast: 3,
        }),
      );
      const started = Date.now();
      let sampling = true;
      const s3 = plainS3(context.aws, true);
      const metadataKiB = async (): Promise<number> => {
        const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}metadata.json` }));
        return (head.ContentLength ?? 0) / 1024;
      };
      const sampler = (async () => {
        while (sampling) {
          const size = await metadataKiB();
          const memory = process.memoryUsage();
          samples.push({
            atS: (Date.now() - started) / 1000,
            rssMiB: memory.rss / 2 ** 20,
            heapMiB: memory.heapUsed / 2 ** 20,
            fds: readdirSync('/proc/self/fd').length,
            dataFiles: readdirSync(dataDir, { recursive: true }).length,
            swaps,
            metadataKiB: size,
          });
          const latest = samples[samples.length - 1];
          if (latest !== undefined && samples.length % 12 === 0)
            context.log(
              `${latest.atS.toFixed(0)} s: RSS ${latest.rssMiB.toFixed(0)} MiB, ${latest.fds} fds, ${latest.dataFiles} data files, ${latest.swaps} swaps, metadata.json ${latest.metadataKiB.toFixed(0)} KiB`,
            );
          await sleep(5_000);
        }
      })().finally(() => s3.destroy());
      const load = await runLoad({
        clients: 4,
        warmupMs: 0,
        durationMs,
        thinkMs: 5,
        operation: (client) => {
          const { dataset } = ENGINES[client % ENGINES.length] ?? { dataset: '' };
          return runtime.query(`SELECT id, version FROM ${dataset} WHERE id = ?`, [
            Math.floor(Math.random() * rows),
          ]);
        },
      });
      failed = load.failed;
      completed = load.completed;
      errors.push(...load.errors);
      sampling = false;
      await sampler;
      for (const publisher of publishers) publishes += (await publisher.stop()).count;
    } finally {
      await runtime.close();
      await context.aws.stopBridge(bridge);
    }

    // Compare the window that opens the last 30 minutes (the second half of a shorter run) with the
    // last window of the run: means for memory, minimums for descriptors and files (a download in
    // flight briefly adds a temporary file and its fd).
    const totalS = durationMs / 1000;
    const spanS = Math.min(30 * 60, totalS / 2);
    const warmS = totalS - spanS;
    const windowS = Math.max(10, Math.min(60, totalS * 0.1));
    const early = samples.filter((sample) => sample.atS >= warmS && sample.atS < warmS + windowS);
    const late = samples.filter((sample) => sample.atS >= totalS - windowS);
    if (early.length === 0 || late.length === 0)
      throw new Error('the soak was too short to compare two windows');
    const mean = (list: readonly Sample[], pick: (sample: Sample) => number) =>
      list.reduce((sum, sample) => sum + pick(sample), 0) / list.length;
    const least = (list: readonly Sample[], pick: (sample: Sample) => number) =>
      list.reduce((min, sample) => Math.min(min, pick(sample)), Number.POSITIVE_INFINITY);
    const warm = {
      rssMiB: mean(early, (sample) => sample.rssMiB),
      heapMiB: mean(early, (sample) => sample.heapMiB),
      fds: least(early, (sample) => sample.fds),
      dataFiles: least(early, (sample) => sample.dataFiles),
    };
    const last = {
      rssMiB: mean(late, (sample) => sample.rssMiB),
      heapMiB: mean(late, (sample) => sample.heapMiB),
      fds: least(late, (sample) => sample.fds),
      dataFiles: least(late, (sample) => sample.dataFiles),
    };
    const peak = samples
      .filter((sample) => sample.atS >= warmS)
      .reduce((max, s) => Math.max(max, s.rssMiB), 0);
    const growth = (last.rssMiB - warm.rssMiB) / warm.rssMiB;
    const earlyLabel = `${warmS.toFixed(0)}–${(warmS + windowS).toFixed(0)} s`;
    const measurements: Measurement[] = [
      {
        group: 'memory',
        metric: `mean RSS over the last ${windowS.toFixed(0)} s`,
        unit: 'MiB',
        value: last.rssMiB,
        baseline: warm.rssMiB,
        baselineLabel: earlyLabel,
        ratio: last.rssMiB / warm.rssMiB,
      },
      {
        group: 'memory',
        metric: 'peak RSS after warm-up',
        unit: 'MiB',
        value: peak,
        baseline: warm.rssMiB,
        baselineLabel: earlyLabel,
        ratio: peak / warm.rssMiB,
      },
      {
        group: 'memory',
        metric: `mean V8 heap used (host thread) over the last ${windowS.toFixed(0)} s`,
        unit: 'MiB',
        value: last.heapMiB,
        baseline: warm.heapMiB,
        baselineLabel: earlyLabel,
        ratio: last.heapMiB / warm.heapMiB,
      },
      {
        group: 'handles',
        metric: `fewest open file descriptors in the last ${windowS.toFixed(0)} s`,
        unit: 'count',
        value: last.fds,
        baseline: warm.fds,
        baselineLabel: earlyLabel,
      },
      {
        group: 'handles',
        metric: `fewest files in the data directory in the last ${windowS.toFixed(0)} s`,
        unit: 'count',
        value: last.dataFiles,
        baseline: warm.dataFiles,
        baselineLabel: earlyLabel,
      },
      {
        group: 'work',
        metric: 'swaps / publishes',
        unit: 'count',
        value: swaps,
        baseline: publishes,
        baselineLabel: 'publishes',
      },
      { group: 'work', metric: 'queries completed', unit: 'count', value: completed },
      { group: 'work', metric: 'failed queries', unit: 'count', value: failed },
    ];
    const goals: GoalCheck[] = [
      {
        goal: `RSS growth over the last ${(spanS / 60).toFixed(0)} minutes < 2 % (mean of the last ${windowS.toFixed(0)} s vs ${earlyLabel})${minutes < 60 ? '; the goal is judged on a one-hour run (--minutes 60)' : ''}`,
        measured: `${formatValue(warm.rssMiB, 'MiB')} → ${formatValue(last.rssMiB, 'MiB')} = ${(growth * 100).toFixed(1)} %`,
        met: growth < 0.02,
      },
      {
        goal: 'no growth in open file descriptors',
        measured: `${warm.fds} → ${last.fds}`,
        met: last.fds <= warm.fds,
      },
      {
        goal: 'no growth in files in the data directory',
        measured: `${warm.dataFiles} → ${last.dataFiles}`,
        met: last.dataFiles <= warm.dataFiles,
      },
      { goal: '0 failed queries', measured: `${failed} of ${completed + failed}`, met: failed === 0 },
    ];
    const notes = [
      `${minutes} min; two datasets (DuckDB, SQLite; ${rows.toLocaleString('en-US')} rows) each published once a second from the AWS process (SQS + 1 s poll; older objects deleted as a lifecycle rule would); 4 clients running point lookups with 5 ms pauses.`,
      `metadata.json grew from ${formatValue((early[0]?.metadataKiB ?? 0) / 1024, 'MiB')} at the start of the compared span to ${formatValue((samples[samples.length - 1]?.metadataKiB ?? 0) / 1024, 'MiB')} at the end (one snapshot entry per publish; the store contract keeps them all).`,
      `swaps per dataset: ${Object.entries(swapsBy)
        .map(([dataset, count]) => `${dataset} ${count}`)
        .join(', ')} (a check that finds two new snapshots swaps the newest).`,
      ...(errors.length > 0 ? [`errors: ${errors.join('; ')}`] : []),
      ...(logger.counts.error + logger.counts.warn > 0
        ? [
            `Runtime logged ${logger.counts.error} errors and ${logger.counts.warn} warnings; the last ones: ${logger.problems.join(' | ')}`,
          ]
        : []),
    ];
    return {
      measurements,
      goals,
      notes,
      lineChart: {
        title: `Soak: ${minutes} min, one swap per second per dataset`,
        xLabel: 'seconds',
        yLabel: 'RSS (MiB) / open fds / data files',
        series: [
          { name: 'RSS MiB', points: samples.map((s) => [s.atS, s.rssMiB] as const) },
          { name: 'open fds', points: samples.map((s) => [s.atS, s.fds] as const) },
          { name: 'data dir files', points: samples.map((s) => [s.atS, s.dataFiles] as const) },
        ],
      },
      raw: { samples, swaps, publishes },
    };
  },
};
