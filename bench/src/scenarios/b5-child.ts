/**
 * One B5 measurement in a fresh process (forked by `b5-scale.ts`), so RSS and CPU time belong to
 * exactly one runtime with `n` datasets: time to all-serving, how long CPU use takes to settle after
 * that, RSS, idle CPU and metadata GETs per tick over an idle window, the same idle CPU with polling
 * paused, then the fan-out time of one metadata.json write touching every dataset. The store is the
 * local S3 (with SQS) or a `file://` directory (polling only, as an embedder tries it); `n` may be 0
 * (an empty runtime: the baseline of what the datasets add).
 */
import { readdirSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createRuntime, type Runtime } from '@ferry/runtime';
import { metadataGets } from '@ferry/runtime/testing';
import { spicepodYaml } from '@ferry/test-support';
import { AwsControl } from '../aws-client.js';
import type { AwsInfo, BatchItem } from '../aws-protocol.js';
import { publishBatchToDir } from '../batch.js';
import { cpuPercentOver, quietLogger, sleep } from '../harness.js';
import { BUCKET, spicepod } from '../spicepod.js';

export interface B5ChildInput {
  readonly aws: AwsInfo;
  /** Where the snapshots are: the local S3 (`prefix`, `queueUrl`), or this `file://` directory. */
  readonly fileStore?: string;
  /** Measure the fan-out of one write moving every dataset (skipped for the 1,000-dataset run). */
  readonly fanOut: boolean;
  readonly prefix: string;
  readonly queueUrl: string;
  readonly interval: string;
  readonly idleMs: number;
  /** Idle window with every dataset's polling paused: the floor under the polling cost. */
  readonly pausedMs: number;
  /** CPU is sampled in windows this long after all-serving until it settles … */
  readonly settleWindowMs: number;
  /** … or this much time has passed. */
  readonly settleMaxMs: number;
  readonly workDir: string;
  /** The datasets to serve, each with the file of its next snapshot (published in one batch). */
  readonly items: readonly BatchItem[];
}

export interface B5ChildResult {
  readonly n: number;
  readonly rssBeforeMiB: number;
  readonly allServingMs: number;
  readonly rssServingMiB: number;
  /** From all-serving until CPU use settled (see {@link settle}). */
  readonly settleMs: number;
  /** CPU % of each settling window. */
  readonly settleWindows: readonly number[];
  readonly rssIdleMiB: number;
  readonly idleCpuPercent: number;
  readonly pausedCpuPercent: number;
  readonly idleMs: number;
  readonly polls: number;
  readonly ticks: number;
  readonly metadataGets: number;
  readonly coordinatorGets: number;
  readonly fanOutMs: number;
  readonly openFds: number;
  readonly errors: readonly string[];
}

if (process.send === undefined) throw new Error('b5-child.js is forked by the B5 scenario.');

const mibOf = (bytes: number) => bytes / 2 ** 20;

/** A progress line on stderr (the scenario's log), so a slow phase shows where it is. */
function progress(message: string): void {
  process.stderr.write(`[b5] ${message}\n`);
}

/**
 * Start-up leaves work behind (V8 compiling and collecting in every thread's isolate): with many
 * datasets it keeps the cores busy well after all-serving. Idle is measured once two consecutive
 * windows agree within 25 % (or 1 point) and neither saturates the machine, or after `maxMs`.
 */
async function settle(windowMs: number, maxMs: number): Promise<{ settleMs: number; windows: number[] }> {
  const started = performance.now();
  const saturated = availableParallelism() * 100 * 0.8;
  const windows: number[] = [];
  for (;;) {
    const current = await cpuPercentOver(windowMs);
    const previous = windows[windows.length - 1];
    windows.push(current);
    const stable =
      previous !== undefined &&
      current < saturated &&
      previous < saturated &&
      Math.abs(current - previous) <= Math.max(1, previous * 0.25);
    if (stable || performance.now() - started >= maxMs)
      return { settleMs: performance.now() - started, windows };
  }
}

/** Idle CPU with every dataset's polling paused (threads, timers and the SQS long poll still alive). */
async function pausedCpu(runtime: Runtime, names: readonly string[], ms: number): Promise<number> {
  await Promise.all(names.map((name) => runtime.send(name, 'polling.pause')));
  await sleep(1000);
  const percent = await cpuPercentOver(ms);
  await Promise.all(names.map((name) => runtime.send(name, 'polling.resume')));
  return percent;
}

