/**
 * Writing results: per scenario a JSON file, a Markdown summary and an SVG chart under
 * `bench/results/`, plus `summary.md` / `summary.json` for the whole run, and the console lines.
 * Every goal is shown with its verdict (`verdictOf`): met, not met, or not judged at this size.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { renderSvg, scenarioChart } from './charts.js';
import { formatRatio, formatValue } from './format.js';
import { type Verdict, verdictOf } from './harness.js';
import type { MachineInfo } from './machine-info.js';
import type { GoalCheck, ScenarioResult } from './scenario.js';

export interface RunSummary {
  readonly startedAt: string;
  readonly quick: boolean;
  readonly machine: MachineInfo;
  readonly results: readonly ScenarioResult[];
  /** Scenarios that crashed (exit code or timeout), with why. */
  readonly crashed: readonly { readonly id: string; readonly reason: string }[];
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|');
}

function measurementTable(result: ScenarioResult): string[] {
  const lines = [
    '| what | metric | Ferry | baseline | baseline value | ratio |',
    '| --- | --- | ---: | --- | ---: | ---: |',
  ];
  for (const m of result.measurements) {
    lines.push(
      `| ${cell(m.group)} | ${cell(m.metric)} | ${formatValue(m.value, m.unit)} | ${cell(m.baselineLabel ?? '')} | ${
        m.baseline === undefined ? '' : formatValue(m.baseline, m.unit)
      } | ${m.ratio === undefined ? '' : formatRatio(m.ratio)} |`,
    );
  }
  return lines;
}

const VERDICT_CELL: Readonly<Record<Verdict, string>> = {
  met: 'yes',
  'not met': '**no**',
  'not judged at this size': 'not judged at this size',
};

/** The goal's size condition, when it has one: `at 100 datasets (this run: 3)`. */
function sizeNote(goal: GoalCheck): string {
  if (goal.at === undefined) return '';
  const { size, unit, ran } = goal.at;
  return ` (stated at ${size.toLocaleString('en-US')} ${unit}; this run: ${ran.toLocaleString('en-US')})`;
}

function goalLines(result: ScenarioResult): string[] {
  if (result.goals.length === 0) return ['No goal checks.'];
  return [
    '| goal | measured | met |',
    '| --- | --- | :---: |',
    ...result.goals.map(
      (goal) =>
        `| ${cell(goal.goal + sizeNote(goal))} | ${cell(goal.measured)} | ${VERDICT_CELL[verdictOf(goal)]} |`,
    ),
  ];
}

/** Goals met, judged and not judged (at this run's size) among `goals`. */
export function goalCounts(goals: readonly GoalCheck[]): { met: number; judged: number; notJudged: number } {
  const verdicts = goals.map(verdictOf);
  const notJudged = verdicts.filter((verdict) => verdict === 'not judged at this size').length;
  return {
    met: verdicts.filter((verdict) => verdict === 'met').length,
    judged: verdicts.length - notJudged,
    notJudged,
  };
}

/** `2 / 3`, or `2 / 3 (3 not judged at this size)`, or `— (3 not judged at this size)`. */
function countsCell(goals: readonly GoalCheck[]): string {
  const { met, judged, notJudged } = goalCounts(goals);
  const counted = judged === 0 && notJudged > 0 ? '—' : `${met} / ${judged}`;
  return notJudged === 0 ? counted : `${counted} (${notJudged} not judged at this size)`;
}

export function scenarioMarkdown(result: ScenarioResult): string {
  const lines = [
    `# ${result.title}${result.quick ? ' (quick)' : ''}`,
    '',
    `- Measures: ${result.measures}`,
    `- Baseline (same run): ${result.baseline}`,
    `- Goal: ${result.goal}`,
    `- Started ${result.startedAt}, took ${(result.durationMs / 1000).toFixed(1)} s; 1-min load average ${result.loadAverage.before} before, ${result.loadAverage.after} after.`,
    '',
    '## Goals',
    '',
    ...goalLines(result),
    '',
    '## Measurements',
    '',
    ...measurementTable(result),
    '',
    `![chart](${result.id}.svg)`,
  ];
  if (result.notes.length > 0) lines.push('', '## Notes', '', ...result.notes.map((note) => `- ${note}`));
  return `${lines.join('\n')}\n`;
}

export function summaryMarkdown(summary: RunSummary): string {
  const m = summary.machine;
  const lines = [
    `# Ferry benchmark run${summary.quick ? ' (quick)' : ''}`,
    '',
    `Started ${summary.startedAt}. Machine: ${m.cpuModel}, ${m.cores} cores, ${m.memoryGiB} GiB, Node ${m.node}, ${m.os}; load average at start ${m.loadAverage.join(' / ')}.`,
    '',
    '| scenario | goals met | details |',
    '| --- | --- | --- |',
  ];
  for (const result of summary.results) {
    lines.push(`| ${result.title} | ${countsCell(result.goals)} | [${result.id}.md](${result.id}.md) |`);
  }
  for (const crash of summary.crashed) lines.push(`| ${crash.id} | **crashed** | ${cell(crash.reason)} |`);
  for (const result of summary.results) {
    lines.push('', `## ${result.title}`, '', ...goalLines(result), '', ...measurementTable(result));
  }
  return `${lines.join('\n')}\n`;
}

export async function writeScenarioFiles(dir: string, result: ScenarioResult): Promise<void> {
  await writeFile(join(dir, `${result.id}.json`), `${JSON.stringify(result, null, 2)}\n`);
  await writeFile(join(dir, `${result.id}.md`), scenarioMarkdown(result));
  await writeFile(join(dir, `${result.id}.svg`), await renderSvg(scenarioChart(result)));
}

export async function writeSummary(dir: string, summary: RunSummary): Promise<void> {
  await writeFile(join(dir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
  await writeFile(join(dir, 'summary.md'), summaryMarkdown(summary));
}

/** The console report of one scenario: every measurement with its baseline and ratio, then goals. */
export function consoleReport(result: ScenarioResult): string {
  const lines = [`\n== ${result.title}${result.quick ? ' (quick)' : ''} ==`, `goal: ${result.goal}`];
  for (const m of result.measurements) {
    const base =
      m.baseline === undefined
        ? ''
        : `  vs ${m.baselineLabel ?? 'baseline'} ${formatValue(m.baseline, m.unit)}${
            m.ratio === undefined ? '' : `  = ${formatRatio(m.ratio)}`
          }`;
    lines.push(`  ${m.group} — ${m.metric}: ${formatValue(m.value, m.unit)}${base}`);
  }
  for (const goal of result.goals) {
    lines.push(`  [${verdictOf(goal).toUpperCase()}] ${goal.goal}${sizeNote(goal)}: ${goal.measured}`);
  }
  for (const note of result.notes) lines.push(`  note: ${note}`);
  return lines.join('\n');
}
