/**
 * The spicepod's `runtime` block, as Spice reads it (crates/spicepod `component/runtime.rs`, its
 * `RuntimeDeserializer`). Every key Spice accepts is known by name (an unknown one is an error with
 * a suggestion, as Spice's `deny_unknown_fields` makes it) and is either honoured — `auth.api-key`,
 * `tls`, `caching.sql_results` (and the older `results_cache`), `task_history`, `cors`,
 * `flight.max_message_size`, `ready_state` — or recorded (`config.ignoredRuntimeKeys`) because
 * ignoring it changes neither who may connect nor what a query returns (CONFIG.md says why, key by
 * key). Pure: secret references resolve through the pod's {@link SecretSource}.
 */
import { parseByteSize } from './byte-size.js';
import type { Reporter } from './issues.js';
import type { FileReader, SecretSource } from './secrets.js';
import type {
  ApiKeyAccess,
  ApiKeyConfig,
  AuthConfig,
  CorsConfig,
  PemSource,
  ResultsCacheConfig,
  TaskHistoryConfig,
  TlsConfig,
} from './types.js';
import { isMap, readBoolean, readChoice, readDuration, readParam, readText } from './values.js';

/** Every key of Spice's `runtime` block: honoured here, or recorded (CONFIG.md gives each reason). */
const RUNTIME_KEYS = [
  'auth',
  'caching',
  'cors',
  'dataset_load_parallelism',
  'flight',
  'mcp',
  'memory_limit',
  'metrics',
  // Older Spice releases' name of dataset_load_parallelism.
  'num_of_parallel_loading_at_start_up',
  'output_level',
  'params',
  'query',
  'ready_state',
  'results_cache',
  'scheduler',
  'shutdown_timeout',
  'task_history',
  'telemetry',
  'temp_directory',
  'tls',
  'tracing',
];
/** Keys read (and acted on) below; the others are recorded as present. */
const HONOURED = ['auth', 'tls', 'caching', 'results_cache', 'task_history', 'cors', 'flight', 'ready_state'];
const AUTH_KEYS = ['api-key', 'api_key'];
const API_KEY_KEYS = ['enabled', 'keys'];
const TLS_KEYS = ['enabled', 'certificate_file', 'certificate', 'key_file', 'key'];
const CACHING_KEYS = ['sql_results', 'search_results', 'embeddings'];
const CACHE_KEYS = [
  'enabled',
  'max_size',
  'item_ttl',
  'caching_policy',
  'eviction_policy',
  'hashing_algorithm',
  'engine',
];
const SQL_RESULTS_KEYS = [
  ...CACHE_KEYS,
  'cache_key_type',
  'stale_while_revalidate_ttl',
  'encoding',
  'warmup',
];
const RESULTS_CACHE_KEYS = [
  'enabled',
  'cache_max_size',
  'item_ttl',
  'caching_policy',
  'eviction_policy',
  'cache_key_type',
  'hashing_algorithm',
  'engine',
  'max_stale_while_revalidate',
];
const TASK_HISTORY_KEYS = [
  'enabled',
  'captured_output',
  'captured_context',
  'retention_period',
  'retention_check_interval',
  'min_sql_duration',
  'captured_plan',
  'min_plan_duration',
];
const CORS_KEYS = ['enabled', 'allowed_origins'];
const FLIGHT_KEYS = ['max_message_size', 'do_put_rate_limit_enabled'];
const HASHING_ALGORITHMS = ['siphash', 'ahash', 'xxh3', 'xxh32', 'xxh64', 'xxh128', 'blake3'] as const;

/** Spice's defaults (crates/cache: 128 MiB, 1 s). */
export const DEFAULT_RESULTS_CACHE: ResultsCacheConfig = {
  enabled: true,
  maxSizeBytes: 128 * 2 ** 20,
  itemTtlMs: 1_000,
};
/** Spice's defaults: on, no output captured, 8 h kept, checked every 15 min. */
export const DEFAULT_TASK_HISTORY: TaskHistoryConfig = {
  enabled: true,
  capturedOutput: 'none',
  retentionPeriodMs: 8 * 3_600_000,
  retentionCheckIntervalMs: 15 * 60_000,
};
/** Spice's least task history retention (`TASK_HISTORY_RETENTION_MINIMUM`, 60 s). */
const TASK_HISTORY_RETENTION_MINIMUM_MS = 60_000;

