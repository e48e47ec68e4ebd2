/**
 * The spicepod's `runtime` block: `auth.api-key` as Spice reads it (keys that protect every
 * endpoint), Spice's other runtime keys recorded, and every problem that would leave a server open
 * while the operator believes it protected stopping the pod with the key named.
 */
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseApiKey } from '../src/config/runtime-section.js';
import { loadSpicepod } from '../src/config/spicepod.js';
import { filesOf } from './config-files.js';

function load(runtime: unknown, env: Record<string, string> = {}, files: Record<string, string> = {}) {
  const pod = {
    version: 'v1',
    kind: 'Spicepod',
    name: 'auth',
    snapshots: { location: 's3://bucket/prefix/', params: { s3_region: 'us-east-1' } },
    datasets: [
      {
        from: 'postgres:public.orders',
        name: 'orders',
        acceleration: { engine: 'duckdb', mode: 'file', refresh_mode: 'snapshot', snapshots: 'enabled' },
      },
    ],
    runtime,
  };
  return loadSpicepod(stringify(pod), {
    file: 'spicepod.yaml',
    env,
    readFile: filesOf(files),
  });
}

const messages = (result: ReturnType<typeof load>): string[] => result.errors.map((issue) => issue.message);

describe('runtime.auth.api-key', () => {
  it('reads the keys, secrets resolved, Spice access suffixes removed; enabled by default', () => {
    const result = load(
      { auth: { 'api-key': { keys: [`\${secrets:API_KEY}`, 'plain-key:rw', 'other:ro', 'a:b'] } } },
      { API_KEY: 's3cret' },
    );
    expect(result.errors).toStrictEqual([]);
    expect(result.config?.auth).toStrictEqual({
      apiKeys: [
        { key: 's3cret', access: 'read' },
        { key: 'plain-key', access: 'read_write' },
        { key: 'other', access: 'read' },
        { key: 'a:b', access: 'read' },
      ],
    });
    expect(result.config?.ignoredRuntimeKeys).toStrictEqual([]);
  });

  it(`accepts Spice's other spelling, api_key, and \${env:NAME}`, () => {
    const result = load({ auth: { api_key: { enabled: true, keys: [`\${ env:K }`] } } }, { K: 'from-env' });
    expect(result.errors).toStrictEqual([]);
    expect(result.config?.auth?.apiKeys).toStrictEqual([{ key: 'from-env', access: 'read' }]);
  });

  it("a secret holding a key with surrounding whitespace (a file's trailing newline) is the key without it", () => {
    // No HTTP header or gRPC metadata value carries it, so the key as stored could never match.
    const result = load(
      { auth: { 'api-key': { keys: [`\${secrets:API_KEY}`, `\${secrets:RW_KEY}`, `\${secrets:BLANK}`] } } },
      { API_KEY: 's3cret\n', RW_KEY: '  writer:rw\r\n', BLANK: ' \n' },
    );
    expect(result.config?.auth).toBeUndefined();
    expect(messages(result)).toStrictEqual([
      'spicepod.yaml: runtime.auth.api-key.keys[2]: is empty; give a key of at least one character (an empty key would let anyone in)',
    ]);
    const good = load(
      { auth: { 'api-key': { keys: [`\${secrets:API_KEY}`, `\${secrets:RW_KEY}`] } } },
      { API_KEY: 's3cret\n', RW_KEY: '  writer:rw\r\n' },
    );
    expect(good.config?.auth?.apiKeys).toStrictEqual([
      { key: 's3cret', access: 'read' },
      { key: 'writer', access: 'read_write' },
    ]);
  });

  it('enabled: false (or no auth block) requires no key', () => {
    expect(load({ auth: { 'api-key': { enabled: false, keys: ['k'] } } }).config?.auth).toBeUndefined();
    expect(load({ auth: { 'api-key': { enabled: 'false', keys: [] } } }).config?.auth).toBeUndefined();
    expect(load(undefined).config?.auth).toBeUndefined();
  });

  it.each([
    [
      'no keys while enabled',
      { auth: { 'api-key': { enabled: true } } },
      {},
      `spicepod.yaml: runtime.auth.api-key.keys: has no key while API key authentication is enabled, so no client could connect; add a key (such as \${secrets:API_KEY}) or set enabled: false`,
    ],
    [
      'an empty list',
      { auth: { 'api-key': { keys: [] } } },
      {},
      `spicepod.yaml: runtime.auth.api-key.keys: has no key while API key authentication is enabled, so no client could connect; add a key (such as \${secrets:API_KEY}) or set enabled: false`,
    ],
    [
      'keys that are not a list',
      { auth: { 'api-key': { keys: 'k' } } },
      {},
      `spicepod.yaml: runtime.auth.api-key.keys: must be a list of keys, such as [\${secrets:API_KEY}]`,
    ],
    [
      'an unset secret',
      { auth: { 'api-key': { keys: [`\${secrets:MISSING_KEY}`] } } },
      {},
      "spicepod.yaml: runtime.auth.api-key.keys[0]: references secret 'MISSING_KEY', which is not set; set the environment variable MISSING_KEY",
    ],
    [
      'a secret that resolves to nothing',
      { auth: { 'api-key': { keys: ['ok', `\${secrets:EMPTY}`] } } },
      { EMPTY: '' },
      'spicepod.yaml: runtime.auth.api-key.keys[1]: is empty; give a key of at least one character (an empty key would let anyone in)',
    ],
    [
      'a misspelt auth key',
      { auth: { 'api-kye': { keys: ['k'] } } },
      {},
      "spicepod.yaml: runtime.auth.api-kye: unknown key; did you mean 'api-key'?",
    ],
    [
      'a misspelt key inside api-key',
      { auth: { 'api-key': { key: ['k'] } } },
      {},
      "spicepod.yaml: runtime.auth.api-key.key: unknown key; did you mean 'keys'?",
    ],
    [
      'a misspelt runtime key',
      { auht: { 'api-key': { keys: ['k'] } } },
      {},
      "spicepod.yaml: runtime.auht: unknown key; did you mean 'auth'?",
    ],
    [
      'both spellings',
      { auth: { 'api-key': { keys: ['a'] }, api_key: { keys: ['b'] } } },
      {},
      "spicepod.yaml: runtime.auth: sets both 'api-key' and 'api_key', which are one setting; keep one",
    ],
    [
      'runtime as a scalar',
      'yes',
      {},
      'spicepod.yaml: runtime: must be a map of runtime settings (auth, tls, caching, …)',
    ],
  ])('%s stops the pod, naming the key', (_name, runtime, env, message) => {
    const result = load(runtime, env);
    expect(messages(result)).toContain(message);
    expect(result.fatal).toBe(true);
    expect(result.config).toBeUndefined();
  });

  it('never puts a resolved secret in a message', () => {
    const result = load(
      { auth: { 'api-key': { keys: [`\${secrets:GOOD}`, `\${secrets:GOOD}x`, ''] } }, tsl: {} },
      { GOOD: 'very-secret-value' },
    );
    expect(result.fatal).toBe(true);
    for (const message of messages(result)) expect(message).not.toContain('very-secret-value');
  });
});

