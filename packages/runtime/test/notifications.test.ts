/**
 * The SQS notification path end to end, against real fauxqs over HTTP: S3 events (sent by the
 * notification bridge or crafted and sent with the real SQS client) reach the coordinator's one
 * consumer, which reads metadata.json once per batch and tells only the datasets whose id moved.
 * Every dataset checks every 10 minutes, so polling cannot explain a swap. Outages run the consumer
 * in-process on a simulated clock, behind a TCP proxy the test cuts and restores.
 */
import {
  BatchLogMessage,
  type DatasetConfig,
  type GetResult,
  loadSpicepod,
  type NotificationsConfig,
  type ObjectStore,
  throwIfFatal,
} from '@ferry/core';
import { createObjectStore } from '@ferry/store';
import { localStoreParams, s3Event, s3TestEvent, startNotificationBridge } from '@ferry/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocationMetadataReader } from '../src/coordinator/metadata-reader.js';
import { NotificationConsumer } from '../src/coordinator/notification-consumer.js';
import { createRuntime, type NotificationEvent, type Runtime, type SwapEvent } from '../src/index.js';
import {
  BUCKET,
  type DatasetSpec,
  nextEvent,
  publishVersion,
  refusedPort,
  sendMessage,
  spicepod,
  startCuttableProxy,
  tempDir,
  useLocalAws,
  type WatchedLogger,
  watchedLogger,
} from './support.js';

const TEN_MINUTES = '10m';
/** Spice's outage line for a location (any cause), word for word around the cause. */
function outageLine(location: string, lasted?: string): RegExp {
  const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(
    `^${literal(`Failed to receive S3 event notifications from the SQS queue in \`s3_queue_url\` for snapshot location '${location}'${lasted === undefined ? '' : ` for ${lasted}`}, so datasets with \`refresh_mode: snapshot\` fall back to checking the location every \`refresh_check_interval\` until it recovers. Cause: `)}.+${literal('. Check the queue URL and the `sqs:ReceiveMessage` permission. See: https://spiceai.org/docs/features/data-acceleration/snapshots')}$`,
  );
}

/** Spice's startup line. */
const listening = (location: string): string =>
  `Snapshot location '${location}' is listening for S3 event notifications on the SQS queue in \`s3_queue_url\`, so datasets with \`refresh_mode: snapshot\` reload as soon as a new snapshot is published.`;

/** Lines an operator sees at info and above (Spice logs an outage's repeats at debug). */
const visible = (logger: WatchedLogger) => logger.records.filter((line) => line.level !== 'debug');

const aws = useLocalAws();

function sqsEnv(endpoint: string): Record<string, string | undefined> {
  return { ...process.env, AWS_ENDPOINT_URL_SQS: endpoint };
}

function metadataTarget(prefix: string): string {
  return `${BUCKET}/${prefix}metadata.json`;
}

function createdEvent(key: string, bucket = BUCKET): string {
  return JSON.stringify(s3Event({ eventName: 'ObjectCreated:Put', bucket, key }));
}

/** Everything a runtime tells its listeners, in order. */
function record(runtime: Runtime) {
  const seen = {
    swaps: [] as SwapEvent[],
    polls: [] as { dataset: string; result: string }[],
    notifications: [] as NotificationEvent[],
  };
  runtime.on('swap', (event) => seen.swaps.push(event));
  runtime.on('poll', (event) => seen.polls.push({ dataset: event.dataset, result: event.result }));
  runtime.on('notification', (event) => seen.notifications.push(event));
  return seen;
}

/** What started each snapshot check logged after line `from`: `startup`, `schedule`, `notification`…. */
function triggersSince(logger: WatchedLogger, from: number): { dataset: string; trigger: unknown }[] {
  return logger.records
    .slice(from)
    .filter((line) => line.message.startsWith('Checking the snapshot metadata of dataset '))
    .map((line) => ({ dataset: String(line.fields.dataset), trigger: line.fields.trigger }));
}

/** The next swap of `dataset`, once the check that made it has ended too. */
function reloaded(runtime: Runtime, dataset: string): Promise<SwapEvent> {
  const swap = nextEvent(runtime, 'swap', (event) => event.dataset === dataset);
  const poll = nextEvent(runtime, 'poll', (event) => event.dataset === dataset && event.result === 'newer');
  return Promise.all([swap, poll]).then(([event]) => event);
}

