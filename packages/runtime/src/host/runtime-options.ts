/**
 * `createRuntime`'s options, checked before anything starts: a key that is no option (a typo), a
 * value of the wrong type or out of its range is refused with one {@link ConfigError} (ERR_CONFIG)
 * listing each, by its name — never taken silently (a text where a number belongs fell back to the
 * default, a negative cap or timeout meant something nobody asked for) or found out later in a
 * thread (a negative `snapshotIdleTimeoutMs` left every dataset `starting`). The query methods'
 * options are checked the same way, before the query runs ({@link checkQueryOptions}).
 */
import { ConfigError, type ConfigIssue, closest, MAX_DURATION_MS, parseByteSize } from '@ferry/core/base';
import { LOG_LEVELS } from '@ferry/core/common';
import type { JsonOptions, RuntimeOptions } from '../api.js';
import { DATASET_COMMANDS } from '../common/protocol.js';

const FILE = 'createRuntime options';

/** What is wrong with an option, by its path (`notifications.waitTimeSeconds`). */
interface Problem {
  readonly path: string;
  readonly text: string;
}

/** What is wrong with a value (nested values: each problem by its path), or undefined when it is good. */
type Rule = (value: unknown, path: string) => readonly Problem[] | string | undefined;

const got = (value: unknown): string =>
  typeof value === 'string' ? `'${value}'` : typeof value === 'function' ? 'a function' : String(value);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function whole(min: number, max = Number.MAX_SAFE_INTEGER): Rule {
  const range = max === Number.MAX_SAFE_INTEGER ? `, ${min} or more` : ` from ${min} to ${max}`;
  return (value) =>
    Number.isSafeInteger(value) && (value as number) >= min && (value as number) <= max
      ? undefined
      : `must be a whole number${range} (got ${got(value)})`;
}

const milliseconds: Rule = (value) =>
  typeof value === 'number' && value >= 0 && value <= MAX_DURATION_MS
    ? undefined
    : `must be a number of milliseconds from 0 to ${MAX_DURATION_MS} (got ${got(value)})`;

const positive: Rule = (value) =>
  typeof value === 'number' && Number.isFinite(value) && value > 0
    ? undefined
    : `must be a number above 0 (got ${got(value)})`;

/** `'4GB'`, `'512MiB'` or bytes, above 0: the rule {@link byteSize} reads by. */
const size: Rule = (value) => {
  const bytes = typeof value === 'string' || typeof value === 'number' ? parseByteSize(value) : undefined;
  return bytes !== undefined && bytes > 0
    ? undefined
    : `${JSON.stringify(value) ?? got(value)} is not a size; write it like '4GB' or '512MiB', or give bytes`;
};

/** A map of the named keys, each checked by its rule; a key not named is refused. */
function fields(rules: Readonly<Record<string, Rule>>): Rule {
  return (value, path) =>
    isObject(value) ? check(value, rules, `${path}.`) : `must be an object (got ${got(value)})`;
}

const resourceLimits = fields({
  maxOldGenerationSizeMb: positive,
  maxYoungGenerationSizeMb: positive,
  codeRangeSizeMb: positive,
  stackSizeMb: positive,
});

const LOGGER_METHODS = ['debug', 'info', 'warn', 'error'] as const;

/** Every option's rule: an option added to {@link RuntimeOptions} without one does not compile. */
const RULES: { readonly [K in keyof RuntimeOptions]-?: Rule } = {
  logger: (value) =>
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    LOGGER_METHODS.every((method) => typeof (value as Record<string, unknown>)[method] === 'function')
      ? undefined
      : 'must be a pino instance or an object with debug, info, warn and error methods',
  logLevel: (value) =>
    (LOG_LEVELS as readonly unknown[]).includes(value)
      ? undefined
      : `${got(value)} is not a level; use ${LOG_LEVELS.join(', ')}`,
  dataDir: (value) =>
    typeof value === 'string' && value !== '' ? undefined : `must be a path (got ${got(value)})`,
  env: (value) => (isObject(value) ? undefined : `must be an object of variables (got ${got(value)})`),
  queryTimeoutMs: milliseconds,
  maxQueriesInFlight: whole(0),
  queryThreadNiceness: whole(0, 19),
  maxResultRows: whole(0),
  maxResultBytes: whole(0),
  maxStreamBytes: whole(0),
  streamIdleTimeoutMs: milliseconds,
  queryMemoryLimit: size,
  queryThreads: whole(1),
  queryTempDirectorySize: size,
  duckdbQueryThreads: whole(1),
  crossEngineMaxRows: whole(0),
  crossEngineMaxBytes: whole(0),
  queryWorkerResourceLimits: resourceLimits,
  sqliteReadThreads: whole(1),
  metadataWindowMs: milliseconds,
  restartBackoffMs: (value, path) =>
    Array.isArray(value) && value.length > 0
      ? value.flatMap((delay, index) => {
          const problem = milliseconds(delay, `${path}[${index}]`);
          return typeof problem === 'string'
            ? [{ path: `${path}[${index}]`, text: problem }]
            : (problem ?? []);
        })
      : `must be a list of at least one delay in milliseconds (got ${Array.isArray(value) ? '[]' : got(value)})`,
  datasetResourceLimits: resourceLimits,
  snapshotThreads: whole(1),
  snapshotIdleTimeoutMs: milliseconds,
  datasetLoadParallelism: whole(1),
  // SQS's own bounds (packages/store's createSqsQueue refuses the same, but only once the queue is made in a thread).
  notifications: fields({
    visibilityTimeoutSeconds: whole(0, 43_200),
    waitTimeSeconds: whole(0, 20),
    backoffScale: positive,
    missedCommitGraceMs: milliseconds,
  }),
};