describe("Spice's other runtime keys", () => {
  it('are recorded, not refused; the honoured ones are not in the record', () => {
    const result = load({
      results_cache: { enabled: true },
      task_history: { enabled: false },
      num_of_parallel_loading_at_start_up: 4,
      telemetry: { enabled: false },
      shutdown_timeout: '10s',
    });
    expect(result.errors).toStrictEqual([]);
    expect(result.config?.ignoredRuntimeKeys).toStrictEqual([
      'num_of_parallel_loading_at_start_up',
      'telemetry',
      'shutdown_timeout',
    ]);
    expect(result.config?.taskHistory.enabled).toBe(false);
  });
});

describe('parseApiKey', () => {
  it.each([
    ['key', { key: 'key', access: 'read' }],
    ['key:ro', { key: 'key', access: 'read' }],
    ['key:rw', { key: 'key', access: 'read_write' }],
    ['a:b:rw', { key: 'a:b', access: 'read_write' }],
    ['a:rwx', { key: 'a:rwx', access: 'read' }],
    [':rw', { key: '', access: 'read_write' }],
  ])('%s', (text, expected) => {
    expect(parseApiKey(text)).toStrictEqual(expected);
  });
});

const warnings = (result: ReturnType<typeof load>): string[] => result.warnings.map((issue) => issue.message);

