/**
 * Running the built `ferry` executable as a user would: a child process of
 * `node packages/cli/dist/ferry.cjs` (the integration project builds it before the tests), collecting
 * its output, or kept running (`ferry serve`) until the test signals it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import type { IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TLS_FIXTURE } from '@ferry/test-support';

export const MAIN = fileURLToPath(new URL('../dist/ferry.cjs', import.meta.url));

function assertBuilt(): void {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing; build the CLI first: npx tsc -b packages/cli`);
}

export interface Finished {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunOptions {
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly cwd?: string;
  readonly timeoutMs?: number;
  /** Node options before the script (`node --max-old-space-size=4096 ferry.cjs …`). */
  readonly nodeOptions?: readonly string[];
}

function childEnv(extra: RunOptions['env']): NodeJS.ProcessEnv {
  return { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', ...extra };
}

/** Runs `ferry <args>` to completion. */
export function ferry(args: readonly string[], options: RunOptions = {}): Promise<Finished> {
  assertBuilt();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(options.nodeOptions ?? []), MAIN, ...args], {
      env: childEnv(options.env),
      cwd: options.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: options.timeoutMs ?? 60_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

export interface Running {
  readonly child: ChildProcess;
  /** Everything written so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves with the first stdout match of `pattern` (rejects if the process ends first). */
  waitForStdout(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** The same for stderr (where `ferry serve` logs). */
  waitForStderr(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves when the process has exited. */
  readonly exited: Promise<Finished>;
}

/** Starts `ferry <args>` and leaves it running. */
export function startFerry(args: readonly string[], options: RunOptions = {}): Running {
  assertBuilt();
  const child = spawn(process.execPath, [...(options.nodeOptions ?? []), MAIN, ...args], {
    env: childEnv(options.env),
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const listeners = new Set<() => void>();
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    for (const listener of listeners) listener();
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    for (const listener of listeners) listener();
  });
  const exited = new Promise<Finished>((resolve) => {
    child.on('close', (code, signal) => {
      resolve({ code, signal, stdout, stderr });
      for (const listener of listeners) listener();
    });
  });
  let ended = false;
  void exited.then(() => {
    ended = true;
  });
  const waitFor = (stream: 'stdout' | 'stderr', pattern: RegExp, timeoutMs: number) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const timer = setTimeout(() => {
        listeners.delete(check);
        reject(new Error(`No ${pattern} on ${stream} within ${timeoutMs} ms; stderr:\n${stderr}`));
      }, timeoutMs);
      const check = (): void => {
        const match = pattern.exec(stream === 'stdout' ? stdout : stderr);
        if (match !== null) {
          clearTimeout(timer);
          listeners.delete(check);
          resolve(match);
        } else if (ended || child.exitCode !== null) {
          clearTimeout(timer);
          listeners.delete(check);
          reject(
            new Error(`ferry exited before printing ${pattern}; stdout:\n${stdout}\nstderr:\n${stderr}`),
          );
        }
      };
      listeners.add(check);
      check();
    });
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    waitForStdout: (pattern, timeoutMs = 60_000) => waitFor('stdout', pattern, timeoutMs),
    waitForStderr: (pattern, timeoutMs = 60_000) => waitFor('stderr', pattern, timeoutMs),
  };
}

/** Every path under `dir` with its bytes (folders as `/`), sorted: a folder's whole content, to compare. */
export async function snapshotOf(dir: string): Promise<[string, string][]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const out: [string, string][] = [];
  for (const entry of entries) {
    const path = join(entry.parentPath, entry.name);
    out.push([path, entry.isDirectory() ? '/' : (await readFile(path)).toString('base64')]);
  }
  return out.sort(([a], [b]) => a.localeCompare(b));
}

export interface HttpsAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** The whole body (for a stream, what arrives until it ends). */
  text(): Promise<string>;
  /** Ends the response (an event stream that never ends on its own). */
  close(): void;
}

/**
 * One request to a `ferry serve --tls-cert TLS_FIXTURE.cert` endpoint, trusting that certificate
 * (`fetch` cannot be given a CA); resolves once the answer's headers arrive.
 */
export function httpsFetch(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    const request = httpsRequest(
      url,
      {
        method: init.method ?? 'GET',
        ca: readFileSync(TLS_FIXTURE.cert),
        // The certificate names localhost too; an IP as TLS server name is deprecated (RFC 6066).
        servername: 'localhost',
        headers: init.headers ?? {},
      },
      (response) => {
        const body = new Promise<string>((done, fail) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => done(Buffer.concat(chunks).toString('utf8')));
          response.on('error', fail);
        });
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          text: () => body,
          close: () => response.destroy(),
        });
      },
    );
    request.on('error', reject);
    request.end(init.body);
  });
}
