/**
 * The embedding example (examples/embed.mjs) as an application runs it, on this build: a child
 * process whose stdout holds only the example's own lines (the default logger writes JSON to
 * stderr), with no AWS SDK notice for a file:// store, ending by itself after close(). And a pino
 * instance of the application's own, passed as `logger`, receives the runtime's records.
 * scripts/embed-check.sh runs the same example from packed tarballs in an npm project.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, realpath, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { copyFixtureStore, spicepodYaml } from '@ferry/test-support';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime } from '../src/index.js';

const EXAMPLE = fileURLToPath(new URL('../../../examples/embed.mjs', import.meta.url));
const run = promisify(execFile);
const RUNTIME_DIR = fileURLToPath(new URL('..', import.meta.url));

describe('embedding', () => {
  let dir: string;
  let location: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ferry-embed-'));
    ({ location } = await copyFixtureStore({ kind: 'dir', dir: join(dir, 'store') }));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('runs examples/embed.mjs: its stdout is its own, logs are JSON on stderr, no SDK notice, and it ends by itself', async () => {
    // An application folder where `@ferry/runtime` resolves to this package.
    const app = join(dir, 'app');
    await mkdir(join(app, 'node_modules', '@ferry'), { recursive: true });
    await symlink(await realpath(RUNTIME_DIR), join(app, 'node_modules', '@ferry', 'runtime'), 'dir');
    await copyFile(EXAMPLE, join(app, 'embed.mjs'));
    const { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: _quiet, ...env } = process.env;
    // Rejects (with the child's stderr) on a non-zero exit, or when it does not end by itself in time.
    const { stdout, stderr } = await run(process.execPath, ['embed.mjs', location], {
      cwd: app,
      env,
      timeout: 120_000,
    });
    expect(stdout).toBe(
      [
        'orders row 4: {"id":4,"customer":"customer-4"}',
        'users: 3 rows (Arrow), snapshot 0',
        'refused: ERR_WRITE_REJECTED',
        'closed',
        '',
      ].join('\n'),
    );
    const records = stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { component?: string; dataset?: string; msg?: string });
    expect(records).toContainEqual(
      expect.objectContaining({
        component: 'dataset',
        dataset: 'orders',
        msg: "Dataset 'orders' now serves snapshot 1",
      }),
    );
    expect(stderr).not.toMatch(/AWS SDK|NodeDeprecationWarning/);
    // The repository's better-sqlite3 is the patched build: no warning about a stock one.
    expect(stderr).not.toContain('better-sqlite3 is the stock build');
  }, 150_000);

  it('sends its records to a pino instance the application passes', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        done();
      },
    });
    const logger = pino({ level: 'info', base: { app: 'mine' } }, sink);
    const runtime = await createRuntime(
      { yaml: spicepodYaml({ name: 'mine', location, datasets: [{ name: 'orders', engine: 'duckdb' }] }) },
      { logger, dataDir: join(dir, 'pino-data') },
    );
    try {
      await runtime.ready(undefined, { timeoutMs: 60_000 });
    } finally {
      await runtime.close();
    }
    const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records).toContainEqual(
      expect.objectContaining({
        app: 'mine',
        component: 'dataset',
        dataset: 'orders',
        msg: "Dataset 'orders' now serves snapshot 1",
      }),
    );
  }, 120_000);
});
