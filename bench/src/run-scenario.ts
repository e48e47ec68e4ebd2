/**
 * One scenario in its own process (started by `main.ts`), so its memory, CPU time and open files are
 * its own and a crash shows as a non-zero exit code. Argument: a JSON {@link RunRequest}. Writes the
 * {@link ScenarioResult} to `resultFile`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { ScenarioId } from './args.js';
import { AwsControl } from './aws-client.js';
import type { AwsInfo } from './aws-protocol.js';
import type { Scenario, ScenarioResult } from './scenario.js';
import { b1 } from './scenarios/b1-query.js';
import { b2 } from './scenarios/b2-swap.js';
import { b3 } from './scenarios/b3-freshness.js';
import { b4 } from './scenarios/b4-download.js';
import { b5 } from './scenarios/b5-scale.js';
import { b6 } from './scenarios/b6-flight.js';
import { b7 } from './scenarios/b7-fleet.js';
import { b8 } from './scenarios/b8-join.js';
import { b9 } from './scenarios/b9-http.js';
import { b10 } from './scenarios/b10-inspector.js';
import { b11 } from './scenarios/b11-cache.js';
import { b12 } from './scenarios/b12-delta.js';
import { b13 } from './scenarios/b13-signing.js';
import { b14 } from './scenarios/b14-cancel.js';
import { b15 } from './scenarios/b15-overload.js';
import { b16 } from './scenarios/b16-pinned.js';
import { b17 } from './scenarios/b17-builders.js';
import { b18 } from './scenarios/b18-pipelines.js';
import { b19 } from './scenarios/b19-start.js';
import { soak } from './scenarios/soak.js';

export interface RunRequest {
  readonly id: ScenarioId;
  readonly quick: boolean;
  readonly minutes: number | undefined;
  readonly aws: AwsInfo;
  readonly resultFile: string;
}

const SCENARIOS: Readonly<Record<ScenarioId, Scenario>> = {
  b1,
  b2,
  b3,
  b4,
  b5,
  b6,
  b7,
  b8,
  b9,
  b10,
  b11,
  b13,
  b12,
  b14,
  b15,
  b16,
  b17,
  b18,
  b19,
  soak,
};

const request = JSON.parse(process.argv[2] ?? '{}') as RunRequest;
const scenario = SCENARIOS[request.id];
const workDir = await mkdtemp(join(tmpdir(), `ferry-bench-${request.id}-`));
const startedAt = new Date().toISOString();
const loadBefore = loadavg()[0] ?? 0;
const started = performance.now();
try {
  const outcome = await scenario.run({
    aws: new AwsControl(request.aws),
    quick: request.quick,
    workDir,
    minutes: request.minutes,
    log: (message) => process.stderr.write(`[${scenario.id}] ${message}\n`),
  });
  const result: ScenarioResult = {
    id: scenario.id,
    title: scenario.title,
    measures: scenario.measures,
    baseline: scenario.baseline,
    goal: scenario.goal,
    quick: request.quick,
    startedAt,
    durationMs: Math.round(performance.now() - started),
    loadAverage: {
      before: Math.round(loadBefore * 100) / 100,
      after: Math.round((loadavg()[0] ?? 0) * 100) / 100,
    },
    ...outcome,
  };
  await writeFile(request.resultFile, JSON.stringify(result));
  await rm(workDir, { recursive: true, force: true });
  process.exit(0);
} catch (error) {
  process.stderr.write(`[${scenario.id}] crashed: ${(error as Error).stack ?? String(error)}\n`);
  await rm(workDir, { recursive: true, force: true });
  process.exit(1);
}
