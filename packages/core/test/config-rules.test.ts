import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadSpicepod } from '../src/config/spicepod.js';

/** A valid two-dataset pod that each case breaks in one way. */
interface Pod {
  [key: string]: unknown;
  snapshots: { [key: string]: unknown; params: Record<string, unknown> };
  datasets: Dataset[];
}
interface Dataset {
  [key: string]: unknown;
  params?: Record<string, unknown>;
  acceleration?: Record<string, unknown>;
}

function basePod(): Pod {
  return {
    version: 'v1',
    kind: 'Spicepod',
    name: 'rules',
    snapshots: { location: 's3://snapshot-bucket/prefix/', params: { s3_region: 'us-east-1' } },
    datasets: [
      {
        from: 'postgres:public.orders',
        name: 'orders',
        acceleration: {
          enabled: true,
          engine: 'duckdb',
          mode: 'file',
          refresh_mode: 'snapshot',
          snapshots: 'enabled',
          params: { duckdb_file: '/data/orders.duckdb' },
        },
      },
      {
        from: 'postgres:public.users',
        name: 'users',
        acceleration: {
          engine: 'sqlite',
          mode: 'file',
          refresh_mode: 'snapshot',
          snapshots: 'bootstrap_only',
        },
      },
    ],
  };
}

/** A `from: s3://… file_format: snapshot` dataset, appended as datasets[2]. */
function withPartner(pod: Pod, patch: Partial<Dataset> = {}): Dataset {
  const dataset: Dataset = {
    from: 's3://published-bucket/snaps/',
    name: 'partner',
    params: { file_format: 'snapshot', s3_region: 'us-west-2' },
    ...patch,
  };
  pod.datasets.push(dataset);
  return dataset;
}

/** `${store:name}`, Spice's secret reference syntax. */
function secretRef(store: string, name: string): string {
  return `\${${store}:${name}}`;
}

function dataset(pod: Pod, index: number): Dataset {
  const found = pod.datasets[index];
  if (found === undefined) throw new Error(`no datasets[${index}]`);
  return found;
}

function accel(pod: Pod, index = 0): Record<string, unknown> {
  const found = dataset(pod, index).acceleration;
  if (found === undefined) throw new Error(`datasets[${index}] has no acceleration`);
  return found;
}

interface Case {
  readonly name: string;
  readonly mutate: (pod: Pod) => void;
  readonly errors: readonly string[];
  /** Valid datasets after the load; default: `users` alone (datasets[0] broken), or none when fatal. */
  readonly valid?: readonly string[];
  readonly fatal?: boolean;
  readonly warnings?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
}

function run(cases: readonly Case[]): void {
  it.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const pod = basePod();
    c.mutate(pod);
    const load = loadSpicepod(stringify(pod), {
      file: 'spicepod.yaml',
      ...(c.env === undefined ? {} : { env: c.env }),
    });
    expect(load.errors.map((issue) => issue.message)).toStrictEqual(c.errors);
    expect(load.fatal).toBe(c.fatal ?? false);
    expect(load.errors.every((issue) => issue.fatal === (c.fatal ?? false) || issue.fatal === false)).toBe(
      true,
    );
    expect(load.datasets.map((d) => d.name)).toStrictEqual(c.valid ?? (c.fatal === true ? [] : ['users']));
    expect(load.warnings.map((issue) => issue.message)).toStrictEqual(c.warnings ?? []);
  });
}

describe('the base pod', () => {
  it('is valid', () => {
    const load = loadSpicepod(stringify(basePod()), { file: 'spicepod.yaml' });
    expect(load.errors).toStrictEqual([]);
    expect(load.datasets.map((d) => d.name)).toStrictEqual(['orders', 'users']);
  });
});

describe("Spice's DuckDB limits", () => {
  it('duckdb_memory_limit and duckdb_threads are read (in bytes and threads), without a warning', () => {
    const pod = basePod();
    accel(pod).params = { duckdb_memory_limit: '512MB', duckdb_threads: '2' };
    const load = loadSpicepod(stringify(pod), { file: 'spicepod.yaml' });
    expect([load.errors, load.warnings]).toStrictEqual([[], []]);
    expect(load.datasets[0]?.queryLimits).toStrictEqual({ memoryLimitBytes: 512_000_000, threads: 2 });
    expect(load.datasets[1]?.queryLimits).toBeUndefined();
    accel(pod).params = { duckdb_memory_limit: '1.5 GiB' };
    const binary = loadSpicepod(stringify(pod), { file: 'spicepod.yaml' });
    expect(binary.datasets[0]?.queryLimits).toStrictEqual({ memoryLimitBytes: 1.5 * 2 ** 30 });
  });
});

describe('ferry_max_staleness (Ferry only)', () => {
  it('a dataset param wins over the snapshots.params default, which every other dataset takes', () => {
    const pod = basePod();
    pod.snapshots.params.ferry_max_staleness = '5m';
    accel(pod).params = { ferry_max_staleness: '30s' };
    withPartner(pod, {
      params: { file_format: 'snapshot', s3_region: 'us-west-2', ferry_max_staleness: '1h' },
    });
    const load = loadSpicepod(stringify(pod), { file: 'spicepod.yaml' });
    expect([load.errors, load.warnings]).toStrictEqual([[], []]);
    expect(load.datasets.map((d) => [d.name, d.maxStalenessMs])).toStrictEqual([
      ['orders', 30_000],
      ['users', 300_000],
      ['partner', 3_600_000],
    ]);
  });

  it('absent everywhere: no bound', () => {
    const load = loadSpicepod(stringify(basePod()), { file: 'spicepod.yaml' });
    expect(load.datasets.map((d) => d.maxStalenessMs)).toStrictEqual([undefined, undefined]);
  });

  it("in a refresh_mode: snapshot dataset's own params (not acceleration.params) it is named as ignored, with where it goes", () => {
    const pod = basePod();
    (pod.datasets[0] as Record<string, unknown>).params = {
      ferry_max_staleness: '30s',
      ferry_retain_snapshots: 3,
      pg_host: 'db',
    };
    const load = loadSpicepod(stringify(pod), { file: 'spicepod.yaml' });
    expect(load.errors).toStrictEqual([]);
    expect(load.warnings.map((issue) => issue.message)).toStrictEqual(
      ['ferry_max_staleness', 'ferry_retain_snapshots'].map(
        (key) =>
          `spicepod.yaml: datasets[0].params.${key}: ignored here: a refresh_mode: snapshot dataset reads it from its acceleration.params; move it to datasets[0].acceleration.params.${key}`,
      ),
    );
    expect(load.datasets[0]?.maxStalenessMs).toBeUndefined();
  });

  run([
    {
      name: 'a dataset ferry_max_staleness that is not a duration',
      mutate: (pod) => {
        accel(pod).params = { ferry_max_staleness: 'soon' };
      },
      errors: [
        "spicepod.yaml: datasets[0].acceleration.params.ferry_max_staleness: 'soon' is not a duration; use a number with a unit (ms, s, m, h or d), such as 30s",
      ],
    },
    {
      name: 'a snapshots.params.ferry_max_staleness of zero',
      mutate: (pod) => {
        pod.snapshots.params.ferry_max_staleness = '0s';
      },
      errors: [
        "spicepod.yaml: snapshots.params.ferry_max_staleness: '0s' is zero; use a positive duration such as 30s",
      ],
      fatal: true,
    },
  ]);
});

