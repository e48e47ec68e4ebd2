/**
 * Spice's secrets, as its runtime resolves them (crates/runtime `secrets.rs`, `secrets/stores/env.rs`,
 * `secrets/lexer.rs`): the spicepod's `secrets:` list names the stores (`from: env` is the one this
 * runtime reads; others are refused), and a value's `${<store>:KEY}` references are replaced by
 * what the store holds — `${secrets:KEY}` asks every store, the one defined last first. Without a
 * `secrets:` list there is one store, `env`. The env store reads an environment variable with the
 * key upper-cased, `SPICE_<KEY>` before `<KEY>` (and, Ferry's leniency, the key as written), from
 * the process environment and then from dotenv files: its `params.file_path`, else `.env.local` and
 * `.env` beside the spicepod (never overriding the environment), as Spice loads them.
 *
 * Pure: the caller passes the environment and a reader of the spicepod's folder. Every value a
 * reference resolved to is remembered, so {@link SecretSource.redact} can put the reference back in
 * place of the value in any message.
 */
import type { Reporter } from './issues.js';
import type { FileRead, SecretStoreConfig } from './types.js';

export type Env = Readonly<Record<string, string | undefined>>;

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads a file of the spicepod's folder (a relative path resolves there). */
export type FileReader = (path: string) => FileRead;

/** The store every `${secrets:…}` asks when the spicepod defines none (Spice's default). */
const DEFAULT_STORE = 'env';
const SECRETS_REFERENCE = 'secrets';
const ENV_PREFIX = 'SPICE_';
/** Values shorter than this are not searched for in messages (they would match ordinary words). */
const REDACT_MIN_LENGTH = 4;

/** Secret stores Spice knows; only `env` is read here. */
const SPICE_STORES = ['env', 'kubernetes', 'aws_secrets_manager', 'keyring', 'file'];
const STORE_KEYS = ['from', 'name', 'description', 'params'];
const ENV_STORE_PARAMS = ['file_path'];

interface Store {
  readonly name: string;
  lookup(key: string): string | undefined;
}

