/**
 * Readers in a fleet, in-process against real fauxqs (S3 + SQS + SNS over HTTP): two readers that
 * share one queue are warned about it (each sees commits by polling whose notifications the other
 * received), a reader alone on its queue is not; and with `ferry_sns_topic_arn` a reader makes its
 * own queue, reloads through it, makes a new one when it is deleted under it, and removes it on close.
 */
import { MissedCommitLogMessage } from '@ferry/core';
import { collectReaderQueues, READER_QUEUE_PREFIX } from '@ferry/store';
import { startNotificationBridge } from '@ferry/test-support';
import { describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../src/index.js';
import {
  BUCKET,
  type DatasetSpec,
  nextEvent,
  publishVersion,
  spicepod,
  tempDir,
  useLocalAws,
  type WatchedLogger,
  watchedLogger,
} from './support.js';

const DATASET = 'orders';
const GRACE_MS = 2_000;
const MISSED =
  /^Snapshot location 's3:\/\/ferry-runtime\/[^']+' saw \d+ of its last \d+ metadata\.json commits without receiving their S3 event notifications within 2s on the SQS queue in `s3_queue_url`\. Another process probably reads the same queue/;

const aws = useLocalAws();

interface Reader {
  readonly runtime: Runtime;
  readonly logger: WatchedLogger;
}

async function startReader(
  prefix: string,
  queue: { queueUrl: string } | { topicArn: string },
  datasets: readonly DatasetSpec[],
): Promise<Reader> {
  const logger = watchedLogger();
  const dataDir = await tempDir('ferry-fleet-');
  const params: Record<string, string> =
    'topicArn' in queue
      ? {
          ferry_sns_topic_arn: queue.topicArn,
          ferry_sns_heartbeat_interval: '1s',
          s3_queue_endpoint: aws.endpoint,
        }
      : { s3_queue_endpoint: aws.endpoint };
  const runtime = await createRuntime(
    {
      yaml: spicepod(aws, datasets, {
        prefix,
        params,
        ...('queueUrl' in queue ? { queueUrl: queue.queueUrl } : {}),
      }),
      baseDir: dataDir,
    },
    {
      logger,
      logLevel: 'debug',
      dataDir,
      env: { AWS_ENDPOINT_URL_SNS: aws.endpoint },
      notifications: { waitTimeSeconds: 1, backoffScale: 0.01, missedCommitGraceMs: GRACE_MS },
    },
  );
  return { runtime, logger };
}

/** Resolves once `reader` serves `version` of the dataset (a swap to the published snapshot). */
function serves(reader: Reader, snapshotId: number): Promise<unknown> {
  const { runtime } = reader;
  const swapped = nextEvent(
    runtime,
    'swap',
    (event) => event.dataset === DATASET && event.to >= snapshotId,
    30_000,
  );
  if ((runtime.status(DATASET).status?.servingSnapshotId ?? -1) < snapshotId) return swapped;
  swapped.catch(() => undefined);
  return Promise.resolve();
}

const missedLine = (reader: Reader) =>
  reader.logger.records.filter((line) => line.level === 'warn' && MISSED.test(line.message));

describe('a queue shared by two readers', () => {
  it('is detected by the readers that share it, and a reader alone on its queue says nothing', async () => {
    const prefix = 'shared/';
    await publishVersion(aws, DATASET, 'duckdb', 0, { prefix });
    const sharedUrl = await aws.createQueue('fleet-shared');
    const ownUrl = await aws.createQueue('fleet-own');
    const topicArn = await aws.createTopic('fleet-shared-topic');
    await aws.subscribeQueue(topicArn, sharedUrl, { raw: true });
    await aws.subscribeQueue(topicArn, ownUrl);
    // Polls every 500 ms see every commit, so each one is checked against the notifications.
    const datasets = [{ name: DATASET, engine: 'duckdb' as const, interval: '500ms' }];
    const readers = [
      await startReader(prefix, { queueUrl: sharedUrl }, datasets),
      await startReader(prefix, { queueUrl: sharedUrl }, datasets),
    ];
    const alone = await startReader(prefix, { queueUrl: ownUrl }, datasets);
    const all = [...readers, alone];
    const bridge = startNotificationBridge(aws, { bucket: BUCKET, publishToTopicArn: topicArn, prefix });
    try {
      await Promise.all(all.map((reader) => reader.runtime.ready(DATASET, { timeoutMs: 30_000 })));
      const warned = Promise.any(
        readers.map((reader) =>
          reader.logger.waitFor((line) => line.level === 'warn' && MISSED.test(line.message), {
            timeoutMs: 60_000,
          }),
        ),
      );
      let settled = false;
      void warned.finally(() => {
        settled = true;
      });
      // Publish until a sharing reader has noticed; every reader serves each version meanwhile.
      for (let version = 1; version <= 12 && !settled; version++) {
        const published = await publishVersion(aws, DATASET, 'duckdb', version, { prefix });
        await Promise.all(all.map((reader) => serves(reader, published.snapshotId)));
      }
      const [line] = await warned;
      expect(line?.fields).toMatchObject({ graceMs: GRACE_MS });
      expect(line?.fields.misses).toBeGreaterThanOrEqual(2);

      // The reader alone on its queue was notified of every commit: its grace ends with no warning.
      const quiet = await alone.logger
        .waitFor((record) => MISSED.test(record.message), { timeoutMs: 3 * GRACE_MS })
        .then(
          () => 'warned',
          () => 'quiet',
        );
      expect(quiet).toBe('quiet');
      expect(missedLine(alone)).toStrictEqual([]);
      // ...and it did check: commits its polls saw were matched to their notifications.
      const checked = (reader: Reader, message: string) =>
        reader.logger.records.filter((record) => record.message === message).length;
      expect(checked(alone, MissedCommitLogMessage.notified)).toBeGreaterThanOrEqual(2);
      expect(checked(alone, MissedCommitLogMessage.missed)).toBe(0);
      expect(
        readers.map((reader) => checked(reader, MissedCommitLogMessage.missed)).some((n) => n >= 2),
      ).toBe(true);
    } finally {
      await bridge.stop();
      await Promise.all(all.map((reader) => reader.runtime.close()));
    }
  });
});