describe('ferry_retain_snapshots (Ferry only)', () => {
  it('a dataset param wins over the snapshots.params default, which every other dataset takes', () => {
    const pod = basePod();
    pod.snapshots.params.ferry_retain_snapshots = 4;
    accel(pod).params = { ferry_retain_snapshots: '1' };
    withPartner(pod, {
      params: { file_format: 'snapshot', s3_region: 'us-west-2', ferry_retain_snapshots: 8 },
    });
    const load = loadSpicepod(stringify(pod), { file: 'spicepod.yaml' });
    expect([load.errors, load.warnings]).toStrictEqual([[], []]);
    expect(load.datasets.map((d) => [d.name, d.retainSnapshots])).toStrictEqual([
      ['orders', 1],
      ['users', 4],
      ['partner', 8],
    ]);
  });

  it('absent everywhere: the default (left to the runtime: the current snapshot and the one before)', () => {
    const load = loadSpicepod(stringify(basePod()), { file: 'spicepod.yaml' });
    expect(load.datasets.map((d) => d.retainSnapshots)).toStrictEqual([undefined, undefined]);
  });

  run([
    {
      name: 'a dataset ferry_retain_snapshots of zero',
      mutate: (pod) => {
        accel(pod).params = { ferry_retain_snapshots: 0 };
      },
      errors: [
        "spicepod.yaml: datasets[0].acceleration.params.ferry_retain_snapshots: '0' is not a number of snapshots to hold; write a whole number from 1 (the current one only) to 64 (default 2: the current one and the one before)",
      ],
    },
    {
      name: 'a snapshots.params.ferry_retain_snapshots that is not a count',
      mutate: (pod) => {
        pod.snapshots.params.ferry_retain_snapshots = 'all';
      },
      errors: [
        "spicepod.yaml: snapshots.params.ferry_retain_snapshots: 'all' is not a number of snapshots to hold; write a whole number from 1 (the current one only) to 64 (default 2: the current one and the one before)",
      ],
      fatal: true,
    },
    {
      name: 'a file_format dataset ferry_retain_snapshots past the most',
      mutate: (pod) => {
        withPartner(pod, {
          params: { file_format: 'snapshot', s3_region: 'us-west-2', ferry_retain_snapshots: 65 },
        });
      },
      errors: [
        "spicepod.yaml: datasets[2].params.ferry_retain_snapshots: '65' is not a number of snapshots to hold; write a whole number from 1 (the current one only) to 64 (default 2: the current one and the one before)",
      ],
      valid: ['orders', 'users'],
    },
  ]);
});

describe('ferry_retain_disk_budget (Ferry only)', () => {
  it('a dataset param wins over the snapshots.params default, which every other dataset takes', () => {
    const pod = basePod();
    pod.snapshots.params.ferry_retain_disk_budget = '20GiB';
    accel(pod).params = { ferry_retain_disk_budget: '512MB' };
    withPartner(pod, {
      params: { file_format: 'snapshot', s3_region: 'us-west-2', ferry_retain_disk_budget: 0 },
    });
    const load = loadSpicepod(stringify(pod), { file: 'spicepod.yaml' });
    expect([load.errors, load.warnings]).toStrictEqual([[], []]);
    expect(load.datasets.map((d) => [d.name, d.retainDiskBudgetBytes])).toStrictEqual([
      ['orders', 512e6],
      ['users', 20 * 2 ** 30],
      ['partner', 0],
    ]);
  });

  it('absent everywhere: no budget (the count alone)', () => {
    const load = loadSpicepod(stringify(basePod()), { file: 'spicepod.yaml' });
    expect(load.datasets.map((d) => d.retainDiskBudgetBytes)).toStrictEqual([undefined, undefined]);
  });

  run([
    {
      name: 'a dataset ferry_retain_disk_budget that is not a size',
      mutate: (pod) => {
        accel(pod).params = { ferry_retain_disk_budget: '20 gigs' };
      },
      errors: [
        "spicepod.yaml: datasets[0].acceleration.params.ferry_retain_disk_budget: '20 gigs' is not a disk size; write it like 20GiB or 512MB (the disk earlier snapshots held for pinned reads may take)",
      ],
    },
    {
      name: 'a negative snapshots.params.ferry_retain_disk_budget',
      mutate: (pod) => {
        pod.snapshots.params.ferry_retain_disk_budget = -1;
      },
      errors: [
        "spicepod.yaml: snapshots.params.ferry_retain_disk_budget: '-1' is not a disk size; write it like 20GiB or 512MB (the disk earlier snapshots held for pinned reads may take)",
      ],
      fatal: true,
    },
  ]);
});

describe('refresh_mode: snapshot requirements', () => {
  run([
    {
      name: 'acceleration.snapshots missing',
      mutate: (pod) => {
        delete accel(pod).snapshots;
      },
      errors: [
        'spicepod.yaml: datasets[0].acceleration.snapshots: missing; refresh_mode: snapshot requires acceleration.snapshots: enabled or bootstrap_only; add snapshots: bootstrap_only',
      ],
    },
    {
      name: 'acceleration.snapshots: disabled',
      mutate: (pod) => {
        accel(pod).snapshots = 'disabled';
      },
      errors: [
        "spicepod.yaml: datasets[0].acceleration.snapshots: refresh_mode: snapshot requires acceleration.snapshots: enabled or bootstrap_only, not 'disabled'; set snapshots: enabled (load each newer snapshot) or bootstrap_only (load one at start)",
      ],
    },
    {
      name: 'acceleration.snapshots: create_only',
      mutate: (pod) => {
        accel(pod).snapshots = 'create_only';
      },
      errors: [
        "spicepod.yaml: datasets[0].acceleration.snapshots: refresh_mode: snapshot requires acceleration.snapshots: enabled or bootstrap_only, not 'create_only'; set snapshots: enabled (load each newer snapshot) or bootstrap_only (load one at start)",
      ],
    },
    {
      name: 'engine cayenne',
      mutate: (pod) => {
        accel(pod).engine = 'cayenne';
        delete accel(pod).params;
      },
      errors: [
        "spicepod.yaml: datasets[0].acceleration.engine: engine 'cayenne' is not supported by this runtime; use duckdb, sqlite or turso",
      ],
    },
    {
      name: 'engine arrow',
      mutate: (pod) => {
        accel(pod).engine = 'arrow';
        delete accel(pod).params;
      },
      errors: [
        "spicepod.yaml: datasets[0].acceleration.engine: engine 'arrow' cannot load snapshots (it is not a file engine); use duckdb, sqlite or turso",
      ],
    },
    {
      name: 'engine misspelt',
      mutate: (pod) => {
        accel(pod).engine = 'duckbd';
      },
      errors: [
        "spicepod.yaml: datasets[0].acceleration.engine: engine 'duckbd' is unknown; use duckdb, sqlite or turso (did you mean 'duckdb'?)",
      ],
    },
    {
      name: 'engine missing',
      mutate: (pod) => {
        delete accel(pod).engine;
      },
      errors: [
        'spicepod.yaml: datasets[0].acceleration.engine: missing; refresh_mode: snapshot needs a file engine: set engine to duckdb, sqlite or turso',
      ],
    },
    {
      name: 'mode memory',
      mutate: (pod) => {
        accel(pod).mode = 'memory';
      },
      errors: [
        "spicepod.yaml: datasets[0].acceleration.mode: refresh_mode: snapshot requires mode: file, not 'memory'; set mode: file",
      ],
    },
    {
      name: 'mode missing',
      mutate: (pod) => {
        delete accel(pod).mode;
      },
      errors: [
        'spicepod.yaml: datasets[0].acceleration.mode: missing; refresh_mode: snapshot requires mode: file; add mode: file',
      ],
    },
    {
      name: 'acceleration disabled',
      mutate: (pod) => {
        accel(pod).enabled = 'false';
      },
      errors: [
        'spicepod.yaml: datasets[0].acceleration.enabled: acceleration is disabled, but a snapshot dataset is served from its acceleration; remove enabled: false',
      ],
    },
    {
      name: 'refresh_mode full',
      mutate: (pod) => {
        accel(pod).refresh_mode = 'full';
      },
      errors: [
        "spicepod.yaml: datasets[0].acceleration.refresh_mode: 'full' is not served by this runtime, which serves only snapshot datasets; set refresh_mode: snapshot",
      ],
    },
    {
      name: 'refresh_mode misspelt',
      mutate: (pod) => {
        accel(pod).refresh_mode = 'snapshto';
      },
      errors: [
        "spicepod.yaml: datasets[0].acceleration.refresh_mode: 'snapshto' is not a refresh mode; did you mean 'snapshot'?",
      ],
    },
    {
      name: 'refresh_mode misspelt as a key, with every other typo of the dataset in the same run',
      mutate: (pod) => {
        const a = accel(pod);
        delete a.refresh_mode;
        a.refresh_mod = 'snapshot';
        a.mode = 'memory';
        a.snapshots = 'enabeld';
      },
      errors: [
        "spicepod.yaml: datasets[0].acceleration.refresh_mod: unknown key; did you mean 'refresh_mode'?",
        "spicepod.yaml: datasets[0].acceleration.mode: refresh_mode: snapshot requires mode: file, not 'memory'; set mode: file",
        "spicepod.yaml: datasets[0].acceleration.snapshots: refresh_mode: snapshot requires acceleration.snapshots: enabled or bootstrap_only, not 'enabeld'; did you mean 'enabled'?",
      ],
    },
    {
      name: 'mode and snapshots misspelt: the fix offered is the value meant',
      mutate: (pod) => {
        accel(pod).mode = 'fiel';
        accel(pod).snapshots = 'bootstrap-only';
      },
      errors: [
        "spicepod.yaml: datasets[0].acceleration.mode: refresh_mode: snapshot requires mode: file, not 'fiel'; did you mean 'file'?",
        "spicepod.yaml: datasets[0].acceleration.snapshots: refresh_mode: snapshot requires acceleration.snapshots: enabled or bootstrap_only, not 'bootstrap-only'; did you mean 'bootstrap_only'?",
      ],
    },
    {
      name: 'no acceleration',
      mutate: (pod) => {
        delete dataset(pod, 0).acceleration;
      },
      errors: [
        'spicepod.yaml: datasets[0].acceleration: missing; this runtime serves only snapshot datasets: add acceleration with refresh_mode: snapshot, or set from to an s3:// snapshot location with params.file_format: snapshot',
      ],
    },
    {
      name: 'from missing',
      mutate: (pod) => {
        delete dataset(pod, 0).from;
      },
      errors: [
        "spicepod.yaml: datasets[0].from: missing; set it to the dataset's source (such as postgres:public.orders), or to the s3:// snapshot location with params.file_format: snapshot",
      ],
    },
    {
      // Spice loads it (its own snapshot_refresh reader test sets access: read_write) and refuses
      // the writes: refresh_mode: snapshot rejects INSERT, UPDATE, DELETE and TRUNCATE.
      name: 'access: read_write, and mode: (its older spelling) read_write_create, are tolerated',
      mutate: (pod) => {
        dataset(pod, 0).access = 'read_write';
        dataset(pod, 1).mode = 'read_write_create';
      },
      errors: [],
      valid: ['orders', 'users'],
      warnings: [
        'spicepod.yaml: datasets[0].access: read_write is ignored: the dataset is loaded only from snapshots, so writes to it are refused',
        'spicepod.yaml: datasets[1].mode: read_write_create is ignored: the dataset is loaded only from snapshots, so writes to it are refused',
      ],
    },
    {
      name: 'access: a value Spice does not have',
      mutate: (pod) => {
        dataset(pod, 0).access = 'write';
      },
      errors: [
        "spicepod.yaml: datasets[0].access: 'write' is not allowed; use read, read_write or read_write_create (did you mean 'read_write'?)",
      ],
    },
    {
      name: 'access and mode both set',
      mutate: (pod) => {
        dataset(pod, 0).access = 'read';
        dataset(pod, 0).mode = 'read';
      },
      errors: [
        'spicepod.yaml: datasets[0].mode: is another name for access, which is set too; keep only one',
      ],
    },
    {
      name: 'from is recorded, never checked (any connector)',
      mutate: (pod) => {
        dataset(pod, 0).from = 'databricks:catalog.schema.orders';
        dataset(pod, 0).params = { databricks_token: secretRef('secrets', 'NOT_READ') };
      },
      errors: [],
      valid: ['orders', 'users'],
    },
  ]);
});

