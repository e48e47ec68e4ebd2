import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  type DatasetConfig,
  type S3Settings,
  type SpicepodConfig,
} from '../src/config/index.js';
import { loadSpicepod, throwIfFatal, throwIfInvalid } from '../src/config/spicepod.js';
import { FerryError } from '../src/errors.js';

const fixture = (name: string): string =>
  readFileSync(new URL(`./fixtures/config/${name}`, import.meta.url), 'utf8');

describe('loadSpicepod: a real-looking Spice reader pod with both dataset forms', () => {
  const load = loadSpicepod(fixture('spice-reader.yaml'), {
    file: 'spicepod.yaml',
    env: { SNAPSHOT_KEY: 'AKIAEXAMPLE', SNAPSHOT_SECRET: 'secret-example' },
  });
  const podS3: S3Settings = {
    region: 'eu-west-1',
    auth: 'key',
    credentials: { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'secret-example' },
    allowHttp: false,
    clientTimeoutMs: 45_000,
  };
  const queue = {
    url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/edge-replica-1',
    region: 'eu-west-1',
  };

  it('has no errors or warnings', () => {
    expect(load.errors).toStrictEqual([]);
    expect(load.warnings).toStrictEqual([]);
    expect(load.fatal).toBe(false);
  });

  it('types the pod, recording but ignoring other Spice top-level keys', () => {
    const expected: SpicepodConfig = {
      file: 'spicepod.yaml',
      version: 'v1',
      kind: 'Spicepod',
      name: 'edge-replica',
      snapshots: {
        enabled: true,
        location: 's3://acme-snapshots/replicas/',
        bootstrapOnFailure: 'retry',
        s3: podS3,
        queueUrl: queue.url,
      },
      notifications: { queue, location: 's3://acme-snapshots/replicas/', s3: podS3, datasets: ['orders'] },
      resultsCache: {
        enabled: false,
        maxSizeBytes: 128 * 2 ** 20,
        itemTtlMs: 1_000,
        configuredBy: 'runtime.caching.sql_results',
      },
      taskHistory: {
        enabled: true,
        capturedOutput: 'none',
        retentionPeriodMs: 8 * 3_600_000,
        retentionCheckIntervalMs: 15 * 60_000,
      },
      readyState: 'on_load',
      views: [],
      secretStores: [{ name: 'env', from: 'env' }],
      // What messages and log lines show in place of each resolved secret.
      secretReferences: [
        { value: 'AKIAEXAMPLE', reference: `\${secrets:SNAPSHOT_KEY}` },
        { value: 'secret-example', reference: `\${secrets:SNAPSHOT_SECRET}` },
      ],
      ignoredKeys: ['metadata'],
      ignoredRuntimeKeys: [],
    };
    expect(load.config).toStrictEqual(expected);
  });

  it('types both datasets', () => {
    const expected: DatasetConfig[] = [
      {
        name: 'orders',
        index: 0,
        form: 'refresh_mode',
        from: 'postgres:public.orders',
        engine: 'duckdb',
        fileEngine: 'duckdb',
        location: 's3://acme-snapshots/replicas/',
        refreshCheckIntervalMs: 600_000,
        bootstrapOnFailure: 'retry',
        snapshotsMode: 'bootstrap_only',
        liveFile: '/nvme/orders.duckdb',
        s3: podS3,
        queue,
      },
      {
        name: 'partner_users',
        index: 1,
        form: 'file_format',
        from: 's3://partner-bucket/published/',
        engine: undefined,
        fileEngine: undefined,
        location: 's3://partner-bucket/published/',
        refreshCheckIntervalMs: 30_000,
        bootstrapOnFailure: 'warn',
        snapshotsMode: 'bootstrap_only',
        s3: { region: 'us-west-2', endpoint: 'http://127.0.0.1:9000', auth: 'iam_role', allowHttp: true },
      },
    ];
    expect(load.datasets).toStrictEqual(expected);
  });
});

describe('loadSpicepod: the fixture store as a spicepod', () => {
  const metadata = JSON.parse(
    readFileSync(new URL('../../test-support/fixtures/spice-store/metadata.json', import.meta.url), 'utf8'),
  ) as Record<string, unknown> & { location: string };
  const load = loadSpicepod(fixture('fixture-store.yaml'), { file: 'fixture-store.yaml' });
  const s3: S3Settings = {
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:4566',
    auth: 'key',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    allowHttp: true,
  };

  it('loads orders (duckdb) and users (sqlite) at the store location', () => {
    expect(load.errors).toStrictEqual([]);
    expect(load.datasets).toStrictEqual([
      {
        name: 'orders',
        index: 0,
        form: 'refresh_mode',
        from: 'postgres:public.orders',
        engine: 'duckdb',
        fileEngine: 'duckdb',
        location: 's3://example-bucket/snapshots/',
        refreshCheckIntervalMs: 60_000,
        bootstrapOnFailure: 'warn',
        snapshotsMode: 'enabled',
        liveFile: './data/orders.duckdb',
        s3,
      },
      {
        name: 'users',
        index: 1,
        form: 'refresh_mode',
        from: 'postgres:public.users',
        engine: 'sqlite',
        fileEngine: 'sqlite',
        location: 's3://example-bucket/snapshots/',
        refreshCheckIntervalMs: 500,
        bootstrapOnFailure: 'warn',
        snapshotsMode: 'bootstrap_only',
        s3,
      },
    ] satisfies DatasetConfig[]);
    expect(load.config?.notifications).toBeUndefined();
  });

  it('agrees with the store: same location, and each engine is the one metadata.json records', () => {
    for (const dataset of load.datasets) {
      expect(dataset.location).toBe(metadata.location);
      expect((metadata[dataset.name] as { engine: string }).engine).toBe(dataset.engine);
    }
  });
});

