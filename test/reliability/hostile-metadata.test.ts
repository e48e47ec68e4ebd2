/**
 * metadata.json that tries to make a reader read or write outside its dataset: snapshot URIs that
 * climb out of the location with `..` (plain or percent-encoded), name another bucket, another
 * prefix or another scheme; absurd sizes (negative, beyond 2^53, or a huge one the server itself
 * confirms); a dataset name with `../` in the spicepod and in metadata.json. Every one is refused
 * before any download or file write: the targeted objects get no GET (counted at the server), no
 * temporary file appears, and the dataset keeps serving what it had.
 */
import { readdir } from 'node:fs/promises';
import { useLocalAws } from '@ferry/test-support/suite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BUCKET,
  DATASET,
  datasetEntry,
  nextEvent,
  type Published,
  publish,
  readMetadata,
  type Started,
  servedVersion,
  settledStatus,
  snapshotFile,
  spicepod,
  startRuntime,
  temporaries,
  writeMetadata,
} from './support.js';

const PREFIX = 'hostile/';
const LOCATION = `s3://${BUCKET}/${PREFIX}`;
const OTHER_BUCKET = 'ferry-reliability-other';
const SECRET_KEY = 'secret/orders.duckdb';

const { aws, proxy } = useLocalAws({ buckets: [BUCKET, OTHER_BUCKET], faultProxy: true });
let s: Started;
let serving: Published;

beforeAll(async () => {
  const file = await snapshotFile('duckdb', 1);
  serving = await publish(aws, PREFIX, file);
  // Real snapshot objects where an escaping URI would lead, so only the refusal stops a download.
  await aws.putObject(BUCKET, SECRET_KEY, file.bytes);
  await aws.putObject(OTHER_BUCKET, `${PREFIX}${SECRET_KEY}`, file.bytes);
  const yaml = spicepod(aws, { prefix: PREFIX, endpoint: proxy.endpoint }).replace(
    'datasets:\n',
    [
      'datasets:',
      '  - from: postgres:public.evil',
      '    name: ../evil',
      '    acceleration:',
      '      engine: duckdb',
      '      mode: file',
      '      refresh_mode: snapshot',
      '      snapshots: enabled',
      '',
    ].join('\n'),
  );
  s = await startRuntime(yaml);
  await s.runtime.ready(DATASET, { timeoutMs: 30_000 });
});

afterAll(async () => {
  await s?.runtime.close();
});

/** GETs and HEADs that reached the server for any object whose target ends with `suffix`. */
function touched(suffix: string): number {
  return aws.requests
    .list()
    .filter((r) => (r.method === 'GET' || r.method === 'HEAD') && r.target.endsWith(suffix)).length;
}

interface Escape {
  readonly name: string;
  readonly uri?: string;
  readonly size?: number;
  /** The problem the message names. */
  readonly problem: string;
}

const ESCAPES: readonly Escape[] = [
  {
    name: "a snapshot key climbing out with '..'",
    uri: `${LOCATION}../${SECRET_KEY}`,
    problem: "(it has a '..' path segment)",
  },
  {
    name: "a percent-encoded '..' (%2e%2e)",
    uri: `${LOCATION}%2e%2e/${SECRET_KEY}`,
    problem: "(it has a '..' path segment)",
  },
  {
    name: "a double-encoded '..' (%252e%252e)",
    uri: `${LOCATION}%252e%252e/${SECRET_KEY}`,
    problem: "(it has a '..' path segment)",
  },
  {
    name: 'a snapshot URI in another bucket',
    uri: `s3://${OTHER_BUCKET}/${PREFIX}${SECRET_KEY}`,
    problem: `(it is in bucket '${OTHER_BUCKET}', not '${BUCKET}')`,
  },
  {
    name: 'a snapshot URI outside the location prefix',
    uri: `s3://${BUCKET}/${SECRET_KEY}`,
    problem: `(it is not under the prefix '/${PREFIX}')`,
  },
  { name: 'a file:// snapshot URI', uri: 'file:///etc/passwd', problem: '(its scheme is file, not s3)' },
  { name: 'a negative snapshot-size', size: -1, problem: 'snapshot-size' },
  { name: 'a snapshot-size beyond 2^53', size: 1e30, problem: 'snapshot-size' },
];