function total(events: readonly NotificationEvent[], outcome: NotificationEvent['outcome']): number {
  return events.filter((event) => event.outcome === outcome).reduce((sum, event) => sum + event.count, 0);
}

/** Resolves once the runtime has reported `count` more notifications with this outcome. */
function notificationsReach(
  runtime: Runtime,
  outcome: NotificationEvent['outcome'],
  count: number,
): Promise<void> {
  let seen = 0;
  return nextEvent(runtime, 'notification', (event) => {
    if (event.outcome === outcome) seen += event.count;
    return seen >= count;
  }).then(() => undefined);
}

/**
 * Scheduled checks fall on a wall-clock grid (every 10 minutes here): if one is due soon, let it
 * happen first, so nothing a test then observes can come from a scheduled check.
 */
async function noScheduledCheckSoon(runtime: Runtime, names: readonly string[]): Promise<void> {
  for (const name of names) {
    const due = runtime.status(name).status?.nextPollDueMs;
    if (due !== null && due !== undefined && due - Date.now() < 20_000) {
      await nextEvent(runtime, 'poll', (event) => event.dataset === name, due - Date.now() + 30_000);
    }
  }
}

async function startRuntime(
  datasets: readonly DatasetSpec[],
  options: {
    prefix: string;
    queueUrl: string;
    sqsEndpoint?: string;
    notifications?: { visibilityTimeoutSeconds?: number; waitTimeSeconds?: number; backoffScale?: number };
  },
): Promise<{ runtime: Runtime; logger: WatchedLogger }> {
  const logger = watchedLogger();
  const dataDir = await tempDir('ferry-notify-');
  const runtime = await createRuntime(
    {
      yaml: spicepod(aws, datasets, { prefix: options.prefix, queueUrl: options.queueUrl }),
      baseDir: dataDir,
    },
    {
      logger,
      logLevel: 'debug',
      dataDir,
      env: sqsEnv(options.sqsEndpoint ?? aws.endpoint),
      ...(options.notifications === undefined ? {} : { notifications: options.notifications }),
    },
  );
  return { runtime, logger };
}

