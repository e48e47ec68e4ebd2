/**
 * Spice-style durations (`500ms`, `30s`, `1m`, `1h30m`, `1d`) to milliseconds. The upper bound is
 * the largest delay a JavaScript timer honours: a longer one would fire immediately.
 */
import { FerryError } from '../errors.js';

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** 2^31 - 1 ms (about 24.8 days): `setTimeout` treats anything larger as 1 ms. */
export const MAX_DURATION_MS = 2_147_483_647;

const SEGMENT = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;

/**
 * Why `text` is not a usable duration, or its length in whole milliseconds (rounded). The reason
 * is a clause naming the value, e.g. `'0s' is zero; use a positive duration such as 30s`. With
 * `allowZero` (a staleness bound, where 0 means "known current now"), a zero one is 0.
 */
export function durationOrProblem(
  text: string,
  options: { readonly allowZero?: boolean } = {},
): number | { readonly problem: string } {
  const trimmed = text.trim();
  const body = trimmed.startsWith('-') ? trimmed.slice(1).trim() : trimmed;
  let total = 0;
  let consumed = 0;
  SEGMENT.lastIndex = 0;
  for (let match = SEGMENT.exec(body); match !== null; match = SEGMENT.exec(body)) {
    total += Number(match[1]) * (UNIT_MS[match[2] ?? ''] ?? Number.NaN);
    consumed = SEGMENT.lastIndex;
  }
  if (body === '' || consumed !== body.length || !Number.isFinite(total)) {
    return {
      problem: `'${text}' is not a duration; use a number with a unit (ms, s, m, h or d), such as 30s`,
    };
  }
  const ms = Math.round(total);
  if (trimmed.startsWith('-') && ms > 0) {
    return { problem: `'${text}' is negative; use a positive duration such as 30s` };
  }
  if (ms === 0 && options.allowZero !== true) {
    return { problem: `'${text}' is zero; use a positive duration such as 30s` };
  }
  if (ms > MAX_DURATION_MS) return { problem: `'${text}' is longer than 24d; use at most 24d` };
  return ms;
}

/** Parses a duration such as `30s` to milliseconds; throws `ERR_INVALID_DURATION` when it is not one. */
export function parseDuration(text: string): number {
  const result = durationOrProblem(text);
  if (typeof result === 'number') return result;
  throw new FerryError('ERR_INVALID_DURATION', `Invalid duration: ${result.problem}.`);
}