describe('refresh_check_interval', () => {
  const interval = (value: unknown) => (pod: Pod) => {
    accel(pod).refresh_check_interval = value;
  };
  run([
    {
      name: 'zero',
      mutate: interval('0s'),
      errors: [
        "spicepod.yaml: datasets[0].acceleration.refresh_check_interval: '0s' is zero; use a positive duration such as 30s",
      ],
    },
    {
      name: 'negative',
      mutate: interval('-5s'),
      errors: [
        "spicepod.yaml: datasets[0].acceleration.refresh_check_interval: '-5s' is negative; use a positive duration such as 30s",
      ],
    },
    {
      name: 'garbage',
      mutate: interval('soon'),
      errors: [
        "spicepod.yaml: datasets[0].acceleration.refresh_check_interval: 'soon' is not a duration; use a number with a unit (ms, s, m, h or d), such as 30s",
      ],
    },
    {
      name: 'a bare number',
      mutate: interval(30),
      errors: [
        "spicepod.yaml: datasets[0].acceleration.refresh_check_interval: '30' has no unit; add one, such as 30s",
      ],
    },
    {
      name: 'longer than a timer can wait',
      mutate: interval('30d'),
      errors: [
        "spicepod.yaml: datasets[0].acceleration.refresh_check_interval: '30d' is longer than 24d; use at most 24d",
      ],
    },
  ]);

  it.each([
    ['500ms', 500],
    ['30s', 30_000],
    ['1m', 60_000],
    ['10m', 600_000],
    ['1h', 3_600_000],
  ])('%s is %i ms; absent is one minute', (text, ms) => {
    const pod = basePod();
    accel(pod).refresh_check_interval = text;
    const [orders, users] = loadSpicepod(stringify(pod), { file: 'spicepod.yaml' }).datasets;
    expect(orders?.refreshCheckIntervalMs).toBe(ms);
    expect(users?.refreshCheckIntervalMs).toBe(60_000);
  });
});

