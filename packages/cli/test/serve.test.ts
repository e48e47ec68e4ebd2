/**
 * `ferry serve` beyond the happy path: an API key from the environment (401 without it, and
 * `ferry status` sending it), a fatal spicepod (exit 1 with every error) and a busy port (exit 1).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { copyFixtureStore, spicepodYaml } from '@ferry/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ferry, type Running, startFerry } from './helpers.js';

function fixturePod(location: string): string {
  return spicepodYaml({ name: 'serve-test', location, datasets: [{ name: 'orders', engine: 'duckdb' }] });
}

describe('ferry serve with --api-key-env', () => {
  let dir: string;
  let serve: Running;
  let base: string;
  const env = { FERRY_TEST_API_KEY: 'k3y-from-env' };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ferry-serve-'));
    const { location } = await copyFixtureStore({ kind: 'dir', dir: join(dir, 'store') });
    await writeFile(join(dir, 'spicepod.yaml'), fixturePod(location));
    serve = startFerry(
      [
        'serve',
        join(dir, 'spicepod.yaml'),
        '--http',
        '127.0.0.1:0',
        '--api-key-env',
        'FERRY_TEST_API_KEY',
        '--log-format',
        'pretty',
      ],
      { env },
    );
    base = (await serve.waitForStdout(/^Listening on (http:\/\/\S+)$/m))[1] as string;
  });

  afterAll(async () => {
    if (serve !== undefined && serve.child.exitCode === null) serve.child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('requires the key on the API and sends it from ferry status', async () => {
    expect((await fetch(`${base}/health`)).status).toBe(200);
    expect((await fetch(`${base}/v1/datasets`)).status).toBe(401);
    await expect
      .poll(
        async () =>
          (
            await fetch(`${base}/v1/ready`, {
              headers: { authorization: `Bearer ${env.FERRY_TEST_API_KEY}` },
            })
          ).status,
        {
          timeout: 30_000,
          interval: 200,
        },
      )
      .toBe(200);

    const without = await ferry(['status', '--http', base]);
    expect(without.code).toBe(1);
    expect(without.stderr).toContain('HTTP 401');

    const withKey = await ferry(['status', '--http', base, '--api-key-env', 'FERRY_TEST_API_KEY', '--json'], {
      env,
    });
    expect(withKey.code).toBe(0);
    expect(JSON.parse(withKey.stdout)).toEqual([
      expect.objectContaining({ name: 'orders', snapshotId: 1, ready: true }),
    ]);
  });

  it('logs pretty lines when asked and exits 0 on SIGINT', async () => {
    serve.child.kill('SIGINT');
    const finished = await serve.exited;
    expect(finished.code).toBe(0);
    expect(finished.stderr).toMatch(
      /^\d{2}:\d{2}:\d{2}\.\d{3} INFO {2}server +Received SIGINT; closing the HTTP server, then the runtime$/m,
    );
  });
});

describe('ferry serve failures', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ferry-serve-fail-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('exits 1 with the config errors for a fatal spicepod', async () => {
    const path = join(dir, 'bad.yaml');
    await writeFile(path, 'version: v9\nkind: Spicepod\nname: bad\nsnapshots:\n  location: gs://nope/\n');
    const result = await ferry(['serve', path, '--http', '127.0.0.1:0']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(
      "version: 'v9' is not a Spicepod version this runtime reads; use v1 or v2",
    );
    expect(result.stderr).toContain('snapshots.location');
  });

  it('exits 1 when the address is in use', async () => {
    const { location } = await copyFixtureStore({ kind: 'dir', dir: join(dir, 'store') });
    const path = join(dir, 'spicepod.yaml');
    await writeFile(path, fixturePod(location));
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const address = blocker.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    try {
      const result = await ferry([
        'serve',
        path,
        '--http',
        `127.0.0.1:${port}`,
        '--data-dir',
        join(dir, 'data'),
      ]);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(
        `ferry: error: Cannot listen on 127.0.0.1:${port} (EADDRINUSE); choose another address with --http.`,
      );
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });
});