const CERT = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n';

describe('runtime.tls', () => {
  it('reads the files to serve with, or the PEM text (secrets resolved)', () => {
    const files = load(
      { tls: { enabled: true, certificate_file: 'tls/cert.pem', key_file: '/etc/key.pem' } },
      {},
      { 'tls/cert.pem': CERT, '/etc/key.pem': KEY },
    );
    expect(files.errors).toStrictEqual([]);
    expect(files.config?.tls).toStrictEqual({
      certificate: { pem: CERT, file: 'tls/cert.pem', path: 'runtime.tls.certificate_file' },
      key: { pem: KEY, file: '/etc/key.pem', path: 'runtime.tls.key_file' },
    });
    const inline = load(
      { tls: { enabled: 'true', certificate: CERT, key: `\${secrets:tls_key}` } },
      { TLS_KEY: KEY },
    );
    expect(inline.errors).toStrictEqual([]);
    expect(inline.config?.tls).toStrictEqual({
      certificate: { pem: CERT.trim(), path: 'runtime.tls.certificate' },
      key: { pem: KEY, path: 'runtime.tls.key' },
    });
    expect(inline.config?.ignoredRuntimeKeys).toStrictEqual([]);
  });

  it('enabled: false serves no TLS', () => {
    expect(load({ tls: { enabled: false, certificate_file: 'c.pem' } }).config?.tls).toBeUndefined();
    expect(load(undefined).config?.tls).toBeUndefined();
  });

  it.each([
    [
      'enabled missing',
      { tls: { certificate_file: 'c.pem', key_file: 'k.pem' } },
      {},
      'spicepod.yaml: runtime.tls.enabled: missing; set enabled: true to serve HTTP and Flight over TLS with the certificate and key given (or enabled: false)',
    ],
    [
      'no certificate',
      { tls: { enabled: true, key_file: 'k.pem' } },
      {},
      `spicepod.yaml: runtime.tls.certificate_file: missing while TLS is enabled; set certificate_file to a PEM file holding the certificate (chain), or certificate to its PEM text (such as \${secrets:tls_cert})`,
    ],
    [
      'no key',
      { tls: { enabled: true, certificate: CERT } },
      {},
      `spicepod.yaml: runtime.tls.key_file: missing while TLS is enabled; set key_file to a PEM file holding the private key, or key to its PEM text (such as \${secrets:tls_key})`,
    ],
    [
      'both forms of the key',
      { tls: { enabled: true, certificate: CERT, key: KEY, key_file: 'k.pem' } },
      {},
      'spicepod.yaml: runtime.tls: sets both key and key_file; keep one (the PEM text, or the file holding it)',
    ],
    [
      'text that is not PEM',
      { tls: { enabled: true, certificate: 'not a certificate', key_file: 'k.pem' } },
      {},
      'spicepod.yaml: runtime.tls.certificate: is not PEM (it has no -----BEGIN … ----- line); give the PEM text of the certificate (chain), or set certificate_file instead',
    ],
    [
      'a key where the certificate goes',
      { tls: { enabled: true, certificate: `\${secrets:CERT}`, key_file: 'k.pem' } },
      { CERT: KEY },
      'spicepod.yaml: runtime.tls.certificate: holds a PEM private key, not a certificate; give the PEM text of the certificate (chain), or set certificate_file instead',
    ],
    [
      'an unset secret',
      { tls: { enabled: true, certificate: CERT, key: `\${secrets:TLS_KEY}` } },
      {},
      "spicepod.yaml: runtime.tls.key: references secret 'TLS_KEY', which is not set; set the environment variable TLS_KEY",
    ],
    [
      'a file that cannot be read',
      { tls: { enabled: true, certificate_file: 'missing.pem', key: KEY } },
      {},
      "spicepod.yaml: runtime.tls.certificate_file: 'missing.pem' cannot be read (ENOENT: no such file or directory); give the path of a PEM file holding the certificate (chain)",
    ],
    [
      'a file that is not PEM',
      { tls: { enabled: true, certificate: CERT, key_file: 'notes.txt' } },
      {},
      "spicepod.yaml: runtime.tls.key_file: 'notes.txt' is not PEM (it has no -----BEGIN … ----- line); give a PEM file holding the private key",
      { 'notes.txt': 'a note' },
    ],
    [
      'a misspelt key',
      { tls: { enabled: true, certificate_file: 'c.pem', keyfile: 'k.pem' } },
      {},
      "spicepod.yaml: runtime.tls.keyfile: unknown key; did you mean 'key_file'?",
    ],
  ])('%s stops the pod, naming the key', (_name, runtime, env, message, files?: Record<string, string>) => {
    const result = load(runtime, env, files);
    expect(messages(result)).toContain(message);
    expect(result.fatal).toBe(true);
  });

  it('never shows a key given as a secret in a message', () => {
    const result = load(
      { tls: { enabled: true, certificate: `\${secrets:TLS_KEY}`, key: `\${secrets:TLS_KEY}` } },
      { TLS_KEY: KEY },
    );
    expect(result.fatal).toBe(true);
    for (const message of messages(result)) expect(message).not.toContain('MIIE');
  });
});