export interface RuntimeSection {
  /** Present when `runtime.auth.api-key` is enabled with at least one key. */
  readonly auth?: AuthConfig;
  readonly tls?: TlsConfig;
  readonly resultsCache: ResultsCacheConfig;
  readonly taskHistory: TaskHistoryConfig;
  readonly cors?: CorsConfig;
  readonly flightMaxMessageBytes?: number;
  readonly readyState: 'on_load' | 'on_registration';
  /** Ferry's `runtime.query.ferry_timeout` (ms), when set. */
  readonly queryTimeoutMs?: number;
  /** Ferry's `runtime.query.ferry_stream_idle_timeout` (ms), when set. */
  readonly streamIdleTimeoutMs?: number;
  /** Ferry's `runtime.query.ferry_max_in_flight`, when set (0: no bound). */
  readonly maxQueriesInFlight?: number;
  /** `runtime` keys present that are recorded, not acted on. */
  readonly recordedKeys: readonly string[];
}

const NO_RUNTIME: RuntimeSection = {
  resultsCache: DEFAULT_RESULTS_CACHE,
  taskHistory: DEFAULT_TASK_HISTORY,
  readyState: 'on_load',
  recordedKeys: [],
};

/** Reads `runtime`; every problem is reported on `pod` (a problem here stops the pod). */
export function readRuntimeSection(
  pod: Reporter,
  block: unknown,
  secrets: SecretSource,
  readFile: FileReader | undefined,
): RuntimeSection {
  if (block === undefined || block === null) return NO_RUNTIME;
  if (!isMap(block)) {
    pod.error('runtime', 'must be a map of runtime settings (auth, tls, caching, …)');
    return NO_RUNTIME;
  }
  const recordedKeys: string[] = [];
  for (const key of Object.keys(block)) {
    if (!RUNTIME_KEYS.includes(key)) pod.unknownKey(`runtime.${key}`, key, RUNTIME_KEYS);
    else if (!HONOURED.includes(key)) recordedKeys.push(key);
  }
  for (const key of ['memory_limit', 'temp_directory']) {
    // Spice's deprecation warnings, word for word.
    if (Object.hasOwn(block, key))
      pod.warn(`runtime.${key}`, `\`runtime.${key}\` is deprecated, use \`runtime.query.${key}\` instead`);
  }
  const auth = readAuth(pod, block.auth, secrets);
  const tls = readTls(pod, block.tls, secrets, readFile);
  const cors = readCors(pod, block.cors);
  const flightMaxMessageBytes = readFlight(pod, block.flight);
  const readyState =
    block.ready_state === undefined
      ? 'on_load'
      : (readChoice(pod, 'runtime.ready_state', block.ready_state, ['on_load', 'on_registration'] as const) ??
        'on_load');
  const limits = readQueryLimits(pod, block.query);
  return {
    ...limits,
    ...(auth === undefined ? {} : { auth }),
    ...(tls === undefined ? {} : { tls }),
    resultsCache: readResultsCache(pod, block),
    taskHistory: readTaskHistory(pod, block.task_history),
    ...(cors === undefined ? {} : { cors }),
    ...(flightMaxMessageBytes === undefined ? {} : { flightMaxMessageBytes }),
    readyState,
    recordedKeys,
  };
}

/**
 * Ferry's limits in Spice's `runtime.query` block (whose own keys, DataFusion's settings, are
 * recorded): `ferry_timeout`, the longest a query may run in its engine, and
 * `ferry_stream_idle_timeout`, the longest an answer may wait for its reader, each a positive
 * duration (default 30s and 60s: `createRuntime`'s); and `ferry_max_in_flight`, the queries
 * admitted at once (a whole number; 0: no bound). Spice has none of these.
 */
