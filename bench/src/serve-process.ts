/**
 * `ferry serve` (and the plain baseline servers) as child processes for the HTTP scenarios (B9,
 * B15): started, found listening from the line they print, waited for until ready, and stopped.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { type Agent, request } from 'node:http';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** The CLI's entry point, for `node <cli> serve …`. */
export function cliPath(): string {
  return fileURLToPath(new URL('./ferry.cjs', import.meta.resolve('@ferry/cli')));
}

/**
 * A child process that prints `Listening on http://…` once it serves; resolves with that URL, and
 * its standard output's lines for whoever reads what it prints after.
 */
export async function startServerProcess(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<{ url: string; child: ChildProcess; lines: Interface }> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env });
  // The script's path, after any Node options.
  const script = args.find((arg) => !arg.startsWith('-')) ?? 'the server';
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${script} did not start listening within 120 s`)),
      120_000,
    );
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code} before listening`)));
    lines.on('line', (line) => {
      const match = /Listening on (http:\/\/\S+)/.exec(line);
      if (match?.[1] === undefined) return;
      clearTimeout(timer);
      resolve(match[1]);
    });
  });
  return { url, child, lines };
}

/**
 * Node options for the `ferry serve` children only (not the baselines), from
 * `FERRY_BENCH_SERVE_NODE_OPTIONS`, split on spaces: e.g. `--single-threaded-gc`, a V8 flag that
 * only the command line can give (docs/node-versions.md). Empty by default: users' defaults.
 */
function serveNodeOptions(): string[] {
  return (process.env.FERRY_BENCH_SERVE_NODE_OPTIONS ?? '').split(' ').filter((option) => option !== '');
}

/** `ferry serve` on the spicepod at `podPath` as a user starts it (HTTP and Flight on free ports), warn logs. */
export function startFerryServe(
  podPath: string,
  dataDir: string,
  env: NodeJS.ProcessEnv,
): Promise<{ url: string; child: ChildProcess; lines: Interface }> {
  return startServerProcess(
    [
      ...serveNodeOptions(),
      cliPath(),
      'serve',
      podPath,
      '--http',
      '127.0.0.1:0',
      '--flight',
      '127.0.0.1:0',
      '--log-level',
      'warn',
      '--log-format',
      'json',
      '--data-dir',
      dataDir,
    ],
    env,
  );
}

export async function stop(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await once(child, 'exit');
  clearTimeout(timer);
}

/** Polls `GET /v1/ready` until it answers 200 (at most 120 s). */
export async function waitReady(agent: Agent, base: URL): Promise<void> {
  const started = Date.now();
  for (;;) {
    const status = await new Promise<number>((resolve) => {
      const req = request({ agent, host: base.hostname, port: base.port, path: '/v1/ready' }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', () => resolve(0));
      req.end();
    });
    if (status === 200) return;
    if (Date.now() - started > 120_000) throw new Error('ferry serve did not become ready within 120 s');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