describe('notifications: a runtime consuming a real SQS queue', () => {
  const prefix = 'notified/';
  const names = ['orders', 'events', 'users'] as const;
  let queueUrl: string;
  let runtime: Runtime;
  let logger: WatchedLogger;
  let seen: ReturnType<typeof record>;

  beforeAll(async () => {
    queueUrl = await aws.createQueue('ferry-notified');
    await publishVersion(aws, 'orders', 'duckdb', 1, { prefix });
    await publishVersion(aws, 'events', 'duckdb', 1, { rows: 50, prefix });
    await publishVersion(aws, 'users', 'sqlite', 1, { rows: 30, prefix });
    ({ runtime, logger } = await startRuntime(
      [
        { name: 'orders', engine: 'duckdb', interval: TEN_MINUTES },
        { name: 'events', engine: 'duckdb', interval: TEN_MINUTES },
        { name: 'users', engine: 'sqlite', interval: TEN_MINUTES },
        { name: 'late', engine: 'duckdb', interval: TEN_MINUTES },
      ],
      { prefix, queueUrl },
    ));
    seen = record(runtime);
    const late = nextEvent(
      runtime,
      'state',
      (event) => event.dataset === 'late' && event.state === 'waiting',
    );
    await Promise.all(names.map((name) => runtime.ready(name, { timeoutMs: 30_000 })));
    if (runtime.status('late').state !== 'waiting') await late;
  });

  afterAll(async () => {
    await runtime?.close();
  });

  it('a publish is swapped in within about a second of its metadata.json write, by no scheduled check', async () => {
    await noScheduledCheckSoon(runtime, names);
    const bridge = startNotificationBridge(aws, { bucket: BUCKET, queueUrl, prefix });
    try {
      const lines = logger.records.length;
      const swapped = reloaded(runtime, 'orders');
      const published = await publishVersion(aws, 'orders', 'duckdb', 2, { prefix });
      const writtenAt = Date.now();
      const swap = await swapped;
      expect(Date.now() - writtenAt).toBeLessThan(5_000);
      expect(swap).toEqual({ dataset: 'orders', from: 0, to: published.snapshotId });
      expect(triggersSince(logger, lines)).toEqual([{ dataset: 'orders', trigger: 'notification' }]);
      expect(bridge.all().map((sent) => sent.key)).toContain(`${prefix}metadata.json`);
      expect((await runtime.query('SELECT max(version) AS v FROM orders')).rows[0]?.v).toBe(2);
    } finally {
      await bridge.stop();
    }
  });

  it('one message for three new snapshots makes ONE metadata.json GET and three reloads', async () => {
    await noScheduledCheckSoon(runtime, names);
    const orders = await publishVersion(aws, 'orders', 'duckdb', 3, { prefix });
    const events = await publishVersion(aws, 'events', 'duckdb', 2, { rows: 50, prefix });
    const users = await publishVersion(aws, 'users', 'sqlite', 2, { rows: 30, prefix });
    const swapsBefore = seen.swaps.length;
    const lines = logger.records.length;
    const swapped = Promise.all(names.map((name) => reloaded(runtime, name)));
    const deleted = notificationsReach(runtime, 'deleted', 1);
    // The writer reads metadata.json too: count only what happens from here on.
    aws.requests.clear();
    await sendMessage(aws, queueUrl, createdEvent(`${prefix}metadata.json`));
    const swaps = await swapped;
    await deleted;
    expect(aws.requests.count('GET', metadataTarget(prefix))).toBe(1);
    expect(swaps.map((swap) => [swap.dataset, swap.to])).toEqual([
      ['orders', orders.snapshotId],
      ['events', events.snapshotId],
      ['users', users.snapshotId],
    ]);
    expect(seen.swaps.length - swapsBefore).toBe(3);
    expect(
      triggersSince(logger, lines)
        .map((check) => `${check.dataset}:${String(check.trigger)}`)
        .sort(),
    ).toEqual(['events:notification', 'orders:notification', 'users:notification']);
  });

  it('snapshot-file and removal notifications are deleted with no metadata read and no reload', async () => {
    await noScheduledCheckSoon(runtime, names);
    const polls = seen.polls.length;
    const deletedBefore = total(seen.notifications, 'deleted');
    const deleted = notificationsReach(runtime, 'deleted', 3);
    aws.requests.clear();
    const file = `${prefix}month=2026-01/day=2026-01-02/dataset=orders/orders_20260102T030405Z.duckdb`;
    const bodies = [
      s3Event({ eventName: 'ObjectCreated:CompleteMultipartUpload', bucket: BUCKET, key: file, size: 4096 }),
      s3Event({ eventName: 'ObjectRemoved:Delete', bucket: BUCKET, key: file }),
      s3Event({ eventName: 'ObjectRemoved:Delete', bucket: BUCKET, key: `${prefix}metadata.json` }),
    ];
    for (const body of bodies) await sendMessage(aws, queueUrl, JSON.stringify(body));
    await deleted;
    // Announcing (and so any reload) follows the consumer's own read, which precedes the delete.
    expect(aws.requests.count('GET', metadataTarget(prefix))).toBe(0);
    expect(total(seen.notifications, 'deleted') - deletedBefore).toBe(3);
    expect(seen.polls.slice(polls)).toEqual([]);
  });

  it('SNS-wrapped and EventBridge notifications each lead to a swap', async () => {
    let version = 2;
    for (const shape of [{ sns: true }, { eventBridge: true }] as const) {
      await noScheduledCheckSoon(runtime, names);
      const bridge = startNotificationBridge(aws, { bucket: BUCKET, queueUrl, prefix, ...shape });
      try {
        version++;
        const lines = logger.records.length;
        const swapped = reloaded(runtime, 'events');
        const published = await publishVersion(aws, 'events', 'duckdb', version, { rows: 50, prefix });
        const writtenAt = Date.now();
        expect((await swapped).to).toBe(published.snapshotId);
        expect(Date.now() - writtenAt).toBeLessThan(5_000);
        expect(triggersSince(logger, lines)).toEqual([{ dataset: 'events', trigger: 'notification' }]);
        const commit = bridge.all().find((sent) => sent.key === `${prefix}metadata.json`);
        const body = JSON.parse(commit?.body ?? '{}') as Record<string, unknown>;
        if ('sns' in shape) expect(body.Type).toBe('Notification');
        else expect(body['detail-type']).toBe('Object Created');
      } finally {
        await bridge.stop();
      }
    }
  });

  it('an s3:TestEvent is deleted and reads nothing', async () => {
    await noScheduledCheckSoon(runtime, names);
    const polls = seen.polls.length;
    const deleted = notificationsReach(runtime, 'deleted', 1);
    aws.requests.clear();
    const id = await sendMessage(aws, queueUrl, JSON.stringify(s3TestEvent(BUCKET)));
    await deleted;
    expect(aws.requests.count('GET', metadataTarget(prefix))).toBe(0);
    expect(seen.polls.slice(polls)).toEqual([]);
    const line = logger.records.find((record) => record.fields.messageId === id);
    expect(line).toMatchObject({ level: 'debug', message: BatchLogMessage.test });
  });

  it('a dataset waiting for its first snapshot loads it when the notification arrives', async () => {
    await noScheduledCheckSoon(runtime, ['late']);
    expect(runtime.status('late').state).toBe('waiting');
    const bridge = startNotificationBridge(aws, { bucket: BUCKET, queueUrl, prefix });
    try {
      const lines = logger.records.length;
      const swapped = reloaded(runtime, 'late');
      const published = await publishVersion(aws, 'late', 'duckdb', 1, { rows: 7, prefix });
      const writtenAt = Date.now();
      const swap = await swapped;
      expect(Date.now() - writtenAt).toBeLessThan(5_000);
      expect(swap).toEqual({ dataset: 'late', from: null, to: published.snapshotId });
      expect(triggersSince(logger, lines)).toEqual([{ dataset: 'late', trigger: 'notification' }]);
      // A swap event is posted before the status that follows it: wait for the status too.
      await runtime.ready('late', { timeoutMs: 5_000 });
      expect((await runtime.query('SELECT count(*) AS n FROM late')).rows[0]?.n).toBe(7);
    } finally {
      await bridge.stop();
    }
  });
});

