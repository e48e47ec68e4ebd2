/**
 * Pieces the scenarios share: starting a runtime quietly, waiting for swaps by event (never by
 * sleeping), a once-a-second publisher, and the plain-GetObject download used as a baseline.
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { FileFormat } from '@ferry/core';
import { createRuntime, type Logger, type Runtime, type RuntimeOptions } from '@ferry/runtime';
import type { AwsControl } from './aws-client.js';
import type { PublishReply } from './aws-protocol.js';
import { buildFile, keyedColumns, QUERY_COLUMNS } from './data.js';
import type { LatencySummary } from './histogram.js';
import type { GoalCheck, LatencySeries, ScenarioContext } from './scenario.js';
import { BUCKET, locationOf } from './spicepod.js';

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** This process's CPU (user + system, every thread) over the next `ms`, as % of one core. */
export async function cpuPercentOver(ms: number): Promise<number> {
  const before = process.cpuUsage();
  const started = performance.now();
  await sleep(ms);
  const used = process.cpuUsage(before);
  return ((used.user + used.system) / 1000 / (performance.now() - started)) * 100;
}

/** A logger that drops routine records and keeps warnings and errors (the last few, and counts). */
export function quietLogger(): Logger & {
  readonly problems: string[];
  counts: { warn: number; error: number };
} {
  const problems: string[] = [];
  const counts = { warn: 0, error: 0 };
  const keep = (level: 'warn' | 'error') => (_fields: object, message: string) => {
    counts[level]++;
    problems.push(`${level}: ${message}`);
    if (problems.length > 20) problems.shift();
  };
  return {
    problems,
    counts,
    debug: () => undefined,
    info: () => undefined,
    warn: keep('warn'),
    error: keep('error'),
  };
}

export interface StartedRuntime {
  readonly runtime: Runtime;
  readonly logger: ReturnType<typeof quietLogger>;
  readonly dataDir: string;
}

export async function startRuntime(
  context: ScenarioContext,
  yaml: string,
  options: RuntimeOptions = {},
): Promise<StartedRuntime> {
  const dataDir = await mkdtemp(join(context.workDir, 'data-'));
  const logger = quietLogger();
  const runtime = await createRuntime({ yaml, baseDir: dataDir }, { logger, dataDir, ...options });
  return { runtime, logger, dataDir };
}

/** A note naming what the runtime logged at error level, or undefined when nothing was. */
export function loggedErrorsNote(logger: ReturnType<typeof quietLogger>): string | undefined {
  return logger.counts.error > 0
    ? `Runtime logged ${logger.counts.error} errors: ${logger.problems.join(' | ')}`
    : undefined;
}

/** Resolves with `Date.now()` when `dataset` swaps to `snapshotId` (or a later one). */
export function swapTo(
  runtime: Runtime,
  dataset: string,
  snapshotId: number,
  timeoutMs = 120_000,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`dataset '${dataset}' did not swap to snapshot ${snapshotId} within ${timeoutMs} ms`));
    }, timeoutMs);
    const off = runtime.on('swap', (event) => {
      if (event.dataset !== dataset || event.to < snapshotId) return;
      clearTimeout(timer);
      off();
      resolve(Date.now());
    });
  });
}

export interface PublisherLoop {
  /**
   * Stops after the publish in progress; resolves with how many publishes were made and the last
   * reply. The loop keeps no other reply: it runs in the measured process, and a soak publishes
   * thousands (a caller that needs each one passes `onReply`).
   */
  stop(): Promise<{ readonly count: number; readonly last: PublishReply | undefined }>;
}

/**
 * Publishes `files` in turn (as `dataset` to `location`) about once a second, in the AWS process,
 * until stopped. A publish that takes longer than a second delays the next one.
 */
export function publishEverySecond(
  aws: AwsControl,
  options: {
    readonly dataset: string;
    readonly location: string;
    readonly engine: FileFormat;
    readonly files: readonly string[];
    readonly keepLast?: number;
    /** Called with each publish's reply, in order. */
    readonly onReply?: (reply: PublishReply) => void;
  },
): PublisherLoop {
  let running = true;
  let count = 0;
  let last: PublishReply | undefined;
  const done = (async () => {
    for (let index = 0; running; index++) {
      const began = Date.now();
      last = await aws.publish({
        dataset: options.dataset,
        location: options.location,
        engine: options.engine,
        file: options.files[index % options.files.length] ?? '',
        ...(options.keepLast === undefined ? {} : { keepLast: options.keepLast }),
      });
      count++;
      options.onReply?.(last);
      const wait = 1000 - (Date.now() - began);
      if (wait > 0 && running) await sleep(wait);
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
      return { count, last };
    },
  };
}

/** A plain S3 client on the same endpoint Ferry uses, for baselines. */
export function plainS3(aws: AwsControl, direct: boolean): S3Client {
  return new S3Client({
    endpoint: aws.endpoint(direct),
    region: aws.info.region,
    credentials: { accessKeyId: aws.info.accessKeyId, secretAccessKey: aws.info.secretAccessKey },
    forcePathStyle: true,
  });
}

/**
 * The baseline download: one GetObject streamed to a file (no hashing; no fsync unless `sync`).
 * Returns ms.
 */
export async function plainDownload(s3: S3Client, key: string, path: string, sync = false): Promise<number> {
  const began = performance.now();
  const out = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  await pipeline(out.Body as Readable, createWriteStream(path));
  if (sync) {
    const handle = await open(path, 'r+');
    await handle.sync();
    await handle.close();
  }
  const elapsed = performance.now() - began;
  await rm(path, { force: true });
  return elapsed;
}

/** Bytes as MiB. */
export const mib = (bytes: number) => bytes / 2 ** 20;

/** What a goal check says: met, not met, or not judged (the run was smaller than the goal's size). */
export type Verdict = 'met' | 'not met' | 'not judged at this size';

/**
 * The harness's rule for every goal: one stated for a size (`at`) is judged only by a run that
 * reached that size; a smaller run (`--quick`) reports its figures and no verdict.
 */
export function verdictOf(goal: GoalCheck): Verdict {
  if (goal.at !== undefined && goal.at.ran < goal.at.size) return 'not judged at this size';
  return goal.met ? 'met' : 'not met';
}

/** A series of a percentile plot from a recorded latency distribution. */
export function latencySeries(name: string, latency: LatencySummary): LatencySeries {
  return { name, count: latency.count, percentiles: latency.percentiles };
}

/**
 * Builds versions 1 and 2 of each dataset (`rows` keyed rows of {@link QUERY_COLUMNS}, each row
 * carrying its version) and publishes version 1 under every prefix: what the swap scenarios
 * alternate. Returns each engine's files, version 1 first.
 */
export async function buildTwoVersions(
  context: ScenarioContext,
  datasets: readonly { readonly engine: FileFormat; readonly dataset: string }[],
  rows: number,
  prefixes: readonly string[],
): Promise<Map<FileFormat, string[]>> {
  context.log(`building two versions of ${rows}-row ${datasets.map((d) => d.engine).join(' and ')} files`);
  const files = new Map<FileFormat, string[]>();
  for (const { engine, dataset } of datasets) {
    const versions: string[] = [];
    for (const version of [1, 2]) {
      const file = await buildFile(
        context.workDir,
        engine,
        dataset,
        rows,
        keyedColumns(version, QUERY_COLUMNS),
      );
      versions.push(file.path);
    }
    files.set(engine, versions);
    for (const prefix of prefixes) {
      await context.aws.publish({ dataset, location: locationOf(prefix), file: versions[0] ?? '', engine });
    }
  }
  return files;
}
