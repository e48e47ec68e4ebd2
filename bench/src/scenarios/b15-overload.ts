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
import { Agent } from 'node:http';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ANSWER_ROWS, type Answer, DUCK, heavy, LITE, post } from '../burst.js';
import { formatRatio, formatValue } from '../format.js';
import { latencySeries } from '../harness.js';
import { LatencyRecorder, type LatencySummary } from '../histogram.js';
import { publishQueryDatasets } from '../query-datasets.js';
import { type GoalCheck, type LatencyPlot, type Measurement, ratio, type Scenario } from '../scenario.js';
import { startFerryServe, stop, waitReady } from '../serve-process.js';

const PREFIX = 'b15/';
const PROBE_INTERVAL_MS = 20;
const HEALTH_GOAL_MS = 500;
/** The niceness of the burst's process in the second burst (the lowest priority). */
const OFF_CORES_NICE = 19;

/** A burst's answers and how long it took, from `burst-client.ts` run at `nice`. */
async function burstFrom(
  base: URL,
  first: number,
  count: number,
  nice: number,
): Promise<{ readonly ms: number; readonly answers: readonly Answer[] }> {
  const script = fileURLToPath(new URL('../burst-client.js', import.meta.url));
  const child = spawn(process.execPath, [script, base.href, String(first), String(count)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (nice !== 0 && child.pid !== undefined) setPriority(child.pid, nice);
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const [line] = (await once(lines, 'line')) as [string];
  return JSON.parse(line) as { ms: number; answers: Answer[] };
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

/** One burst's figures. */
interface BurstFigures {
  readonly label: string;
  readonly answers: readonly Answer[];
  readonly ms: number;
  readonly health: ProbeCell;
  readonly ready: ProbeCell;
}

export const b15: Scenario = {
  id: 'b15',
  title: 'B15 overload',
  measures:
    'a burst of heavy queries arriving at once at `ferry serve` with the default spicepod: queries shed (429 + Retry-After) and answered, failures, and `GET /health` / `GET /v1/ready` p99 during the burst, its clients beside the server and then off its cores (at nice 19)',
  baseline: 'the same probes on the same idle server just before the bursts',
  goal: `past the admission bound queries are shed at once (429 with Retry-After), none fails otherwise; /health p99 during a burst from clients off the server's cores < ${HEALTH_GOAL_MS} ms`,
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
    const runs: { label: string; phase: string; ms: number; answers: readonly Answer[] }[] = [];
    let probes: Record<string, ProbeCell> = {};
    try {
      context.log('starting ferry serve');
      const served = await startFerryServe(podPath, join(context.workDir, 'data'), env);
      ferry = served.child;
      const base = new URL(served.url);
      await waitReady(agent, base);
      // The pools started and each engine's first plan made, as on a server that has been serving.
      for (let n = 0; n < 4; n++) await post(base, heavy(-1 - n));
      prober = startProbe(base);
      context.log(`idle probes for ${idleMs / 1000} s`);
      prober.phase('idle');
      await new Promise((resolve) => setTimeout(resolve, idleMs));
      // The same burst twice: its clients at the bench's own priority (beside the server, sharing
      // its two cores), then at nice 19, standing in for clients on other machines (the server's
      // cores are its own; the prober keeps its priority, as a node's kubelet does).
      for (const [index, { label, phase, nice }] of [
        { label: 'clients beside the server', phase: 'beside', nice: 0 },
        { label: 'clients off its cores (nice 19)', phase: 'off', nice: OFF_CORES_NICE },
      ].entries()) {
        context.log(`burst of ${burst} heavy queries, ${label}`);
        prober.phase(phase);
        const { ms, answers } = await burstFrom(base, index * burst, burst, nice);
        runs.push({ label, phase, ms, answers });
        prober.phase('between');
      }
      probes = await prober.end();
    } finally {
      agent.destroy();
      prober?.child.kill();
      await stop(ferry);
    }
    const cell = (key: string): ProbeCell =>
      probes[key] ?? { summary: new LatencyRecorder().summary(), failed: 0 };
    const idle = { health: cell('idle /health'), ready: cell('idle /v1/ready') };
    const bursts: BurstFigures[] = runs.map(({ label, phase, ms, answers }) => ({
      label,
      answers,
      ms,
      health: cell(`${phase} /health`),
      ready: cell(`${phase} /v1/ready`),
    }));
    const measurements: Measurement[] = [];
    const goals: GoalCheck[] = [];
    const notes = [
      `Tables: ${rows.toLocaleString('en-US')} rows each (the B1 columns), one DuckDB and one SQLite dataset; \`ferry serve\` with the default spicepod (results cache on) and its defaults.`,
      `A heavy query: a whole-table scan, a sort and ${ANSWER_ROWS.toLocaleString('en-US')} rows answered as JSON, a new text each (no cache hit), DuckDB and SQLite in turn; each on a connection of its own, all sent at once from a process of their own, every body read whole. The burst runs twice: its process at the bench's priority (it then takes CPU from the server: opening ${burst.toLocaleString('en-US')} connections, reading every answer), then at nice 19, standing in for clients on other machines; the goal is judged on the second.`,
      `Probes: GET /health and GET /v1/ready every ${PROBE_INTERVAL_MS} ms on fresh connections, from a process of their own at the default priority, on a fixed schedule; ${idle.health.summary.count} /health answers idle.`,
    ];
    const latencies: LatencyPlot[] = [
      {
        title: 'GET /health',
        series: [
          ...bursts.map((figures) =>
            latencySeries(`during the burst, ${figures.label}`, figures.health.summary),
          ),
          latencySeries('idle', idle.health.summary),
        ],
      },
      {
        title: 'GET /v1/ready',
        series: [
          ...bursts.map((figures) =>
            latencySeries(`during the burst, ${figures.label}`, figures.ready.summary),
          ),
          latencySeries('idle', idle.ready.summary),
        ],
      },
    ];
    for (const [index, figures] of bursts.entries()) {
      const { answers, health, ready, label } = figures;
      const shed = answers.filter((answer) => answer.status === 429);
      const answered = answers.filter((answer) => answer.status === 200);
      const failed = answers.filter((answer) => answer.status !== 200 && answer.status !== 429);
      const shedWithoutRetry = shed.filter((answer) => answer.retryAfter === undefined).length;
      const shedLatency = new LatencyRecorder();
      for (const answer of shed) shedLatency.recordMs(answer.ms);
      const answeredLatency = new LatencyRecorder();
      for (const answer of answered) answeredLatency.recordMs(answer.ms);
      const shedSummary = shedLatency.summary();
      const answeredSummary = answeredLatency.summary();
      const group = `${burst} heavy queries at once, ${label}`;
      measurements.push(
        { group, metric: 'shed (429)', unit: 'count', value: shed.length },
        { group, metric: 'answered (200)', unit: 'count', value: answered.length },
        { group, metric: 'failed (neither)', unit: 'count', value: failed.length },
        { group, metric: 'burst, first request to last answer', unit: 's', value: figures.ms / 1000 },
        {
          group,
          metric: '/health p99 latency',
          unit: 'ms',
          kind: 'latency',
          value: health.summary.p99Ms,
          baseline: idle.health.summary.p99Ms,
          baselineLabel: 'idle server',
          ratio: ratio(health.summary.p99Ms, idle.health.summary.p99Ms),
        },
        {
          group,
          metric: '/v1/ready p99 latency',
          unit: 'ms',
          kind: 'latency',
          value: ready.summary.p99Ms,
          baseline: idle.ready.summary.p99Ms,
          baselineLabel: 'idle server',
          ratio: ratio(ready.summary.p99Ms, idle.ready.summary.p99Ms),
        },
      );
      if (shed.length > 0) {
        measurements.push({
          group,
          metric: '429 answers p99 latency',
          unit: 'ms',
          kind: 'latency',
          value: shedSummary.p99Ms,
        });
      }
      goals.push({
        goal: `${group}: some shed with Retry-After, none failed otherwise`,
        measured: `${shed.length} shed (${shedWithoutRetry} without Retry-After), ${answered.length} answered, ${failed.length} failed`,
        met: shed.length > 0 && shedWithoutRetry === 0 && failed.length === 0,
      });
      const healthMeasured = `${formatValue(health.summary.p99Ms, 'ms')} (idle: ${formatValue(idle.health.summary.p99Ms, 'ms')}, ${formatRatio(ratio(health.summary.p99Ms, idle.health.summary.p99Ms))}); ${health.failed} probes failed`;
      if (index === bursts.length - 1) {
        goals.push({
          goal: `/health p99 during the burst from ${label} < ${HEALTH_GOAL_MS} ms`,
          measured: healthMeasured,
          met: health.summary.p99Ms < HEALTH_GOAL_MS && health.failed === 0,
        });
      } else notes.push(`/health p99 during the burst from ${label} (not a goal): ${healthMeasured}.`);
      notes.push(
        `${label}: ${health.summary.count} /health answers during the burst; 429 answers p50 ${formatValue(shedSummary.p50Ms, 'ms')}, p99 ${formatValue(shedSummary.p99Ms, 'ms')}; 200 answers p50 ${formatValue(answeredSummary.p50Ms, 'ms')}, p99 ${formatValue(answeredSummary.p99Ms, 'ms')}.`,
      );
      if (failed.length > 0) {
        const kinds = new Map<string, number>();
        for (const answer of failed) {
          const key = answer.error ?? `HTTP ${answer.status}`;
          kinds.set(key, (kinds.get(key) ?? 0) + 1);
        }
        notes.push(`${label}, failed: ${[...kinds].map(([key, count]) => `${count} × ${key}`).join('; ')}.`);
      }
    }
    return {
      measurements,
      goals,
      notes,
      latencies,
      raw: {
        burst,
        rows,
        bursts: bursts.map((figures) => ({
          label: figures.label,
          ms: figures.ms,
          shed: figures.answers.filter((answer) => answer.status === 429).length,
          answered: figures.answers.filter((answer) => answer.status === 200).length,
          failed: figures.answers.filter((answer) => answer.status !== 200 && answer.status !== 429).length,
        })),
        probes,
      },
    };
  },
};
