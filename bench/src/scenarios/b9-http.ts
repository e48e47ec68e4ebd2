/**
 * B9 HTTP: `ferry serve` (the CLI, in a process of its own) under a mixed load over HTTP — point
 * lookups and aggregates on a DuckDB and an SQLite dataset, every statement a text with its
 * literals in it (as `POST /v1/sql` carries them), 64 clients with keep-alive connections — against
 * the plain server a user would write instead: `node:http` calling DuckDB and better-sqlite3
 * directly on the same files (`plain-server.ts`, also a process of its own). The clients run in
 * this process and read every body whole; windows alternate between the two servers.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatRatio, formatValue } from '../format.js';
import { latencySeries } from '../harness.js';
import { failureNote, type LoadResult, LoadTotals, runLoad } from '../load.js';
import { publishQueryDatasets } from '../query-datasets.js';
import { type GoalCheck, type LatencyPlot, type Measurement, ratio, type Scenario } from '../scenario.js';
import { cliPath, startServerProcess, stop, waitReady } from '../serve-process.js';

const PREFIX = 'b9/';
const DUCK = 'h_duck';
const LITE = 'h_lite';
const CLIENTS = 64;

interface Kind {
  readonly label: string;
  sql(n: number, rows: number): string;
}

const aggregate = (table: string, n: number) =>
  `SELECT category, count(*) AS n, sum(amount) AS total, avg(qty) AS mean_qty FROM ${table} WHERE qty < ${7 + n} GROUP BY category ORDER BY category`;

/** The mixed load, in turn: each client's n-th request is kind n % 4, with new literals every time. */
const KINDS: readonly Kind[] = [
  {
    label: 'DuckDB point lookup',
    sql: (_n, rows) => `SELECT * FROM ${DUCK} WHERE id = ${Math.floor(Math.random() * rows)}`,
  },
  {
    label: 'SQLite point lookup',
    sql: (_n, rows) => `SELECT * FROM ${LITE} WHERE id = ${Math.floor(Math.random() * rows)}`,
  },
  { label: 'DuckDB aggregate', sql: (n) => aggregate(DUCK, n) },
  { label: 'SQLite aggregate', sql: (n) => aggregate(LITE, n) },
];

/** `POST /v1/sql` with a text body; resolves with the status once the body is read whole. */
function post(agent: Agent, base: URL, sql: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: base.hostname,
        port: base.port,
        path: '/v1/sql',
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(sql) },
      },
      (res) => {
        res.on('data', () => undefined);
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(sql);
  });
}