/** `KEY=value` lines of a dotenv file (`export` prefix, `#` comments, single and double quotes). */
export function parseDotenv(text: string): Record<string, string> {
  const values: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*)$/.exec(line);
    if (match === null) continue;
    const key = match[1] as string;
    let value = (match[2] as string).trim();
    const quote = value[0];
    const end = quote === '"' || quote === "'" ? closingQuote(value, quote) : -1;
    // Quoted: the text between the quotes, whatever comment follows them (`A="abc" # prod`).
    if (end > 0 && /^\s*(?:#.*)?$/.test(value.slice(end + 1))) {
      value = value.slice(1, end);
      if (quote === '"') value = value.replace(/\\n/g, '\n').replace(/\\(["\\])/g, '$1');
    } else {
      value = value.replace(/\s+#.*$/, '');
    }
    if (!Object.hasOwn(values, key)) values[key] = value;
  }
  return values;
}

/** The index of the quote closing `value`'s opening one (a `\\"` inside double quotes does not), or -1. */
function closingQuote(value: string, quote: string): number {
  for (let index = 1; index < value.length; index++) {
    if (quote === '"' && value[index] === '\\') index++;
    else if (value[index] === quote) return index;
  }
  return -1;
}

function envStore(name: string, env: Env, files: readonly Record<string, string>[]): Store {
  const find = (variable: string): string | undefined => {
    if (Object.hasOwn(env, variable) && env[variable] !== undefined) return env[variable];
    for (const file of files) if (Object.hasOwn(file, variable)) return file[variable];
    return undefined;
  };
  return {
    name,
    lookup(key) {
      const upper = key.toUpperCase();
      return find(`${ENV_PREFIX}${upper}`) ?? find(upper) ?? find(key);
    },
  };
}

/** The dotenv files an env store reads: its `file_path`, else `.env.local` then `.env`. */
function dotenvFiles(
  report: Reporter,
  path: string,
  filePath: string | undefined,
  readFile: FileReader | undefined,
): Record<string, string>[] {
  if (readFile === undefined) return [];
  if (filePath !== undefined) {
    const { text } = readFile(filePath);
    if (text !== undefined) return [parseDotenv(text)];
    // Spice warns and falls back to the default files.
    report.warn(
      `${path}.params.file_path`,
      `'${filePath}' cannot be read, so the store reads the environment, .env.local and .env; fix the path or remove file_path`,
    );
  }
  return ['.env.local', '.env'].flatMap((file) => {
    const { text } = readFile(file);
    return text === undefined ? [] : [parseDotenv(text)];
  });
}

export class SecretSource {
  readonly #stores: readonly Store[];
  readonly #env: Store;
  /** Resolved values and the reference each came from, longest first when redacting. */
  readonly #revealed = new Map<string, string>();

  constructor(stores: readonly Store[], env: Store) {
    this.#stores = stores;
    this.#env = env;
  }

  /** A source over the environment alone (no `secrets:` block, no dotenv files). */
  static fromEnv(env: Env): SecretSource {
    const store = envStore(DEFAULT_STORE, env, []);
    return new SecretSource([store], store);
  }

  /**
   * The value of `${<store>:<key>}`, or the clause saying why there is none (naming the variable
   * to set). `secrets` asks every store, the one defined last first.
   */
  lookup(store: string, key: string): { readonly value: string } | { readonly problem: string } {
    const upper = key.toUpperCase();
    const fix = `set the environment variable ${upper}`;
    if (store === SECRETS_REFERENCE) {
      for (const candidate of this.#stores) {
        const value = candidate.lookup(key);
        if (value !== undefined) return { value };
      }
      return { problem: `references secret '${key}', which is not set; ${fix}` };
    }
    const named =
      this.#stores.find((candidate) => candidate.name === store) ??
      (store === DEFAULT_STORE ? this.#env : undefined);
    if (named === undefined) {
      return {
        problem: `references secret store '${store}', which the spicepod does not define; use \${secrets:${key}} (an environment variable) or add a store named '${store}' to secrets`,
      };
    }
    const value = named.lookup(key);
    const of = store === DEFAULT_STORE ? '' : ` of store '${store}'`;
    return value === undefined
      ? { problem: `references secret '${key}'${of}, which is not set; ${fix}` }
      : { value };
  }

  /** Records that `value` came from `reference`, so messages never show it. */
  reveal(value: string, reference: string): void {
    if (value.length >= REDACT_MIN_LENGTH && !this.#revealed.has(value)) this.#revealed.set(value, reference);
  }

  /** Every resolved secret value and the reference written in its place. */
  get references(): readonly { readonly value: string; readonly reference: string }[] {
    return [...this.#revealed].map(([value, reference]) => ({ value, reference }));
  }

  /** `text` with every resolved secret value replaced by its reference. */
  redact(text: string): string {
    return redactSecrets(text, this.references);
  }
}

/** `text` with each secret value replaced by its reference (longest values first). */
export function redactSecrets(
  text: string,
  references: readonly { readonly value: string; readonly reference: string }[],
): string {
  let result = text;
  const sorted = [...references].sort((a, b) => b.value.length - a.value.length);
  for (const { value, reference } of sorted) {
    if (result.includes(value)) result = result.split(value).join(reference);
  }
  return result;
}

/**
 * Reads the top-level `secrets:` block: Spice's list of stores (`- from: env`, `name: …`); the
 * older map form (`store: env`) is read too. Only `env` stores are read; any other store stops the
 * pod, named, since a value it should supply would be missing.
 */
export function readSecretStores(
  pod: Reporter,
  block: unknown,
  env: Env,
  readFile: FileReader | undefined,
): { readonly source: SecretSource; readonly stores: readonly SecretStoreConfig[] } {
  const defaultStore = envStore(DEFAULT_STORE, env, dotenvFiles(pod, 'secrets', undefined, readFile));
  const none = { source: new SecretSource([defaultStore], defaultStore), stores: [] };
  if (block === undefined || block === null) return none;
  if (isMap(block)) {
    // Spice before 0.16: `secrets: { store: env }`.
    for (const key of Object.keys(block)) {
      if (key !== 'store') pod.unknownKey(`secrets.${key}`, key, ['store']);
    }
    if (block.store !== undefined && block.store !== 'env')
      refuseStore(pod, 'secrets.store', String(block.store));
    return none;
  }
  if (!Array.isArray(block)) {
    pod.error('secrets', 'must be a list of secret stores, such as [{ from: env, name: env }]');
    return none;
  }
  const stores: Store[] = [];
  const configs: SecretStoreConfig[] = [];
  block.forEach((entry, index) => {
    const path = `secrets[${index}]`;
    if (!isMap(entry)) {
      pod.error(path, 'must be a map with from and name, such as { from: env, name: env }');
      return;
    }
    for (const key of Object.keys(entry)) {
      if (!STORE_KEYS.includes(key)) pod.unknownKey(`${path}.${key}`, key, STORE_KEYS);
    }
    const from = typeof entry.from === 'string' ? entry.from.trim() : undefined;
    const name = typeof entry.name === 'string' ? entry.name.trim() : undefined;
    if (from === undefined || from === '') {
      pod.error(`${path}.from`, 'missing; set from: env (environment variables)');
      return;
    }
    if (name === undefined || name === '') {
      pod.error(`${path}.name`, `missing; name the store (it is referenced as \${<name>:KEY})`);
      return;
    }
    const [provider = '', ...selector] = from.split(':');
    if (provider !== 'env') {
      refuseStore(pod, `${path}.from`, from);
      return;
    }
    if (selector.length > 0) {
      pod.error(`${path}.from`, `the env store takes no selector; write from: env, not '${from}'`);
      return;
    }
    if (configs.some((store) => store.name === name)) {
      pod.error(`${path}.name`, `'${name}' names another store too; give each store its own name`);
      return;
    }
    let filePath: string | undefined;
    if (entry.params !== undefined && entry.params !== null) {
      if (!isMap(entry.params))
        pod.error(`${path}.params`, 'must be a map, such as { file_path: .env.prod }');
      else {
        for (const key of Object.keys(entry.params)) {
          if (!ENV_STORE_PARAMS.includes(key)) pod.unknownKey(`${path}.params.${key}`, key, ENV_STORE_PARAMS);
        }
        if (entry.params.file_path !== undefined) filePath = String(entry.params.file_path).trim();
      }
    }
    stores.push(envStore(name, env, dotenvFiles(pod, path, filePath, readFile)));
    configs.push({ name, from: 'env', ...(filePath === undefined ? {} : { filePath }) });
  });
  if (stores.length === 0) return { source: none.source, stores: configs };
  // The store defined last is asked first, as Spice orders them.
  return { source: new SecretSource([...stores].reverse(), defaultStore), stores: configs };
}

function refuseStore(pod: Reporter, path: string, from: string): void {
  const provider = from.split(':')[0] ?? from;
  const known = SPICE_STORES.includes(provider) ? `Spice's ${provider} secret store` : `'${from}'`;
  pod.error(
    path,
    `${known} is not read by this runtime (it reads environment variables only), so the values it holds would be missing; use from: env and set them as environment variables (or in a .env file)`,
  );
}

/** `${store:key}` as Spice's lexer reads it (whitespace allowed around each part). */
const SECRET_REF = /\$\{\s*([A-Za-z][A-Za-z0-9_-]*)\s*:\s*([A-Za-z][A-Za-z0-9_-]*)\s*\}/g;

/**
 * `text` with its secret references replaced; reports (on `path`) and returns undefined when one
 * cannot be resolved. The values are recorded for redaction.
 */
export function resolveReferences(
  report: Reporter,
  path: string,
  text: string,
  secrets: SecretSource,
): string | undefined {
  let failed = false;
  const resolved = text.replace(SECRET_REF, (whole, store: string, key: string) => {
    const found = secrets.lookup(store, key);
    if ('problem' in found) {
      report.error(path, found.problem);
      failed = true;
      return whole;
    }
    secrets.reveal(found.value, whole.replace(/\s+/g, ''));
    return found.value;
  });
  return failed ? undefined : resolved;
}