describe('the snapshots block', () => {
  run([
    {
      name: 'location without a scheme is fatal',
      mutate: (pod) => {
        pod.snapshots.location = '/nvme/snapshots';
      },
      fatal: true,
      errors: [
        "spicepod.yaml: snapshots.location: '/nvme/snapshots' has no scheme; use s3://bucket/prefix/ or file:///absolute/path/",
      ],
    },
    {
      name: 'location with another scheme is fatal',
      mutate: (pod) => {
        pod.snapshots.location = 'gs://bucket/snapshots/';
      },
      fatal: true,
      errors: [
        "spicepod.yaml: snapshots.location: scheme 'gs://' is not supported by this runtime; use s3://bucket/prefix/ or file:///absolute/path/",
      ],
    },
    {
      name: 'relative file:// location is fatal',
      mutate: (pod) => {
        pod.snapshots.location = 'file://snapshots/';
      },
      fatal: true,
      errors: [
        "spicepod.yaml: snapshots.location: 'file://snapshots/' is not an absolute file:// URI; use file:///absolute/path/",
      ],
    },
    {
      name: 'location missing fails every refresh_mode dataset',
      mutate: (pod) => {
        delete pod.snapshots.location;
      },
      errors: [
        "spicepod.yaml: snapshots.location: not set, but dataset 'orders' uses refresh_mode: snapshot; add snapshots.location (s3://bucket/prefix/ or file:///absolute/path/)",
        "spicepod.yaml: snapshots.location: not set, but dataset 'users' uses refresh_mode: snapshot; add snapshots.location (s3://bucket/prefix/ or file:///absolute/path/)",
      ],
      valid: [],
    },
    {
      name: 'snapshots disabled fails every refresh_mode dataset, not file_format ones',
      mutate: (pod) => {
        pod.snapshots.enabled = false;
        withPartner(pod);
      },
      errors: [
        "spicepod.yaml: snapshots.enabled: is false, so dataset 'orders' (refresh_mode: snapshot) cannot read snapshots; set snapshots.enabled: true",
        "spicepod.yaml: snapshots.enabled: is false, so dataset 'users' (refresh_mode: snapshot) cannot read snapshots; set snapshots.enabled: true",
      ],
      valid: ['partner'],
    },
    {
      name: 'bootstrap_on_failure_behavior not one of warn, retry, fallback',
      mutate: (pod) => {
        pod.snapshots.bootstrap_on_failure_behavior = 'explode';
      },
      fatal: true,
      errors: [
        "spicepod.yaml: snapshots.bootstrap_on_failure_behavior: 'explode' is not allowed; use warn, retry or fallback",
      ],
    },
    {
      name: 'a misspelt choice or boolean gets the value meant',
      mutate: (pod) => {
        pod.snapshots.bootstrap_on_failure_behavior = 'retyr';
        pod.snapshots.enabled = 'ture';
      },
      fatal: true,
      errors: [
        "spicepod.yaml: snapshots.enabled: 'ture' is not a boolean; use true or false (did you mean 'true'?)",
        "spicepod.yaml: snapshots.bootstrap_on_failure_behavior: 'retyr' is not allowed; use warn, retry or fallback (did you mean 'retry'?)",
      ],
    },
    {
      name: 's3_auth public',
      mutate: (pod) => {
        pod.snapshots.params.s3_auth = 'public';
      },
      fatal: true,
      errors: [
        "spicepod.yaml: snapshots.params.s3_auth: 'public' is not supported for snapshots; use iam_role or key",
      ],
    },
    {
      name: 's3_auth key without credentials',
      mutate: (pod) => {
        pod.snapshots.params.s3_auth = 'key';
      },
      fatal: true,
      errors: [
        'spicepod.yaml: snapshots.params.s3_key: s3_auth is key, but s3_key is not set; set s3_key and s3_secret',
        'spicepod.yaml: snapshots.params.s3_secret: s3_auth is key, but s3_secret is not set; set s3_key and s3_secret',
      ],
    },
    {
      name: 's3_key without s3_secret',
      mutate: (pod) => {
        pod.snapshots.params.s3_key = 'AKIA';
      },
      fatal: true,
      errors: [
        'spicepod.yaml: snapshots.params.s3_secret: s3_key is set but s3_secret is not; set both, or neither to use the default AWS credential chain',
      ],
    },
    {
      name: 'http endpoint without allow_http',
      mutate: (pod) => {
        pod.snapshots.params.s3_endpoint = 'http://127.0.0.1:4566';
      },
      fatal: true,
      errors: [
        "spicepod.yaml: snapshots.params.s3_endpoint: 'http://127.0.0.1:4566' uses http, which needs allow_http: true; set allow_http: true or use https",
      ],
    },
    {
      name: 'allow_http not a boolean',
      mutate: (pod) => {
        pod.snapshots.params.allow_http = 'yes';
      },
      fatal: true,
      errors: ["spicepod.yaml: snapshots.params.allow_http: 'yes' is not a boolean; use true or false"],
    },
    {
      name: 'client_timeout not a duration',
      mutate: (pod) => {
        pod.snapshots.params.client_timeout = 'fast';
      },
      fatal: true,
      errors: [
        "spicepod.yaml: snapshots.params.client_timeout: 'fast' is not a duration; use a number with a unit (ms, s, m, h or d), such as 30s",
      ],
    },
    {
      name: 'a secret that is not in the environment',
      mutate: (pod) => {
        pod.snapshots.params.s3_auth = 'key';
        pod.snapshots.params.s3_key = secretRef('secrets', 'SNAP_KEY');
        pod.snapshots.params.s3_secret = secretRef('env', 'SNAP_SECRET');
      },
      env: { SNAP_KEY: 'AKIA' },
      fatal: true,
      errors: [
        "spicepod.yaml: snapshots.params.s3_secret: references secret 'SNAP_SECRET', which is not set; set the environment variable SNAP_SECRET",
      ],
    },
    {
      // One error per problem: s3_key is set (to a reference), so 's3_secret is set but s3_key is
      // not' would send the operator to the spicepod instead of the environment.
      name: 'a key reference that is not in the environment, without s3_auth',
      mutate: (pod) => {
        pod.snapshots.params.s3_key = secretRef('secrets', 'SNAP_KEY');
        pod.snapshots.params.s3_secret = secretRef('secrets', 'SNAP_SECRET');
      },
      env: { SNAP_SECRET: 'shh-secret' },
      fatal: true,
      errors: [
        "spicepod.yaml: snapshots.params.s3_key: references secret 'SNAP_KEY', which is not set; set the environment variable SNAP_KEY",
      ],
    },
    {
      name: 'a secret store this runtime does not read',
      mutate: (pod) => {
        pod.snapshots.params.s3_region = secretRef('aws', 'REGION');
      },
      fatal: true,
      errors: [
        `spicepod.yaml: snapshots.params.s3_region: references secret store 'aws', which the spicepod does not define; use ${secretRef('secrets', 'REGION')} (an environment variable) or add a store named 'aws' to secrets`,
      ],
    },
    {
      name: 'a secret named like an Object property is still looked up in the environment only (upper-cased, as Spice)',
      mutate: (pod) => {
        pod.snapshots.params.s3_region = secretRef('secrets', 'constructor');
      },
      fatal: true,
      errors: [
        "spicepod.yaml: snapshots.params.s3_region: references secret 'constructor', which is not set; set the environment variable CONSTRUCTOR",
      ],
    },
    {
      name: 'a resolved secret is used as the value',
      mutate: (pod) => {
        pod.snapshots.params.s3_region = secretRef('env', 'REGION');
        pod.snapshots.params.s3_endpoint = 'http://127.0.0.1:4566';
        pod.snapshots.params.allow_http = 'TRUE';
      },
      env: { REGION: 'ca-central-1' },
      errors: [],
      valid: ['orders', 'users'],
    },
    {
      name: 's3 params with a file:// location are ignored with a warning',
      mutate: (pod) => {
        pod.snapshots.location = 'file:///srv/snapshots';
      },
      errors: [],
      valid: ['orders', 'users'],
      warnings: ['spicepod.yaml: snapshots.params.s3_region: ignored because snapshots.location is file://'],
    },
  ]);
});

describe('S3 params from secrets', () => {
  it("drop a secret's surrounding whitespace (a file's trailing newline), which no key, region or token has", () => {
    // Kept, 'AKIA…\n' reached the SDK as the access key id: every request failed to sign or was refused.
    const pod = basePod();
    Object.assign(pod.snapshots.params, {
      s3_region: secretRef('secrets', 'REGION'),
      s3_key: secretRef('secrets', 'KEY'),
      s3_secret: secretRef('secrets', 'SECRET'),
      s3_session_token: secretRef('secrets', 'TOKEN'),
    });
    const load = loadSpicepod(stringify(pod), {
      file: 'spicepod.yaml',
      env: { REGION: 'eu-west-1\n', KEY: 'AKIAEXAMPLE\n', SECRET: ' shh-secret\r\n', TOKEN: 'tok\n' },
    });
    expect(load.errors).toStrictEqual([]);
    expect(load.config?.snapshots?.s3).toMatchObject({
      region: 'eu-west-1',
      auth: 'key',
      credentials: { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'shh-secret', sessionToken: 'tok' },
    });
  });
});