async function measure(input: B5ChildInput): Promise<B5ChildResult> {
  const aws = new AwsControl(input.aws);
  const n = input.items.length;
  const target = `${BUCKET}/${input.prefix}metadata.json`;
  const file = input.fileStore;
  const dataDir = await mkdtemp(join(input.workDir, `b5-${n}-`));
  const logger = quietLogger();
  const datasets = input.items.map((item) => ({
    name: item.dataset,
    engine: item.engine,
    interval: input.interval,
  }));
  const rssBefore = process.memoryUsage.rss();
  const started = performance.now();
  const runtime = await createRuntime(
    {
      yaml:
        file === undefined
          ? spicepod({ aws: input.aws, prefix: input.prefix, queueUrl: input.queueUrl, datasets })
          : spicepodYaml({ name: 'ferry-bench', location: `file://${file}/`, params: {}, datasets }),
      baseDir: dataDir,
    },
    // As the default logger (pino at info): the threads post no debug records, which nobody would write.
    {
      logger,
      logLevel: 'info',
      dataDir,
    },
  );
  try {
    progress(`${n} datasets: starting`);
    await runtime.ready(undefined, { timeoutMs: 600_000 });
    progress(`${n} datasets: all serving`);
    const allServingMs = performance.now() - started;
    const rssServing = process.memoryUsage.rss();
    const { settleMs, windows } = await settle(input.settleWindowMs, input.settleMaxMs);

    // Counted from metrics(): a listener for poll events would make every check answered in a
    // dataset thread post one (docs/threads.md), which is not the cost measured here.
    const pollsNow = () =>
      Object.values(runtime.metrics().polls).reduce(
        (sum, results) => sum + Object.values(results).reduce((a, b) => a + b, 0),
        0,
      );
    const polls0 = pollsNow();
    const gets0 = file === undefined ? await aws.count('GET', target) : 0;
    const coordinator0 = await metadataGets(runtime);
    const cpu0 = process.cpuUsage();
    const idleStarted = performance.now();
    await sleep(input.idleMs);
    const cpu = process.cpuUsage(cpu0);
    const idleMs = performance.now() - idleStarted;
    const gets = file === undefined ? (await aws.count('GET', target)) - gets0 : 0;
    const coordinatorGets = (await metadataGets(runtime)) - coordinator0;
    const polls = pollsNow() - polls0;
    const rssIdle = process.memoryUsage.rss();
    const openFds = readdirSync('/proc/self/fd').length;

    const names = input.items.map((item) => item.dataset);
    const measured = {
      n,
      rssBeforeMiB: mibOf(rssBefore),
      allServingMs,
      rssServingMiB: mibOf(rssServing),
      settleMs,
      settleWindows: windows,
      rssIdleMiB: mibOf(rssIdle),
      idleCpuPercent: ((cpu.user + cpu.system) / 1000 / idleMs) * 100,
      pausedCpuPercent: n === 0 ? Number.NaN : await pausedCpu(runtime, names, input.pausedMs),
      idleMs,
      polls,
      ticks: n === 0 ? 0 : polls / n,
      metadataGets: gets,
      coordinatorGets,
      openFds,
    };
    const errors = () => logger.problems.filter((problem) => problem.startsWith('error'));
    if (n === 0 || !input.fanOut) return { ...measured, fanOutMs: Number.NaN, errors: errors() };

    const pending = new Set(input.items.map((item) => item.dataset));
    let lastSwapAt = 0;
    const allSwapped = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${pending.size} datasets did not swap within 300 s of the batch`)),
        300_000,
      );
      const off = runtime.on('swap', (event) => {
        if (!pending.delete(event.dataset)) return;
        lastSwapAt = Date.now();
        if (pending.size === 0) {
          clearTimeout(timer);
          off();
          resolve();
        }
      });
    });
    progress(`${n} datasets: publishing a new snapshot of every dataset`);
    const writtenAtMs =
      file === undefined
        ? (await aws.publishBatch(`s3://${BUCKET}/${input.prefix}`, input.items)).metadataWrittenAtMs
        : await publishBatchToDir(file, input.items);
    await allSwapped;
    progress(`${n} datasets: all swapped; closing`);
    return { ...measured, fanOutMs: lastSwapAt - writtenAtMs, errors: errors() };
  } finally {
    await runtime.close();
  }
}

const input = JSON.parse(process.argv[2] ?? '{}') as B5ChildInput;
measure(input).then(
  (result) => process.send?.({ ok: true, result }, () => process.exit(0)),
  (error: unknown) =>
    process.send?.({ ok: false, error: (error as Error).stack ?? String(error) }, () => process.exit(1)),
);