export const b9: Scenario = {
  id: 'b9',
  title: 'B9 HTTP',
  measures: `throughput and p99 of a mixed load over HTTP (point lookups and aggregates on a DuckDB and an SQLite dataset, literal texts, ${CLIENTS} keep-alive clients) on \`ferry serve\``,
  baseline:
    'a plain node:http server calling DuckDB (runAndReadAll(text)) and better-sqlite3 (prepare(text).all()) directly on the same files, in its own process',
  goal: 'throughput ≥ 1.0 × the plain server, p99 ≤ 1.5 × its p99',
  async run(context) {
    const rows = context.quick ? 20_000 : 200_000;
    const rounds = context.quick ? 1 : 2;
    const window = context.quick
      ? { warmupMs: 1_000, durationMs: 2_000 }
      : { warmupMs: 2_000, durationMs: 4_000 };
    const { files, pod } = await publishQueryDatasets(context, PREFIX, { duckdb: DUCK, sqlite: LITE }, rows);
    const podPath = join(context.workDir, 'spicepod.yaml');
    await writeFile(podPath, pod);
    const env = { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
    const cli = cliPath();
    const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
    let ferry: ChildProcess | undefined;
    let plain: ChildProcess | undefined;
    const totals = { ferry: new LoadTotals(), plain: new LoadTotals() };
    const kinds = { ferry: KINDS.map(() => new LoadTotals()), plain: KINDS.map(() => new LoadTotals()) };
    try {
      context.log('starting ferry serve and the plain server');
      const served = await startServerProcess(
        [
          cli,
          'serve',
          podPath,
          '--http',
          '127.0.0.1:0',
          '--no-flight',
          '--no-inspector',
          '--log-level',
          'warn',
          '--log-format',
          'json',
          '--data-dir',
          join(context.workDir, 'data'),
        ],
        env,
      );
      ferry = served.child;
      const base = { ferry: new URL(served.url), plain: new URL('http://127.0.0.1') };
      const baseline = await startServerProcess(
        [
          fileURLToPath(new URL('../plain-server.js', import.meta.url)),
          files.get('duckdb')?.path ?? '',
          files.get('sqlite')?.path ?? '',
          LITE,
        ],
        env,
      );
      plain = baseline.child;
      base.plain = new URL(baseline.url);
      await waitReady(agent, base.ferry);
      const operation = (side: 'ferry' | 'plain') => {
        let n = 0;
        return async () => {
          const index = n % KINDS.length;
          const kind = KINDS[index] as Kind;
          const began = performance.now();
          const status = await post(agent, base[side], kind.sql(n++, rows));
          if (status !== 200) throw new Error(`${kind.label} answered ${status}`);
          (kinds[side][index] as LoadTotals).latency.recordMs(performance.now() - began);
        };
      };
      // Warm both: pool threads, prepared parsers, connections.
      for (const side of ['plain', 'ferry'] as const) {
        await runLoad({ clients: CLIENTS, warmupMs: 0, durationMs: 1_000, operation: operation(side) });
      }
      for (let round = 0; round < rounds; round++) {
        for (const side of ['plain', 'ferry'] as const) {
          context.log(`round ${round + 1}: ${side}`);
          await runLoad({ clients: CLIENTS, ...window, operation: operation(side) }, totals[side]);
        }
      }
    } finally {
      agent.destroy();
      await Promise.all([stop(ferry), stop(plain)]);
    }
    const ferryResult: LoadResult = totals.ferry.result();
    const plainResult: LoadResult = totals.plain.result();
    const tput = ratio(ferryResult.throughput, plainResult.throughput);
    const p99 = ratio(ferryResult.latency.p99Ms, plainResult.latency.p99Ms);
    const group = `mixed load, ${CLIENTS} clients`;
    const measurements: Measurement[] = [
      {
        group,
        metric: 'throughput',
        unit: 'ops/s',
        value: ferryResult.throughput,
        baseline: plainResult.throughput,
        baselineLabel: 'plain server',
        ratio: tput,
      },
      {
        group,
        metric: 'p50 latency',
        unit: 'ms',
        kind: 'latency',
        value: ferryResult.latency.p50Ms,
        baseline: plainResult.latency.p50Ms,
        baselineLabel: 'plain server',
        ratio: ratio(ferryResult.latency.p50Ms, plainResult.latency.p50Ms),
      },
      {
        group,
        metric: 'p99 latency',
        unit: 'ms',
        kind: 'latency',
        value: ferryResult.latency.p99Ms,
        baseline: plainResult.latency.p99Ms,
        baselineLabel: 'plain server',
        ratio: p99,
      },
    ];
    for (const [index, kind] of KINDS.entries()) {
      const mine = (kinds.ferry[index] as LoadTotals).latency.summary();
      const theirs = (kinds.plain[index] as LoadTotals).latency.summary();
      measurements.push({
        group: kind.label,
        metric: 'p50 latency (warm-up included)',
        unit: 'ms',
        kind: 'latency',
        value: mine.p50Ms,
        baseline: theirs.p50Ms,
        baselineLabel: 'plain server',
        ratio: ratio(mine.p50Ms, theirs.p50Ms),
      });
    }
    const goals: GoalCheck[] = [
      {
        goal: `${group}: throughput ≥ 1.0 × the plain server`,
        measured: `${formatValue(ferryResult.throughput, 'ops/s')} vs ${formatValue(plainResult.throughput, 'ops/s')} = ${formatRatio(tput)}`,
        met: tput >= 1.0,
      },
      {
        goal: `${group}: p99 ≤ 1.5 × the plain server's p99`,
        measured: `${formatValue(ferryResult.latency.p99Ms, 'ms')} vs ${formatValue(plainResult.latency.p99Ms, 'ms')} = ${formatRatio(p99)}`,
        met: p99 <= 1.5,
      },
    ];
    const notes = [
      `Tables: ${rows.toLocaleString('en-US')} rows each (the B1 columns); every request a new text (its id or its WHERE literal).`,
      `${rounds} round(s) of a ${window.durationMs / 1000} s window per server after ${window.warmupMs / 1000} s of warm-up, alternating; ${CLIENTS} closed-loop clients in this process, one keep-alive connection each, reading every body whole.`,
      'The plain server runs DuckDB statements on 4 connections of one instance and SQLite statements on its event loop; Ferry is `ferry serve --no-flight --no-inspector` with its defaults.',
    ];
    const failure = failureNote(group, ferryResult, plainResult);
    if (failure !== undefined) notes.push(failure);
    const latencies: LatencyPlot[] = [
      {
        title: group,
        series: [
          latencySeries('ferry serve', ferryResult.latency),
          latencySeries('plain server', plainResult.latency),
        ],
      },
      ...KINDS.map((kind, index) => ({
        title: kind.label,
        series: [
          latencySeries('ferry serve', (kinds.ferry[index] as LoadTotals).latency.summary()),
          latencySeries('plain server', (kinds.plain[index] as LoadTotals).latency.summary()),
        ],
      })),
    ];
    return { measurements, goals, notes, latencies, raw: { ferry: ferryResult, plain: plainResult } };
  },
};
