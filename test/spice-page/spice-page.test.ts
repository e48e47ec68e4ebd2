/**
 * Spice's documentation page for `refresh_mode: snapshot`, sentence by sentence, as a user sees it:
 * every behaviour sentence of its Behavior, Requirements and SQS sections is a test named after its
 * words, run end to end (a real runtime, real local S3 + SQS over HTTP, real DuckDB and SQLite files,
 * the S3 → SQS bridge where notifications matter, the request log where the wire matters). The
 * decisions behind them are also tested on a simulated clock in
 * `packages/core/test/machine-spice-page.test.ts`; configuration sentences are checked on the loader.
 */
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { createOutageTracker, loadSpicepod } from '@ferry/core';
import type { Runtime } from '@ferry/runtime';
import { startServer } from '@ferry/server';
import {
  type FaultProxy,
  type LocalAws,
  type NotificationBridge,
  s3Event,
  startFaultProxy,
  startLocalAws,
  startNotificationBridge,
} from '@ferry/test-support';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type Behaviour,
  BUCKET,
  collect,
  DATASET,
  type EngineName,
  location,
  nextEvent,
  type PodOptions,
  publish,
  servedVersion,
  setCurrentId,
  snapshotFile,
  spicepod,
  startRuntime,
} from '../reliability/support.js';

const SNAPSHOTS_DOCS = 'https://spiceai.org/docs/features/data-acceleration/snapshots';
const OLDER_WARNING =
  'snapshot metadata current id is older than the locally loaded snapshot; skipping reload to avoid regression';
const LONG = '10m';

let aws: LocalAws;
let proxy: FaultProxy;
const runtimes: Runtime[] = [];
const bridges: NotificationBridge[] = [];

beforeAll(async () => {
  aws = await startLocalAws();
  await aws.createBucket(BUCKET);
  proxy = await startFaultProxy(aws.endpoint);
});

// Each test's runtimes and bridges end with it: no consumer of one test reads while another counts.
afterEach(async () => {
  await Promise.all(bridges.splice(0).map((bridge) => bridge.stop()));
  await Promise.all(runtimes.splice(0).map((runtime) => runtime.close()));
});

afterAll(async () => {
  await proxy?.close();
  await aws?.close();
});

let prefixes = 0;
/** A fresh prefix (location) per test, so tests never see each other's snapshots. */
function freshPrefix(name: string): string {
  return `page-${++prefixes}-${name}/`;
}

async function start(
  options: Omit<PodOptions, 'endpoint'>,
  runtimeOptions: Parameters<typeof startRuntime>[1] = {},
) {
  const started = await startRuntime(spicepod(aws, { endpoint: proxy.endpoint, ...options }), runtimeOptions);
  runtimes.push(started.runtime);
  return started;
}

const metadataTarget = (prefix: string): string => `${BUCKET}/${prefix}metadata.json`;

/**
 * What the runtime asked the store for: its S3 endpoint is the fault proxy, which records every
 * request (the test's own writes go around it). `since` is a previous `runtimeRequests(…).length`.
 */
function runtimeRequests(filter: { readonly method?: string; readonly target?: string }, since = 0) {
  return proxy.requests(filter).slice(since);
}

const metadataGets = (prefix: string, since = 0) =>
  runtimeRequests({ method: 'GET', target: metadataTarget(prefix) }, since);

async function queueFor(
  prefix: string,
  name: string,
): Promise<{ queueUrl: string; bridge: NotificationBridge }> {
  const queueUrl = await aws.createQueue(name);
  const bridge = startNotificationBridge(aws, { bucket: BUCKET, queueUrl, prefix });
  bridges.push(bridge);
  return { queueUrl, bridge };
}

const poll = (runtime: Runtime, result: string, dataset = DATASET) =>
  nextEvent(runtime, 'poll', (event) => event.dataset === dataset && event.result === result);

const swapTo = (runtime: Runtime, to: number, dataset = DATASET) =>
  nextEvent(runtime, 'swap', (event) => event.dataset === dataset && event.to === to);

