/**
 * One B5 measurement in a fresh process (forked by `b5-scale.ts`), so RSS and CPU time belong to
 * exactly one runtime with `n` datasets: time to all-serving, how long CPU use takes to settle after
 * that, RSS, idle CPU and metadata GETs per tick over an idle window, the same idle CPU with polling
 * paused, then the fan-out time of one metadata.json write touching every dataset.
 */
import { readdirSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createRuntime } from '@ferry/runtime';
import { metadataGets } from '@ferry/runtime/testing';
import { AwsControl } from '../aws-client.js';
import type { AwsInfo, BatchItem } from '../aws-protocol.js';
import { cpuPercentOver, quietLogger, sleep } from '../harness.js';
import { BUCKET, spicepod } from '../spicepod.js';

export interface B5ChildInput {
  readonly aws: AwsInfo;
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

async function measure(input: B5ChildInput): Promise<B5ChildResult> {
  const aws = new AwsControl(input.aws);
  const n = input.items.length;
  const target = `${BUCKET}/${input.prefix}metadata.json`;
  const dataDir = await mkdtemp(join(input.workDir, `b5-${n}-`));
  const logger = quietLogger();
  const rssBefore = process.memoryUsage.rss();
  const started = performance.now();
  const runtime = await createRuntime(
    {
      yaml: spicepod({
        aws: input.aws,
        prefix: input.prefix,
        queueUrl: input.queueUrl,
        datasets: input.items.map((item) => ({
          name: item.dataset,
          engine: item.engine,
          interval: input.interval,
        })),
      }),
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

    let polls = 0;
    const offPoll = runtime.on('poll', () => {
      polls++;
    });
    const gets0 = await aws.count('GET', target);
    const coordinator0 = await metadataGets(runtime);
    const cpu0 = process.cpuUsage();
    const idleStarted = performance.now();
    await sleep(input.idleMs);
    const cpu = process.cpuUsage(cpu0);
    const idleMs = performance.now() - idleStarted;
    const gets = (await aws.count('GET', target)) - gets0;
    const coordinatorGets = (await metadataGets(runtime)) - coordinator0;
    offPoll();
    const rssIdle = process.memoryUsage.rss();
    const openFds = readdirSync('/proc/self/fd').length;

    const names = input.items.map((item) => item.dataset);
    await Promise.all(names.map((name) => runtime.send(name, 'polling.pause')));
    await sleep(1000);
    const pausedCpuPercent = await cpuPercentOver(input.pausedMs);
    await Promise.all(names.map((name) => runtime.send(name, 'polling.resume')));

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
    const batch = await aws.publishBatch(`s3://${BUCKET}/${input.prefix}`, input.items);
    await allSwapped;
    progress(`${n} datasets: all swapped; closing`);

    return {
      n,
      rssBeforeMiB: mibOf(rssBefore),
      allServingMs,
      rssServingMiB: mibOf(rssServing),
      settleMs,
      settleWindows: windows,
      rssIdleMiB: mibOf(rssIdle),
      idleCpuPercent: ((cpu.user + cpu.system) / 1000 / idleMs) * 100,
      pausedCpuPercent,
      idleMs,
      polls,
      ticks: polls / n,
      metadataGets: gets,
      coordinatorGets,
      fanOutMs: lastSwapAt - batch.metadataWrittenAtMs,
      openFds,
      errors: logger.problems.filter((problem) => problem.startsWith('error')),
    };
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
