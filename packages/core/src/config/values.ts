/**
 * Reading scalar values out of parsed YAML. Spice params are strings, but YAML scalars are
 * accepted (`allow_http: true`, `s3_region: 1` is not useful but is a string), booleans may be
 * written as strings (`"true"`), and `${secrets:NAME}` / `${env:NAME}` references are resolved
 * by the pod's {@link SecretSource} (Spice's `env` secret stores). Each reader reports its
 * own error and returns `undefined`, so loading goes on and reports every problem.
 */
import { durationOrProblem } from './duration.js';
import { closest, type Reporter } from './issues.js';
import { resolveReferences, type SecretSource } from './secrets.js';

export type { Env } from './secrets.js';

export function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Describes a non-scalar or empty value for messages. */
function shapeProblem(value: unknown): string | undefined {
  if (value === null || value === undefined) return 'has no value; set one or remove the key';
  if (Array.isArray(value)) return 'must be a single value, not a list';
  if (isMap(value)) return 'must be a single value, not a map';
  return undefined;
}

/** A string, number or boolean as trimmed text. */
export function readText(report: Reporter, path: string, value: unknown): string | undefined {
  const problem = shapeProblem(value);
  if (problem !== undefined) {
    report.error(path, problem);
    return undefined;
  }
  return String(value).trim();
}

/** Like {@link readText}, then resolves secret references (the value never appears in messages). */
export function readParam(
  report: Reporter,
  path: string,
  value: unknown,
  secrets: SecretSource,
): string | undefined {
  const text = readText(report, path, value);
  return text === undefined ? undefined : resolveReferences(report, path, text, secrets);
}

export function readBoolean(report: Reporter, path: string, value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  const text = readText(report, path, value);
  if (text === undefined) return undefined;
  const lower = text.toLowerCase();
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  report.error(path, `'${text}' is not a boolean; use true or false${didYouMean(lower, ['true', 'false'])}`);
  return undefined;
}

/** One of `allowed`; otherwise an error listing them (with a suggestion when one is close). */
export function readChoice<T extends string>(
  report: Reporter,
  path: string,
  value: unknown,
  allowed: readonly T[],
): T | undefined {
  const text = readText(report, path, value);
  if (text === undefined) return undefined;
  const found = allowed.find((choice) => choice === text);
  if (found !== undefined) return found;
  report.error(path, `'${text}' is not allowed; use ${listOr(allowed)}${didYouMean(text, allowed)}`);
  return undefined;
}

/**
 * ` (did you mean 'x'?)` when one of `known` is what `word` likely meant, else nothing: a value
 * with `word` as one of its `_` parts (`lfu` → `tiny_lfu`, not `lru`), else the closest spelling.
 */
export function didYouMean(word: string, known: readonly string[]): string {
  const lower = word.toLowerCase();
  const close =
    known.find((value) => value.length > lower.length && value.toLowerCase().split('_').includes(lower)) ??
    closest(word, known);
  return close === undefined ? '' : ` (did you mean '${close}'?)`;
}

export function readDuration(report: Reporter, path: string, value: unknown): number | undefined {
  if (typeof value === 'number') {
    report.error(path, `'${value}' has no unit; add one, such as ${value}s`);
    return undefined;
  }
  const text = readText(report, path, value);
  if (text === undefined) return undefined;
  const result = durationOrProblem(text);
  if (typeof result === 'number') return result;
  report.error(path, result.problem);
  return undefined;
}

/** `a, b or c`. */
export function listOr(items: readonly string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
}
