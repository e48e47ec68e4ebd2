/**
 * B19 start: what it costs to start serving. `ferry serve` (the CLI, in a process of its own, the
 * spicepod a user writes: a DuckDB and an SQLite dataset in the local S3) is started, and timed from
 * its spawn until it has answered one query on each dataset over HTTP; so is the plain server a user
 * would write instead (`plain-server.ts`: `node:http`, DuckDB and better-sqlite3 on the same files,
 * already on disk). For each, the wall time and the CPU time of the whole process (every thread,
 * from `/proc/<pid>/stat`) until those answers. Starts alternate between the two.
 */
import type { ChildProcess } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { post } from '../burst.js';
import { formatRatio, formatValue } from '../format.js';
import { processCpuSeconds } from '../proc-cpu.js';
import { publishQueryDatasets } from '../query-datasets.js';
import { type Measurement, median, ratio, type Scenario } from '../scenario.js';
import { startFerryServe, startServerProcess, stop } from '../serve-process.js';

const PREFIX = 'b19/';
const DUCK = 's_duck';
const LITE = 's_lite';
/** Posts `sql` until it answers 200 (a server still bootstrapping answers 503), every 10 ms. */
async function firstAnswer(base: URL, sql: string, agent: Agent): Promise<void> {
  const started = Date.now();
  for (;;) {
    const answer = await post(base, sql, agent);
    if (answer.status === 200) return;
    if (Date.now() - started > 120_000) {
      throw new Error(`no answer to ${sql} within 120 s (last: ${answer.status ?? answer.error})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

interface Start {
  readonly wallMs: number;
  readonly cpuS: number;
}

/** Spawns a server with `start`, waits for its answers on both tables, and stops it. */
async function timedStart(start: () => Promise<{ url: string; child: ChildProcess }>): Promise<Start> {
  const began = performance.now();
  let child: ChildProcess | undefined;
  const agent = new Agent({ keepAlive: true });
  try {
    const started = await start();
    child = started.child;
    const base = new URL(started.url);
    await firstAnswer(base, `SELECT count(*) AS n FROM ${DUCK}`, agent);
    await firstAnswer(base, `SELECT count(*) AS n FROM ${LITE}`, agent);
    const wallMs = performance.now() - began;
    return { wallMs, cpuS: await processCpuSeconds(child.pid as number) };
  } finally {
    agent.destroy();
    await stop(child);
  }
}

export const b19: Scenario = {
  id: 'b19',
  title: 'B19 start',
  measures:
    '`ferry serve` with the default spicepod (a DuckDB and an SQLite dataset in the local S3), from spawn to one answered query on each dataset over HTTP: wall time, and CPU time of the whole process',
  baseline:
    'the plain node:http server calling DuckDB and better-sqlite3 on the same files (already on disk), from spawn to the same two answers, started alternately in the same run',
  goal: 'reported, no goal: the cost of starting each thread kind is in bench/RESULTS.md ("What a runtime start costs")',
  async run(context) {
    const rounds = context.quick ? 2 : 7;
    const rows = 20_000;
    const { files, pod } = await publishQueryDatasets(context, PREFIX, { duckdb: DUCK, sqlite: LITE }, rows);
    const podPath = join(context.workDir, 'spicepod.yaml');
    await writeFile(podPath, pod);
    const env = { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
    const plainArgs = [
      fileURLToPath(new URL('../plain-server.js', import.meta.url)),
      files.get('duckdb')?.path ?? '',
      files.get('sqlite')?.path ?? '',
      LITE,
    ];
    const ferry: Start[] = [];
    const plain: Start[] = [];
    for (let round = 0; round < rounds; round++) {
      context.log(`round ${round + 1} of ${rounds}: the plain server, then ferry serve`);
      plain.push(await timedStart(() => startServerProcess(plainArgs, env)));
      // A fresh data directory each time: every start bootstraps from the store, as a new replica does.
      const dataDir = join(context.workDir, `data-${round}`);
      ferry.push(await timedStart(() => startFerryServe(podPath, dataDir, env)));
      await rm(dataDir, { recursive: true, force: true });
    }
    const measurements: Measurement[] = [];
    const wall = { ferry: median(ferry.map((s) => s.wallMs)), plain: median(plain.map((s) => s.wallMs)) };
    const cpu = { ferry: median(ferry.map((s) => s.cpuS)), plain: median(plain.map((s) => s.cpuS)) };
    measurements.push(
      {
        group: 'spawn to one answer on each dataset (median)',
        metric: 'wall time',
        unit: 'ms',
        value: wall.ferry,
        baseline: wall.plain,
        baselineLabel: 'plain server',
        ratio: ratio(wall.ferry, wall.plain),
      },
      {
        group: 'spawn to one answer on each dataset (median)',
        metric: 'CPU time, every thread',
        unit: 's',
        value: cpu.ferry,
        baseline: cpu.plain,
        baselineLabel: 'plain server',
        ratio: ratio(cpu.ferry, cpu.plain),
      },
    );
    const list = (starts: readonly Start[]) =>
      starts.map((s) => `${formatValue(s.wallMs, 'ms')} / ${formatValue(s.cpuS, 's')}`).join(', ');
    return {
      measurements,
      goals: [],
      notes: [
        `${rounds} starts of each, alternating; tables of ${rows.toLocaleString('en-US')} rows. Ferry's start includes what the plain server does not do: reading metadata.json and downloading and verifying both snapshots from the local S3 into a fresh data directory.`,
        `ferry serve, wall / CPU per start: ${list(ferry)}; wall ${formatRatio(ratio(wall.ferry, wall.plain))} and CPU ${formatRatio(ratio(cpu.ferry, cpu.plain))} the plain server's.`,
        `plain server, wall / CPU per start: ${list(plain)}.`,
      ],
      raw: { ferry, plain },
    };
  },
};