describe('notifications: objects outside the location', () => {
  it('stay on the queue (delivered again) and are logged as errors, without reading metadata.json', async () => {
    const prefix = 'outside/';
    const queueName = 'ferry-outside';
    const queueUrl = await aws.createQueue(queueName);
    await publishVersion(aws, 'solo', 'sqlite', 1, { rows: 3, prefix });
    const { runtime, logger } = await startRuntime(
      [{ name: 'solo', engine: 'sqlite', interval: TEN_MINUTES }],
      {
        prefix,
        queueUrl,
        notifications: { visibilityTimeoutSeconds: 1, waitTimeSeconds: 1 },
      },
    );
    try {
      await runtime.ready('solo');
      const seen = record(runtime);
      const leftFour = notificationsReach(runtime, 'left', 4);
      aws.requests.clear();
      const otherBucket = await sendMessage(
        aws,
        queueUrl,
        createdEvent(`${prefix}metadata.json`, 'another-bucket'),
      );
      const outsidePrefix = await sendMessage(aws, queueUrl, createdEvent('elsewhere/metadata.json'));
      for (const [id, object] of [
        [otherBucket, `s3://another-bucket/${prefix}metadata.json`],
        [outsidePrefix, `s3://${BUCKET}/elsewhere/metadata.json`],
      ] as const) {
        const lines = await logger.waitFor(
          (line) =>
            line.message.includes(
              ', which is outside the location, so the SQS message was left on the queue (not deleted)',
            ) && line.fields.messageId === id,
          { count: 2 },
        );
        expect(lines.map((line) => [line.level, line.fields.objects])).toEqual([
          ['error', [object]],
          ['error', [object]],
        ]);
        const counts = lines.map((line) => line.fields.receiveCount as number);
        expect(counts[1]).toBeGreaterThan(counts[0] ?? Number.POSITIVE_INFINITY);
      }
      const [first] = logger.records.filter(
        (line) => line.fields.messageId === otherBucket && line.level === 'error',
      );
      expect(first?.message).toBe(
        `Snapshot location 's3://${BUCKET}/${prefix.slice(0, -1)}' received an S3 event notification for 's3://another-bucket/${prefix}metadata.json', which is outside the location, so the SQS message was left on the queue (not deleted) and will be delivered again after each visibility timeout until it expires. ` +
          "The queue in `s3_queue_url` must receive only this location's notifications: filter the bucket notification by the location's prefix, or fan out through SNS to a queue per consumer. See: https://spiceai.org/docs/features/data-acceleration/snapshots",
      );
      await leftFour;
      expect(total(seen.notifications, 'deleted')).toBe(0);
      expect(aws.requests.count('GET', metadataTarget(prefix))).toBe(0);
      expect(seen.swaps).toEqual([]);
      const messages = aws.server.inspectQueue(queueName)?.messages;
      expect((messages?.ready.length ?? 0) + (messages?.inflight.length ?? 0)).toBe(2);
    } finally {
      await runtime.close();
    }
  });
});