describe('Snapshot Refresh Mode: Behavior', () => {
  it('On startup, the runtime bootstraps from the most recent snapshot, identical to other snapshot-enabled modes.', async () => {
    const prefix = freshPrefix('startup');
    await publish(aws, prefix, await snapshotFile('duckdb', 1));
    const newest = await publish(aws, prefix, await snapshotFile('duckdb', 2));
    const { runtime } = await start({ prefix, interval: LONG });
    await runtime.ready(DATASET);
    expect(await servedVersion(runtime)).toEqual({ version: 2, snapshotId: newest.snapshotId });
  });

  it.each<Behaviour>(['warn', 'retry', 'fallback'])(
    'When no snapshot has been published yet, the dataset waits for the first one, whatever bootstrap_on_failure_behavior is set to (%s). Spice logs Snapshot acceleration for dataset … is waiting for its first snapshot, checks the location every refresh_check_interval, and restores the first snapshot once a writer publishes it.',
    async (behaviour) => {
      const prefix = freshPrefix(`waiting-${behaviour}`);
      aws.requests.clear();
      const { runtime, logger } = await start({ prefix, behaviour, interval: '200ms' });
      const [line] = await logger.waitFor((record) =>
        record.message.startsWith('Snapshot acceleration for dataset'),
      );
      expect(line?.message).toBe(
        `Snapshot acceleration for dataset '${DATASET}' is waiting for its first snapshot. Ensure the snapshot location '${location(prefix)}' is correct and that the writer has published a snapshot. See: ${SNAPSHOTS_DOCS}`,
      );
      // Three checks of the location: the startup one, then one per interval.
      await nextEvent(runtime, 'poll', () => metadataGets(prefix).length >= 3);
      expect(runtime.status(DATASET).state).toBe('waiting');
      const first = await publish(aws, prefix, await snapshotFile('duckdb', 1));
      await swapTo(runtime, first.snapshotId);
      expect(await servedVersion(runtime)).toEqual({ version: 1, snapshotId: first.snapshotId });
    },
  );

  it('After bootstrap, the runtime polls the snapshot store at refresh_check_interval (default: 60s) for newer snapshots.', async () => {
    const prefix = freshPrefix('polls');
    await publish(aws, prefix, await snapshotFile('duckdb', 1));
    const { runtime } = await start({ prefix, interval: '200ms' });
    await runtime.ready(DATASET);
    const newer = await publish(aws, prefix, await snapshotFile('duckdb', 2));
    await swapTo(runtime, newer.snapshotId);
    expect((await servedVersion(runtime)).version).toBe(2);

    const defaults = loadSpicepod(
      spicepod(aws, { prefix, endpoint: proxy.endpoint }).replace(/ {6}refresh_check_interval: .*\n/, ''),
      { file: 'spicepod.yaml' },
    );
    expect(defaults.errors).toEqual([]);
    expect(defaults.datasets[0]?.refreshCheckIntervalMs).toBe(60_000);
  });

  it("Each poll reads the snapshot store's metadata conditionally, sending the ETag recorded by the previous poll in If-None-Match. When the store reports that the metadata is unchanged, the poll ends without downloading it.", async () => {
    const prefix = freshPrefix('conditional');
    const served = await publish(aws, prefix, await snapshotFile('duckdb', 1));
    const { runtime } = await start({ prefix, interval: LONG });
    await runtime.ready(DATASET);
    const etag = (await aws.s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: `${prefix}metadata.json` })))
      .ETag;
    expect(etag).toBeDefined();
    const mark = metadataGets(prefix).length;
    const objectMark = runtimeRequests({ target: served.target }).length;
    aws.requests.clear();
    for (let i = 0; i < 2; i++) {
      const unchanged = poll(runtime, 'unchanged');
      await runtime.send(DATASET, 'poll.now');
      await unchanged;
    }
    expect(metadataGets(prefix, mark).map((request) => request.headers['if-none-match'])).toEqual([
      etag,
      etag,
    ]);
    // The store answered 304 Not Modified without a body, and no snapshot object was fetched.
    expect(
      aws.requests
        .list({ method: 'GET', target: metadataTarget(prefix) })
        .map((r) => [r.status, r.responseBytes]),
    ).toEqual([
      [304, 0],
      [304, 0],
    ]);
    expect(runtimeRequests({ target: served.target }, objectMark)).toEqual([]);
  });

  it('When a newer snapshot is found, its schema is validated against the current acceleration schema before downloading.', async () => {
    const prefix = freshPrefix('schema');
    await publish(aws, prefix, await snapshotFile('duckdb', 1));
    const { runtime } = await start({ prefix, interval: LONG });
    await runtime.ready(DATASET);
    const wider = await publish(aws, prefix, await snapshotFile('duckdb', 2, { wide: true }));
    const refused = poll(runtime, 'refused');
    await runtime.send(DATASET, 'poll.now');
    await refused;
    expect(runtimeRequests({ target: wider.target })).toEqual([]);
    expect(runtime.status(DATASET).status?.lastError?.code).toBe('ERR_SNAPSHOT_SCHEMA_MISMATCH');
    expect((await servedVersion(runtime)).version).toBe(1);
  });

  it('A poll reads the metadata once and uses that read for the snapshot id comparison, the schema validation, and the download, so the snapshot that is downloaded is the one whose schema was validated, even if a writer publishes another snapshot during the poll.', async () => {
    const prefix = freshPrefix('one-read');
    await publish(aws, prefix, await snapshotFile('duckdb', 1));
    const { runtime } = await start({ prefix, interval: LONG });
    await runtime.ready(DATASET);
    const second = await publish(aws, prefix, await snapshotFile('duckdb', 2));
    let third: Awaited<ReturnType<typeof publish>> | undefined;
    const release = proxy.addRule({
      method: 'GET',
      target: second.target,
      times: 1,
      fault: { kind: 'pass' },
      // While the poll downloads the snapshot it validated, a writer publishes one of another schema.
      onMatch: async () => {
        third = await publish(aws, prefix, await snapshotFile('duckdb', 3, { wide: true }));
      },
    });
    try {
      const mark = metadataGets(prefix).length;
      const swapped = swapTo(runtime, second.snapshotId);
      await runtime.send(DATASET, 'poll.now');
      await swapped;
      expect(metadataGets(prefix, mark)).toHaveLength(1);
      expect((await servedVersion(runtime)).version).toBe(2);
      expect(third).toBeDefined();
      // The next poll sees the third snapshot and validates it on its own: its schema is refused.
      const refused = poll(runtime, 'refused');
      await runtime.send(DATASET, 'poll.now');
      await refused;
      expect(runtimeRequests({ target: third?.target ?? '' })).toEqual([]);
    } finally {
      release();
    }
  });

  it('With bootstrap_on_failure_behavior: retry, a failed download retries the whole poll. Each attempt reads the metadata again and validates the snapshot before downloading it, so a snapshot published to replace a broken one is picked up.', async () => {
    const prefix = freshPrefix('retry');
    await publish(aws, prefix, await snapshotFile('duckdb', 1));
    const { runtime } = await start({ prefix, behaviour: 'retry', interval: LONG });
    await runtime.ready(DATASET);
    const broken = await publish(aws, prefix, await snapshotFile('duckdb', 2), {
      mutate: (entry) => {
        entry['snapshot-checksum'] = '0'.repeat(64);
      },
    });
    const mark = metadataGets(prefix).length;
    const polls = collect(runtime, 'poll');
    const failed = nextEvent(runtime, 'error', (event) => event.snapshotId === broken.snapshotId);
    await runtime.send(DATASET, 'poll.now');
    await failed;
    // The retry waits out a backoff of about a second: the writer replaces the broken snapshot.
    const replacement = await publish(aws, prefix, await snapshotFile('duckdb', 3));
    await swapTo(runtime, replacement.snapshotId);
    expect((await servedVersion(runtime)).version).toBe(3);
    // Each attempt read the metadata again (a read of its own), and none of them ended as "unchanged".
    expect(metadataGets(prefix, mark).length).toBeGreaterThanOrEqual(2);
    expect(polls.map((event) => event.result)).not.toContain('unchanged');
  });

  describe('A poll that does not load the current snapshot records no ETag, so the next poll reads the metadata in full.', () => {
    /**
     * The next two polls: each starts with no ETag recorded and reads the metadata in full, so none
     * of them ends as "unchanged" (on the wire the location's one shared reader may still revalidate
     * its own cached copy with a 304: the dataset is handed the whole document either way).
     */
    async function nextTwoPollsReadInFull(runtime: Runtime, prefix: string): Promise<void> {
      // The poll that does not load the current snapshot.
      const first = nextEvent(runtime, 'poll', (event) => event.dataset === DATASET);
      await runtime.send(DATASET, 'poll.now');
      expect((await first).result).not.toMatch(/newer|same|unchanged/);
      for (let i = 0; i < 2; i++) {
        expect(runtime.status(DATASET).status?.etag).toBeNull();
        const mark = metadataGets(prefix).length;
        const done = nextEvent(runtime, 'poll', (event) => event.dataset === DATASET);
        await runtime.send(DATASET, 'poll.now');
        expect((await done).result).not.toBe('unchanged');
        expect(metadataGets(prefix, mark)).toHaveLength(1);
        expect(runtime.status(DATASET).status?.etag).toBeNull();
      }
    }

    it('This applies when bootstrap_on_failure_behavior: warn skipped a failed download', async () => {
      const prefix = freshPrefix('no-etag-warn');
      await publish(aws, prefix, await snapshotFile('duckdb', 1));
      const { runtime } = await start({ prefix, behaviour: 'warn', interval: LONG });
      await runtime.ready(DATASET);
      await publish(aws, prefix, await snapshotFile('duckdb', 2), {
        mutate: (entry) => {
          entry['snapshot-checksum'] = '0'.repeat(64);
        },
      });
      await nextTwoPollsReadInFull(runtime, prefix);
      expect((await servedVersion(runtime)).version).toBe(1);
    });

    it('or fallback loaded an older snapshot', async () => {
      const prefix = freshPrefix('no-etag-fallback');
      const good = await publish(aws, prefix, await snapshotFile('duckdb', 1));
      await publish(aws, prefix, await snapshotFile('duckdb', 2), {
        mutate: (entry) => {
          entry['snapshot-checksum'] = '0'.repeat(64);
        },
      });
      const { runtime } = await start({ prefix, behaviour: 'fallback', interval: LONG });
      await runtime.ready(DATASET);
      expect(await servedVersion(runtime)).toEqual({ version: 1, snapshotId: good.snapshotId });
      await nextTwoPollsReadInFull(runtime, prefix);
    });

    it("and when the store's current snapshot id is older than the loaded one, in which case every poll logs the snapshot metadata current id is older than the locally loaded snapshot warning.", async () => {
      const prefix = freshPrefix('no-etag-older');
      const first = await publish(aws, prefix, await snapshotFile('duckdb', 1));
      await publish(aws, prefix, await snapshotFile('duckdb', 2));
      const { runtime, logger } = await start({ prefix, interval: LONG });
      await runtime.ready(DATASET);
      await setCurrentId(aws, prefix, first.snapshotId);
      const mark = logger.records.length;
      await nextTwoPollsReadInFull(runtime, prefix);
      const warnings = logger.since(mark).filter((record) => record.message === OLDER_WARNING);
      expect(warnings.map((record) => record.level)).toEqual(['warn', 'warn', 'warn']);
      expect((await servedVersion(runtime)).version).toBe(2);
    });
  });

  it('The accelerator file is swapped atomically — queries continue to be served from the previous snapshot until the swap completes.', async () => {
    const prefix = freshPrefix('atomic');
    await publish(aws, prefix, await snapshotFile('duckdb', 1, { rows: 2_000 }));
    const { runtime } = await start({ prefix, interval: LONG });
    await runtime.ready(DATASET);
    const next = await publish(aws, prefix, await snapshotFile('duckdb', 2, { rows: 3_000 }));
    const duringDownload: number[] = [];
    const release = proxy.addRule({
      method: 'GET',
      target: next.target,
      times: 1,
      fault: { kind: 'pass' },
      // While the new snapshot downloads, every query still reads the previous one.
      onMatch: async () => {
        for (let i = 0; i < 20; i++) duringDownload.push((await servedVersion(runtime)).version);
      },
    });
    let stop = false;
    const versions: number[] = [];
    const load = (async () => {
      // servedVersion throws if one result mixed rows of two snapshots.
      while (!stop) versions.push((await servedVersion(runtime)).version);
    })();
    try {
      const swapped = swapTo(runtime, next.snapshotId);
      await runtime.send(DATASET, 'poll.now');
      await swapped;
      stop = true;
      await load;
    } finally {
      release();
    }
    expect(duringDownload).toEqual(Array(20).fill(1));
    expect(versions.length).toBeGreaterThan(0);
    // Old results, then new ones, never back.
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect((await servedVersion(runtime)).version).toBe(2);
  });

  it('INSERT, UPDATE, DELETE, and TRUNCATE statements are all rejected with an error since the acceleration is driven exclusively from snapshots.', async () => {
    const prefix = freshPrefix('writes');
    await publish(aws, prefix, await snapshotFile('duckdb', 1), { dataset: 'orders' });
    await publish(aws, prefix, await snapshotFile('sqlite', 1, { dataset: 'users' }), { dataset: 'users' });
    const { runtime } = await start({
      prefix,
      interval: LONG,
      datasets: [
        { name: 'orders', engine: 'duckdb' },
        { name: 'users', engine: 'sqlite' },
      ],
    });
    await runtime.ready();
    const server = await startServer(runtime, { port: 0 });
    try {
      for (const table of ['orders', 'users']) {
        for (const sql of [
          `INSERT INTO ${table} VALUES (99, 99)`,
          `UPDATE ${table} SET version = 0`,
          `DELETE FROM ${table}`,
          `TRUNCATE ${table}`,
        ]) {
          await expect(runtime.query(sql), sql).rejects.toThrow(/snapshot/);
          const response = await fetch(`${server.url}/v1/sql`, { method: 'POST', body: sql });
          expect(response.status, sql).toBe(400);
          expect(await response.text(), sql).toMatch(/snapshot/);
        }
      }
      expect((await servedVersion(runtime, 'users')).version).toBe(1);
    } finally {
      await server.close();
    }
  });
});

