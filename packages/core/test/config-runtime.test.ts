/**
 * The spicepod's `runtime` block: `auth.api-key` as Spice reads it (keys that protect every
 * endpoint), Spice's other runtime keys recorded, and every problem that would leave a server open
 * while the operator believes it protected stopping the pod with the key named.
 */
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadSpicepod } from '../src/config/index.js';
import { parseApiKey } from '../src/config/runtime-section.js';

function load(runtime: unknown, env: Record<string, string> = {}) {
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
  return loadSpicepod(stringify(pod), { file: 'spicepod.yaml', env });
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
  it('are recorded, not refused', () => {
    const result = load({
      results_cache: { enabled: true },
      task_history: { enabled: false },
      num_of_parallel_loading_at_start_up: 4,
    });
    expect(result.errors).toStrictEqual([]);
    expect(result.config?.ignoredRuntimeKeys).toStrictEqual([
      'results_cache',
      'task_history',
      'num_of_parallel_loading_at_start_up',
    ]);
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