function readQueryLimits(
  pod: Reporter,
  block: unknown,
): { queryTimeoutMs?: number; streamIdleTimeoutMs?: number; maxQueriesInFlight?: number } {
  if (!isMap(block)) return {};
  const read = (key: string): number | undefined =>
    block[key] === undefined ? undefined : readDuration(pod, `runtime.query.${key}`, block[key]);
  for (const key of Object.keys(block)) {
    if (key.startsWith('ferry_') && !QUERY_FERRY_KEYS.includes(key))
      pod.unknownKey(`runtime.query.${key}`, key, QUERY_FERRY_KEYS);
  }
  const queryTimeoutMs = read('ferry_timeout');
  const streamIdleTimeoutMs = read('ferry_stream_idle_timeout');
  const maxQueriesInFlight = readCount(pod, 'runtime.query.ferry_max_in_flight', block.ferry_max_in_flight);
  return {
    ...(queryTimeoutMs === undefined ? {} : { queryTimeoutMs }),
    ...(streamIdleTimeoutMs === undefined ? {} : { streamIdleTimeoutMs }),
    ...(maxQueriesInFlight === undefined ? {} : { maxQueriesInFlight }),
  };
}

/** A whole number of at least 0 (a number or its text), or undefined (reported) when it is not one. */
function readCount(pod: Reporter, path: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const text = typeof value === 'number' || typeof value === 'string' ? String(value) : '';
  const count = /^\s*\d+\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(count)) {
    pod.error(path, `'${text}' is not a number of queries; write a whole number (0: no bound)`);
    return undefined;
  }
  return count;
}

const QUERY_FERRY_KEYS = ['ferry_timeout', 'ferry_stream_idle_timeout', 'ferry_max_in_flight'];

/** Reports keys of `block` not in `known`; false when `block` is not a map (reported). */
function checkMap(
  pod: Reporter,
  path: string,
  block: unknown,
  known: readonly string[],
  example: string,
): block is Record<string, unknown> {
  if (!isMap(block)) {
    pod.error(path, `must be a map; for example ${example}`);
    return false;
  }
  for (const key of Object.keys(block)) {
    if (known.includes(key)) continue;
    // The size's name differs between the two cache blocks.
    const renamed = RENAMED[key];
    if (renamed !== undefined && known.includes(renamed)) {
      pod.error(`${path}.${key}`, `unknown key; did you mean '${renamed}'?`);
    } else pod.unknownKey(`${path}.${key}`, key, known);
  }
  return true;
}

const RENAMED: Readonly<Record<string, string>> = { cache_max_size: 'max_size', max_size: 'cache_max_size' };

function readAuth(pod: Reporter, block: unknown, secrets: SecretSource): AuthConfig | undefined {
  if (block === undefined || block === null) return undefined;
  if (!isMap(block)) {
    pod.error('runtime.auth', 'must be a map; set runtime.auth.api-key: { enabled: true, keys: [...] }');
    return undefined;
  }
  for (const key of Object.keys(block)) {
    if (!AUTH_KEYS.includes(key)) pod.unknownKey(`runtime.auth.${key}`, key, AUTH_KEYS);
  }
  if (Object.hasOwn(block, 'api-key') && Object.hasOwn(block, 'api_key')) {
    pod.error('runtime.auth', "sets both 'api-key' and 'api_key', which are one setting; keep one");
    return undefined;
  }
  const name = Object.hasOwn(block, 'api_key') ? 'api_key' : 'api-key';
  const apiKey = block[name];
  if (apiKey === undefined) return undefined;
  const path = `runtime.auth.${name}`;
  if (!isMap(apiKey)) {
    pod.error(
      path,
      `must be a map with enabled and keys; for example { enabled: true, keys: [\${secrets:API_KEY}] }`,
    );
    return undefined;
  }
  for (const key of Object.keys(apiKey)) {
    if (!API_KEY_KEYS.includes(key)) pod.unknownKey(`${path}.${key}`, key, API_KEY_KEYS);
  }
  const enabled =
    apiKey.enabled === undefined ? true : (readBoolean(pod, `${path}.enabled`, apiKey.enabled) ?? true);
  if (!enabled) return undefined;
  const list = apiKey.keys;
  if (!Array.isArray(list) || list.length === 0) {
    pod.error(
      `${path}.keys`,
      list === undefined || list === null || Array.isArray(list)
        ? `has no key while API key authentication is enabled, so no client could connect; add a key (such as \${secrets:API_KEY}) or set enabled: false`
        : `must be a list of keys, such as [\${secrets:API_KEY}]`,
    );
    return undefined;
  }
  const apiKeys: ApiKeyConfig[] = [];
  list.forEach((entry, index) => {
    const at = `${path}.keys[${index}]`;
    const text = readParam(pod, at, entry, secrets);
    if (text === undefined) return;
    // A secret's surrounding whitespace (a file's trailing newline) is no part of the key: no
    // header or gRPC metadata value carries it, so no client could send the key as stored.
    const parsed = parseApiKey(text.trim());
    if (parsed.key === '') {
      pod.error(at, 'is empty; give a key of at least one character (an empty key would let anyone in)');
      return;
    }
    apiKeys.push(parsed);
  });
  return apiKeys.length === list.length ? { apiKeys } : undefined;
}