describe('Snapshot Refresh Mode: Requirements', () => {
  it('acceleration.snapshots must be enabled or bootstrap_only.', () => {
    for (const mode of ['disabled', 'create_only']) {
      const load = loadSpicepod(
        spicepod(aws, { prefix: 'x/', endpoint: proxy.endpoint }).replace(
          'snapshots: enabled',
          `snapshots: ${mode}`,
        ),
        { file: 'spicepod.yaml' },
      );
      expect(load.datasets, mode).toEqual([]);
      expect(
        load.errors.map((issue) => issue.path),
        mode,
      ).toContain('datasets[0].acceleration.snapshots');
    }
  });

  it('Snapshot mode is a snapshot consumer only, so the two behave identically here: creation is skipped for the mode entirely and the dataset never publishes new snapshots — a separate writer must produce them.', async () => {
    const names = ['enabled_ds', 'bootstrap_ds'] as const;
    /** The spicepod with the second dataset's `snapshots: enabled` made `bootstrap_only`. */
    const pod = (options: Omit<PodOptions, 'endpoint' | 'datasets'>): string => {
      const lines = spicepod(aws, {
        ...options,
        endpoint: proxy.endpoint,
        datasets: names.map((name) => ({ name, engine: 'duckdb' as const })),
      }).split('\n');
      lines[lines.lastIndexOf('      snapshots: enabled')] = '      snapshots: bootstrap_only';
      return lines.join('\n');
    };
    const startPod = async (yaml: string) => {
      const started = await startRuntime(yaml);
      runtimes.push(started.runtime);
      await started.runtime.ready();
      return started.runtime;
    };
    const publishBoth = async (prefix: string, version: number) => {
      const ids = new Map<string, number>();
      for (const name of names) {
        ids.set(
          name,
          (
            await publish(aws, prefix, await snapshotFile('duckdb', version, { dataset: name }), {
              dataset: name,
            })
          ).snapshotId,
        );
      }
      return ids;
    };
    /** Publishes a version of both and waits for both swaps (listening from before the first publish). */
    const swapsOfBoth = async (runtime: Runtime, publishing: () => Promise<Map<string, number>>) => {
      const seen: { dataset: string; to: number }[] = [];
      const off = runtime.on('swap', (event) => seen.push(event));
      try {
        const ids = await publishing();
        await Promise.all(
          names.map((name) => {
            const to = ids.get(name) ?? -1;
            return seen.some((event) => event.dataset === name && event.to === to)
              ? undefined
              : swapTo(runtime, to, name);
          }),
        );
      } finally {
        off();
      }
    };

    // Polling at refresh_check_interval, and poll.now.
    const polled = freshPrefix('bootstrap-only-polls');
    await publishBoth(polled, 1);
    const polling = await startPod(pod({ prefix: polled, interval: '300ms' }));
    for (const name of names) {
      expect(polling.status(name).status?.snapshotsMode).toBe(
        name === 'enabled_ds' ? 'enabled' : 'bootstrap_only',
      );
    }
    await swapsOfBoth(polling, () => publishBoth(polled, 2));
    for (const name of names) {
      const checked = nextEvent(polling, 'poll', (event) => event.dataset === name);
      await polling.send(name, 'poll.now');
      expect((await checked).result, name).toMatch(/unchanged|same/);
    }

    // Reloading on a notification (a ten-minute interval: only the queue can do it in time).
    const notified = freshPrefix('bootstrap-only-sqs');
    const { queueUrl } = await queueFor(notified, 'page-bootstrap-only');
    await publishBoth(notified, 1);
    const listening = await startPod(
      pod({ prefix: notified, interval: LONG, queueUrl, queueEndpoint: aws.endpoint }),
    );
    await swapsOfBoth(listening, () => publishBoth(notified, 2));

    // Neither dataset ever wrote to the store: the runtime sent no PUT, POST or DELETE.
    const writes = proxy.requests().filter((request) => !['GET', 'HEAD'].includes(request.method));
    expect(
      writes.filter(
        (request) =>
          request.target.startsWith(`${BUCKET}/${polled}`) ||
          request.target.startsWith(`${BUCKET}/${notified}`),
      ),
    ).toEqual([]);
  });

  it('The acceleration engine must be a snapshot-capable file-based engine: DuckDB, SQLite, Cayenne, or Turso.', async () => {
    const withEngine = (engine: string) =>
      loadSpicepod(
        spicepod(aws, { prefix: 'x/', endpoint: proxy.endpoint }).replace(
          'engine: duckdb',
          `engine: ${engine}`,
        ),
        {
          file: 'spicepod.yaml',
        },
      );
    for (const engine of ['duckdb', 'sqlite', 'turso']) expect(withEngine(engine).errors, engine).toEqual([]);
    // Cayenne is a snapshot-capable Spice engine this runtime does not implement: refused by name.
    expect(withEngine('cayenne').errors.map((issue) => issue.message)).toEqual([
      expect.stringContaining("engine 'cayenne' is not supported by this runtime"),
    ]);
    expect(withEngine('arrow').errors.map((issue) => issue.message)).toEqual([
      expect.stringContaining("engine 'arrow' cannot load snapshots (it is not a file engine)"),
    ]);

    // A Turso dataset serves an SQLite-format snapshot a Turso writer recorded.
    const prefix = freshPrefix('turso');
    const file = await snapshotFile('sqlite', 1);
    await publish(aws, prefix, file, {
      mutate: (entry, document) => {
        entry['snapshot-engine'] = 'turso';
        (document[DATASET] as Record<string, unknown>).engine = 'turso';
      },
    });
    const { runtime } = await start({
      prefix,
      interval: LONG,
      datasets: [{ name: DATASET, engine: 'turso' as EngineName }],
    });
    await runtime.ready(DATASET);
    expect((await servedVersion(runtime)).version).toBe(1);
  });

  it("To read snapshots published to S3 without naming the original federated source, an engine, or a top-level snapshots section, set the dataset's from to the snapshot location and file_format: snapshot.", async () => {
    const prefix = freshPrefix('file-format');
    const published = await publish(aws, prefix, await snapshotFile('sqlite', 1));
    const started = await startRuntime(fileFormatPod(prefix, '200ms'));
    runtimes.push(started.runtime);
    await started.runtime.ready(DATASET);
    expect(await servedVersion(started.runtime)).toEqual({ version: 1, snapshotId: published.snapshotId });
    // The engine comes from the snapshots (metadata.json's `engine`), not from the spicepod.
    expect((await started.runtime.query(`SELECT count(*) AS n FROM ${DATASET}`)).engine).toBe('sqlite');
  });
});

