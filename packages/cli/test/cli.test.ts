/**
 * The `ferry` command line as a user meets it: help on every command, usage errors (exit 2),
 * and `ferry validate` on good and broken spicepods (exit 0 / 1, every key-naming error printed).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ferry } from './helpers.js';

/** A port nothing listens on: bound once, then released. */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

describe('ferry help and usage errors', () => {
  it('prints the command list for --help and exits 0', async () => {
    const result = await ferry(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: ferry <command>/);
    for (const command of ['serve', 'publish', 'validate', 'status']) {
      expect(result.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
    }
  });

  it.each(['serve', 'publish', 'validate', 'status'])(
    'prints help for %s --help and exits 0',
    async (command) => {
      const result = await ferry([command, '--help']);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(new RegExp(`^Usage: ferry ${command}`));
      expect(result.stderr).toBe('');
    },
  );

  it('exits 2 with a pointer to help for no command, an unknown command or an unknown flag', async () => {
    const none = await ferry([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^Usage: ferry/);

    const unknown = await ferry(['launch']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe("ferry: unknown command 'launch'\nRun 'ferry --help' for usage.\n");

    const flag = await ferry(['status', '--verbose']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toBe("ferry: unknown option '--verbose'\nRun 'ferry status --help' for usage.\n");

    const missing = await ferry(['serve']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('missing <spicepod.yaml>');

    const address = await ferry(['serve', 'x.yaml', '--http', 'nowhere']);
    expect(address.code).toBe(2);
    expect(address.stderr).toContain(
      "--http must be HOST:PORT, :PORT or PORT (like 127.0.0.1:8090), got 'nowhere'",
    );

    const source = await ferry(['publish', '--location', 'file:///tmp/x/', '--dataset', 'd']);
    expect(source.code).toBe(2);
    expect(source.stderr).toContain('pass exactly one of --sql QUERY or --file DB');

    const engine = await ferry([
      'publish',
      '--location',
      'file:///tmp/x/',
      '--dataset',
      'd',
      '--engine',
      'cayenne',
      '--sql',
      'SELECT 1',
    ]);
    expect(engine.code).toBe(2);
    expect(engine.stderr).toContain("--engine must be one of duckdb, sqlite, got 'cayenne'");

    // The fix names the flag, not the spicepod key (allow_http) the store's message uses.
    const http = await ferry([
      'publish',
      '--location',
      's3://bucket/prefix/',
      '--dataset',
      'd',
      '--sql',
      'SELECT 1 AS a',
      '--s3-endpoint',
      'http://127.0.0.1:9000',
    ]);
    expect([http.code, http.stderr]).toStrictEqual([
      2,
      "ferry: --s3-endpoint 'http://127.0.0.1:9000' is plain http; pass --allow-http to accept an unencrypted connection, or use https\n" +
        "Run 'ferry publish --help' for usage.\n",
    ]);
  });

  it('says what is wrong with an address: a port out of range, a port that is no number; a bare port is an address', async () => {
    const range = await ferry(['serve', 'x.yaml', '--http', '99999']);
    expect(range.code).toBe(2);
    expect(range.stderr).toBe(
      "ferry: --http '99999': port 99999 is out of range; give a port from 0 to 65535 (0 picks a free one)\n" +
        "Run 'ferry serve --help' for usage.\n",
    );
    // One address for both servers: said as such, not as an --http address in use (exit 1, after starting).
    const same = await ferry(['serve', 'x.yaml', '--http', '127.0.0.1:18197', '--flight', '18197']);
    expect([same.code, same.stderr]).toStrictEqual([
      2,
      'ferry: --http and --flight are both 127.0.0.1:18197; give Arrow Flight another port (default 50051)\n' +
        "Run 'ferry serve --help' for usage.\n",
    ]);
    const flight = await ferry(['serve', 'x.yaml', '--flight', '127.0.0.1:70000']);
    expect(flight.stderr).toContain("--flight '127.0.0.1:70000': port 70000 is out of range");
    const word = await ferry(['serve', 'x.yaml', '--http', 'localhost:http']);
    expect(word.code).toBe(2);
    expect(word.stderr).toContain("--http 'localhost:http': port 'http' is not a number");
    // A bare port is the documented short form: status reaches 127.0.0.1 on it.
    const port = await closedPort();
    const bare = await ferry(['status', '--http', String(port)]);
    expect(bare.code).toBe(1);
    expect(bare.stderr).toContain(`Request to http://127.0.0.1:${port}/v1/datasets failed`);
  });

  it('refuses an argument a command does not take with exit 2, before anything starts', async () => {
    for (const [args, help] of [
      [['quickstart', 'now'], 'quickstart'],
      [['quickstart', '--duration', '40', 'extra'], 'quickstart'],
      [['status', 'orders'], 'status'],
      [['validate', 'a.yaml', 'b.yaml'], 'validate'],
    ] as const) {
      const result = await ferry(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(
        new RegExp(`^ferry: unexpected argument '[^']+'\nRun 'ferry ${help} --help' for usage.\n$`),
      );
    }
  });

  it('reads a -- before the arguments (npm and pnpm users type it) as if it were not there', async () => {
    const afterCommand = await ferry(['quickstart', '--', '--help']);
    expect(afterCommand.code).toBe(0);
    expect(afterCommand.stdout).toMatch(/^Usage: ferry quickstart/);
    const first = await ferry(['--', 'validate', '--help']);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^Usage: ferry validate/);
    const topic = await ferry(['help', 'serve']);
    expect(topic.stdout).toMatch(/^Usage: ferry serve/);
    const stray = await ferry(['--help', 'serve', 'now']);
    expect(stray.code).toBe(2);
    expect(stray.stderr).toBe("ferry: unexpected argument 'now'\nRun 'ferry --help' for usage.\n");
    const strict = await ferry(['quickstart', '--', '--duration', '40', '--bogus']);
    expect(strict.code).toBe(2);
    expect(strict.stderr).toContain("unknown option '--bogus'");
  });

  it('exits 1 with a message when status cannot reach a server', async () => {
    const port = await closedPort();
    const result = await ferry(['status', '--http', `127.0.0.1:${port}`]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `ferry: error: Request to http://127.0.0.1:${port}/v1/datasets failed: ECONNREFUSED`,
    );
  });

  it("reaches a server on a port fetch() refuses as a 'bad port' (10080, 6000, 6665, …)", async () => {
    // WHATWG fetch blocks a list of ports for browsers; 'ferry serve --http 10080' serves on it.
    const server = createHttpServer((request, response) => {
      response.writeHead(request.url === '/v1/datasets' ? 200 : 404, { 'content-type': 'application/json' });
      response.end('[]');
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(10080, '127.0.0.1', resolve);
    });
    try {
      const result = await ferry(['status', '--http', '10080']);
      expect([result.code, result.stdout, result.stderr]).toStrictEqual([0, 'No datasets.\n', '']);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('says where AWS credentials come from when there are none', async () => {
    // No key, no profile, no instance role: the SDK's chain finds nothing before any request.
    const result = await ferry(
      [
        'publish',
        '--location',
        's3://bucket/prefix/',
        '--dataset',
        'd',
        '--sql',
        'SELECT 1 AS a',
        '--s3-endpoint',
        'http://127.0.0.1:9',
        '--allow-http',
      ],
      {
        env: {
          AWS_ACCESS_KEY_ID: undefined,
          AWS_SECRET_ACCESS_KEY: undefined,
          AWS_SESSION_TOKEN: undefined,
          AWS_PROFILE: undefined,
          AWS_WEB_IDENTITY_TOKEN_FILE: undefined,
          AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: undefined,
          AWS_CONTAINER_CREDENTIALS_FULL_URI: undefined,
          AWS_SHARED_CREDENTIALS_FILE: join(tmpdir(), `ferry-no-credentials-${process.pid}`),
          AWS_CONFIG_FILE: join(tmpdir(), `ferry-no-config-${process.pid}`),
          AWS_EC2_METADATA_DISABLED: 'true',
        },
      },
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'ferry: error: Store get of s3://bucket/prefix/metadata.json failed (CredentialsProviderError: Could not load credentials from any providers); no AWS credentials were found: give them in the spicepod (s3_key and s3_secret) or on the command line (--s3-key, --s3-secret), or to the process (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or an instance or pod role).',
    );
  });

  it('exits 1 when --api-key-env names an unset variable', async () => {
    const result = await ferry(['status', '--api-key-env', 'FERRY_TEST_UNSET_KEY'], {
      env: { FERRY_TEST_UNSET_KEY: '' },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'Environment variable FERRY_TEST_UNSET_KEY (named by --api-key-env) is not set or empty',
    );
  });
});

describe('ferry validate', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ferry-validate-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function pod(name: string, text: string): Promise<string> {
    const path = join(dir, name);
    await writeFile(path, text);
    return path;
  }

  it('prints ok: N datasets and exits 0 for a good spicepod', async () => {
    const path = await pod(
      'good.yaml',
      `version: v1
kind: Spicepod
name: good
snapshots:
  location: file:///srv/snapshots/
datasets:
  - from: postgres:public.orders
    name: orders
    acceleration: { engine: duckdb, mode: file, refresh_mode: snapshot, snapshots: enabled }
  - from: postgres:public.users
    name: users
    acceleration: { engine: sqlite, mode: file, refresh_mode: snapshot, snapshots: bootstrap_only }
`,
    );
    const result = await ferry(['validate', path]);
    expect(result.stdout).toBe('ok: 2 datasets\n');
    expect(result.code).toBe(0);
  });

  it('prints every error with its key path and exits 1', async () => {
    const path = await pod(
      'broken.yaml',
      `version: v1
kind: Spicepod
name: broken
snapshots:
  location: file:///srv/snapshots/
datasets:
  - from: postgres:public.orders
    name: orders
    acceleration:
      engine: cayenne
      mode: file
      refresh_mode: snapshot
      snapshots: enabled
  - from: postgres:public.users
    name: users
    acceleration:
      engine: sqlite
      mode: file
      refresh_mode: snapshot
      refresh_check_intervall: 10s
      snapshots: enabled
`,
    );
    const result = await ferry(['validate', path]);
    expect(result.code).toBe(1);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toContain(
      `error: ${path}: datasets[0].acceleration.engine: engine 'cayenne' is not supported by this runtime; use duckdb, sqlite or turso`,
    );
    expect(
      lines.some((line) =>
        line.startsWith(
          `error: ${path}: datasets[1].acceleration.refresh_check_intervall: unknown key; did you mean 'refresh_check_interval'?`,
        ),
      ),
    ).toBe(true);
    expect(lines.at(-1)).toMatch(/^invalid: 2 errors, \d+ warnings?$/);
  });

  it('reports every typo of a dataset in one run, each with the key or value most likely meant', async () => {
    const path = await pod(
      'typos.yaml',
      `version: v1
kind: Spicepod
name: typos
snapshots:
  location: file:///srv/snapshots/
datasets:
  - from: postgres:public.orders
    name: orders
    acceleration:
      engine: duckdb
      mode: memory
      refresh_mod: snapshot
      snapshots: enabeld
`,
    );
    const result = await ferry(['validate', path]);
    expect(result.code).toBe(1);
    expect(result.stdout.trimEnd().split('\n')).toEqual([
      `error: ${path}: datasets[0].acceleration.refresh_mod: unknown key; did you mean 'refresh_mode'?`,
      `error: ${path}: datasets[0].acceleration.mode: refresh_mode: snapshot requires mode: file, not 'memory'; set mode: file`,
      `error: ${path}: datasets[0].acceleration.snapshots: refresh_mode: snapshot requires acceleration.snapshots: enabled or bootstrap_only, not 'enabeld'; did you mean 'enabled'?`,
      'invalid: 3 errors, 0 warnings',
    ]);
  });

  it('reports pod-level errors (unknown top-level key, missing name) and unreadable files', async () => {
    const path = await pod('pod.yaml', 'version: v1\nkind: Spicepod\ndatasetz: []\n');
    const result = await ferry(['validate', path]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`error: ${path}: datasetz: unknown key; did you mean 'datasets'?`);
    expect(result.stdout).toContain(`error: ${path}: name: missing; add a name for the Spicepod`);

    const missing = await ferry(['validate', join(dir, 'absent.yaml')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`Cannot read spicepod '${join(dir, 'absent.yaml')}' (ENOENT`);

    // Why it cannot be read, as serve says it: a folder given for the file.
    const folder = await ferry(['validate', dir]);
    expect(folder.code).toBe(1);
    expect(folder.stderr).toBe(
      `ferry: error: Cannot read spicepod '${dir}' (EISDIR: illegal operation on a directory, read); pass the path of a spicepod.yaml.\n`,
    );
  });
});