describe('runtime.caching.sql_results and runtime.results_cache', () => {
  it("is on by default with Spice's defaults: 128 MiB, 1 s", () => {
    expect(load(undefined).config?.resultsCache).toStrictEqual({
      enabled: true,
      maxSizeBytes: 128 * 2 ** 20,
      itemTtlMs: 1_000,
    });
  });

  it('reads enabled, max_size and item_ttl; accepts the other keys with their values checked', () => {
    const result = load({
      caching: {
        sql_results: {
          enabled: true,
          max_size: '1GiB',
          item_ttl: '10m',
          eviction_policy: 'lru',
          hashing_algorithm: 'xxh3',
          cache_key_type: 'sql',
          engine: 'moka',
          encoding: 'zstd',
        },
        search_results: { enabled: false },
        embeddings: { max_size: '64MiB' },
      },
    });
    expect(result.errors).toStrictEqual([]);
    expect(result.warnings).toStrictEqual([]);
    expect(result.config?.resultsCache).toStrictEqual({
      enabled: true,
      maxSizeBytes: 2 ** 30,
      itemTtlMs: 600_000,
      configuredBy: 'runtime.caching.sql_results',
    });
  });

  it("reads the older runtime.results_cache (cache_max_size) with Spice's deprecation warning", () => {
    const result = load({ results_cache: { enabled: true, cache_max_size: '256MB', item_ttl: '30s' } });
    expect(result.errors).toStrictEqual([]);
    expect(warnings(result)).toStrictEqual([
      'spicepod.yaml: runtime.results_cache: `runtime.results_cache` is deprecated, use `runtime.caching.sql_results` instead',
    ]);
    expect(result.config?.resultsCache).toStrictEqual({
      enabled: true,
      maxSizeBytes: 256_000_000,
      itemTtlMs: 30_000,
      configuredBy: 'runtime.results_cache',
    });
  });

  it('prefers caching.sql_results when both are set, as Spice does', () => {
    const result = load({
      results_cache: { enabled: false },
      caching: { sql_results: { item_ttl: '5s' } },
    });
    expect(result.config?.resultsCache).toMatchObject({ enabled: true, itemTtlMs: 5_000 });
  });

  it('warns about what is read differently: tiny_lfu, stale-while-revalidate, warmup', () => {
    const result = load({
      caching: {
        sql_results: {
          caching_policy: 'tiny_lfu',
          stale_while_revalidate_ttl: '30s',
          warmup: 'on_first_refresh',
        },
      },
    });
    expect(result.errors).toStrictEqual([]);
    expect(warnings(result)).toStrictEqual([
      'spicepod.yaml: runtime.caching.sql_results.caching_policy: tiny_lfu is read as lru: this runtime evicts the least recently used results (which results are kept can differ, never what a query returns)',
      'spicepod.yaml: runtime.caching.sql_results.stale_while_revalidate_ttl: is not applied: this runtime never serves a stale result (a snapshot swap retires the cached results that read the dataset at once, and item_ttl ends the others)',
      'spicepod.yaml: runtime.caching.sql_results.warmup: is not applied: this runtime does not replay recorded queries into the cache; datasets are ready once their snapshot is served',
    ]);
  });

  it.each([
    [
      { caching: { sql_results: { max_size: 'big' } } },
      "spicepod.yaml: runtime.caching.sql_results.max_size: 'big' is not a positive size; write it like 128MiB, 1GiB or 500MB",
    ],
    [
      { caching: { sql_results: { item_ttl: 10 } } },
      "spicepod.yaml: runtime.caching.sql_results.item_ttl: '10' has no unit; add one, such as 10s",
    ],
    [
      { caching: { sql_results: { eviction_policy: 'lfu' } } },
      "spicepod.yaml: runtime.caching.sql_results.eviction_policy: 'lfu' is not allowed; use lru or tiny_lfu (did you mean 'tiny_lfu'?)",
    ],
    [
      { caching: { sql_results: { cache_max_size: '1GiB' } } },
      "spicepod.yaml: runtime.caching.sql_results.cache_max_size: unknown key; did you mean 'max_size'?",
    ],
    [
      { caching: { sql_result: {} } },
      "spicepod.yaml: runtime.caching.sql_result: unknown key; did you mean 'sql_results'?",
    ],
    [
      { results_cache: { max_size: '1GiB' } },
      "spicepod.yaml: runtime.results_cache.max_size: unknown key; did you mean 'cache_max_size'?",
    ],
    [
      { caching: { sql_results: { hashing_algorithm: 'md5' } } },
      "spicepod.yaml: runtime.caching.sql_results.hashing_algorithm: 'md5' is not allowed; use siphash, ahash, xxh3, xxh32, xxh64, xxh128 or blake3",
    ],
  ])('%j stops the pod, naming the key', (runtime, message) => {
    const result = load(runtime);
    expect(messages(result)).toContain(message);
    expect(result.fatal).toBe(true);
  });
});