/**
 * Spice's key syntax: a `:ro` or `:rw` suffix names the key's access (read-only when absent); any
 * other text after the last `:` is part of the key.
 */
export function parseApiKey(text: string): ApiKeyConfig {
  const colon = text.lastIndexOf(':');
  const suffix = colon === -1 ? '' : text.slice(colon + 1);
  const access: ApiKeyAccess | undefined =
    suffix === 'ro' ? 'read' : suffix === 'rw' ? 'read_write' : undefined;
  return access === undefined ? { key: text, access: 'read' } : { key: text.slice(0, colon), access };
}

/**
 * `runtime.tls`: with `enabled: true`, a certificate (`certificate_file` or the PEM text in
 * `certificate`) and a key (`key_file` or `key`), one of each; files are read here (through the
 * caller's reader), and the text is checked to be PEM of the right kind.
 */
function readTls(
  pod: Reporter,
  block: unknown,
  secrets: SecretSource,
  readFile: FileReader | undefined,
): TlsConfig | undefined {
  if (block === undefined || block === null) return undefined;
  const example = '{ enabled: true, certificate_file: cert.pem, key_file: key.pem }';
  if (!checkMap(pod, 'runtime.tls', block, TLS_KEYS, example)) return undefined;
  if (block.enabled === undefined || block.enabled === null) {
    pod.error(
      'runtime.tls.enabled',
      'missing; set enabled: true to serve HTTP and Flight over TLS with the certificate and key given (or enabled: false)',
    );
    return undefined;
  }
  const enabled = readBoolean(pod, 'runtime.tls.enabled', block.enabled);
  if (enabled !== true) return undefined;
  const certificate = readPem(pod, block, secrets, readFile, 'certificate', 'CERTIFICATE');
  const key = readPem(pod, block, secrets, readFile, 'key', 'PRIVATE KEY');
  return certificate === undefined || key === undefined ? undefined : { certificate, key };
}

function readPem(
  pod: Reporter,
  block: Record<string, unknown>,
  secrets: SecretSource,
  readFile: FileReader | undefined,
  name: 'certificate' | 'key',
  label: string,
): PemSource | undefined {
  const fileKey = `${name}_file`;
  const inline = `runtime.tls.${name}`;
  const file = `runtime.tls.${fileKey}`;
  const what = name === 'certificate' ? 'certificate (chain)' : 'private key';
  const hasInline = block[name] !== undefined && block[name] !== null;
  const hasFile = block[fileKey] !== undefined && block[fileKey] !== null;
  if (hasInline && hasFile) {
    pod.error(
      'runtime.tls',
      `sets both ${name} and ${fileKey}; keep one (the PEM text, or the file holding it)`,
    );
    return undefined;
  }
  if (!hasInline && !hasFile) {
    pod.error(
      file,
      `missing while TLS is enabled; set ${fileKey} to a PEM file holding the ${what}, or ${name} to its PEM text (such as \${secrets:tls_${name === 'certificate' ? 'cert' : 'key'}})`,
    );
    return undefined;
  }
  if (hasFile) {
    const path = readParam(pod, file, block[fileKey], secrets);
    if (path === undefined) return undefined;
    if (path === '') {
      pod.error(file, `is empty; give the path of a PEM file holding the ${what}`);
      return undefined;
    }
    const read = readFile?.(path) ?? { problem: 'no file can be read here' };
    if (read.text === undefined) {
      pod.error(
        file,
        `'${path}' cannot be read (${read.problem}); give the path of a PEM file holding the ${what}`,
      );
      return undefined;
    }
    const problem = pemProblem(read.text, label);
    if (problem !== undefined) {
      pod.error(file, `'${path}' ${problem}; give a PEM file holding the ${what}`);
      return undefined;
    }
    return { pem: read.text, path: file, file: path };
  }
  const pem = readParam(pod, inline, block[name], secrets);
  if (pem === undefined) return undefined;
  const problem = pemProblem(pem, label);
  if (problem !== undefined) {
    pod.error(inline, `${problem}; give the PEM text of the ${what}, or set ${fileKey} instead`);
    return undefined;
  }
  return { pem, path: inline };
}

