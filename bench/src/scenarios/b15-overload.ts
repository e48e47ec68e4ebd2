/**
 * B15 overload (issue 37): a burst of heavy queries arriving at once at `ferry serve` (its own
 * process, the default spicepod: results cache on, default admission bound) — each on a connection
 * of its own, each a new text — while a prober in another process (`health-probe.ts`) asks
 * `GET /health` and `GET /v1/ready` on a fixed schedule over fresh connections. Reported: how many
 * were shed (429, with `Retry-After`) and how fast, how many answered, how many failed otherwise, and
 * the probes' p99 during the burst against the same probes on the idle server just before (the
 * baseline, same run, same process).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { formatRatio, formatValue } from '../format.js';
import { latencySeries } from '../harness.js';
import { LatencyRecorder, type LatencySummary } from '../histogram.js';
import { publishQueryDatasets } from '../query-datasets.js';
import { type GoalCheck, type LatencyPlot, type Measurement, ratio, type Scenario } from '../scenario.js';
import { cliPath, startServerProcess, stop, waitReady } from '../serve-process.js';

const PREFIX = 'b15/';
const DUCK = 'o_duck';
const LITE = 'o_lite';
const PROBE_INTERVAL_MS = 20;
/** Rows each heavy query answers (as JSON, the default `Accept`). */
const ANSWER_ROWS = 1_000;
const HEALTH_GOAL_MS = 500;

/**
 * A heavy query: a scan of the whole table, a sort, and 1 000 rows answered as JSON; every text new
 * (its literals), so none is answered from the results cache. DuckDB and SQLite in turn.
 */
function heavy(n: number): string {
  const table = n % 2 === 0 ? DUCK : LITE;
  return `SELECT id, category, amount, note FROM ${table} WHERE qty <> ${n % 7} AND id >= ${n} ORDER BY amount DESC, id LIMIT ${ANSWER_ROWS}`;
}

interface Answer {
  readonly status: number;
  readonly retryAfter: string | undefined;
  readonly ms: number;
  readonly error?: string;
}

/** `POST /v1/sql` on a connection of its own; the body is read whole (and dropped). */
function post(base: URL, sql: string): Promise<Answer> {
  const began = performance.now();
  return new Promise((resolve) => {
    const req = request(
      {
        agent: false,
        host: base.hostname,
        port: base.port,
        path: '/v1/sql',
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(sql) },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          const retry = res.headers['retry-after'];
          resolve({ status: res.statusCode ?? 0, retryAfter: retry, ms: performance.now() - began });
        });
        res.on('error', (error) =>
          resolve({ status: 0, retryAfter: undefined, ms: performance.now() - began, error: error.message }),
        );
      },
    );
    req.on('error', (error) =>
      resolve({ status: 0, retryAfter: undefined, ms: performance.now() - began, error: error.message }),
    );
    req.end(sql);
  });
}

interface ProbeCell {
  readonly summary: LatencySummary;
  readonly failed: number;
}