describe('ferry_sns_topic_arn: a queue of its own', () => {
  it('is made and subscribed, reloads through it, is replaced when deleted, and is removed on close', async () => {
    const prefix = 'own-queue/';
    await publishVersion(aws, DATASET, 'duckdb', 0, { prefix });
    const topicArn = await aws.createTopic('fleet-own-topic');
    const reader = await startReader(prefix, { topicArn }, [
      { name: DATASET, engine: 'duckdb', interval: '10m' },
    ]);
    const bridge = startNotificationBridge(aws, { bucket: BUCKET, publishToTopicArn: topicArn, prefix });
    const made = (since = 0) =>
      reader.logger.waitFor(
        (line) => /made its own SQS queue 'ferry-reader-[0-9a-f]{24}'/.test(line.message),
        {
          since,
          timeoutMs: 30_000,
        },
      );
    try {
      await reader.runtime.ready(DATASET, { timeoutMs: 30_000 });
      const [first] = await made();
      const name = String(first?.fields.queue);
      expect(first?.message).toBe(
        `Snapshot location 's3://ferry-runtime/own-queue' made its own SQS queue '${name}' and subscribed it to the SNS topic '${topicArn}' (\`ferry_sns_topic_arn\`, raw message delivery), so datasets with \`refresh_mode: snapshot\` reload as soon as a new snapshot is published; the queue is removed when this process stops.`,
      );
      const [url] = await aws.listQueues(name);
      expect(url).toBeDefined();
      const queueArn = `arn:aws:sqs:us-east-1:000000000000:${name}`;
      expect(await aws.subscriptionsOf(topicArn)).toStrictEqual([
        { arn: expect.stringMatching(/^arn:aws:sns:/), endpoint: queueArn, raw: true },
      ]);

      // A publish reloads through the queue (the 10 minute poll cannot explain it).
      const checks = reader.logger.records.length;
      const one = await publishVersion(aws, DATASET, 'duckdb', 1, { prefix });
      await serves(reader, one.snapshotId);
      expect(
        reader.logger
          .since(checks)
          .filter((line) => line.message.startsWith('Checking the snapshot metadata of dataset '))
          .map((line) => line.fields.trigger),
      ).toStrictEqual(['notification']);

      // The heartbeat tag moves (gc would keep this queue).
      const beat = (await aws.queueTags(url ?? ''))['ferry:heartbeat-at'] ?? '';
      await expect
        .poll(async () => (await aws.queueTags(url ?? ''))['ferry:heartbeat-at'], { timeout: 10_000 })
        .not.toBe(beat);

      // Deleted under it (by hand or by gc): the reader makes a new queue and reloads through it.
      const lines = reader.logger.records.length;
      await aws.deleteQueue(url ?? '');
      const [second] = await made(lines);
      const replacement = String(second?.fields.queue);
      expect(replacement).not.toBe(name);
      expect(
        reader.logger
          .since(lines)
          .some((line) => line.level === 'warn' && line.message.includes(`'${name}' of snapshot location`)),
      ).toBe(true);
      expect((await aws.subscriptionsOf(topicArn)).map((s) => s.endpoint)).toStrictEqual([
        `arn:aws:sqs:us-east-1:000000000000:${replacement}`,
      ]);
      const two = await publishVersion(aws, DATASET, 'duckdb', 2, { prefix });
      await serves(reader, two.snapshotId);

      await reader.runtime.close();
      expect(reader.logger.records.map((line) => line.message)).toContain(
        `Snapshot location 's3://ferry-runtime/own-queue' removed its SQS queue '${replacement}' and the queue's subscription to the topic.`,
      );
      expect(await aws.listQueues(READER_QUEUE_PREFIX)).toStrictEqual([]);
      expect(await aws.subscriptionsOf(topicArn)).toStrictEqual([]);
      const report = await collectReaderQueues({
        topicArn,
        region: aws.region,
        sqsEndpoint: aws.endpoint,
        snsEndpoint: aws.endpoint,
        credentials: aws.credentials,
        dryRun: true,
      });
      expect(report).toStrictEqual({ topicArn, queues: [], subscriptions: [] });
    } finally {
      await bridge.stop();
      await reader.runtime.close();
    }
  });
});