describe('loadSpicepod: results a caller relies on', () => {
  const pod = (datasets: string): string =>
    `version: v1\nkind: Spicepod\nname: p\nsnapshots:\n  location: file:///srv/snaps\ndatasets:\n${datasets}`;
  const good = (name: string): string =>
    `  - from: postgres:${name}\n    name: ${name}\n    acceleration: {engine: sqlite, mode: file, refresh_mode: snapshot, snapshots: enabled}\n`;

  it('turso: records the engine, reads the SQLite format, and takes turso_file as the live file', () => {
    const load = loadSpicepod(
      pod(
        '  - from: postgres:t\n    name: t\n    acceleration:\n      engine: turso\n      mode: file\n      refresh_mode: snapshot\n      snapshots: enabled\n      params: {turso_file: /data/t.turso}\n',
      ),
      { file: 'spicepod.yaml' },
    );
    expect(load.errors).toStrictEqual([]);
    expect(load.datasets[0]).toStrictEqual({
      name: 't',
      index: 0,
      form: 'refresh_mode',
      from: 'postgres:t',
      engine: 'turso',
      fileEngine: 'sqlite',
      location: 'file:///srv/snaps/',
      refreshCheckIntervalMs: 60_000,
      bootstrapOnFailure: 'warn',
      snapshotsMode: 'enabled',
      liveFile: '/data/t.turso',
    } satisfies DatasetConfig);
  });

  it('one bad dataset fails only itself; the others are served', () => {
    const load = loadSpicepod(
      pod(
        `${good('a')}  - from: postgres:b\n    name: b\n    acceleration: {engine: cayenne, mode: file, refresh_mode: snapshot, snapshots: enabled}\n${good('c')}`,
      ),
      { file: 'spicepod.yaml' },
    );
    expect(load.fatal).toBe(false);
    expect(load.datasets.map((d) => d.name)).toStrictEqual(['a', 'c']);
    expect(load.errors).toStrictEqual([
      {
        path: 'datasets[1].acceleration.engine',
        message:
          "spicepod.yaml: datasets[1].acceleration.engine: engine 'cayenne' is not supported by this runtime; use duckdb, sqlite or turso",
        dataset: 'b',
        fatal: false,
      },
    ]);
    expect(throwIfFatal(load)).toBe(load.config);
    expect(() => throwIfInvalid(load)).toThrow(ConfigError);
  });

  it('reports every error of every dataset, and a pod-level one makes the load fatal', () => {
    const load = loadSpicepod(
      'version: v1\nkind: Spicepod\nname: p\nsnapshots:\n  location: /srv/snaps\ndatasets:\n' +
        '  - from: postgres:a\n    name: a/b\n    acceleration: {engine: arrow, mode: memory, refresh_mode: snapshot, snapshots: enabled}\n',
      { file: 'pods/main.yaml' },
    );
    expect(load.fatal).toBe(true);
    expect(load.config).toBeUndefined();
    expect(load.datasets).toStrictEqual([]);
    expect(load.errors.map((e) => [e.message, e.fatal])).toStrictEqual([
      [
        "pods/main.yaml: snapshots.location: '/srv/snaps' has no scheme; use s3://bucket/prefix/ or file:///absolute/path/",
        true,
      ],
      [
        "pods/main.yaml: datasets[0].name: 'a/b' is not a safe dataset name; use up to 128 letters, digits and underscores",
        false,
      ],
      [
        "pods/main.yaml: datasets[0].acceleration.engine: engine 'arrow' cannot load snapshots (it is not a file engine); use duckdb, sqlite or turso",
        false,
      ],
      [
        "pods/main.yaml: datasets[0].acceleration.mode: refresh_mode: snapshot requires mode: file, not 'memory'; set mode: file",
        false,
      ],
    ]);

    let thrown: unknown;
    try {
      throwIfFatal(load);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect(thrown).toBeInstanceOf(FerryError);
    const error = thrown as ConfigError;
    expect(error.code).toBe('ERR_CONFIG');
    expect(error.issues).toBe(load.errors);
    expect(error.message).toBe(
      [
        'pods/main.yaml: 4 configuration errors; fix each of them:',
        ...load.errors.map((issue) => `  - ${issue.message}`),
      ].join('\n'),
    );
  });

  it('a single error is the ConfigError message itself', () => {
    const load = loadSpicepod('version: v1\nkind: Spicepod\n', { file: 'spicepod.yaml' });
    expect(() => throwIfFatal(load)).toThrow(
      new ConfigError('spicepod.yaml', [
        { path: 'name', message: 'spicepod.yaml: name: missing; add a name for the Spicepod', fatal: true },
      ]),
    );
    expect(() => throwIfFatal(load)).toThrow(/^spicepod\.yaml: name: missing; add a name for the Spicepod$/);
  });

  it('never puts a secret value in a message', () => {
    const load = loadSpicepod(
      'version: v1\nkind: Spicepod\nname: p\nsnapshots:\n  location: s3://bucket/p/\n  params:\n    s3_auth: iam_role\n    s3_key: AKIASECRETVALUE\n    s3_secret: topsecretvalue\n',
      { file: 'spicepod.yaml' },
    );
    expect(load.errors.length).toBe(2);
    for (const issue of load.errors) {
      expect(issue.message).not.toContain('AKIASECRETVALUE');
      expect(issue.message).not.toContain('topsecretvalue');
    }
  });
});