/** Why `text` is not PEM of `label` (`CERTIFICATE`, `PRIVATE KEY`), or undefined when it is. */
export function pemProblem(text: string, label: string): string | undefined {
  if (!/-----BEGIN [A-Z0-9 ]+-----/.test(text)) return 'is not PEM (it has no -----BEGIN … ----- line)';
  if (!new RegExp(`-----BEGIN [A-Z0-9 ]*${label}-----`).test(text)) {
    const found = /-----BEGIN ([A-Z0-9 ]+)-----/.exec(text)?.[1] ?? '';
    return `holds a PEM ${found.toLowerCase()}, not a ${label.toLowerCase()}`;
  }
  return undefined;
}

/** A positive size (`128MiB`, `1GB`, bytes); undefined (reported) otherwise. */
function readSize(pod: Reporter, path: string, value: unknown): number | undefined {
  const text = typeof value === 'number' ? String(value) : readText(pod, path, value);
  if (text === undefined) return undefined;
  const bytes = parseByteSize(text);
  if (bytes === undefined || bytes <= 0) {
    pod.error(path, `'${text}' is not a positive size; write it like 128MiB, 1GiB or 500MB`);
    return undefined;
  }
  return bytes;
}

/**
 * The SQL results cache: `runtime.caching.sql_results`, or the deprecated `runtime.results_cache`
 * when `caching.sql_results` is not set (Spice's precedence).
 */
function readResultsCache(pod: Reporter, runtime: Record<string, unknown>): ResultsCacheConfig {
  let sqlResults: unknown;
  if (runtime.caching !== undefined && runtime.caching !== null) {
    if (
      checkMap(pod, 'runtime.caching', runtime.caching, CACHING_KEYS, '{ sql_results: { item_ttl: 10s } }')
    ) {
      sqlResults = runtime.caching.sql_results;
      for (const other of ['search_results', 'embeddings']) {
        const block = runtime.caching[other];
        // This runtime has no search or embeddings: their caches have nothing to hold.
        if (block !== undefined && block !== null)
          readCache(pod, `runtime.caching.${other}`, block, CACHE_KEYS, 'max_size');
      }
    }
  }
  const legacy = runtime.results_cache;
  if (legacy !== undefined && legacy !== null) {
    // Spice's deprecation warning, word for word.
    pod.warn(
      'runtime.results_cache',
      '`runtime.results_cache` is deprecated, use `runtime.caching.sql_results` instead',
    );
  }
  if (sqlResults !== undefined && sqlResults !== null) {
    return readCache(pod, 'runtime.caching.sql_results', sqlResults, SQL_RESULTS_KEYS, 'max_size');
  }
  if (legacy !== undefined && legacy !== null) {
    return readCache(pod, 'runtime.results_cache', legacy, RESULTS_CACHE_KEYS, 'cache_max_size');
  }
  return DEFAULT_RESULTS_CACHE;
}

