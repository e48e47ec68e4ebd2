/**
 * How config problems are collected and raised. Loading never stops at the first problem: every
 * error and warning is recorded with its key path so `ferry validate` can print them all, and a
 * dataset's errors fail only that dataset. {@link ConfigError} carries the issues when a caller
 * needs to throw.
 */
import { FerryError, registerErrors } from '../errors.js';
import type { ConfigIssue } from './types.js';

export class ConfigError extends FerryError {
  readonly issues: readonly ConfigIssue[];

  constructor(file: string, issues: readonly ConfigIssue[], options: { cause?: unknown } = {}) {
    super('ERR_CONFIG', describeIssues(file, issues), options);
    this.name = 'ConfigError';
    this.issues = issues;
  }
}
registerErrors({ ConfigError });

function describeIssues(file: string, issues: readonly ConfigIssue[]): string {
  const [only] = issues;
  if (issues.length === 1 && only !== undefined) return only.message;
  return [
    `${file}: ${issues.length} configuration errors; fix each of them:`,
    ...issues.map((i) => `  - ${i.message}`),
  ].join('\n');
}

/** Records issues for one scope: the pod (fatal) or one dataset. */
export class Reporter {
  private errorCount = 0;

  constructor(
    private readonly sink: IssueSink,
    private readonly fatal: boolean,
    private dataset?: string,
  ) {}

  /** Names the dataset once its name is known; issues reported afterwards carry it. */
  nameDataset(name: string): void {
    this.dataset = name;
  }

  get datasetName(): string | undefined {
    return this.dataset;
  }

  get failed(): boolean {
    return this.errorCount > 0;
  }

  error(path: string, text: string): void {
    this.errorCount += 1;
    this.sink.errors.push(this.issue(path, text, this.fatal));
  }

  warn(path: string, text: string): void {
    this.sink.warnings.push(this.issue(path, text, false));
  }

  /** An unknown key, with a suggestion when one known key is close. */
  unknownKey(path: string, key: string, known: Iterable<string>): void {
    const close = closest(key, known);
    this.error(
      path,
      close === undefined ? 'unknown key; remove it' : `unknown key; did you mean '${close}'?`,
    );
  }

  private issue(path: string, text: string, fatal: boolean): ConfigIssue {
    const message = path === '' ? `${this.sink.file}: ${text}` : `${this.sink.file}: ${path}: ${text}`;
    return this.dataset === undefined
      ? { path, message, fatal }
      : { path, message, dataset: this.dataset, fatal };
  }
}

export class IssueSink {
  readonly errors: ConfigIssue[] = [];
  readonly warnings: ConfigIssue[] = [];

  constructor(readonly file: string) {}

  get fatal(): boolean {
    return this.errors.some((issue) => issue.fatal);
  }
}

/** The known word nearest to `word` (case-insensitive edit distance), when it is plausibly a typo. */
export function closest(word: string, known: Iterable<string>): string | undefined {
  const lower = word.toLowerCase();
  const limit = Math.max(1, Math.min(3, Math.floor(word.length / 3)));
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    const distance = editDistance(lower, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  if (bestDistance <= limit) return best;
  return truncatedOf(lower, known);
}

/** A known word that `word` is a truncation or an extension of (`bootstrap_on_failure` → `…_behavior`). */
function truncatedOf(lower: string, known: Iterable<string>): string | undefined {
  if (lower.length < 5) return undefined;
  let best: string | undefined;
  for (const candidate of known) {
    const other = candidate.toLowerCase();
    if (other.length >= 5 && (other.startsWith(lower) || lower.startsWith(other))) {
      if (
        best === undefined ||
        Math.abs(other.length - lower.length) < Math.abs(best.length - lower.length)
      ) {
        best = candidate;
      }
    }
  }
  return best;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[] = new Array<number>(rows * cols).fill(0);
  const at = (i: number, j: number): number => d[i * cols + j] ?? 0;
  for (let i = 0; i < rows; i++) d[i * cols] = i;
  for (let j = 0; j < cols; j++) d[j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        value = Math.min(value, at(i - 2, j - 2) + 1);
      }
      d[i * cols + j] = value;
    }
  }
  return at(a.length, b.length);
}
