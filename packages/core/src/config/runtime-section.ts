/**
 * The spicepod's `runtime` block, as Spice reads it (crates/spicepod `component/runtime.rs`).
 * `auth.api-key` (Spice also accepts `api_key`) is honoured: its keys protect every endpoint.
 * Spice's other runtime keys are known by name (an unknown one is an error with a suggestion, as
 * Spice's `deny_unknown_fields` makes it) and recorded. Pure: the caller passes the environment
 * that `${secrets:NAME}` / `${env:NAME}` references resolve from.
 */
import type { Reporter } from './issues.js';
import type { ApiKeyAccess, ApiKeyConfig, AuthConfig } from './types.js';
import { type Env, isMap, readBoolean, readParam } from './values.js';

/** Every key Spice's `runtime` block accepts (`RuntimeDeserializer`), `results_cache` included. */
const RUNTIME_KEYS = [
  'auth',
  'caching',
  'cors',
  'dataset_load_parallelism',
  'flight',
  'mcp',
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
  'tls',
  'tracing',
];
const AUTH_KEYS = ['api-key', 'api_key'];
const API_KEY_KEYS = ['enabled', 'keys'];

export interface RuntimeSection {
  /** Present when `runtime.auth.api-key` is enabled with at least one key. */
  readonly auth?: AuthConfig;
  /** `runtime` keys present that are recorded, not acted on. */
  readonly recordedKeys: readonly string[];
}

/** Reads `runtime`; every problem is reported on `pod` (a problem here stops the pod). */
export function readRuntimeSection(pod: Reporter, block: unknown, env: Env): RuntimeSection {
  if (block === undefined || block === null) return { recordedKeys: [] };
  if (!isMap(block)) {
    pod.error('runtime', 'must be a map of runtime settings (auth, tls, caching, …)');
    return { recordedKeys: [] };
  }
  const recordedKeys: string[] = [];
  for (const key of Object.keys(block)) {
    if (!RUNTIME_KEYS.includes(key)) pod.unknownKey(`runtime.${key}`, key, RUNTIME_KEYS);
    else if (key !== 'auth') recordedKeys.push(key);
  }
  const auth = readAuth(pod, block.auth, env);
  return { ...(auth === undefined ? {} : { auth }), recordedKeys };
}

function readAuth(pod: Reporter, block: unknown, env: Env): AuthConfig | undefined {
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
    const text = readParam(pod, at, entry, env);
    if (text === undefined) return;
    const parsed = parseApiKey(text);
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