function readCache(
  pod: Reporter,
  path: string,
  block: unknown,
  keys: readonly string[],
  sizeKey: 'max_size' | 'cache_max_size',
): ResultsCacheConfig {
  const configuredBy = path as NonNullable<ResultsCacheConfig['configuredBy']>;
  if (!checkMap(pod, path, block, keys, `{ enabled: true, ${sizeKey}: 128MiB, item_ttl: 1s }`)) {
    return { ...DEFAULT_RESULTS_CACHE, configuredBy };
  }
  const at = (key: string): string => `${path}.${key}`;
  const has = (key: string): boolean => block[key] !== undefined && block[key] !== null;
  const enabled = has('enabled') ? (readBoolean(pod, at('enabled'), block.enabled) ?? true) : true;
  const maxSizeBytes = has(sizeKey)
    ? (readSize(pod, at(sizeKey), block[sizeKey]) ?? DEFAULT_RESULTS_CACHE.maxSizeBytes)
    : DEFAULT_RESULTS_CACHE.maxSizeBytes;
  const itemTtlMs = has('item_ttl')
    ? (readDuration(pod, at('item_ttl'), block.item_ttl) ?? DEFAULT_RESULTS_CACHE.itemTtlMs)
    : DEFAULT_RESULTS_CACHE.itemTtlMs;
  if (has('caching_policy') && has('eviction_policy')) {
    pod.error(path, "sets both 'caching_policy' and 'eviction_policy', which are one setting; keep one");
  }
  const policyKey = has('eviction_policy') ? 'eviction_policy' : 'caching_policy';
  if (has(policyKey)) {
    const policy = readChoice(pod, at(policyKey), block[policyKey], ['lru', 'tiny_lfu'] as const);
    if (policy === 'tiny_lfu') {
      pod.warn(
        at(policyKey),
        'tiny_lfu is read as lru: this runtime evicts the least recently used results (which results are kept can differ, never what a query returns)',
      );
    }
  }
  if (has('hashing_algorithm'))
    readChoice(pod, at('hashing_algorithm'), block.hashing_algorithm, HASHING_ALGORITHMS);
  if (has('cache_key_type'))
    readChoice(pod, at('cache_key_type'), block.cache_key_type, ['plan', 'sql'] as const);
  if (has('engine')) readChoice(pod, at('engine'), block.engine, ['moka', 'pingora'] as const);
  if (has('encoding')) readChoice(pod, at('encoding'), block.encoding, ['none', 'zstd'] as const);
  for (const stale of ['stale_while_revalidate_ttl', 'max_stale_while_revalidate']) {
    if (!has(stale)) continue;
    if (readDuration(pod, at(stale), block[stale]) !== undefined) {
      pod.warn(
        at(stale),
        'is not applied: this runtime never serves a stale result (a snapshot swap retires the cached results that read the dataset at once, and item_ttl ends the others)',
      );
    }
  }
  if (has('warmup')) {
    const warmup = readChoice(pod, at('warmup'), block.warmup, ['disabled', 'on_first_refresh'] as const);
    if (warmup === 'on_first_refresh') {
      pod.warn(
        at('warmup'),
        'is not applied: this runtime does not replay recorded queries into the cache; datasets are ready once their snapshot is served',
      );
    }
  }
  return { enabled, maxSizeBytes, itemTtlMs, configuredBy };
}

