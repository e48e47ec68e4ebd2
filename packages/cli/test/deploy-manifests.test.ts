/**
 * The manifests of docs/deploy.md are real: the systemd unit (INI-like text) and the Kubernetes
 * documents (YAML) are parsed out of the page; their `ferry` arguments go through the CLI's own
 * parser and option definitions (an unknown or misspelt flag fails); their ports and probe paths
 * are checked against a `ferry serve` started with exactly their arguments (only the spicepod, the
 * data directory and the port are swapped for the test's), which must also stop with exit 0 on the
 * manifest's stop signal within the manifest's grace period.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadSpicepod } from '@ferry/core';
import { spicepodYaml } from '@ferry/test-support';
import { publishSnapshot } from '@ferry/writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { parseCommandLine, parseListenAddress } from '../src/args.js';
import { COMMANDS } from '../src/index.js';
import { startFerry } from './helpers.js';

const DEPLOY_MD = fileURLToPath(new URL('../../../docs/deploy.md', import.meta.url));
const CLI_PACKAGE = fileURLToPath(new URL('../package.json', import.meta.url));

/** The fenced block whose info string is `<lang> <name>`. */
function block(markdown: string, lang: string, name: string): string {
  const match = new RegExp(`^\`\`\`${lang} ${name.replace(/\./g, '\\.')}\\n([\\s\\S]*?)^\`\`\`$`, 'm').exec(
    markdown,
  );
  if (match?.[1] === undefined) throw new Error(`docs/deploy.md has no \`\`\`${lang} ${name} block`);
  return match[1];
}

/** systemd's unit syntax, as far as the unit uses it: `[Section]`, `Key=value` (repeatable), `#` comments. */
function parseUnit(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const section = /^\[([A-Za-z]+)\]$/.exec(line);
    if (section !== null) {
      current = new Map();
      sections.set(section[1] ?? '', current);
      continue;
    }
    const pair = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (pair === null || current === undefined) throw new Error(`not a unit line: ${raw}`);
    const [, key = '', value = ''] = pair;
    current.set(key, [...(current.get(key) ?? []), value]);
  }
  return sections;
}

function command(name: string) {
  const found = COMMANDS.find((candidate) => candidate.name === name);
  if (found === undefined) throw new Error(`ferry has no command '${name}'`);
  return found;
}

/**
 * `argv` after the executable, parsed by the CLI's own parser with the command's own options: an
 * unknown flag, a flag without its value or a value-less flag given one fails here as in `ferry`.
 */
function parseFerryArgs(argv: readonly string[]) {
  const [name, ...rest] = argv;
  const spec = command(name ?? '');
  const parsed = parseCommandLine(spec.name, rest, spec.options);
  return { command: spec, parsed };
}

/** `argv` with the values of `--flag` replaced, for running a manifest's command in the test. */
function withValues(argv: readonly string[], values: Readonly<Record<string, string>>): string[] {
  const out = [...argv];
  for (const [flag, value] of Object.entries(values)) {
    const index = out.indexOf(flag);
    if (index < 0) throw new Error(`the manifest passes no ${flag}`);
    out[index + 1] = value;
  }
  return out;
}

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function at(value: unknown, ...path: (string | number)[]): unknown {
  let node = value;
  for (const key of path) {
    if (Array.isArray(node) && typeof key === 'number') node = node[key];
    else if (isMap(node) && typeof key === 'string') node = node[key];
    else return undefined;
  }
  return node;
}

let markdown: string;
let dir: string;
let pod: string;