describe('hostile metadata.json: refused before any download or file write', () => {
  it('a dataset named ../evil is refused by the config; the others run, nothing is written for it', async () => {
    expect(s.runtime.configErrors.map((issue) => issue.path)).toContain('datasets[0].name');
    expect(s.runtime.status(DATASET).state).toMatch(/serving|polling/);
    const files = await readdir(s.dataDir, { recursive: true });
    expect(files.filter((name) => name.includes('evil'))).toEqual([]);
    expect(await readdir(s.dataDir)).toEqual(expect.arrayContaining([`${DATASET}.duckdb`]));
  });

  it.each(ESCAPES)('$name', async (attempt) => {
    const saved = await readMetadata(aws, PREFIX);
    const before = touched(SECRET_KEY);
    const failed = settledStatus(s.runtime, (status) => status.lastPollResult === 'failed');
    const file = await snapshotFile('duckdb', 2);
    await publish(aws, PREFIX, file, {
      mutate: (entry) => {
        if (attempt.uri !== undefined) entry.snapshot = attempt.uri;
        if (attempt.size !== undefined) entry['snapshot-size'] = attempt.size;
      },
    });
    const status = await failed;
    try {
      expect(status.lastError?.code).toBe('ERR_METADATA_INVALID');
      expect(status.lastError?.message).toContain(
        `Invalid metadata.json in location '${LOCATION}': ${DATASET}.snapshots[`,
      );
      expect(status.lastError?.message).toContain(attempt.problem);
      expect(status.lastError?.message).toContain(
        `dataset '${DATASET}' is refused until its writer publishes a valid entry`,
      );
      expect(await servedVersion(s.runtime)).toEqual({ version: 1, snapshotId: serving.snapshotId });
      expect(touched(SECRET_KEY)).toBe(before);
      expect(await temporaries(s.dataDir)).toEqual([]);
    } finally {
      const same = nextEvent(s.runtime, 'poll', (e) => e.result === 'same' || e.result === 'unchanged');
      await writeMetadata(aws, PREFIX, saved);
      await same;
    }
  });

  it('an absurd size the server confirms (a lying HEAD) is refused for disk space before a byte is fetched', async () => {
    const saved = await readMetadata(aws, PREFIX);
    const huge = Number.MAX_SAFE_INTEGER;
    const failed = settledStatus(s.runtime, (status) => status.lastPollResult === 'failed');
    const file = await snapshotFile('duckdb', 2);
    const published = await publish(aws, PREFIX, file, {
      mutate: (entry) => {
        entry['snapshot-size'] = huge;
      },
    });
    proxy.setRules([
      {
        method: 'HEAD',
        target: published.target,
        fault: { kind: 'replace', body: '', headers: { 'content-length': String(huge) } },
      },
    ]);
    try {
      const status = await failed;
      expect(status.lastError?.code).toBe('ERR_DISK_SPACE');
      expect(status.lastError?.message).toMatch(
        new RegExp(
          `^Not enough free disk space to download the snapshot of dataset '${DATASET}' into .+: needs \\d+ bytes, \\d+ available;`,
        ),
      );
      expect(aws.requests.count('GET', published.target)).toBe(0);
      expect(await temporaries(s.dataDir)).toEqual([]);
      expect(await servedVersion(s.runtime)).toEqual({ version: 1, snapshotId: serving.snapshotId });
    } finally {
      proxy.clear();
      const same = nextEvent(s.runtime, 'poll', (e) => e.result === 'same' || e.result === 'unchanged');
      await writeMetadata(aws, PREFIX, saved);
      await same;
    }
  });

  it("a metadata.json key '../evil' is never read as a dataset; the served dataset is undisturbed", async () => {
    const saved = await readMetadata(aws, PREFIX);
    const evil = { ...datasetEntry(saved), name: '../evil' };
    const polled = settledStatus(s.runtime, (status) => status.lastPollResult === 'same');
    await writeMetadata(aws, PREFIX, { ...saved, '../evil': evil, 'last-updated-ms': Date.now() });
    const status = await polled;
    expect(status.state).toBe('serving');
    expect(await servedVersion(s.runtime)).toEqual({ version: 1, snapshotId: serving.snapshotId });
    const files = await readdir(s.dataDir, { recursive: true });
    expect(files.filter((name) => name.includes('evil'))).toEqual([]);
    await writeMetadata(aws, PREFIX, saved);
  });
});