/** The notification settings and datasets a spicepod yields, for running the consumer in-process. */
function loadNotified(
  prefix: string,
  queueUrl: string,
  sqsEndpoint: string,
  datasets: readonly DatasetSpec[],
) {
  const load = loadSpicepod(spicepod(aws, datasets, { prefix, queueUrl }), {
    file: 'spicepod.yaml',
    env: sqsEnv(sqsEndpoint),
  });
  const config = throwIfFatal(load);
  const notifications: NotificationsConfig | undefined = config.notifications;
  if (notifications === undefined) throw new Error('the spicepod configures no notifications');
  return { notifications, datasets: load.datasets };
}

/** A clock a test moves by hand; `calls()` counts reads (the consumer reads it once per receive). */
function simulatedClock(startMs: number) {
  let nowMs = startMs;
  let calls = 0;
  const waiters = new Set<() => void>();
  return {
    now: (): number => {
      calls++;
      for (const waiter of [...waiters]) waiter();
      return nowMs;
    },
    set(ms: number): void {
      nowMs = ms;
    },
    /** Resolves after `count` more reads of the clock. */
    reads(count: number): Promise<void> {
      const target = calls + count;
      return new Promise((resolve) => {
        const check = (): void => {
          if (calls < target) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
      });
    },
  };
}

describe('notifications: the consumer in-process', () => {
  it('an SQS outage logs a warning at once, one error after five minutes, and the duration on recovery', async () => {
    const queueUrl = await aws.createQueue('ferry-outage');
    const proxy = await startCuttableProxy(aws.server.port);
    const { notifications } = loadNotified('outage/', queueUrl, proxy.endpoint, [
      { name: 'quiet', engine: 'duckdb', interval: TEN_MINUTES },
    ]);
    const logger = watchedLogger();
    const clock = simulatedClock(0);
    const consumer = new NotificationConsumer({
      notifications,
      datasets: [],
      readerFor: () => {
        throw new Error('no notification is sent in this test');
      },
      announce: () => undefined,
      log: logger.log,
      report: () => undefined,
      options: { waitTimeSeconds: 1, backoffScale: 0.001 },
      now: clock.now,
    });
    try {
      const firstReceive = clock.reads(1);
      consumer.start();
      await firstReceive;
      const location = `s3://${BUCKET}/outage`;
      expect(logger.records.map((line) => [line.level, line.message])).toEqual([
        ['info', listening(location)],
      ]);

      proxy.cut();
      const [warning] = await logger.waitFor((line) => line.level === 'warn');
      expect(warning?.message).toMatch(outageLine(location));

      clock.set(4 * 60_000 + 59_000);
      await clock.reads(2);
      expect(visible(logger).map((line) => line.level)).toEqual(['info', 'warn']);

      clock.set(5 * 60_000);
      const [error] = await logger.waitFor((line) => line.level === 'error');
      expect(error?.message).toMatch(outageLine(location, '5m'));
      await clock.reads(2);
      expect(visible(logger).map((line) => line.level)).toEqual(['info', 'warn', 'error']);

      clock.set(5 * 60_000 + 12_000);
      proxy.restore();
      const [, recovered] = await logger.waitFor((line) => line.level === 'info', { count: 2 });
      expect(recovered?.message).toBe(
        `Snapshot location '${location}' is receiving S3 event notifications from the SQS queue in \`s3_queue_url\` again after 5m, so datasets with \`refresh_mode: snapshot\` reload as soon as a new snapshot is published.`,
      );
      expect(recovered?.fields.outageMs).toBe(312_000);
      expect(visible(logger).map((line) => line.level)).toEqual(['info', 'warn', 'error', 'info']);

      const written = JSON.stringify(logger.records);
      expect(written).not.toContain(queueUrl);
      expect(written).not.toContain(new URL(queueUrl).pathname);
      expect(written).not.toContain('ferry-outage');
    } finally {
      await consumer.close();
      await proxy.close();
    }
  });

  it('close() ends a 20 s long poll at once', async () => {
    const queueUrl = await aws.createQueue('ferry-close');
    const proxy = await startCuttableProxy(aws.server.port);
    const { notifications } = loadNotified('close/', queueUrl, proxy.endpoint, [
      { name: 'quiet', engine: 'duckdb', interval: TEN_MINUTES },
    ]);
    const logger = watchedLogger();
    const consumer = new NotificationConsumer({
      notifications,
      datasets: [],
      readerFor: () => {
        throw new Error('no notification is sent in this test');
      },
      announce: () => undefined,
      log: logger.log,
      report: () => undefined,
      options: { waitTimeSeconds: 20 },
    });
    try {
      consumer.start();
      await proxy.trafficAfter(0);
      const started = Date.now();
      await consumer.close();
      expect(Date.now() - started).toBeLessThan(1_000);
      expect(logger.records.map((line) => line.level)).toEqual(['info']);
    } finally {
      await consumer.close();
      await proxy.close();
    }
  });

  it('a commit whose metadata.json read fails stays on the queue, and is announced and deleted once it succeeds', async () => {
    const prefix = 'readfail/';
    const queueName = 'ferry-readfail';
    const queueUrl = await aws.createQueue(queueName);
    const published = await publishVersion(aws, 'rf', 'sqlite', 1, { rows: 2, prefix });
    const s3Proxy = await startCuttableProxy(aws.server.port);
    const { notifications, datasets } = loadNotified(prefix, queueUrl, aws.endpoint, [
      { name: 'rf', engine: 'sqlite', interval: TEN_MINUTES },
    ]);
    const store = createObjectStore(`s3://${BUCKET}/${prefix}`, {
      ...localStoreParams(aws),
      endpoint: s3Proxy.endpoint,
    });
    const reader = new LocationMetadataReader(store, { windowMs: 2_000 });
    const logger = watchedLogger();
    const announced: [string, number][] = [];
    const reports: { outcome: string; count: number }[] = [];
    const reportWaiters = new Set<() => void>();
    const reportsReach = (outcome: string, count: number): Promise<void> =>
      new Promise((resolve) => {
        const check = (): void => {
          if (reports.filter((event) => event.outcome === outcome).length < count) return;
          reportWaiters.delete(check);
          resolve();
        };
        reportWaiters.add(check);
        check();
      });
    const consumer = new NotificationConsumer({
      notifications,
      datasets,
      readerFor: (dataset: DatasetConfig) => {
        expect(dataset.name).toBe('rf');
        return reader;
      },
      announce: (dataset, snapshotId) => announced.push([dataset, snapshotId]),
      log: logger.log,
      report: (event) => {
        reports.push(event);
        for (const waiter of [...reportWaiters]) waiter();
      },
      options: { visibilityTimeoutSeconds: 1, waitTimeSeconds: 1 },
    });
    try {
      s3Proxy.cut();
      consumer.start();
      await sendMessage(aws, queueUrl, createdEvent(`${prefix}metadata.json`));
      await reportsReach('left', 2);
      const failed = logger.records.filter((line) =>
        line.message.startsWith(
          `Failed to read the snapshot metadata of snapshot location 's3://${BUCKET}/${prefix.slice(0, -1)}' after an S3 event notification, so the notification was left on the SQS queue and datasets reload when it is delivered again or on \`refresh_check_interval\`. Cause: `,
        ),
      );
      expect(failed.map((line) => line.level)).toEqual(['warn', 'warn']);
      expect(announced).toEqual([]);
      expect(reports.filter((event) => event.outcome === 'deleted')).toEqual([]);

      const deleted = reportsReach('deleted', 1);
      s3Proxy.restore();
      await deleted;
      expect(announced).toEqual([['rf', published.snapshotId]]);
      const messages = aws.server.inspectQueue(queueName)?.messages;
      expect((messages?.ready.length ?? 0) + (messages?.inflight.length ?? 0)).toBe(0);
    } finally {
      await consumer.close();
      await store.close();
      await s3Proxy.close();
    }
  });
});

describe('notifications: the shared metadata reader', () => {
  it("a notification's read never joins a read that began before it", async () => {
    const pending: ((body: string) => void)[] = [];
    let onGet = (): void => undefined;
    const store = {
      location: 's3://b/p/',
      get: () =>
        new Promise<GetResult>((resolve) => {
          const etag = `"${pending.length + 1}"`;
          pending.push((body) => resolve({ status: 'ok', body: new TextEncoder().encode(body), etag }));
          onGet();
        }),
    } as unknown as ObjectStore;
    const document = (lastUpdatedMs: number) =>
      JSON.stringify({ 'format-version': 1, location: 's3://b/p/', 'last-updated-ms': lastUpdatedMs });
    const secondGet = new Promise<'second GET'>((resolve) => {
      onGet = () => {
        if (pending.length === 2) resolve('second GET');
      };
    });
    const reader = new LocationMetadataReader(store, { windowMs: 60_000 });
    const poll = reader.readFor('any', undefined);
    const refreshed = reader.refresh();
    pending[0]?.(document(1));
    expect((await poll).kind).toBe('read');
    // The poll's read began before the notification: the refresh must read again, not return it.
    expect(await Promise.race([refreshed.then((metadata) => metadata?.lastUpdatedMs), secondGet])).toBe(
      'second GET',
    );
    pending[1]?.(document(2));
    expect((await refreshed)?.lastUpdatedMs).toBe(2);
    expect(reader.gets).toBe(2);
  });

  it("an operator's fresh read (poll now) never joins a read that began before it either", async () => {
    const pending: ((body: string) => void)[] = [];
    let onGet = (): void => undefined;
    const store = {
      location: 's3://b/p/',
      get: () =>
        new Promise<GetResult>((resolve) => {
          const etag = `"${pending.length + 1}"`;
          pending.push((body) => resolve({ status: 'ok', body: new TextEncoder().encode(body), etag }));
          onGet();
        }),
    } as unknown as ObjectStore;
    const document = (lastUpdatedMs: number) =>
      JSON.stringify({ 'format-version': 1, location: 's3://b/p/', 'last-updated-ms': lastUpdatedMs });
    const secondGet = new Promise<'second GET'>((resolve) => {
      onGet = () => {
        if (pending.length === 2) resolve('second GET');
      };
    });
    const reader = new LocationMetadataReader(store, { windowMs: 60_000 });
    const poll = reader.readFor('any', undefined);
    const command = reader.readFor('any', undefined, true);
    pending[0]?.(document(1));
    expect((await poll).kind).toBe('read');
    // The scheduled read began before the command: the command must read again, not share it.
    expect(await Promise.race([command.then((reply) => reply.kind), secondGet])).toBe('second GET');
    pending[1]?.(document(2));
    expect(await command).toMatchObject({ kind: 'read', etag: '"2"' });
    expect(reader.gets).toBe(2);
  });
});

describe('notifications: SQS unreachable', () => {
  it('datasets keep polling and swap in a publish while the queue cannot be reached', async () => {
    const prefix = 'down/';
    const port = await refusedPort();
    const queueUrl = `http://sqs.us-east-1.localhost:${port}/000000000000/ferry-down`;
    await publishVersion(aws, 'kept', 'duckdb', 1, { rows: 4, prefix });
    const { runtime, logger } = await startRuntime([{ name: 'kept', engine: 'duckdb', interval: '1s' }], {
      prefix,
      queueUrl,
      sqsEndpoint: `http://127.0.0.1:${port}`,
    });
    try {
      await runtime.ready('kept');
      const [warning] = await logger.waitFor((line) =>
        outageLine(`s3://${BUCKET}/${prefix.slice(0, -1)}`).test(line.message),
      );
      expect(warning?.level).toBe('warn');
      expect(warning?.fields.component).toBe('coordinator');
      const swapped = nextEvent(runtime, 'swap', (event) => event.dataset === 'kept' && event.from === 0);
      const published = await publishVersion(aws, 'kept', 'duckdb', 2, { rows: 4, prefix });
      expect((await swapped).to).toBe(published.snapshotId);
      expect((await runtime.query('SELECT max(version) AS v FROM kept')).rows[0]?.v).toBe(2);
      const written = JSON.stringify(logger.records);
      expect(written).not.toContain(queueUrl);
      expect(written).not.toContain('/000000000000/ferry-down');
    } finally {
      await runtime.close();
    }
  });
});
