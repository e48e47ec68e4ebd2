/**
 * `pnpm bench [scenario…] [--quick] [--minutes N]`: starts the local S3 + SQS in a separate process,
 * runs each scenario in its own process, and writes JSON, Markdown and SVG per scenario plus a run
 * summary under `bench/results/`. Goals are reported, not asserted: the exit code is non-zero only
 * when a scenario crashes (or the harness itself fails).
 */
import { spawn } from 'node:child_process';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs, type ScenarioId, USAGE } from './args.js';
import { type AwsProcess, startAwsProcess } from './aws-client.js';
import { machineInfo } from './machine-info.js';
import { consoleReport, goalCounts, type RunSummary, writeScenarioFiles, writeSummary } from './report.js';
import type { RunRequest } from './run-scenario.js';
import type { ScenarioResult } from './scenario.js';
import { BUCKET } from './spicepod.js';

const RESULTS_DIR = fileURLToPath(new URL('../results/', import.meta.url));
const RUNNER = fileURLToPath(new URL('./run-scenario.js', import.meta.url));

function timeoutFor(id: ScenarioId, quick: boolean, minutes: number | undefined): number {
  if (id === 'soak') return ((minutes ?? 10) + 5) * 60_000;
  // Two 1 GiB files built per engine, eight refreshes of them.
  if (id === 'b12' && !quick) return 60 * 60_000;
  return quick ? 3 * 60_000 : 20 * 60_000;
}

function runScenario(request: RunRequest, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [RUNNER, JSON.stringify(request)], {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve(`did not finish within ${Math.round(timeoutMs / 1000)} s`);
    }, timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(code === 0 ? undefined : `exited with ${signal ?? `code ${code}`}`);
    });
  });
}

async function main(): Promise<number> {
  let args: ReturnType<typeof parseArgs>;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  await mkdir(RESULTS_DIR, { recursive: true });
  const machine = machineInfo();
  const startedAt = new Date().toISOString();
  process.stderr.write(
    `Ferry bench${args.quick ? ' --quick' : ''}: ${args.scenarios.join(', ')} on ${machine.cpuModel}, ${machine.cores} cores, Node ${machine.node}\n`,
  );
  let aws: AwsProcess | undefined;
  const results: ScenarioResult[] = [];
  const crashed: { id: string; reason: string }[] = [];
  try {
    aws = await startAwsProcess();
    await aws.control.createBucket(BUCKET);
    for (const id of args.scenarios) {
      const resultFile = `${RESULTS_DIR}${id}.json`;
      await rm(resultFile, { force: true });
      const failure = await runScenario(
        { id, quick: args.quick, minutes: args.minutes, aws: aws.control.info, resultFile },
        timeoutFor(id, args.quick, args.minutes),
      );
      if (failure !== undefined) {
        crashed.push({ id, reason: failure });
        process.stderr.write(`\n== ${id}: CRASHED (${failure}) ==\n`);
        continue;
      }
      const result = JSON.parse(await readFile(resultFile, 'utf8')) as ScenarioResult;
      await writeScenarioFiles(RESULTS_DIR, result);
      results.push(result);
      process.stdout.write(`${consoleReport(result)}\n`);
    }
  } finally {
    await aws?.stop();
  }
  const summary: RunSummary = { startedAt, quick: args.quick, machine, results, crashed };
  await writeSummary(RESULTS_DIR, summary);
  const { met, judged, notJudged } = goalCounts(results.flatMap((result) => result.goals));
  const unjudged = notJudged === 0 ? '' : ` (${notJudged} not judged at this run's size)`;
  process.stdout.write(
    `\n${met} of ${judged} goals met${unjudged}; ${crashed.length} scenario(s) crashed. Results in ${RESULTS_DIR}summary.md\n`,
  );
  return crashed.length > 0 ? 1 : 0;
}

process.exitCode = await main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  return 1;
});