/** A dataset whose `from` is the snapshot location (`file_format: snapshot`), and no `snapshots` section. */
function fileFormatPod(prefix: string, interval: string, extraParams: readonly string[] = []): string {
  return [
    'version: v1',
    'kind: Spicepod',
    'name: page',
    'datasets:',
    `  - from: ${location(prefix)}`,
    `    name: ${DATASET}`,
    '    params:',
    '      file_format: snapshot',
    `      s3_endpoint: ${proxy.endpoint}`,
    '      allow_http: true',
    `      s3_region: ${aws.region}`,
    '      s3_auth: key',
    `      s3_key: ${aws.credentials.accessKeyId}`,
    `      s3_secret: ${aws.credentials.secretAccessKey}`,
    ...extraParams.map((line) => `      ${line}`),
    '    acceleration:',
    `      refresh_check_interval: ${interval}`,
    '',
  ].join('\n');
}

describe('Reload on S3 event notifications', () => {
  it("When the snapshot location is on Amazon S3, set snapshots.params.s3_queue_url to an Amazon SQS queue that receives the location's S3 event notifications, and refresh_mode: snapshot datasets reload as soon as a new snapshot is published", async () => {
    const prefix = freshPrefix('sqs');
    const { queueUrl } = await queueFor(prefix, 'page-sqs');
    await publish(aws, prefix, await snapshotFile('duckdb', 1));
    const { runtime, logger } = await start({
      prefix,
      interval: LONG,
      queueUrl,
      queueEndpoint: aws.endpoint,
    });
    await runtime.ready(DATASET);
    const mark = logger.records.length;
    const next = await publish(aws, prefix, await snapshotFile('duckdb', 2));
    await swapTo(runtime, next.snapshotId);
    const checks = logger
      .since(mark)
      .filter((record) => record.message.startsWith('Checking the snapshot metadata'));
    expect(checks.map((record) => record.fields.trigger)).toEqual(['notification']);
  });

  it("A writer makes a snapshot current by rewriting the location's metadata.json, so an ObjectCreated notification for that object triggers the reload.", async () => {
    const prefix = freshPrefix('commit');
    const { queueUrl, bridge } = await queueFor(prefix, 'page-commit');
    await publish(aws, prefix, await snapshotFile('duckdb', 1));
    const { runtime } = await start({ prefix, interval: LONG, queueUrl, queueEndpoint: aws.endpoint });
    await runtime.ready(DATASET);
    await bridge.next(); // the startup publication's notifications, drained
    const swaps = collect(runtime, 'swap');
    const notifications = collect(runtime, 'notification');
    const next = await publish(aws, prefix, await snapshotFile('duckdb', 2));
    await swapTo(runtime, next.snapshotId);
    expect(swaps).toHaveLength(1);
    expect(notifications.some((event) => event.outcome === 'deleted')).toBe(true);
  });

  it('Spice reads metadata.json once for each batch of such notifications it receives and reloads only the datasets whose current snapshot changed, with the same snapshot id, schema, and checksum checks as a poll.', async () => {
    const prefix = freshPrefix('batch');
    const queueUrl = await aws.createQueue('page-batch');
    const names = ['alpha', 'beta', 'gamma'];
    for (const name of names)
      await publish(aws, prefix, await snapshotFile('duckdb', 1, { dataset: name }), { dataset: name });
    const { runtime } = await start({
      prefix,
      interval: LONG,
      queueUrl,
      queueEndpoint: aws.endpoint,
      datasets: names.map((name) => ({ name, engine: 'duckdb' as const })),
    });
    await runtime.ready();
    const moved = await publish(aws, prefix, await snapshotFile('duckdb', 2, { dataset: 'alpha' }), {
      dataset: 'alpha',
    });
    const broken = await publish(aws, prefix, await snapshotFile('duckdb', 2, { dataset: 'beta' }), {
      dataset: 'beta',
      mutate: (entry) => {
        entry['snapshot-checksum'] = '0'.repeat(64);
      },
    });
    const swaps = collect(runtime, 'swap');
    const errors = collect(runtime, 'error');
    const polls = collect(runtime, 'poll');
    const notifications = collect(runtime, 'notification');
    const mark = metadataGets(prefix).length;
    const commit = JSON.stringify(
      s3Event({ eventName: 'ObjectCreated:Put', bucket: BUCKET, key: `${prefix}metadata.json` }),
    );
    const swapped = swapTo(runtime, moved.snapshotId, 'alpha');
    const refused = nextEvent(runtime, 'error', (event) => event.dataset === 'beta');
    let deleted = 0;
    const handled = nextEvent(runtime, 'notification', (event) => {
      if (event.outcome === 'deleted') deleted += event.count;
      return deleted >= 3;
    });
    // One batch of three notifications of the same commit: sent in one request, so a receive finds
    // all three (sent one by one, a receive between two sends split them into two or three batches).
    await aws.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: [0, 1, 2].map((i) => ({ Id: `commit-${i}`, MessageBody: commit })),
      }),
    );
    await Promise.all([swapped, refused, handled]);
    expect(swaps.map((swap) => swap.dataset)).toEqual(['alpha']);
    expect(errors.map((error) => [error.dataset, error.code, error.snapshotId])).toEqual([
      ['beta', 'ERR_SNAPSHOT_CHECKSUM_MISMATCH', broken.snapshotId],
    ]);
    // gamma's current snapshot did not change: it was not reloaded, not even checked.
    expect(polls.filter((event) => event.dataset === 'gamma')).toEqual([]);
    // The consumer's read and the reloads it asked for: one metadata.json GET per batch read, shared.
    const batches = notifications.filter((event) => event.outcome === 'received');
    expect(batches.reduce((sum, event) => sum + event.count, 0)).toBe(3);
    expect(metadataGets(prefix, mark).length).toBe(batches.length);
  });

  it('Notifications for snapshot files and for removed objects are deleted from the queue without a reload.', async () => {
    const prefix = freshPrefix('noise');
    const queueUrl = await aws.createQueue('page-noise');
    await publish(aws, prefix, await snapshotFile('duckdb', 1));
    const { runtime } = await start({ prefix, interval: LONG, queueUrl, queueEndpoint: aws.endpoint });
    await runtime.ready(DATASET);
    const mark = metadataGets(prefix).length;
    const notifications = collect(runtime, 'notification');
    const deleted = nextEvent(
      runtime,
      'notification',
      () =>
        notifications
          .filter((event) => event.outcome === 'deleted')
          .reduce((n, event) => n + event.count, 0) >= 2,
    );
    for (const body of [
      s3Event({
        eventName: 'ObjectCreated:Put',
        bucket: BUCKET,
        key: `${prefix}month=2026-01/day=2026-01-01/dataset=orders/orders_x.duckdb`,
      }),
      s3Event({ eventName: 'ObjectRemoved:Delete', bucket: BUCKET, key: `${prefix}metadata.json` }),
    ]) {
      await aws.sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(body) }));
    }
    await deleted;
    expect(metadataGets(prefix, mark)).toEqual([]);
    const queue = aws.server.inspectQueue('page-noise');
    expect((queue?.messages.ready.length ?? 0) + (queue?.messages.inflight.length ?? 0)).toBe(0);
  });

  it('A reader that is still waiting for its first snapshot restores it when the notification arrives.', async () => {
    const prefix = freshPrefix('waiting-sqs');
    const { queueUrl } = await queueFor(prefix, 'page-waiting-sqs');
    const { runtime } = await start({ prefix, interval: LONG, queueUrl, queueEndpoint: aws.endpoint });
    await nextEvent(runtime, 'state', (event) => event.dataset === DATASET && event.state === 'waiting');
    const first = await publish(aws, prefix, await snapshotFile('duckdb', 1));
    await swapTo(runtime, first.snapshotId);
    expect((await servedVersion(runtime)).version).toBe(1);
  });

  it("One queue per reader process. All refresh_mode: snapshot datasets in one process share that process's queue.", async () => {
    const prefix = freshPrefix('shared-queue');
    const { queueUrl, bridge } = await queueFor(prefix, 'page-shared-queue');
    const names = ['one', 'two', 'three'];
    for (const name of names)
      await publish(aws, prefix, await snapshotFile('sqlite', 1, { dataset: name }), { dataset: name });
    const { runtime, logger } = await start({
      prefix,
      interval: LONG,
      queueUrl,
      queueEndpoint: aws.endpoint,
      datasets: names.map((name) => ({ name, engine: 'sqlite' as const })),
    });
    await runtime.ready();
    // One consumer for the process: one listening line for the location, not one per dataset.
    expect(
      logger.records.filter((record) => record.message.includes('is listening for S3 event notifications')),
    ).toHaveLength(1);
    const sentBefore = bridge.sent();
    const swaps = collect(runtime, 'swap');
    for (const name of names)
      await publish(aws, prefix, await snapshotFile('sqlite', 2, { dataset: name }), { dataset: name });
    await nextEvent(runtime, 'swap', () => new Set(swaps.map((swap) => swap.dataset)).size === 3);
    expect(bridge.sent()).toBeGreaterThan(sentBefore);
  });

  it('A notification for an object outside the location is logged as an error and left on the queue, which delivers it again after each visibility timeout until it expires.', async () => {
    const prefix = freshPrefix('outside');
    const queueUrl = await aws.createQueue('page-outside');
    await publish(aws, prefix, await snapshotFile('duckdb', 1));
    const { runtime, logger } = await start(
      { prefix, interval: LONG, queueUrl, queueEndpoint: aws.endpoint },
      { notifications: { visibilityTimeoutSeconds: 1, waitTimeSeconds: 1 } },
    );
    await runtime.ready(DATASET);
    const outsideKey = `elsewhere/metadata.json`;
    await aws.sqs.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: JSON.stringify(
          s3Event({ eventName: 'ObjectCreated:Put', bucket: BUCKET, key: outsideKey }),
        ),
      }),
    );
    const lines = await logger.waitFor(
      (record) =>
        record.message.includes(`for 's3://${BUCKET}/${outsideKey}', which is outside the location`),
      {
        count: 2,
      },
    );
    expect(lines.map((line) => line.level)).toEqual(['error', 'error']);
    expect(lines[0]?.message).toBe(
      `Snapshot location '${location(prefix).slice(0, -1)}' received an S3 event notification for 's3://${BUCKET}/${outsideKey}', which is outside the location, so the SQS message was left on the queue (not deleted) and will be delivered again after each visibility timeout until it expires. The queue in \`s3_queue_url\` must receive only this location's notifications: filter the bucket notification by the location's prefix, or fan out through SNS to a queue per consumer. See: ${SNAPSHOTS_DOCS}`,
    );
    expect(Number(lines[1]?.fields.receiveCount)).toBeGreaterThan(Number(lines[0]?.fields.receiveCount));
  });

  it("Permissions. Spice reads the queue with the snapshot location's credentials: s3_key and s3_secret when both are set, otherwise the default AWS credential chain. The region comes from the queue URL.", () => {
    const queueUrl = 'https://sqs.eu-west-1.amazonaws.com/123456789012/spice-reader-1';
    const withKeys = loadSpicepod(spicepod(aws, { prefix: 'x/', endpoint: proxy.endpoint, queueUrl }), {
      file: 'spicepod.yaml',
    });
    expect(withKeys.errors).toEqual([]);
    expect(withKeys.config?.notifications?.s3.credentials).toEqual(
      expect.objectContaining({ accessKeyId: aws.credentials.accessKeyId }),
    );
    expect(withKeys.config?.notifications?.queue.region).toBe('eu-west-1');
    expect(aws.region).not.toBe('eu-west-1');
    const chain = loadSpicepod(
      spicepod(aws, { prefix: 'x/', endpoint: proxy.endpoint, queueUrl })
        .replace(/ {4}s3_auth: key\n/, '')
        .replace(/ {4}s3_key: .*\n/, '')
        .replace(/ {4}s3_secret: .*\n/, ''),
      { file: 'spicepod.yaml' },
    );
    expect(chain.errors).toEqual([]);
    expect(chain.config?.notifications?.s3.credentials).toBeUndefined();
  });

  it('Datasets keep checking the location every refresh_check_interval, which covers notifications that never arrive.', async () => {
    const prefix = freshPrefix('missed');
    // A queue nobody sends to: its notifications never arrive.
    const queueUrl = await aws.createQueue('page-missed');
    await publish(aws, prefix, await snapshotFile('duckdb', 1));
    const { runtime } = await start({ prefix, interval: '200ms', queueUrl, queueEndpoint: aws.endpoint });
    await runtime.ready(DATASET);
    const next = await publish(aws, prefix, await snapshotFile('duckdb', 2));
    await swapTo(runtime, next.snapshotId);
  });

  it('When Spice cannot reach SQS, it logs a warning when the outage starts, an error if it lasts five minutes, and an info message when it recovers. Datasets reload on refresh_check_interval in the meantime.', async () => {
    const prefix = freshPrefix('outage');
    const queueUrl = await aws.createQueue('page-outage');
    const sqsProxy = await startFaultProxy(aws.endpoint);
    try {
      await publish(aws, prefix, await snapshotFile('duckdb', 1));
      const { runtime, logger } = await start(
        { prefix, interval: '200ms', queueUrl, queueEndpoint: sqsProxy.endpoint },
        { notifications: { waitTimeSeconds: 1, backoffScale: 0.05 } },
      );
      await runtime.ready(DATASET);
      const display = location(prefix).slice(0, -1);
      sqsProxy.setRules([{ operation: 'AmazonSQS.ReceiveMessage', fault: { kind: 'drop' } }]);
      const [warning] = await logger.waitFor((record) =>
        record.message.startsWith(
          `Failed to receive S3 event notifications from the SQS queue in \`s3_queue_url\` for snapshot location '${display}', so datasets with \`refresh_mode: snapshot\` fall back to checking the location every \`refresh_check_interval\` until it recovers. Cause: `,
        ),
      );
      expect(warning?.level).toBe('warn');
      const next = await publish(aws, prefix, await snapshotFile('duckdb', 2));
      await swapTo(runtime, next.snapshotId);
      sqsProxy.clear();
      const [recovered] = await logger.waitFor((record) =>
        record.message.startsWith(
          `Snapshot location '${display}' is receiving S3 event notifications from the SQS queue in \`s3_queue_url\` again after `,
        ),
      );
      expect(recovered?.level).toBe('info');
      // Five minutes of outage, on injected time (the consumer's tracker): one error, then quiet.
      const tracker = createOutageTracker({ location: display });
      const levels = [0, 60_000, 299_999, 300_000, 360_000].map(
        (nowMs) => tracker.failure(nowMs, 'connect ECONNREFUSED').level,
      );
      expect(levels).toEqual(['warn', 'debug', 'debug', 'error', 'debug']);
      expect(tracker.success(400_000)?.level).toBe('info');
    } finally {
      await sqsProxy.close();
    }
  });

  it('A queue URL that is empty, is an ARN, or is not an SQS queue URL, and a snapshot location that is not s3://, fail the dataset at load with an error that names s3_queue_url.', async () => {
    const cases: { name: string; yaml: string }[] = [
      { name: 'empty', yaml: spicepod(aws, { prefix: 'x/', endpoint: proxy.endpoint, queueUrl: "''" }) },
      {
        name: 'an ARN',
        yaml: spicepod(aws, {
          prefix: 'x/',
          endpoint: proxy.endpoint,
          queueUrl: 'arn:aws:sqs:us-east-1:123456789012:q',
        }),
      },
      {
        name: 'not an SQS URL',
        yaml: spicepod(aws, { prefix: 'x/', endpoint: proxy.endpoint, queueUrl: 'https://example.com/q' }),
      },
      {
        name: 'a location that is not s3://',
        yaml: spicepod(aws, {
          prefix: 'x/',
          endpoint: proxy.endpoint,
          queueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/q',
        }).replace(/location: s3:\/\/[^\n]*/, 'location: file:///tmp/ferry-page-snapshots/'),
      },
    ];
    for (const { name, yaml } of cases) {
      const load = loadSpicepod(yaml, { file: 'spicepod.yaml' });
      expect(load.datasets, name).toEqual([]);
      expect(
        load.errors.map((issue) => issue.path),
        name,
      ).toContain('snapshots.params.s3_queue_url');
    }
    const started = await startRuntime(cases[1]?.yaml ?? '');
    runtimes.push(started.runtime);
    expect(started.runtime.status(DATASET).state).toBe('failed');
    expect(started.runtime.status(DATASET).error).toMatch(/s3_queue_url/);
  });

  it('When s3_queue_url is set but no dataset uses refresh_mode: snapshot, Spice logs a warning and does not read the queue.', async () => {
    const prefix = freshPrefix('unused-queue');
    const queueUrl = await aws.createQueue('page-unused-queue');
    await publish(aws, prefix, await snapshotFile('sqlite', 1));
    const yaml = `${fileFormatPod(prefix, LONG)}snapshots:\n  params:\n    s3_queue_url: ${queueUrl}\n    s3_queue_endpoint: ${aws.endpoint}\n`;
    aws.requests.clear();
    const started = await startRuntime(yaml);
    runtimes.push(started.runtime);
    await started.runtime.ready(DATASET);
    expect(
      started.logger.records.filter((record) =>
        record.message.includes('`snapshots.params.s3_queue_url` is set'),
      ),
    ).toEqual([
      expect.objectContaining({
        level: 'warn',
        message: `spicepod.yaml: snapshots.params.s3_queue_url: \`snapshots.params.s3_queue_url\` is set, but no dataset uses \`refresh_mode: snapshot\`, so the SQS queue is not read. Set \`refresh_mode: snapshot\` on the datasets that load snapshots, or remove \`s3_queue_url\`. See: ${SNAPSHOTS_DOCS}`,
      }),
    ]);
    // A check of the dataset after startup, then still no receive on the queue.
    const checked = nextEvent(started.runtime, 'poll', (event) => event.dataset === DATASET);
    await started.runtime.send(DATASET, 'poll.now');
    await checked;
    expect(aws.requests.list({ operation: 'AmazonSQS.ReceiveMessage' })).toEqual([]);
  });

  it('A dataset that reads snapshots with file_format: snapshot does not accept s3_queue_url and checks for new snapshots every refresh_check_interval.', async () => {
    const refused = loadSpicepod(
      fileFormatPod('x/', '1s', ['s3_queue_url: https://sqs.us-east-1.amazonaws.com/123456789012/q']),
      {
        file: 'spicepod.yaml',
      },
    );
    expect(refused.datasets).toEqual([]);
    expect(refused.errors.map((issue) => issue.message).join('\n')).toMatch(/s3_queue_url/);

    const prefix = freshPrefix('file-format-polls');
    await publish(aws, prefix, await snapshotFile('sqlite', 1));
    const started = await startRuntime(fileFormatPod(prefix, '200ms'));
    runtimes.push(started.runtime);
    await started.runtime.ready(DATASET);
    const next = await publish(aws, prefix, await snapshotFile('sqlite', 2));
    await swapTo(started.runtime, next.snapshotId);
  });
});
