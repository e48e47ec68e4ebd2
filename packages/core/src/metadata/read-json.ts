/**
 * Internal helpers for reading untrusted JSON with exact field paths. A failed check throws
 * {@link Invalid} (path + problem); the public parsers turn it into an error that names the
 * location or dataset. Not exported from the package.
 */

export class Invalid extends Error {
  readonly path: string;
  readonly problem: string;

  constructor(path: string, problem: string, cause?: unknown) {
    super(path === '' ? problem : `${path}: ${problem}`, cause === undefined ? undefined : { cause });
    this.name = 'Invalid';
    this.path = path;
    this.problem = problem;
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A short, safe rendering of a found value for messages. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object' && value !== null) return 'an object';
  if (typeof value === 'string') {
    const shown = value.length > 60 ? `${value.slice(0, 57)}...` : value;
    return JSON.stringify(shown);
  }
  return String(value);
}

const plainKey = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** `a.b`, or `a["odd key"]` when the key would be ambiguous in dotted form. */
export function childPath(path: string, key: string): string {
  if (!plainKey.test(key)) return `${path}[${JSON.stringify(key)}]`;
  return path === '' ? key : `${path}.${key}`;
}

export function indexPath(path: string, index: number): string {
  return `${path}[${index}]`;
}

function fail(value: unknown, path: string, expected: string): never {
  if (value === undefined) throw new Invalid(path, 'is missing');
  throw new Invalid(path, `must be ${expected}, got ${describeValue(value)}`);
}

export function expectRecord(value: unknown, path: string): Record<string, unknown> {
  return isRecord(value) ? value : fail(value, path, 'an object');
}

export function expectArray(value: unknown, path: string): readonly unknown[] {
  return Array.isArray(value) ? value : fail(value, path, 'an array');
}

export function expectString(value: unknown, path: string): string {
  return typeof value === 'string' ? value : fail(value, path, 'a string');
}

export function expectNonEmptyString(value: unknown, path: string): string {
  return typeof value === 'string' && value !== '' ? value : fail(value, path, 'a non-empty string');
}

export function expectBoolean(value: unknown, path: string): boolean {
  return typeof value === 'boolean' ? value : fail(value, path, 'a boolean');
}

/** Ids, sizes, counts and epoch milliseconds: non-negative safe integers. */
export function expectCount(value: unknown, path: string): number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
    ? value
    : fail(value, path, 'a non-negative safe integer');
}

export function expectInteger(value: unknown, path: string, min: number, max: number): number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max
    ? value
    : fail(value, path, `an integer from ${min} to ${max}`);
}

/** Reads an optional field: absent and `null` (how serde writes `None`) both mean "not set". */
export function optional<T>(value: unknown, read: (value: unknown) => T): T | undefined {
  return value === undefined || value === null ? undefined : read(value);
}

/**
 * A string map (`properties`, Arrow `metadata`). Writers in the wild put numbers and booleans
 * there: scalars are stringified, nested values kept as their JSON text, `null` entries dropped.
 */
export function readStringRecord(value: unknown, path: string): Record<string, string> {
  const record = expectRecord(value, path);
  const entries: [string, string][] = [];
  for (const [key, item] of Object.entries(record)) {
    if (item === null || item === undefined) continue;
    if (typeof item === 'string') entries.push([key, item]);
    else if (typeof item === 'number' || typeof item === 'boolean') entries.push([key, String(item)]);
    else entries.push([key, JSON.stringify(item)]);
  }
  return Object.fromEntries(entries);
}