function readTaskHistory(pod: Reporter, block: unknown): TaskHistoryConfig {
  if (block === undefined || block === null) return DEFAULT_TASK_HISTORY;
  const path = 'runtime.task_history';
  if (!checkMap(pod, path, block, TASK_HISTORY_KEYS, '{ enabled: true, retention_period: 8h }')) {
    return DEFAULT_TASK_HISTORY;
  }
  const at = (key: string): string => `${path}.${key}`;
  const has = (key: string): boolean => block[key] !== undefined && block[key] !== null;
  const enabled = has('enabled') ? (readBoolean(pod, at('enabled'), block.enabled) ?? true) : true;
  let capturedOutput = DEFAULT_TASK_HISTORY.capturedOutput;
  if (has('captured_output')) {
    const text = readText(pod, at('captured_output'), block.captured_output);
    if (text === 'none' || text === 'truncated') capturedOutput = text;
    else if (text !== undefined) {
      // Spice's message, word for word.
      pod.error(
        at('captured_output'),
        `Expected "none" or "truncated" for "captured_output", but got: "${text}"`,
      );
    }
  }
  const retention = (key: string, field: string, fallback: number): number => {
    if (!has(key)) return fallback;
    const ms = readDuration(pod, at(key), block[key]);
    if (ms === undefined) return fallback;
    if (ms < TASK_HISTORY_RETENTION_MINIMUM_MS) {
      // Spice's message, word for word.
      pod.error(
        at(key),
        `Task history retention ${field} must be at least 60 seconds. To disable task history, set the property "enabled: false".`,
      );
      return fallback;
    }
    return ms;
  };
  const retentionPeriodMs = retention('retention_period', 'period', DEFAULT_TASK_HISTORY.retentionPeriodMs);
  const retentionCheckIntervalMs = retention(
    'retention_check_interval',
    'check interval',
    DEFAULT_TASK_HISTORY.retentionCheckIntervalMs,
  );
  if (has('captured_context'))
    readChoice(pod, at('captured_context'), block.captured_context, [
      'redacted',
      'truncated',
      'full',
    ] as const);
  for (const key of ['min_sql_duration', 'min_plan_duration'])
    if (has(key)) readDuration(pod, at(key), block[key]);
  if (has('captured_plan')) {
    const plan = readText(pod, at('captured_plan'), block.captured_plan)?.toLowerCase();
    if (plan !== undefined && !['none', 'explain', 'explain analyze'].includes(plan)) {
      pod.error(
        at('captured_plan'),
        `Expected "none", "explain", or "explain analyze" for "captured_plan", but got: "${plan}"`,
      );
    } else if (plan !== undefined && plan !== 'none') {
      pod.warn(at('captured_plan'), 'is not applied: task history records no query plans in this runtime');
    }
  }
  return { enabled, capturedOutput, retentionPeriodMs, retentionCheckIntervalMs };
}

function readCors(pod: Reporter, block: unknown): CorsConfig | undefined {
  if (block === undefined || block === null) return undefined;
  const path = 'runtime.cors';
  if (!checkMap(pod, path, block, CORS_KEYS, "{ enabled: true, allowed_origins: ['https://example.com'] }")) {
    return undefined;
  }
  const enabled =
    block.enabled === undefined ? false : (readBoolean(pod, `${path}.enabled`, block.enabled) ?? false);
  if (!enabled) return undefined;
  const origins = block.allowed_origins;
  if (origins === undefined || origins === null) return { allowedOrigins: ['*'] };
  if (!Array.isArray(origins) || origins.length === 0) {
    pod.error(
      `${path}.allowed_origins`,
      "must be a list of origins, such as ['https://example.com'] (or ['*'] for any origin)",
    );
    return undefined;
  }
  const allowedOrigins: string[] = [];
  origins.forEach((origin, index) => {
    const text = readText(pod, `${path}.allowed_origins[${index}]`, origin);
    if (text === undefined) return;
    if (text !== '*' && !/^https?:\/\/[^/\s]+$/i.test(text)) {
      pod.error(
        `${path}.allowed_origins[${index}]`,
        `'${text}' is not an origin; write it like https://example.com (a scheme and host, no path), or '*'`,
      );
      return;
    }
    allowedOrigins.push(text);
  });
  return allowedOrigins.length === origins.length ? { allowedOrigins } : undefined;
}

/** `runtime.flight`: `max_message_size` honoured; `do_put_rate_limit_enabled` has nothing to limit (no writes). */
function readFlight(pod: Reporter, block: unknown): number | undefined {
  if (block === undefined || block === null) return undefined;
  if (!checkMap(pod, 'runtime.flight', block, FLIGHT_KEYS, '{ max_message_size: 64MiB }')) return undefined;
  if (block.do_put_rate_limit_enabled !== undefined) {
    readBoolean(pod, 'runtime.flight.do_put_rate_limit_enabled', block.do_put_rate_limit_enabled);
  }
  if (block.max_message_size === undefined || block.max_message_size === null) return undefined;
  const bytes = readSize(pod, 'runtime.flight.max_message_size', block.max_message_size);
  if (bytes !== undefined && bytes > 2 ** 31 - 1) {
    pod.error('runtime.flight.max_message_size', 'is larger than gRPC allows; use at most 2047MiB');
    return undefined;
  }
  return bytes;
}