/** The problems of `values`: a key without a rule is unknown (with the closest known one, when one is close). */
function check(
  values: Record<string, unknown>,
  rules: Readonly<Record<string, Rule>>,
  prefix: string,
): Problem[] {
  const problems: Problem[] = [];
  for (const [key, value] of Object.entries(values)) {
    const path = `${prefix}${key}`;
    const rule = rules[key];
    if (rule === undefined) {
      const close = closest(key, Object.keys(rules));
      const text = close === undefined ? 'unknown key; remove it' : `unknown key; did you mean '${close}'?`;
      problems.push({ path, text });
      continue;
    }
    if (value === undefined) continue;
    const problem = rule(value, path);
    if (typeof problem === 'string') problems.push({ path, text: problem });
    else if (problem !== undefined) problems.push(...problem);
  }
  return problems;
}

const issue = ({ path, text }: Problem): ConfigIssue => ({
  path,
  message: `${FILE}: ${path}: ${text}`,
  fatal: true,
});

const snapshotId = whole(0);

const boolean: Rule = (value) =>
  typeof value === 'boolean' ? undefined : `must be true or false (got ${got(value)})`;

/**
 * Every query option's rule (`query`, `queryArrow`, `queryStream`, `queryJson` take the same set;
 * the stream's and JSON's only apply to those).
 */
const QUERY_RULES: { readonly [K in keyof JsonOptions]-?: Rule } = {
  waitForReady: boolean,
  noCache: boolean,
  readyTimeoutMs: milliseconds,
  signal: (value) =>
    value instanceof AbortSignal ? undefined : `must be an AbortSignal (got ${got(value)})`,
  // NaN or a string ('30s') compares false with every staleness, so it would check nothing; a negative
  // bound would refuse every read. Infinity is allowed: a bound that refuses nothing.
  maxStalenessMs: (value) =>
    typeof value === 'number' && value >= 0
      ? undefined
      : `must be a number of milliseconds, 0 or more (30_000 for 30 s), or left out for no bound (got ${got(value)})`,
  snapshots: (value, path) =>
    isObject(value)
      ? check(value, Object.fromEntries(Object.keys(value).map((name) => [name, snapshotId])), `${path}.`)
      : `must be an object of dataset names and snapshot ids (got ${got(value)})`,
  protocol: (value) => (typeof value === 'string' ? undefined : `must be a string (got ${got(value)})`),
  maxBytes: whole(0),
  idleTimeoutMs: milliseconds,
  batchRows: whole(1),
  parameterTypes: boolean,
  taskHistory: (value) =>
    value === 'failure' || value === 'none' ? undefined : `must be 'failure' or 'none' (got ${got(value)})`,
  inlineBytes: whole(0),
};

/**
 * Refuses unusable query options before the query runs, each by its name, with a RangeError (as
 * `maxStalenessMs` is refused): `batchRows: 0` streamed empty batches until the process ran out
 * of memory; a text or negative timeout, a typo of an option, were taken silently.
 */
export function checkQueryOptions(
  method: string,
  options: unknown,
  rules: Readonly<Record<string, Rule>> = QUERY_RULES,
): void {
  if (options === undefined) return;
  const problems = isObject(options)
    ? check(options, rules, '')
    : [{ path: 'options', text: `must be an object (got ${got(options)})` }];
  if (problems.length === 0) return;
  throw new RangeError(
    `${method} options: ${problems.map(({ path, text }) => `${path}: ${text}`).join('; ')}.`,
  );
}

/** `resultVersion()`'s options: the two of a query's that decide which answer is current. */
export const RESULT_VERSION_RULES = {
  snapshots: QUERY_RULES.snapshots,
  maxStalenessMs: QUERY_RULES.maxStalenessMs,
} as const;

/** `ready()`'s options: a text or negative timeout timed out at once. */
export const READY_RULES = { timeoutMs: milliseconds } as const;

/** The statement a query method was given is text; anything else failed deep inside (the results cache's keys). */
export function checkSql(method: string, sql: unknown): void {
  if (typeof sql !== 'string') throw new TypeError(`${method}: the SQL must be a string (got ${typeof sql})`);
}

/** `send`'s command is one a dataset takes; another was sent on and ignored, the call resolving. */
export function checkCommand(command: unknown): void {
  if ((DATASET_COMMANDS as readonly unknown[]).includes(command)) return;
  const use = `${DATASET_COMMANDS.slice(0, -1).join(', ')} or ${DATASET_COMMANDS.at(-1)}`;
  throw new RangeError(`send: ${got(command)} is not a dataset command; use ${use}`);
}

/** Refuses unusable options (every problem, each by its option's name) with a ConfigError. */
export function checkRuntimeOptions(options: unknown): RuntimeOptions {
  const problems = isObject(options)
    ? check(options, RULES, '')
    : [{ path: 'options', text: `must be an object (got ${got(options)})` }];
  if (problems.length > 0) throw new ConfigError(FILE, problems.map(issue));
  return options as RuntimeOptions;
}

/** A size option checked by {@link checkRuntimeOptions}, in bytes; `fallback` when it is not given. */
export function byteSize(value: string | number | undefined, fallback: number): number {
  return value === undefined ? fallback : (parseByteSize(value) ?? fallback);
}