beforeAll(async () => {
  markdown = await readFile(DEPLOY_MD, 'utf8');
  dir = await mkdtemp(join(tmpdir(), 'ferry-deploy-'));
  const store = join(dir, 'store');
  await mkdir(store);
  const location = pathToFileURL(`${store}/`).href;
  pod = join(dir, 'spicepod.yaml');
  await writeFile(
    pod,
    spicepodYaml({
      name: 'deploy',
      location,
      datasets: [{ name: 'orders', engine: 'duckdb', interval: '200ms' }],
    }),
  );
  await publishSnapshot({
    dataset: 'orders',
    engine: 'duckdb',
    location,
    source: { sql: 'SELECT 1::BIGINT AS id' },
  });
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * Runs `ferry <argv>` as the manifest does, checks that `probes` answer as named once the dataset
 * serves, then stops it with `signal` and expects exit 0 within `graceMs`.
 */
async function runAsManifest(
  argv: readonly string[],
  options: {
    readonly env?: Record<string, string>;
    readonly probes: readonly {
      readonly path: string;
      readonly status: number;
      readonly headers?: Record<string, string>;
    }[];
    readonly signal: NodeJS.Signals;
    readonly graceMs: number;
  },
): Promise<void> {
  const serve = startFerry(argv, { ...(options.env === undefined ? {} : { env: options.env }) });
  try {
    const [, base] = await serve.waitForStdout(/^Listening on (http:\/\/[^\s]+)$/m);
    const url = (base ?? '').replace('0.0.0.0', '127.0.0.1');
    for (const probe of options.probes) {
      await expect
        .poll(async () => (await fetch(`${url}${probe.path}`, { headers: probe.headers ?? {} })).status, {
          timeout: 30_000,
          interval: 100,
        })
        .toBe(probe.status);
    }
    const stopping = Date.now();
    serve.child.kill(options.signal);
    const finished = await serve.exited;
    expect(finished.code).toBe(0);
    expect(Date.now() - stopping).toBeLessThan(options.graceMs);
  } finally {
    if (serve.child.exitCode === null) serve.child.kill('SIGKILL');
  }
}

describe('docs/deploy.md: the systemd unit', () => {
  it('starts the CLI binary with flags ferry serve defines, and stops cleanly on its KillSignal', async () => {
    const unit = parseUnit(block(markdown, 'ini', 'ferry-reader.service'));
    const service = unit.get('Service');
    expect([...unit.keys()]).toStrictEqual(['Unit', 'Service', 'Install']);
    const [execStart, ...more] = service?.get('ExecStart') ?? [];
    expect(more).toStrictEqual([]);
    const words = (execStart ?? '').split(/\s+/);
    const bin = (JSON.parse(await readFile(CLI_PACKAGE, 'utf8')) as { bin: { ferry: string } }).bin.ferry;
    expect(words[0]).toMatch(/^\/\S*node$/);
    expect(words[1]?.endsWith(`packages/cli/${bin.replace(/^\.\//, '')}`)).toBe(true);
    const argv = words.slice(2);
    const { command: serve, parsed } = parseFerryArgs(argv);
    expect(serve.name).toBe('serve');
    expect(parsed.positionals).toStrictEqual(['/etc/ferry/spicepod.yaml']);
    const http = parseListenAddress('serve', String(parsed.values.http));
    expect(http).toStrictEqual({ host: '0.0.0.0', port: 8090 });
    expect(parseListenAddress('serve', String(parsed.values.flight))).toStrictEqual({
      host: '0.0.0.0',
      port: 50051,
    });
    expect(parsed.values['data-dir']).toBe('/var/lib/ferry/data');
    expect(
      String(parsed.values['data-dir']).startsWith(`/var/lib/${service?.get('StateDirectory')?.[0]}/`),
    ).toBe(true);
    const keyEnv = String(parsed.values['api-key-env']);
    const [killSignal] = service?.get('KillSignal') ?? [];
    const timeoutS = Number(service?.get('TimeoutStopSec')?.[0]);
    expect(['SIGTERM', 'SIGINT']).toContain(killSignal);
    expect(timeoutS).toBeGreaterThan(5); // the server's own in-flight grace

    await runAsManifest(
      withValues(argv, {
        '--http': '0.0.0.0:0',
        '--flight': '0.0.0.0:0',
        '--data-dir': join(dir, 'unit-data'),
      }).map((word) => (word === '/etc/ferry/spicepod.yaml' ? pod : word)),
      {
        env: { [keyEnv]: 'unit-key' },
        probes: [
          { path: '/health', status: 200 },
          // Open without the key, as in Spice; the API is not.
          { path: '/v1/ready', status: 200 },
          { path: '/v1/datasets', status: 401 },
          { path: '/v1/datasets', status: 200, headers: { authorization: 'Bearer unit-key' } },
        ],
        signal: killSignal as NodeJS.Signals,
        graceMs: timeoutS * 1000,
      },
    );
  });
});

describe('docs/deploy.md: the Kubernetes manifests', () => {
  const documents = () =>
    parseAllDocuments(block(markdown, 'yaml', 'ferry-reader.yaml')).map((document) => {
      expect(document.errors).toStrictEqual([]);
      return document.toJS() as Record<string, unknown>;
    });
  const kind = (name: string) => {
    const found = documents().find((document) => document.kind === name);
    if (found === undefined) throw new Error(`no ${name} in ferry-reader.yaml`);
    return found;
  };

  it('the spicepod in the ConfigMap is valid, with Ferry per-reader queues', () => {
    const configMap = kind('ConfigMap');
    const text = String(at(configMap, 'data', 'spicepod.yaml'));
    const load = loadSpicepod(text, { file: 'spicepod.yaml', env: {} });
    expect(load.errors).toStrictEqual([]);
    expect(load.warnings).toStrictEqual([]);
    expect(load.config?.notifications?.queue.topic?.arn).toBe(
      'arn:aws:sns:eu-west-1:123456789012:snapshot-events',
    );
  });

  it('the Deployment runs the CLI binary with ferry serve flags; its port, probes, volumes and stop are real', async () => {
    const deployment = kind('Deployment');
    const spec = at(deployment, 'spec', 'template', 'spec');
    const container = at(spec, 'containers', 0);
    const [node, main] = at(container, 'command') as string[];
    expect(node).toBe('node');
    const bin = (JSON.parse(await readFile(CLI_PACKAGE, 'utf8')) as { bin: { ferry: string } }).bin.ferry;
    expect(main?.endsWith(`packages/cli/${bin.replace(/^\.\//, '')}`)).toBe(true);
    const argv = (at(container, 'args') as unknown[]).map(String);
    const { command: serve, parsed } = parseFerryArgs(argv);
    expect(serve.name).toBe('serve');

    // The --http port is the container port the probes and the Service name.
    const http = parseListenAddress('serve', String(parsed.values.http));
    expect(http.host).toBe('0.0.0.0');
    const ports = at(container, 'ports') as { name: string; containerPort: number }[];
    const named = new Map(ports.map((port) => [port.name, port.containerPort]));
    const probePort = (probe: string) => {
      const port = at(container, probe, 'httpGet', 'port');
      return typeof port === 'number' ? port : named.get(String(port));
    };
    expect(probePort('readinessProbe')).toBe(http.port);
    expect(probePort('livenessProbe')).toBe(http.port);
    expect(named.get(String(at(kind('Service'), 'spec', 'ports', 0, 'targetPort')))).toBe(http.port);
    // The --flight port is the container port the Service's second port names.
    const flight = parseListenAddress('serve', String(parsed.values.flight));
    expect(flight.host).toBe('0.0.0.0');
    expect(named.get(String(at(kind('Service'), 'spec', 'ports', 1, 'targetPort')))).toBe(flight.port);
    const readiness = String(at(container, 'readinessProbe', 'httpGet', 'path'));
    const liveness = String(at(container, 'livenessProbe', 'httpGet', 'path'));
    expect([readiness, liveness]).toStrictEqual(['/v1/ready', '/health']);
    // No API key: the probes cannot send one.
    expect(parsed.values['api-key-env']).toBeUndefined();

    // The spicepod and the data directory are the mounted volumes; the data is node-local.
    const mounts = new Map(
      (at(container, 'volumeMounts') as { name: string; mountPath: string }[]).map((mount) => [
        mount.name,
        mount.mountPath,
      ]),
    );
    const volumes = new Map(
      (at(spec, 'volumes') as { name: string; [key: string]: unknown }[]).map((volume) => [
        volume.name,
        volume,
      ]),
    );
    const [spicepodPath] = parsed.positionals;
    const configVolume = [...volumes.values()].find((volume) => isMap(volume.configMap));
    expect(spicepodPath).toBe(`${mounts.get(configVolume?.name ?? '')}/spicepod.yaml`);
    expect(at(configVolume, 'configMap', 'name')).toBe(at(kind('ConfigMap'), 'metadata', 'name'));
    const dataDir = String(parsed.values['data-dir']);
    const dataVolume = [...mounts].find(([, path]) => path === dataDir)?.[0];
    expect(isMap(volumes.get(dataVolume ?? '')?.emptyDir)).toBe(true);

    const graceS = Number(at(spec, 'terminationGracePeriodSeconds'));
    const preStopS = Number(at(container, 'lifecycle', 'preStop', 'sleep', 'seconds'));
    expect(graceS).toBeGreaterThan(preStopS + 5);

    await runAsManifest(
      withValues(argv, {
        '--http': '0.0.0.0:0',
        '--flight': '0.0.0.0:0',
        '--data-dir': join(dir, 'k8s-data'),
      }).map((word) => (word === spicepodPath ? pod : word)),
      {
        probes: [
          { path: liveness, status: 200 },
          { path: readiness, status: 200 },
        ],
        signal: 'SIGTERM', // what the kubelet sends
        graceMs: (graceS - preStopS) * 1000,
      },
    );
  });

  it('the gc CronJob runs ferry fleet gc with its flags, on the spicepod topic', () => {
    const cronJob = kind('CronJob');
    const container = at(cronJob, 'spec', 'jobTemplate', 'spec', 'template', 'spec', 'containers', 0);
    expect(at(container, 'command')).toStrictEqual(
      at(kind('Deployment'), 'spec', 'template', 'spec', 'containers', 0, 'command'),
    );
    const { command: fleet, parsed } = parseFerryArgs((at(container, 'args') as unknown[]).map(String));
    expect(fleet.name).toBe('fleet');
    expect(parsed.positionals).toStrictEqual(['gc']);
    const pod = loadSpicepod(String(at(kind('ConfigMap'), 'data', 'spicepod.yaml')), {
      file: 'spicepod.yaml',
    });
    expect(parsed.values.topic).toBe(pod.config?.snapshots?.topicArn);
  });

  it('a misspelt flag would fail these checks', () => {
    expect(() => parseFerryArgs(['serve', 'pod.yaml', '--data-directory', '/x'])).toThrow(/unknown option/);
    expect(() => parseFerryArgs(['fleet', 'gc', '--topic'])).toThrow(/needs a value/);
  });
});
