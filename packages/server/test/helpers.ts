/**
 * Shared pieces of the server tests: spicepods over a store location, a runtime + server pair on
 * a free port with a quiet logger, and a small fetch wrapper.
 */
import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRuntime, memoryLogger, type Runtime, type RuntimeOptions } from '@ferry/runtime';
import { copyFixtureStore, type LocalAws } from '@ferry/test-support';
import { type RunningServer, type ServerOptions, startServer } from '../src/index.js';

export interface SpicepodOptions {
  readonly location: string;
  /** Extra `snapshots.params` lines (already indented YAML). */
  readonly params?: Readonly<Record<string, string | boolean>>;
  readonly interval?: string;
  readonly datasets?: readonly ('orders' | 'users')[];
}

/** A spicepod serving the fixture's `orders` (DuckDB) and `users` (SQLite) from `location`. */
export function spicepod(options: SpicepodOptions): string {
  const interval = options.interval ?? '1s';
  const params = Object.entries(options.params ?? {});
  const engines = { orders: 'duckdb', users: 'sqlite' } as const;
  return [
    'version: v1',
    'kind: Spicepod',
    'name: server-test',
    'snapshots:',
    `  location: ${options.location}`,
    ...(params.length === 0 ? [] : ['  params:', ...params.map(([key, value]) => `    ${key}: ${value}`)]),
    'datasets:',
    ...(options.datasets ?? ['orders', 'users']).flatMap((name) => [
      `  - from: postgres:public.${name}`,
      `    name: ${name}`,
      '    acceleration:',
      `      engine: ${engines[name]}`,
      '      mode: file',
      '      refresh_mode: snapshot',
      '      snapshots: enabled',
      `      refresh_check_interval: ${interval}`,
    ]),
    '',
  ].join('\n');
}

export interface Served {
  readonly runtime: Runtime;
  readonly server: RunningServer;
  readonly dir: string;
  close(): Promise<void>;
}

/** A runtime for `yaml` (data files in a temp dir; `runtimeOptions` added) behind a server on a free port. */
export async function serve(
  yaml: string,
  options: ServerOptions = {},
  runtimeOptions: RuntimeOptions = {},
): Promise<Served> {
  const dir = await mkdtemp(join(tmpdir(), 'ferry-server-'));
  const runtime = await createRuntime(
    { yaml, baseDir: dir },
    { logger: memoryLogger(), dataDir: join(dir, 'data'), ...runtimeOptions },
  );
  const server = await startServer(runtime, { port: 0, ...options });
  return {
    runtime,
    server,
    dir,
    async close() {
      await server.close();
      await runtime.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** `snapshots.params` that read a local fauxqs with its static key. */
export function s3Params(aws: LocalAws): Readonly<Record<string, string | boolean>> {
  return {
    s3_region: aws.region,
    s3_endpoint: aws.endpoint,
    allow_http: true,
    s3_auth: 'key',
    s3_key: aws.credentials.accessKeyId,
    s3_secret: aws.credentials.secretAccessKey,
  };
}

/**
 * The fixture store copied to `aws` and served from there (`interval` between polls, default 1 s;
 * server options as `serve` takes them).
 */
export async function serveFixtureFromS3(
  aws: LocalAws,
  options: { readonly interval?: string; readonly server?: ServerOptions } = {},
): Promise<Served> {
  const { location } = await copyFixtureStore({ kind: 's3', aws });
  return serve(
    spicepod({
      location,
      params: s3Params(aws),
      ...(options.interval === undefined ? {} : { interval: options.interval }),
    }),
    options.server,
  );
}

/** A copy of the fixture store in a fresh temp dir; returns its file:// location and directory. */
export async function fixtureDir(): Promise<{ location: string; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'ferry-store-'));
  const { location } = await copyFixtureStore({ kind: 'dir', dir });
  return { location, dir };
}

/**
 * Publishes the fixture store into the (empty) store directory `dir` the way a writer does:
 * snapshot files first, then metadata.json atomically (written aside, renamed into place).
 */
export async function landFixtureIn(dir: string): Promise<void> {
  const staging = await mkdtemp(join(tmpdir(), 'ferry-staging-'));
  try {
    const { location: stagingLocation } = await copyFixtureStore({ kind: 'dir', dir: staging });
    const location = pathToFileURL(`${dir}/`).href;
    const metadata = (await readFile(join(staging, 'metadata.json'), 'utf8')).replaceAll(
      stagingLocation,
      location,
    );
    await rename(join(staging, 'month=2026-11'), join(dir, 'month=2026-11'));
    await writeFile(join(dir, 'metadata.json.tmp'), metadata);
    await rename(join(dir, 'metadata.json.tmp'), join(dir, 'metadata.json'));
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  json<T = unknown>(): T;
}

export async function request(url: string, init: RequestInit = {}): Promise<Answer> {
  const response = await fetch(url, init);
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    text,
    json: <T>() => JSON.parse(text) as T,
  };
}

/** POST /v1/sql with the SQL as a text/plain body. */
export function sql(base: string, statement: string, headers: Record<string, string> = {}): Promise<Answer> {
  return request(`${base}/v1/sql`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', ...headers },
    body: statement,
  });
}