describe('runtime.task_history', () => {
  it("is on by default, keeping 8 h checked every 15 min, as Spice's", () => {
    expect(load(undefined).config?.taskHistory).toStrictEqual({
      enabled: true,
      capturedOutput: 'none',
      retentionPeriodMs: 8 * 3_600_000,
      retentionCheckIntervalMs: 15 * 60_000,
    });
  });

  it('reads its keys', () => {
    const result = load({
      task_history: {
        enabled: true,
        captured_output: 'truncated',
        retention_period: '1h',
        retention_check_interval: '1m',
        captured_context: 'redacted',
        min_sql_duration: '5ms',
      },
    });
    expect(result.errors).toStrictEqual([]);
    expect(result.config?.taskHistory).toStrictEqual({
      enabled: true,
      capturedOutput: 'truncated',
      retentionPeriodMs: 3_600_000,
      retentionCheckIntervalMs: 60_000,
    });
  });

  it.each([
    [
      { captured_output: 'full' },
      'spicepod.yaml: runtime.task_history.captured_output: Expected "none" or "truncated" for "captured_output", but got: "full"',
    ],
    [
      { retention_period: '30s' },
      'spicepod.yaml: runtime.task_history.retention_period: Task history retention period must be at least 60 seconds. To disable task history, set the property "enabled: false".',
    ],
    [
      { retention_check_interval: '10s' },
      'spicepod.yaml: runtime.task_history.retention_check_interval: Task history retention check interval must be at least 60 seconds. To disable task history, set the property "enabled: false".',
    ],
    [
      { retention: '1h' },
      "spicepod.yaml: runtime.task_history.retention: unknown key; did you mean 'retention_period'?",
    ],
  ])("%j stops the pod with Spice's words", (taskHistory, message) => {
    const result = load({ task_history: taskHistory });
    expect(messages(result)).toContain(message);
    expect(result.fatal).toBe(true);
  });
});