/** The prober process: `phase(name)` switches what its probes count toward, `end()` returns them. */
function startProbe(base: URL): {
  phase(name: string): void;
  end(): Promise<Record<string, ProbeCell>>;
  child: ChildProcess;
} {
  const script = fileURLToPath(new URL('../health-probe.js', import.meta.url));
  const child = spawn(process.execPath, [script, base.href, String(PROBE_INTERVAL_MS)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const result = once(lines, 'line').then(
    ([line]) => JSON.parse(line as string) as Record<string, ProbeCell>,
  );
  return {
    child,
    phase: (name) => child.stdin?.write(`phase ${name}\n`),
    end: async () => {
      child.stdin?.write('end\n');
      return result;
    },
  };
}

export const b15: Scenario = {
  id: 'b15',
  title: 'B15 overload',
  measures:
    'a burst of heavy queries arriving at once at `ferry serve` with the default spicepod: queries shed (429 + Retry-After) and answered, failures, and `GET /health` / `GET /v1/ready` p99 during the burst',
  baseline: 'the same probes on the same idle server just before the burst',
  goal: `past the admission bound queries are shed at once (429 with Retry-After), none fails otherwise; /health p99 during the burst < ${HEALTH_GOAL_MS} ms`,
  async run(context) {
    const rows = context.quick ? 20_000 : 200_000;
    const burst = context.quick ? 400 : 2_000;
    const idleMs = context.quick ? 2_000 : 5_000;
    const { pod } = await publishQueryDatasets(context, PREFIX, { duckdb: DUCK, sqlite: LITE }, rows, {
      resultsCache: true,
    });
    const podPath = join(context.workDir, 'spicepod.yaml');
    await writeFile(podPath, pod);
    const env = { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    let ferry: ChildProcess | undefined;
    let prober: ReturnType<typeof startProbe> | undefined;
    const answers: Answer[] = [];
    let burstMs = 0;
    let probes: Record<string, ProbeCell> = {};
    try {
      context.log('starting ferry serve');
      const served = await startServerProcess(
        [
          cliPath(),
          'serve',
          podPath,
          '--http',
          '127.0.0.1:0',
          '--flight',
          '127.0.0.1:0',
          '--log-level',
          'warn',
          '--data-dir',
          join(context.workDir, 'data'),
        ],
        env,
      );
      ferry = served.child;
      const base = new URL(served.url);
      await waitReady(agent, base);
      // The pools started and each engine's first plan made, as on a server that has been serving.
      for (let n = 0; n < 4; n++) await post(base, heavy(-1 - n));
      prober = startProbe(base);
      context.log(`idle probes for ${idleMs / 1000} s`);
      prober.phase('idle');
      await new Promise((resolve) => setTimeout(resolve, idleMs));
      context.log(`burst of ${burst} heavy queries`);
      prober.phase('burst');
      const began = performance.now();
      answers.push(...(await Promise.all(Array.from({ length: burst }, (_, n) => post(base, heavy(n))))));
      burstMs = performance.now() - began;
      probes = await prober.end();
    } finally {
      agent.destroy();
      prober?.child.kill();
      await stop(ferry);
    }
    const shed = answers.filter((answer) => answer.status === 429);
    const answered = answers.filter((answer) => answer.status === 200);
    const failed = answers.filter((answer) => answer.status !== 200 && answer.status !== 429);
    const shedWithoutRetry = shed.filter((answer) => answer.retryAfter === undefined).length;
    const shedLatency = new LatencyRecorder();
    for (const answer of shed) shedLatency.recordMs(answer.ms);
    const answeredLatency = new LatencyRecorder();
    for (const answer of answered) answeredLatency.recordMs(answer.ms);
    const cell = (key: string): ProbeCell =>
      probes[key] ?? { summary: new LatencyRecorder().summary(), failed: 0 };
    const health = { idle: cell('idle /health'), burst: cell('burst /health') };
    const ready = { idle: cell('idle /v1/ready'), burst: cell('burst /v1/ready') };
    const shedSummary = shedLatency.summary();
    const answeredSummary = answeredLatency.summary();
    const group = `${burst} heavy queries at once`;
    const measurements: Measurement[] = [
      { group, metric: 'shed (429)', unit: 'count', value: shed.length },
      { group, metric: 'answered (200)', unit: 'count', value: answered.length },
      { group, metric: 'failed (neither)', unit: 'count', value: failed.length },
      { group, metric: 'burst, first request to last answer', unit: 's', value: burstMs / 1000 },
      {
        group: '/health',
        metric: 'p99 latency',
        unit: 'ms',
        kind: 'latency',
        value: health.burst.summary.p99Ms,
        baseline: health.idle.summary.p99Ms,
        baselineLabel: 'idle server',
        ratio: ratio(health.burst.summary.p99Ms, health.idle.summary.p99Ms),
      },
      {
        group: '/v1/ready',
        metric: 'p99 latency',
        unit: 'ms',
        kind: 'latency',
        value: ready.burst.summary.p99Ms,
        baseline: ready.idle.summary.p99Ms,
        baselineLabel: 'idle server',
        ratio: ratio(ready.burst.summary.p99Ms, ready.idle.summary.p99Ms),
      },
    ];
    if (shed.length > 0) {
      measurements.push({
        group: '429 answers',
        metric: 'p99 latency',
        unit: 'ms',
        kind: 'latency',
        value: shedSummary.p99Ms,
      });
    }
    const goals: GoalCheck[] = [
      {
        goal: `${group}: some shed with Retry-After, none failed otherwise`,
        measured: `${shed.length} shed (${shedWithoutRetry} without Retry-After), ${answered.length} answered, ${failed.length} failed`,
        met: shed.length > 0 && shedWithoutRetry === 0 && failed.length === 0,
      },
      {
        goal: `/health p99 during the burst < ${HEALTH_GOAL_MS} ms`,
        measured: `${formatValue(health.burst.summary.p99Ms, 'ms')} (idle: ${formatValue(health.idle.summary.p99Ms, 'ms')}, ${formatRatio(ratio(health.burst.summary.p99Ms, health.idle.summary.p99Ms))}); ${health.burst.failed} probes failed`,
        met: health.burst.summary.p99Ms < HEALTH_GOAL_MS && health.burst.failed === 0,
      },
    ];
    const notes = [
      `Tables: ${rows.toLocaleString('en-US')} rows each (the B1 columns), one DuckDB and one SQLite dataset; \`ferry serve\` with the default spicepod (results cache on) and its defaults.`,
      `A heavy query: a whole-table scan, a sort and ${ANSWER_ROWS.toLocaleString('en-US')} rows answered as JSON, a new text each (no cache hit), DuckDB and SQLite in turn; each on a connection of its own, all sent at once, every body read whole.`,
      `Probes: GET /health and GET /v1/ready every ${PROBE_INTERVAL_MS} ms on fresh connections, from a process of their own, on a fixed schedule; ${health.burst.summary.count} /health answers during the burst, ${health.idle.summary.count} idle.`,
      `429 answers: p50 ${formatValue(shedSummary.p50Ms, 'ms')}, p99 ${formatValue(shedSummary.p99Ms, 'ms')}; 200 answers: p50 ${formatValue(answeredSummary.p50Ms, 'ms')}, p99 ${formatValue(answeredSummary.p99Ms, 'ms')}.`,
    ];
    if (failed.length > 0) {
      const kinds = new Map<string, number>();
      for (const answer of failed) {
        const key = answer.error ?? `HTTP ${answer.status}`;
        kinds.set(key, (kinds.get(key) ?? 0) + 1);
      }
      notes.push(`Failed: ${[...kinds].map(([key, count]) => `${count} × ${key}`).join('; ')}.`);
    }
    const latencies: LatencyPlot[] = [
      {
        title: 'GET /health',
        series: [
          latencySeries('during the burst', health.burst.summary),
          latencySeries('idle', health.idle.summary),
        ],
      },
      {
        title: 'GET /v1/ready',
        series: [
          latencySeries('during the burst', ready.burst.summary),
          latencySeries('idle', ready.idle.summary),
        ],
      },
    ];
    return {
      measurements,
      goals,
      notes,
      latencies,
      raw: {
        burst,
        rows,
        burstMs,
        shed: shed.length,
        answered: answered.length,
        failed: failed.length,
        probes,
      },
    };
  },
};
