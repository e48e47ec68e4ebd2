/**
 * `ferry serve` beyond the happy path: an API key from the environment (401 without it, and
 * `ferry status` sending it), a fatal spicepod (exit 1 with every error), a busy port (exit 1), and
 * Arrow Flight beside HTTP, both over TLS (Spice's JS SDK as the Flight client).
 */
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { copyFixtureStore, spicepodYaml, TLS_FIXTURE } from '@ferry/test-support';
import { SpiceClient } from '@spiceai/spice';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ferry, httpsFetch, type Running, startFerry } from './helpers.js';

function fixturePod(location: string): string {
  return spicepodYaml({ name: 'serve-test', location, datasets: [{ name: 'orders', engine: 'duckdb' }] });
}

describe('ferry serve with --api-key-env', () => {
  let dir: string;
  let serve: Running;
  let base: string;
  // With the trailing newline a Kubernetes secret made from a file carries: the key is what precedes it.
  const env = { FERRY_TEST_API_KEY: 'k3y-from-env\n' };
  const key = 'k3y-from-env';

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
        '--no-flight',
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
              headers: { authorization: `Bearer ${key}` },
            })
          ).status,
        {
          timeout: 30_000,
          interval: 200,
        },
      )
      .toBe(200);

    expect((await fetch(`${base}/v1/datasets`, { headers: { 'x-api-key': key } })).status).toBe(200);

    const without = await ferry(['status', '--http', base]);
    expect(without.code).toBe(1);
    expect(without.stderr).toContain('HTTP 401');
    // The server's sentence, then the hint: one stop between them, not '.;'.
    expect(without.stderr).not.toContain('.;');

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
    const result = await ferry(['serve', path, '--http', '127.0.0.1:0', '--no-flight']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(
      "version: 'v9' is not a Spicepod version this runtime reads; use v1 or v2",
    );
    expect(result.stderr).toContain('snapshots.location');
  });

  it('counts a dataset its configuration refused apart from the served ones', async () => {
    const { location } = await copyFixtureStore({ kind: 'dir', dir: join(dir, 'store-refused') });
    const path = join(dir, 'refused.yaml');
    const yaml = spicepodYaml({
      name: 'serve-refused',
      location,
      datasets: [
        { name: 'orders', engine: 'duckdb' },
        { name: 'users', engine: 'sqlite' },
      ],
    });
    await writeFile(path, yaml.replace('engine: sqlite', 'engine: cayenne'));
    const serve = startFerry([
      'serve',
      path,
      '--http',
      '127.0.0.1:0',
      '--no-flight',
      '--data-dir',
      join(dir, 'data-refused'),
    ]);
    try {
      const line = await serve.waitForStderr(/"msg":"(Serving [^"]*)"/);
      expect(line[1]).toMatch(
        /^Serving 1 dataset\(s\) on http:\/\/127\.0\.0\.1:\d+; 1 refused by its configuration \(users: logged above\)$/,
      );
      serve.child.kill('SIGTERM');
      expect((await serve.exited).code).toBe(0);
    } finally {
      if (serve.child.exitCode === null) serve.child.kill('SIGKILL');
    }
  });

  it('exits 2 naming --data-dir when the data directory cannot be made, before anything starts', async () => {
    // Before: it served, every dataset logged a warning at each check and never loaded, and every
    // query was a 500 (its spill directory is in the data directory).
    const { location } = await copyFixtureStore({ kind: 'dir', dir: join(dir, 'store-datadir') });
    const path = join(dir, 'datadir.yaml');
    await writeFile(path, fixturePod(location));
    const file = join(dir, 'a-file');
    await writeFile(file, 'not a directory');
    const given = await ferry([
      'serve',
      path,
      '--http',
      '127.0.0.1:0',
      '--no-flight',
      '--data-dir',
      join(file, 'data'),
    ]);
    expect([given.code, given.stdout]).toStrictEqual([2, '']);
    expect(given.stderr).toBe(
      `ferry: --data-dir '${join(file, 'data')}' cannot be used as the data directory (ENOTDIR); give a directory this user can create and write\n` +
        "Run 'ferry serve --help' for usage.\n",
    );
    // The default, .ferry/data beside the spicepod, is checked the same way.
    const podDir = join(dir, 'pod-dir');
    await mkdir(podDir);
    await writeFile(join(podDir, 'spicepod.yaml'), fixturePod(location));
    await writeFile(join(podDir, '.ferry'), 'not a directory');
    const fallback = await ferry([
      'serve',
      join(podDir, 'spicepod.yaml'),
      '--http',
      '127.0.0.1:0',
      '--no-flight',
    ]);
    expect(fallback.code).toBe(2);
    expect(fallback.stderr).toContain(
      `ferry: the data directory '${join(podDir, '.ferry', 'data')}' (the default: .ferry/data beside the spicepod) cannot be used (ENOTDIR); pass --data-dir with a directory this user can create and write`,
    );
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
        '--no-flight',
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

/** A GET over HTTPS trusting the test certificate; the JSON body and status. */
async function httpsGet(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: unknown }> {
  const answer = await httpsFetch(url, { headers });
  return { status: answer.status, body: JSON.parse(await answer.text()) };
}

describe('ferry serve with Arrow Flight and TLS', () => {
  let dir: string;
  let pod: string;
  const env = { FERRY_TEST_API_KEY: 'fl1ght-k3y' };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ferry-serve-flight-'));
    const { location } = await copyFixtureStore({ kind: 'dir', dir: join(dir, 'store') });
    pod = join(dir, 'spicepod.yaml');
    await writeFile(pod, fixturePod(location));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('serves Flight SQL and HTTPS with one certificate and one API key; /v1/status lists both; SIGTERM stops both', async () => {
    const serve = startFerry(
      [
        'serve',
        pod,
        '--http',
        '127.0.0.1:0',
        '--flight',
        '127.0.0.1:0',
        '--tls-cert',
        TLS_FIXTURE.cert,
        '--tls-key',
        TLS_FIXTURE.key,
        '--api-key-env',
        'FERRY_TEST_API_KEY',
        '--data-dir',
        join(dir, 'data'),
      ],
      { env },
    );
    try {
      const flight = (
        await serve.waitForStdout(/^Flight on grpc\+tls:\/\/(127\.0\.0\.1:\d+)$/m)
      )[1] as string;
      const base = (await serve.waitForStdout(/^Listening on (https:\/\/127\.0\.0\.1:\d+)$/m))[1] as string;
      const auth = { authorization: `Bearer ${env.FERRY_TEST_API_KEY}` };
      const status = await httpsGet(`${base}/v1/status`, auth);
      expect(status).toEqual({
        status: 200,
        body: [
          { name: 'http', endpoint: base.replace('https://', ''), status: 'Ready' },
          { name: 'flight', endpoint: flight, status: 'Ready' },
          { name: 'metrics', endpoint: base.replace('https://', ''), status: 'Ready' },
        ],
      });
      // Bootstrapping takes a few seconds on a loaded machine (3.2 s at load 90): poll's 1 s default is too short.
      await expect
        .poll(async () => (await httpsGet(`${base}/v1/datasets?status=true`, auth)).body, { timeout: 30_000 })
        .toEqual([expect.objectContaining({ name: 'orders', status: 'Ready' })]);
      const client = new SpiceClient({
        flightUrl: flight,
        flightOnly: true,
        flightTlsEnabled: true,
        tlsRootCertFile: TLS_FIXTURE.cert,
        apiKey: env.FERRY_TEST_API_KEY,
        httpUrl: 'http://127.0.0.1:9',
        logging: false,
      });
      const table = await client.sql('SELECT count(*) AS n FROM orders');
      expect(Number(table.toArray()[0]?.n)).toBe(8);
      const wrongKey = new SpiceClient({
        flightUrl: flight,
        flightOnly: true,
        flightTlsEnabled: true,
        tlsRootCertFile: TLS_FIXTURE.cert,
        apiKey: 'not-the-key',
        httpUrl: 'http://127.0.0.1:9',
        logging: false,
      });
      await expect(wrongKey.sql('SELECT 1 AS n FROM orders')).rejects.toThrow();
    } finally {
      serve.child.kill('SIGTERM');
    }
    expect((await serve.exited).code).toBe(0);
  });

  it('refuses --tls-cert without --tls-key (exit 2, naming the missing flag)', async () => {
    const result = await ferry(['serve', pod, '--http', '127.0.0.1:0', '--tls-cert', TLS_FIXTURE.cert]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--tls-cert and --tls-key go together; add --tls-key');
  });

  it('refuses a --tls-cert / --tls-key pair that cannot serve TLS (exit 2, naming the flags, before anything starts)', async () => {
    // Before: the runtime started and the error read 'Cannot listen on 127.0.0.1:0
    // (ERR_OSSL_PEM_NO_START_LINE); choose another address with --flight', an address problem.
    const garbage = join(dir, 'garbage.pem');
    await writeFile(garbage, 'not PEM\n');
    const bad = await ferry([
      'serve',
      pod,
      '--http',
      '127.0.0.1:0',
      '--tls-cert',
      garbage,
      '--tls-key',
      TLS_FIXTURE.key,
    ]);
    expect([bad.code, bad.stdout]).toStrictEqual([2, '']);
    expect(bad.stderr).toMatch(
      new RegExp(
        `^ferry: --tls-cert ${garbage} and --tls-key ${TLS_FIXTURE.key} cannot be used for TLS \\([^)]+\\); give a PEM certificate chain and its private key\n`,
      ),
    );
    const other = join(dir, 'other.key');
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    await writeFile(other, privateKey.export({ type: 'pkcs8', format: 'pem' }));
    const mismatch = await ferry([
      'serve',
      pod,
      '--http',
      '127.0.0.1:0',
      '--tls-cert',
      TLS_FIXTURE.cert,
      '--tls-key',
      other,
    ]);
    expect(mismatch.code).toBe(2);
    expect(mismatch.stderr).toContain(
      `ferry: --tls-key ${other} is not the private key of the certificate in --tls-cert ${TLS_FIXTURE.cert} (`,
    );
  });

  it('refuses --inspect-dataset without --inspect (exit 2), and exits 1 naming a dataset the spicepod lacks', async () => {
    const alone = await ferry(['serve', pod, '--http', '127.0.0.1:0', '--inspect-dataset', 'orders']);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain(
      '--inspect-dataset names the machine --inspect streams; give --inspect too',
    );
    const unknown = await ferry([
      'serve',
      pod,
      '--http',
      '127.0.0.1:0',
      '--no-flight',
      '--inspect',
      'ws://127.0.0.1:9',
      '--inspect-dataset',
      'nope',
    ]);
    expect(unknown.code).toBe(1);
    // Of the flag, not 'Table 'nope' is not a dataset of this runtime'.
    expect(unknown.stderr).toContain(
      `ferry: error: --inspect-dataset 'nope' is not a dataset of ${pod}; its datasets are: `,
    );
  });

  it('exits 1 naming --flight when the Flight address is in use', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const address = blocker.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    try {
      const result = await ferry([
        'serve',
        pod,
        '--http',
        '127.0.0.1:0',
        '--flight',
        `127.0.0.1:${port}`,
        '--data-dir',
        join(dir, 'data'),
        '--log-format',
        'json',
      ]);
      expect(result.code).toBe(1);
      // The errno, as for --http, not gRPC's 'No address added out of total 1 resolved errors: […]'.
      expect(result.stderr).toContain(
        `ferry: error: Cannot listen on 127.0.0.1:${port} (EADDRINUSE); choose another address with --flight.`,
      );
      // Every line before it is a JSON log line: gRPC's own ('E No address added …' on stderr
      // before) is one of them, at warn.
      const lines = result.stderr.trimEnd().split('\n').slice(0, -1);
      const records = lines.map((line) => JSON.parse(line) as { component?: string; level?: string });
      expect(records).toContainEqual(expect.objectContaining({ component: 'grpc', level: 'warn' }));
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });
});

describe('ferry serve --query-timeout, and its shutdown while queries run', () => {
  let dir: string;
  let pod: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ferry-serve-limits-'));
    const { location } = await copyFixtureStore({ kind: 'dir', dir: join(dir, 'store') });
    pod = join(dir, 'spicepod.yaml');
    await writeFile(pod, fixturePod(location));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const RUNAWAY = 'SELECT count(*) AS n FROM orders, range(1000000000000) t(i)';

  async function started(extra: readonly string[]): Promise<{ serve: Running; base: string }> {
    const serve = startFerry([
      'serve',
      pod,
      '--http',
      '127.0.0.1:0',
      '--no-flight',
      '--data-dir',
      join(dir, 'data'),
      ...extra,
    ]);
    const base = (await serve.waitForStdout(/^Listening on (http:\/\/\S+)$/m))[1] as string;
    await expect
      .poll(async () => (await fetch(`${base}/v1/ready`)).status, { timeout: 30_000, interval: 200 })
      .toBe(200);
    return { serve, base };
  }

  it('stops a query at --query-timeout in its engine: 504 ERR_QUERY_TIMEOUT naming the limit', async () => {
    const { serve, base } = await started(['--query-timeout', '300ms']);
    try {
      const answer = await fetch(`${base}/v1/sql`, { method: 'POST', body: RUNAWAY });
      expect(answer.status).toBe(504);
      expect(await answer.json()).toMatchObject({
        code: 'ERR_QUERY_TIMEOUT',
        error: expect.stringMatching(
          /ran longer than 300 ms and was cancelled; .*ferry serve --query-timeout/,
        ),
      });
    } finally {
      serve.child.kill('SIGKILL');
      await serve.exited;
    }
  });

  /** CPU time (user + system, in clock ticks) the process `pid` has used so far. */
  function cpuTicks(pid: number): number {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return Number(fields[11]) + Number(fields[12]);
  }

  it.runIf(process.platform === 'linux')(
    "answers a DuckDB query while more long DuckDB statements run than libuv's default pool has threads",
    async () => {
      // Each DuckDB call holds a thread of libuv's pool while DuckDB executes it: with Node's 4,
      // four runaways left every other DuckDB query waiting until their timeout (30 s by default;
      // here longer than the test). The bin sizes the pool.
      const { serve, base } = await started(['--query-timeout', '10m']);
      const pid = serve.child.pid as number;
      const runaways = new AbortController();
      try {
        const before = cpuTicks(pid);
        for (let i = 0; i < 6; i++) {
          void fetch(`${base}/v1/sql`, { method: 'POST', body: RUNAWAY, signal: runaways.signal }).catch(
            () => undefined,
          );
        }
        // Running: two seconds of CPU spent (they were all sent to DuckDB within milliseconds).
        await expect
          .poll(() => cpuTicks(pid) - before, { timeout: 60_000, interval: 100 })
          .toBeGreaterThan(200);
        const answer = await fetch(`${base}/v1/sql`, {
          method: 'POST',
          body: 'SELECT count(*) AS n FROM orders WHERE 1 = 1',
          signal: AbortSignal.timeout(20_000),
        });
        expect(answer.status).toBe(200);
        expect(await answer.json()).toEqual([{ n: expect.any(Number) }]);
      } finally {
        runaways.abort();
        serve.child.kill('SIGKILL');
        await serve.exited;
      }
    },
  );

  it('refuses a --query-timeout that is not a duration (exit 2, naming the flag)', async () => {
    const result = await ferry(['serve', pod, '--query-timeout', '30']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--query-timeout: Invalid duration: '30' is not a duration");
  });

  it('a second signal during the shutdown ends the process at once, as SIGINT (exit status 130)', async () => {
    const { serve, base } = await started([]);
    const running = fetch(`${base}/v1/sql`, { method: 'POST', body: RUNAWAY }).catch(
      (error: unknown) => error,
    );
    await serve.waitForStderr(/"level":"info".*Serving 1 dataset/);
    serve.child.kill('SIGTERM');
    await serve.waitForStderr(/Received SIGTERM/);
    serve.child.kill('SIGTERM');
    const finished = await serve.exited;
    await running;
    expect({ code: finished.code, signal: finished.signal }).toEqual({ code: null, signal: 'SIGINT' });
    expect(finished.stderr).toContain('ferry: SIGTERM again; exiting without a clean shutdown');
  });
});