describe('snapshots.params.s3_queue_url', () => {
  const queue = (value: unknown) => (pod: Pod) => {
    pod.snapshots.params.s3_queue_url = value;
  };
  const bothFail = (clause: (dataset: string) => string): string[] =>
    ['orders', 'users'].map((d) => `spicepod.yaml: snapshots.params.s3_queue_url: ${clause(d)}`);
  const form = 'https://sqs.<region>.amazonaws.com/<12-digit account id>/<queue name>';
  run([
    {
      name: 'empty',
      mutate: queue(''),
      errors: bothFail(
        (d) => `is empty, so dataset '${d}' cannot load; set it to the queue URL (${form}) or remove it`,
      ),
      valid: [],
    },
    {
      name: 'null (key without a value)',
      mutate: queue(null),
      errors: bothFail(
        (d) => `is empty, so dataset '${d}' cannot load; set it to the queue URL (${form}) or remove it`,
      ),
      valid: [],
    },
    {
      name: 'an ARN',
      mutate: queue('arn:aws:sqs:us-east-1:123456789012:replica'),
      errors: bothFail(
        (d) =>
          `'arn:aws:sqs:us-east-1:123456789012:replica' is an ARN, so dataset '${d}' cannot load; use the queue URL instead: https://sqs.us-east-1.amazonaws.com/123456789012/replica`,
      ),
      valid: [],
    },
    {
      name: 'not an SQS URL',
      mutate: queue('https://example.com/123456789012/replica'),
      errors: bothFail(
        (d) =>
          `'https://example.com/123456789012/replica' is not an SQS queue URL, so dataset '${d}' cannot load; use ${form}`,
      ),
      valid: [],
    },
    {
      name: 'account id not 12 digits',
      mutate: queue('https://sqs.us-east-1.amazonaws.com/12345/replica'),
      errors: bothFail(
        (d) =>
          `'https://sqs.us-east-1.amazonaws.com/12345/replica' is not an SQS queue URL, so dataset '${d}' cannot load; use ${form}`,
      ),
      valid: [],
    },
    {
      name: 'queue name longer than 80 characters',
      mutate: queue(`https://sqs.us-east-1.amazonaws.com/123456789012/${'q'.repeat(81)}`),
      errors: bothFail(
        (d) =>
          `'https://sqs.us-east-1.amazonaws.com/123456789012/${'q'.repeat(81)}' is not an SQS queue URL, so dataset '${d}' cannot load; use ${form}`,
      ),
      valid: [],
    },
    {
      name: 'a local server URL without an endpoint override',
      mutate: queue('http://sqs.us-east-1.localhost:4566/000000000000/replica'),
      errors: bothFail(
        (d) =>
          `'http://sqs.us-east-1.localhost:4566/000000000000/replica' is not an SQS queue URL, so dataset '${d}' cannot load; use ${form}`,
      ),
      valid: [],
    },
    {
      name: 'location not s3://',
      mutate: (pod) => {
        pod.snapshots.location = 'file:///srv/snapshots/';
        pod.snapshots.params = { s3_queue_url: 'https://sqs.us-east-1.amazonaws.com/123456789012/replica' };
      },
      errors: bothFail(
        (d) =>
          `is set, but snapshots.location 'file:///srv/snapshots/' is not s3://, so dataset '${d}' cannot load; remove s3_queue_url (S3 event notifications need an s3:// location)`,
      ),
      valid: [],
    },
    {
      name: 'set but no dataset uses refresh_mode: snapshot',
      mutate: (pod) => {
        pod.snapshots.params.s3_queue_url = 'not even a URL';
        pod.datasets = [];
        withPartner(pod);
      },
      errors: [],
      valid: ['partner'],
      warnings: [
        'spicepod.yaml: snapshots.params.s3_queue_url: `snapshots.params.s3_queue_url` is set, but no dataset uses `refresh_mode: snapshot`, so the SQS queue is not read. Set `refresh_mode: snapshot` on the datasets that load snapshots, or remove `s3_queue_url`. See: https://spiceai.org/docs/features/data-acceleration/snapshots',
      ],
    },
  ]);

  const load = (params: Record<string, unknown>, env: Record<string, string> = {}) => {
    const pod = basePod();
    pod.snapshots.params = params;
    return loadSpicepod(stringify(pod), { file: 'spicepod.yaml', env });
  };

  it('a valid AWS queue URL: notifications for the refresh_mode datasets, region from the host', () => {
    const url = 'https://sqs.eu-central-1.amazonaws.com/123456789012/replica.fifo';
    const result = load({ s3_region: 'us-east-1', s3_queue_url: url });
    expect(result.errors).toStrictEqual([]);
    expect(result.config?.notifications).toStrictEqual({
      queue: { url, region: 'eu-central-1' },
      location: 's3://snapshot-bucket/prefix/',
      s3: { region: 'us-east-1', auth: 'iam_role', allowHttp: false },
      datasets: ['orders', 'users'],
    });
    expect(result.datasets.map((d) => d.queue)).toStrictEqual([
      { url, region: 'eu-central-1' },
      { url, region: 'eu-central-1' },
    ]);
  });

  it('no queue: config.notifications is undefined and datasets have no queue', () => {
    const result = load({});
    expect(result.config?.notifications).toBeUndefined();
    expect(result.datasets.map((d) => d.queue)).toStrictEqual([undefined, undefined]);
  });

  it('the unused-queue warning leaves notifications undefined', () => {
    const pod = basePod();
    pod.snapshots.params.s3_queue_url = 'https://sqs.us-east-1.amazonaws.com/123456789012/replica';
    pod.datasets = [];
    const result = loadSpicepod(stringify(pod), { file: 'spicepod.yaml' });
    expect(result.config?.notifications).toBeUndefined();
    expect(result.warnings.map((w) => w.path)).toStrictEqual(['datasets', 'snapshots.params.s3_queue_url']);
  });

  it('AWS_ENDPOINT_URL_SQS accepts a local server queue URL (fauxqs form), region from the host', () => {
    const url = 'http://sqs.us-east-1.localhost:4566/000000000000/replica';
    const result = load({ s3_queue_url: url }, { AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:4566' });
    expect(result.errors).toStrictEqual([]);
    expect(result.config?.notifications?.queue).toStrictEqual({
      url,
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:4566',
    });
  });

  it('s3_queue_endpoint (Ferry extension) accepts a local URL; region falls back to s3_region', () => {
    const url = 'http://127.0.0.1:9324/000000000000/replica';
    const result = load({
      s3_region: 'ap-southeast-2',
      s3_queue_url: url,
      s3_queue_endpoint: 'http://127.0.0.1:9324',
    });
    expect(result.errors).toStrictEqual([]);
    expect(result.config?.notifications?.queue).toStrictEqual({
      url,
      region: 'ap-southeast-2',
      endpoint: 'http://127.0.0.1:9324',
    });
  });

  it('a VPC endpoint queue URL (accepted by Spice) is read at its own host, the region from it', () => {
    const url = 'https://vpce-0a1b2c.sqs.eu-west-1.vpce.amazonaws.com/123456789012/replica';
    const result = load({ s3_region: 'us-east-1', s3_queue_url: url });
    expect(result.errors).toStrictEqual([]);
    expect(result.config?.notifications?.queue).toStrictEqual({
      url,
      region: 'eu-west-1',
      endpoint: 'https://vpce-0a1b2c.sqs.eu-west-1.vpce.amazonaws.com',
    });
  });

  it('region defaults to us-east-1 when neither the host nor s3_region names one', () => {
    const url = 'http://127.0.0.1:9324/000000000000/replica';
    const result = load({ s3_queue_url: url }, { AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:9324' });
    expect(result.config?.notifications?.queue.region).toBe('us-east-1');
  });

  it('a bad s3_queue_endpoint is fatal', () => {
    const result = load({ s3_queue_url: 'x', s3_queue_endpoint: 'localhost:9324' });
    expect(result.errors.map((e) => [e.message, e.fatal])).toContainEqual([
      "spicepod.yaml: snapshots.params.s3_queue_endpoint: 'localhost:9324' is not an http(s) URL; use the SQS server's URL, such as http://127.0.0.1:4566",
      true,
    ]);
  });
});

describe('snapshots.params.ferry_sns_topic_arn (Ferry only)', () => {
  const ARN = 'arn:aws:sns:eu-west-1:123456789012:snapshot-events';
  const topic =
    (value: unknown, extra: Record<string, unknown> = {}) =>
    (pod: Pod) => {
      Object.assign(pod.snapshots.params, { ferry_sns_topic_arn: value, ...extra });
    };
  const bothFail = (clause: (dataset: string) => string): string[] =>
    ['orders', 'users'].map((d) => `spicepod.yaml: snapshots.params.ferry_sns_topic_arn: ${clause(d)}`);
  const form = 'arn:aws:sns:<region>:<12-digit account id>:<topic name>';
  run([
    {
      name: 'empty',
      mutate: topic(''),
      errors: bothFail(
        (d) => `is empty, so dataset '${d}' cannot load; set it to the topic's ARN (${form}) or remove it`,
      ),
      valid: [],
    },
    {
      name: 'a queue URL instead of a topic ARN',
      mutate: topic('https://sqs.us-east-1.amazonaws.com/123456789012/q'),
      errors: bothFail(
        (d) =>
          `'https://sqs.us-east-1.amazonaws.com/123456789012/q' is a URL, not an SNS topic ARN, so dataset '${d}' cannot load; use the topic's ARN (${form}); a queue URL belongs in s3_queue_url`,
      ),
      valid: [],
    },
    {
      name: 'an SQS queue ARN',
      mutate: topic('arn:aws:sqs:us-east-1:123456789012:q'),
      errors: bothFail(
        (d) =>
          `'arn:aws:sqs:us-east-1:123456789012:q' is not an SNS topic ARN, so dataset '${d}' cannot load; use ${form}`,
      ),
      valid: [],
    },
    {
      name: 'a FIFO topic',
      mutate: topic('arn:aws:sns:us-east-1:123456789012:events.fifo'),
      errors: bothFail(
        (d) =>
          `'arn:aws:sns:us-east-1:123456789012:events.fifo' is a FIFO topic, which S3 event notifications cannot publish to, so dataset '${d}' cannot load; use a standard SNS topic`,
      ),
      valid: [],
    },
    {
      name: 'an ARN too long for an SQS tag',
      mutate: topic(`arn:aws:sns:us-east-1:123456789012:${'t'.repeat(230)}`),
      errors: bothFail(
        (d) =>
          `'arn:aws:sns:us-east-1:123456789012:${'t'.repeat(230)}' is 265 characters long, more than the 256 an SQS tag can hold (each reader's queue is tagged with its topic), so dataset '${d}' cannot load; use a topic with a shorter name`,
      ),
      valid: [],
    },
    {
      name: 'together with s3_queue_url',
      mutate: topic(ARN, { s3_queue_url: 'https://sqs.us-east-1.amazonaws.com/123456789012/replica' }),
      errors: bothFail(
        (d) =>
          `is set together with snapshots.params.s3_queue_url, so dataset '${d}' cannot load; keep one: s3_queue_url for a queue you made for this reader, or ferry_sns_topic_arn for a queue each reader makes and subscribes to the topic`,
      ),
      valid: [],
    },
    {
      name: 'location not s3://',
      mutate: (pod) => {
        pod.snapshots.location = 'file:///srv/snapshots/';
        pod.snapshots.params = { ferry_sns_topic_arn: ARN };
      },
      errors: bothFail(
        (d) =>
          `is set, but snapshots.location 'file:///srv/snapshots/' is not s3://, so dataset '${d}' cannot load; remove ferry_sns_topic_arn (S3 event notifications need an s3:// location)`,
      ),
      valid: [],
    },
    {
      name: 'set but no dataset uses refresh_mode: snapshot',
      mutate: (pod) => {
        pod.snapshots.params.ferry_sns_topic_arn = ARN;
        pod.datasets = [];
        withPartner(pod);
      },
      errors: [],
      valid: ['partner'],
      warnings: [
        'spicepod.yaml: snapshots.params.ferry_sns_topic_arn: is set, but no dataset uses refresh_mode: snapshot, so no SQS queue is made or subscribed to the topic; set refresh_mode: snapshot on the datasets that load snapshots, or remove ferry_sns_topic_arn',
      ],
    },
    {
      name: 'its options without the topic (fatal)',
      mutate: (pod) => {
        pod.snapshots.params.ferry_sns_raw_message_delivery = false;
        pod.snapshots.params.ferry_sns_heartbeat_interval = '30s';
      },
      errors: [
        "spicepod.yaml: snapshots.params.ferry_sns_raw_message_delivery: only applies with snapshots.params.ferry_sns_topic_arn (Ferry's per-reader queues), which is not set; set the topic or remove ferry_sns_raw_message_delivery",
        "spicepod.yaml: snapshots.params.ferry_sns_heartbeat_interval: only applies with snapshots.params.ferry_sns_topic_arn (Ferry's per-reader queues), which is not set; set the topic or remove ferry_sns_heartbeat_interval",
      ],
      fatal: true,
    },
    {
      name: 'a heartbeat that is not a duration (fatal)',
      mutate: topic(ARN, { ferry_sns_heartbeat_interval: 30 }),
      errors: [
        "spicepod.yaml: snapshots.params.ferry_sns_heartbeat_interval: '30' has no unit; add one, such as 30s",
      ],
      fatal: true,
    },
    {
      name: 'refused by file_format: snapshot datasets',
      mutate: (pod) => {
        withPartner(pod, { params: { file_format: 'snapshot', ferry_sns_topic_arn: ARN } });
      },
      errors: [
        'spicepod.yaml: datasets[2].params.ferry_sns_topic_arn: file_format: snapshot datasets do not read a queue (they check for new snapshots every refresh_check_interval); remove it, or use refresh_mode: snapshot with snapshots.params.ferry_sns_topic_arn',
      ],
      valid: ['orders', 'users'],
    },
  ]);

  const load = (params: Record<string, unknown>, env: Record<string, string> = {}) => {
    const pod = basePod();
    pod.snapshots.params = params;
    return loadSpicepod(stringify(pod), { file: 'spicepod.yaml', env });
  };

  it('a valid topic: the queue is made in its region; raw delivery and a 1m heartbeat by default', () => {
    const result = load({ s3_region: 'us-east-1', ferry_sns_topic_arn: ARN });
    expect(result.errors).toStrictEqual([]);
    const queue = {
      topic: { arn: ARN, region: 'eu-west-1', rawMessageDelivery: true, heartbeatIntervalMs: 60_000 },
      region: 'eu-west-1',
    };
    expect(result.config?.notifications).toStrictEqual({
      queue,
      location: 's3://snapshot-bucket/prefix/',
      s3: { region: 'us-east-1', auth: 'iam_role', allowHttp: false },
      datasets: ['orders', 'users'],
    });
    expect(result.datasets.map((d) => d.queue)).toStrictEqual([queue, queue]);
    expect(result.config?.snapshots?.topicArn).toBe(ARN);
  });

  it('options, the SQS endpoint override and the SNS endpoint from the environment', () => {
    const result = load(
      {
        ferry_sns_topic_arn: ['${', 'secrets:TOPIC}'].join(''),
        ferry_sns_raw_message_delivery: 'false',
        ferry_sns_heartbeat_interval: '15s',
        s3_queue_endpoint: 'http://127.0.0.1:4566',
      },
      { TOPIC: ARN, AWS_ENDPOINT_URL_SNS: 'http://127.0.0.1:4567' },
    );
    expect(result.errors).toStrictEqual([]);
    expect(result.config?.notifications?.queue).toStrictEqual({
      topic: {
        arn: ARN,
        region: 'eu-west-1',
        rawMessageDelivery: false,
        heartbeatIntervalMs: 15_000,
        endpoint: 'http://127.0.0.1:4567',
      },
      region: 'eu-west-1',
      endpoint: 'http://127.0.0.1:4566',
    });
  });

  it('AWS_ENDPOINT_URL serves both SNS and SQS when the specific ones are unset', () => {
    const result = load({ ferry_sns_topic_arn: ARN }, { AWS_ENDPOINT_URL: 'http://127.0.0.1:4566' });
    expect(result.config?.notifications?.queue).toMatchObject({
      topic: { endpoint: 'http://127.0.0.1:4566' },
      endpoint: 'http://127.0.0.1:4566',
    });
  });
});

describe('the from: s3:// + params.file_format: snapshot form', () => {
  run([
    {
      // As Spice: "Dataset '{name}' reads snapshots (`file_format: snapshot`), so it is read-only."
      name: 'access: read_write is refused',
      mutate: (pod) => {
        withPartner(pod, { access: 'read_write' });
      },
      errors: [
        'spicepod.yaml: datasets[2].access: file_format: snapshot datasets are read-only; remove access: read_write',
      ],
      valid: ['orders', 'users'],
    },
    {
      name: 'access: read is accepted, also spelt mode: read',
      mutate: (pod) => {
        withPartner(pod, { mode: 'read' });
      },
      errors: [],
      valid: ['orders', 'users', 'partner'],
    },
    {
      name: 's3_queue_url is refused',
      mutate: (pod) => {
        withPartner(pod, {
          params: {
            file_format: 'snapshot',
            s3_queue_url: 'https://sqs.us-east-1.amazonaws.com/123456789012/q',
          },
        });
      },
      errors: [
        'spicepod.yaml: datasets[2].params.s3_queue_url: file_format: snapshot datasets do not read a queue (they check for new snapshots every refresh_check_interval); remove it, or use refresh_mode: snapshot with snapshots.params.s3_queue_url',
      ],
      valid: ['orders', 'users'],
    },
    {
      name: 'a param the snapshot store does not read',
      mutate: (pod) => {
        withPartner(pod, { params: { file_format: 'snapshot', hive_partitioning_enabled: true } });
      },
      errors: [
        'spicepod.yaml: datasets[2].params.hive_partitioning_enabled: not used by file_format: snapshot datasets; remove it (they accept file_format, s3_region, s3_endpoint, s3_auth, s3_key, s3_secret, s3_session_token, allow_http, client_timeout, ferry_max_staleness, ferry_retain_snapshots or ferry_retain_disk_budget)',
      ],
      valid: ['orders', 'users'],
    },
    {
      name: 'a misspelt param',
      mutate: (pod) => {
        withPartner(pod, { params: { file_format: 'snapshot', s3_regoin: 'us-east-1' } });
      },
      errors: ["spicepod.yaml: datasets[2].params.s3_regoin: unknown key; did you mean 's3_region'?"],
      valid: ['orders', 'users'],
    },
    {
      name: 'from is not s3://',
      mutate: (pod) => {
        withPartner(pod, { from: 'file:///srv/published/' });
      },
      errors: [
        "spicepod.yaml: datasets[2].from: 'file:///srv/published/' is not an s3:// location, but params.file_format: snapshot reads snapshots from S3; set from to s3://bucket/prefix/",
      ],
      valid: ['orders', 'users'],
    },
    {
      name: 'refresh_mode other than snapshot',
      mutate: (pod) => {
        withPartner(pod, { acceleration: { refresh_mode: 'full' } });
      },
      errors: [
        'spicepod.yaml: datasets[2].acceleration.refresh_mode: file_format: snapshot datasets refresh only by loading newer snapshots; remove refresh_mode: full',
      ],
      valid: ['orders', 'users'],
    },
    {
      name: 'an engine file param',
      mutate: (pod) => {
        withPartner(pod, { acceleration: { engine: 'duckdb', params: { duckdb_file: '/data/p.duckdb' } } });
      },
      errors: [
        'spicepod.yaml: datasets[2].acceleration.params.duckdb_file: file_format: snapshot datasets keep their local copy where the runtime chooses; remove duckdb_file',
      ],
      valid: ['orders', 'users'],
    },
    {
      name: 'acceleration.snapshots: enabled',
      mutate: (pod) => {
        withPartner(pod, { acceleration: { snapshots: 'enabled' } });
      },
      errors: [
        'spicepod.yaml: datasets[2].acceleration.snapshots: file_format: snapshot datasets only read snapshots and never create them; remove snapshots: enabled',
      ],
      valid: ['orders', 'users'],
    },
    {
      name: 'mode memory',
      mutate: (pod) => {
        withPartner(pod, { acceleration: { mode: 'memory' } });
      },
      errors: [
        'spicepod.yaml: datasets[2].acceleration.mode: file_format: snapshot datasets keep a local file copy of the current snapshot; remove mode: memory',
      ],
      valid: ['orders', 'users'],
    },
    {
      name: 'file_format misspelt: checked as the file_format dataset meant, every problem at once',
      mutate: (pod) => {
        withPartner(pod, {
          params: { file_format: 'snapshto', s3_region: 'us-west-2' },
          acceleration: { engine: 'cayenne' },
        });
      },
      errors: [
        "spicepod.yaml: datasets[2].params.file_format: 'snapshto' is not a file format; did you mean 'snapshot'?",
        "spicepod.yaml: datasets[2].acceleration.engine: engine 'cayenne' is not supported by this runtime; use duckdb, sqlite or turso",
      ],
      valid: ['orders', 'users'],
    },
    {
      name: 'refresh_sql',
      mutate: (pod) => {
        withPartner(pod, { acceleration: { refresh_sql: 'SELECT * FROM partner WHERE x > 1' } });
      },
      errors: [
        "spicepod.yaml: datasets[2].acceleration.refresh_sql: file_format: snapshot datasets serve the snapshot's data as published; remove refresh_sql",
      ],
      valid: ['orders', 'users'],
    },
    {
      name: 'engine cayenne',
      mutate: (pod) => {
        withPartner(pod, { acceleration: { engine: 'cayenne' } });
      },
      errors: [
        "spicepod.yaml: datasets[2].acceleration.engine: engine 'cayenne' is not supported by this runtime; use duckdb, sqlite or turso",
      ],
      valid: ['orders', 'users'],
    },
    {
      name: 'an explicit engine, refresh_mode: snapshot and snapshots: bootstrap_only are accepted',
      mutate: (pod) => {
        withPartner(pod, {
          acceleration: {
            engine: 'turso',
            mode: 'file',
            refresh_mode: 'snapshot',
            snapshots: 'bootstrap_only',
          },
        });
      },
      errors: [],
      valid: ['orders', 'users', 'partner'],
    },
  ]);

  it('location is the from prefix, engine from metadata unless configured', () => {
    const pod = basePod();
    pod.datasets = [];
    withPartner(pod, {
      from: 's3://published-bucket/snaps',
      params: { file_format: 'Snapshot', allow_http: 'false' },
    });
    withPartner(pod, { name: 'partner_sqlite', acceleration: { engine: 'turso' } });
    const [plain, turso] = loadSpicepod(stringify(pod), { file: 'spicepod.yaml' }).datasets;
    expect(plain).toStrictEqual({
      name: 'partner',
      index: 0,
      form: 'file_format',
      from: 's3://published-bucket/snaps',
      engine: undefined,
      fileEngine: undefined,
      location: 's3://published-bucket/snaps/',
      refreshCheckIntervalMs: 60_000,
      bootstrapOnFailure: 'warn',
      snapshotsMode: 'bootstrap_only',
      s3: { auth: 'iam_role', allowHttp: false },
    });
    expect([turso?.engine, turso?.fileEngine]).toStrictEqual(['turso', 'sqlite']);
  });
});

describe('engine file params', () => {
  run([
    {
      name: "another engine's file param",
      mutate: (pod) => {
        accel(pod).params = { sqlite_file: '/data/orders.sqlite' };
      },
      errors: [
        'spicepod.yaml: datasets[0].acceleration.params.sqlite_file: sqlite_file does not apply to engine duckdb; use duckdb_file',
      ],
    },
    {
      name: 'a misspelt file param',
      mutate: (pod) => {
        accel(pod).params = { duckdb_fil: '/data/orders.duckdb' };
      },
      errors: [
        "spicepod.yaml: datasets[0].acceleration.params.duckdb_fil: unknown key; did you mean 'duckdb_file'?",
      ],
    },
    {
      name: "another engine's tuning param",
      mutate: (pod) => {
        accel(pod).params = { busy_timeout: '5s' };
      },
      errors: [
        'spicepod.yaml: datasets[0].acceleration.params.busy_timeout: busy_timeout does not apply to engine duckdb; remove it',
      ],
    },
    {
      name: 'a Spice tuning param is ignored with a warning',
      mutate: (pod) => {
        accel(pod).params = { duckdb_file: '/data/orders.duckdb', duckdb_preserve_insertion_order: false };
      },
      errors: [],
      valid: ['orders', 'users'],
      warnings: [
        'spicepod.yaml: datasets[0].acceleration.params.duckdb_preserve_insertion_order: ignored by this runtime',
      ],
    },
    {
      name: 'duckdb_memory_limit that is not a size',
      mutate: (pod) => {
        accel(pod).params = { duckdb_memory_limit: 'lots' };
      },
      errors: [
        "spicepod.yaml: datasets[0].acceleration.params.duckdb_memory_limit: 'lots' is not a memory size of at least 16 MiB; write it like 512MB or 2GiB",
      ],
    },
    {
      name: 'duckdb_threads that is not a whole number',
      mutate: (pod) => {
        accel(pod).params = { duckdb_threads: 0 };
      },
      errors: [
        "spicepod.yaml: datasets[0].acceleration.params.duckdb_threads: '0' is not a number of threads; write a whole number of at least 1",
      ],
    },
    {
      name: 'turso with both turso_file and sqlite_file',
      mutate: (pod) => {
        accel(pod).engine = 'turso';
        accel(pod).params = { turso_file: '/data/a.turso', sqlite_file: '/data/a.sqlite' };
      },
      errors: [
        'spicepod.yaml: datasets[0].acceleration.params.sqlite_file: both turso_file and sqlite_file are set; keep only one',
      ],
    },
    {
      name: 'two datasets sharing one live file both fail',
      mutate: (pod) => {
        accel(pod, 1).engine = 'duckdb';
        accel(pod, 1).params = { duckdb_file: '/data/orders.duckdb' };
      },
      errors: [
        "spicepod.yaml: datasets[0].acceleration.params.duckdb_file: '/data/orders.duckdb' is the live file of datasets[0] and datasets[1]; give each dataset its own file",
        "spicepod.yaml: datasets[1].acceleration.params.duckdb_file: '/data/orders.duckdb' is the live file of datasets[0] and datasets[1]; give each dataset its own file",
      ],
      valid: [],
    },
  ]);
});

describe('unknown keys', () => {
  run([
    {
      name: 'top level, close to a known key: fatal',
      mutate: (pod) => {
        pod.dataset = [];
      },
      fatal: true,
      errors: ["spicepod.yaml: dataset: unknown key; did you mean 'datasets'?"],
    },
    {
      name: 'in snapshots: fatal',
      mutate: (pod) => {
        pod.snapshots.bootstrap_on_failure = 'warn';
      },
      fatal: true,
      errors: [
        "spicepod.yaml: snapshots.bootstrap_on_failure: unknown key; did you mean 'bootstrap_on_failure_behavior'?",
      ],
    },
    {
      name: 'in snapshots.params: fatal',
      mutate: (pod) => {
        pod.snapshots.params.s3_regin = 'us-east-1';
      },
      fatal: true,
      errors: ["spicepod.yaml: snapshots.params.s3_regin: unknown key; did you mean 's3_region'?"],
    },
    {
      name: 'in an acceleration: fails the dataset',
      mutate: (pod) => {
        accel(pod).refresh_check_intervall = '30s';
      },
      errors: [
        "spicepod.yaml: datasets[0].acceleration.refresh_check_intervall: unknown key; did you mean 'refresh_check_interval'?",
      ],
    },
    {
      name: 'in a dataset, far from every known key',
      mutate: (pod) => {
        dataset(pod, 0).colour = 'blue';
      },
      errors: ['spicepod.yaml: datasets[0].colour: unknown key; remove it'],
    },
    {
      name: 'Spice keys that do not apply are tolerated (ignored, with warnings where they matter)',
      mutate: (pod) => {
        pod.runtime = { shutdown_timeout: '30s' };
        pod.models = [];
        dataset(pod, 0).description = 'orders';
        dataset(pod, 0).embeddings = [];
        accel(pod).snapshots_trigger = 'refresh_complete';
        accel(pod).primary_key = 'id';
      },
      errors: [],
      valid: ['orders', 'users'],
      warnings: [
        "spicepod.yaml: datasets[0].embeddings: ignored: a snapshot dataset serves the snapshot's data as published",
        'spicepod.yaml: datasets[0].acceleration.snapshots_trigger: ignored: this dataset only reads snapshots and never creates them',
        'spicepod.yaml: datasets[0].acceleration.primary_key: ignored by this runtime',
      ],
    },
    {
      // Spice's Option fields: a key left without a value (its contents commented out) is absent.
      name: 'a params or acceleration.params key without a value is absent, as in Spice',
      mutate: (pod) => {
        Object.assign(dataset(pod, 0), { params: null });
        Object.assign(accel(pod, 1), { params: null });
      },
      errors: [],
      valid: ['orders', 'users'],
    },
    {
      name: 'an acceleration key without a value is no acceleration',
      mutate: (pod) => {
        Object.assign(dataset(pod, 0), { acceleration: null });
      },
      errors: [
        'spicepod.yaml: datasets[0].acceleration: missing; this runtime serves only snapshot datasets: add acceleration with refresh_mode: snapshot, or set from to an s3:// snapshot location with params.file_format: snapshot',
      ],
    },
    {
      // crates/spicepod component/dataset.rs and acceleration/mod.rs (both deny_unknown_fields)
      // accept these keys: a Spice spicepod carrying them loaded there and failed its dataset here.
      name: "every other key of Spice's Dataset and Acceleration structs is tolerated",
      mutate: (pod) => {
        Object.assign(dataset(pod, 0), {
          dependsOn: ['users'],
          has_metadata_table: false,
          invalid_type_action: 'warn',
        });
        Object.assign(accel(pod), {
          snapshots_creation_policy: 'on_change',
          ready_state: 'on_load',
          maintained_aggregates: [],
          write_mode: 'write_through',
          metrics: { enabled: [] },
        });
      },
      errors: [],
      valid: ['orders', 'users'],
      warnings: [
        'spicepod.yaml: datasets[0].acceleration.snapshots_creation_policy: ignored: this dataset only reads snapshots and never creates them',
        'spicepod.yaml: datasets[0].acceleration.ready_state: ignored by this runtime',
        'spicepod.yaml: datasets[0].acceleration.maintained_aggregates: ignored by this runtime',
        'spicepod.yaml: datasets[0].acceleration.write_mode: ignored by this runtime',
        'spicepod.yaml: datasets[0].acceleration.metrics: ignored by this runtime',
      ],
    },
  ]);
});

describe('dataset names', () => {
  run([
    {
      name: 'a slash',
      mutate: (pod) => {
        dataset(pod, 0).name = 'sales/orders';
      },
      errors: [
        "spicepod.yaml: datasets[0].name: 'sales/orders' is not a safe dataset name; use up to 128 letters, digits and underscores",
      ],
    },
    {
      name: 'a parent reference',
      mutate: (pod) => {
        dataset(pod, 0).name = '..';
      },
      errors: [
        "spicepod.yaml: datasets[0].name: '..' is not a safe dataset name; use up to 128 letters, digits and underscores",
      ],
    },
    {
      name: 'a dot (schema-qualified)',
      mutate: (pod) => {
        dataset(pod, 0).name = 'eth.blocks';
      },
      errors: [
        "spicepod.yaml: datasets[0].name: 'eth.blocks' is not a safe dataset name; use up to 128 letters, digits and underscores",
      ],
    },
    {
      name: 'letters, digits and underscores are safe, a leading digit too',
      mutate: (pod) => {
        dataset(pod, 0).name = '2024_Orders_v2';
      },
      errors: [],
      valid: ['2024_Orders_v2', 'users'],
    },
    {
      name: 'longer than 128 characters',
      mutate: (pod) => {
        dataset(pod, 0).name = 'n'.repeat(129);
      },
      errors: [
        `spicepod.yaml: datasets[0].name: '${'n'.repeat(129)}' is not a safe dataset name; use up to 128 letters, digits and underscores`,
      ],
    },
    {
      name: 'missing',
      mutate: (pod) => {
        delete dataset(pod, 0).name;
      },
      errors: [
        'spicepod.yaml: datasets[0].name: missing; give the dataset a name (letters, digits and underscores)',
      ],
    },
    {
      name: 'duplicates (case-insensitive) all fail',
      mutate: (pod) => {
        dataset(pod, 1).name = 'Orders';
        accel(pod, 1).params = { sqlite_file: '/data/users.sqlite' };
      },
      errors: [
        "spicepod.yaml: datasets[0].name: 'orders' names datasets[0] and datasets[1]; give each dataset a unique name",
        "spicepod.yaml: datasets[1].name: 'Orders' names datasets[0] and datasets[1]; give each dataset a unique name",
      ],
      valid: [],
    },
  ]);
});

describe('a snapshots key without a value', () => {
  it('is no snapshots block (Spice: Option<Snapshots>), so form-2 datasets still serve', () => {
    const pod = basePod();
    pod.datasets = [];
    withPartner(pod);
    const text = stringify(pod).replace(/^snapshots:\n(?: {2}.*\n)+/m, 'snapshots:\n');
    expect(text).toContain('snapshots:\ndatasets:');
    const load = loadSpicepod(text, { file: 'spicepod.yaml' });
    expect(load.errors).toStrictEqual([]);
    expect(load.datasets.map((d) => d.name)).toStrictEqual(['partner']);
  });
});

describe('whole-file problems are fatal', () => {
  const raw = (text: string) => loadSpicepod(text, { file: 'spicepod.yaml' });

  it.each([
    [
      'bad YAML',
      'version: v1\nkind: Spicepod\nname: p\ndatasets:\n  - name: a\n   from: b\n',
      ['spicepod.yaml: invalid YAML at line 6, column 1: Sequence item without - indicator; fix the syntax'],
    ],
    [
      'a duplicate key',
      'version: v1\nkind: Spicepod\nname: p\nname: q\n',
      ['spicepod.yaml: invalid YAML at line 4, column 1: Map keys must be unique; fix the syntax'],
    ],
    [
      // The YAML library's own hint ('please use YAML.parseAllDocuments()') means nothing to an operator.
      'a second document',
      'version: v1\nkind: Spicepod\nname: p\ndatasets: []\n---\nname: q\n',
      [
        "spicepod.yaml: invalid YAML at line 5, column 1: a second YAML document starts here ('---'), but a spicepod is one document; remove it and what follows, or put it in a file of its own",
      ],
    ],
    ['an empty file', '', ['spicepod.yaml: the file is empty; add version, kind, name and datasets']],
    [
      'a list at the top',
      '- a\n- b\n',
      ['spicepod.yaml: the top level must be a map of keys (version, kind, name, snapshots, datasets)'],
    ],
    [
      'missing version, wrong kind',
      'kind: Pod\nname: p\ndatasets: []\n',
      [
        'spicepod.yaml: version: missing; add version: v1',
        "spicepod.yaml: kind: 'Pod' is not a Spicepod; set kind: Spicepod",
      ],
    ],
    [
      'an unknown version',
      'version: v9\nkind: Spicepod\nname: p\ndatasets: []\n',
      ["spicepod.yaml: version: 'v9' is not a Spicepod version this runtime reads; use v1 or v2"],
    ],
    [
      'datasets not a list',
      'version: v1\nkind: Spicepod\nname: p\ndatasets: {a: 1}\n',
      ['spicepod.yaml: datasets: must be a list of datasets'],
    ],
  ])('%s', (_name, text, errors) => {
    const load = raw(text);
    expect(load.errors.map((issue) => issue.message)).toStrictEqual(errors);
    expect(load.errors.every((issue) => issue.fatal)).toBe(true);
    expect(load.fatal).toBe(true);
    expect(load.config).toBeUndefined();
  });
});
