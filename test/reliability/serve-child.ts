/**
 * `ferry serve` as a user runs it — its CLI in a child process, over HTTP — for the reliability
 * tests that need the real process (its signals, its CPU, its sockets): started on a spicepod
 * file, resolved once it listens and every dataset serves; and the spicepod they serve: `orders`
 * (DuckDB) and `users` (SQLite) from a `file://` snapshot store.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { publishSnapshot } from '@ferry/writer';

const MAIN = fileURLToPath(new URL('../../packages/cli/dist/ferry.cjs', import.meta.url));

export interface Served {
  readonly child: ChildProcess;
  readonly url: string;
  readonly stderr: () => string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `ferry serve <pod>` with its data in `dataDir`, once it listens and `/v1/ready` says 200. */
export async function serveChild(pod: string, dataDir: string): Promise<Served> {
  const child = spawn(
    process.execPath,
    [
      MAIN,
      'serve',
      pod,
      '--http',
      '127.0.0.1:0',
      '--flight',
      '127.0.0.1:0',
      '--data-dir',
      dataDir,
      '--log-format',
      'json',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, FERRY_DEBUG: '' } },
  );
  let stdout = '';
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const match = /Listening on (http:\/\/\S+)/.exec(stdout);
      if (match !== null) resolve(match[1] as string);
    });
    void exited.then(() => reject(new Error(`ferry serve exited before listening:\n${stderr}`)));
  });
  // Another process's readiness: asked until it says so (at most two minutes).
  for (let tries = 0; (await fetch(`${url}/v1/ready`)).status !== 200; tries++) {
    if (tries > 1_200) throw new Error(`ferry serve was not ready within two minutes:\n${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { child, url, stderr: () => stderr, exited };
}

/** A spicepod serving `orders` (DuckDB) and `users` (SQLite) from the store at `store`, with `runtime.query` keys. */
export function ordersAndUsersPod(
  name: string,
  store: string,
  query: Readonly<Record<string, string>>,
): string {
  const dataset = (dataset: string, engine: string) => [
    `  - from: postgres:public.${dataset}`,
    `    name: ${dataset}`,
    '    acceleration:',
    `      engine: ${engine}`,
    '      mode: file',
    '      refresh_mode: snapshot',
    '      refresh_check_interval: 1h',
    '      snapshots: enabled',
  ];
  return [
    'version: v1',
    'kind: Spicepod',
    `name: ${name}`,
    'runtime:',
    '  query:',
    ...Object.entries(query).map(([key, value]) => `    ${key}: ${value}`),
    'snapshots:',
    `  location: file://${store}/`,
    'datasets:',
    ...dataset('orders', 'duckdb'),
    ...dataset('users', 'sqlite'),
    '',
  ].join('\n');
}

/** Publishes `orders` (DuckDB) and `users` (SQLite) to the store at `store`, each the rows of `sql` (with an `id`). */
export async function publishOrdersAndUsers(store: string, sql: string): Promise<void> {
  for (const [dataset, engine] of [
    ['orders', 'duckdb'],
    ['users', 'sqlite'],
  ] as const) {
    await publishSnapshot({
      dataset,
      engine,
      location: `file://${store}/`,
      source: { sql },
      notNull: ['id'],
    });
  }
}