describe('runtime.cors, runtime.flight, runtime.ready_state', () => {
  it('reads CORS (off by default; any origin when enabled without a list)', () => {
    expect(load(undefined).config?.cors).toBeUndefined();
    expect(load({ cors: { enabled: false } }).config?.cors).toBeUndefined();
    expect(load({ cors: { enabled: true } }).config?.cors).toStrictEqual({ allowedOrigins: ['*'] });
    expect(
      load({ cors: { enabled: true, allowed_origins: ['https://example.com'] } }).config?.cors,
    ).toStrictEqual({ allowedOrigins: ['https://example.com'] });
    expect(messages(load({ cors: { enabled: true, allowed_origins: ['example.com/x'] } }))).toStrictEqual([
      "spicepod.yaml: runtime.cors.allowed_origins[0]: 'example.com/x' is not an origin; write it like https://example.com (a scheme and host, no path), or '*'",
    ]);
  });

  it('reads flight.max_message_size and ready_state', () => {
    const result = load({
      flight: { max_message_size: '64MiB', do_put_rate_limit_enabled: false },
      ready_state: 'on_registration',
    });
    expect(result.errors).toStrictEqual([]);
    expect(result.config?.flightMaxMessageBytes).toBe(64 * 2 ** 20);
    expect(result.config?.readyState).toBe('on_registration');
    expect(messages(load({ ready_state: 'later' }))).toStrictEqual([
      "spicepod.yaml: runtime.ready_state: 'later' is not allowed; use on_load or on_registration",
    ]);
  });

  it("warns, in Spice's words, about runtime.memory_limit and runtime.temp_directory", () => {
    const result = load({ memory_limit: '4GiB', temp_directory: '/tmp/spice' });
    expect(result.errors).toStrictEqual([]);
    expect(warnings(result)).toStrictEqual([
      'spicepod.yaml: runtime.memory_limit: `runtime.memory_limit` is deprecated, use `runtime.query.memory_limit` instead',
      'spicepod.yaml: runtime.temp_directory: `runtime.temp_directory` is deprecated, use `runtime.query.temp_directory` instead',
    ]);
    expect(result.config?.ignoredRuntimeKeys).toStrictEqual(['memory_limit', 'temp_directory']);
  });
});

describe("runtime.query: Ferry's query limits beside DataFusion's settings", () => {
  it('reads ferry_timeout and ferry_stream_idle_timeout as durations; Spice keys of the block stay recorded', () => {
    const result = load({
      query: { ferry_timeout: '5s', ferry_stream_idle_timeout: '2m', memory_limit: '2GiB' },
    });
    expect(result.errors).toStrictEqual([]);
    expect(result.config?.queryTimeoutMs).toBe(5_000);
    expect(result.config?.streamIdleTimeoutMs).toBe(120_000);
    expect(result.config?.ignoredRuntimeKeys).toStrictEqual(['query']);
  });

  it('leaves both unset when absent (the runtime then uses its defaults)', () => {
    const result = load({ query: { memory_limit: '2GiB' } });
    expect(result.config?.queryTimeoutMs).toBeUndefined();
    expect(result.config?.streamIdleTimeoutMs).toBeUndefined();
  });

  it('reads ferry_max_in_flight as a whole number of queries (0: no bound) and names the key of a bad one', () => {
    expect(load({ query: { ferry_max_in_flight: 64 } }).config?.maxQueriesInFlight).toBe(64);
    expect(load({ query: { ferry_max_in_flight: '0' } }).config?.maxQueriesInFlight).toBe(0);
    expect(load({ query: {} }).config?.maxQueriesInFlight).toBeUndefined();
    expect(messages(load({ query: { ferry_max_in_flight: 'lots' } }))).toStrictEqual([
      "spicepod.yaml: runtime.query.ferry_max_in_flight: 'lots' is not a number of queries; write a whole number (0: no bound)",
    ]);
  });

  it('names the key of a bad duration, and suggests the key a misspelt ferry_ key meant', () => {
    const result = load({ query: { ferry_timeout: 30, ferry_timout: '1s' } });
    expect(messages(result)).toStrictEqual([
      "spicepod.yaml: runtime.query.ferry_timout: unknown key; did you mean 'ferry_timeout'?",
      "spicepod.yaml: runtime.query.ferry_timeout: '30' has no unit; add one, such as 30s",
    ]);
  });
});
