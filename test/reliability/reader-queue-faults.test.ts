/**
 * `ferry_sns_topic_arn` faults, with SQS reached through the fault proxy: a reader's own queue that
 * SQS keeps calling gone. A queue deleted under a working reader is replaced at once; one that is
 * gone again before any receive succeeded is replaced only after a backoff, so a reader never
 * churns queues and subscriptions (and warnings) as fast as SQS answers.
 */
import { useLocalAws } from '@ferry/test-support/suite';
import { expect, it } from 'vitest';
import { BUCKET, DATASET, publish, snapshotFile, spicepod, startRuntime } from './support.js';

const PREFIX = 'reader-queue/';
const { aws, proxy } = useLocalAws({ buckets: [BUCKET], faultProxy: true });

/** What SQS answers (JSON protocol) for a queue that does not exist. */
const queueDoesNotExist = {
  kind: 'replace',
  status: 400,
  body: '{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."}',
  headers: {
    'content-type': 'application/x-amz-json-1.0',
    'x-amzn-query-error': 'AWS.SimpleQueueService.NonExistentQueue;Sender',
  },
} as const;

it('a queue gone again before any receive succeeded is replaced with backoff, not at once', async () => {
  await publish(aws, PREFIX, await snapshotFile('duckdb', 1));
  const topicArn = await aws.createTopic('ferry-reliability-reader-queue');
  proxy.setRules([{ name: 'gone', operation: 'AmazonSQS.ReceiveMessage', fault: queueDoesNotExist }]);
  const backoffScale = 2;
  const s = await startRuntime(
    spicepod(aws, {
      prefix: PREFIX,
      endpoint: aws.endpoint,
      interval: '10m',
      topicArn,
      queueEndpoint: proxy.endpoint,
    }),
    {
      env: { AWS_ENDPOINT_URL_SNS: aws.endpoint },
      notifications: { waitTimeSeconds: 0, backoffScale },
    },
  );
  try {
    const gone = (line: { message: string }): boolean =>
      /^The SQS queue 'ferry-reader-[0-9a-f]{24}' of snapshot location .* no longer exists/.test(
        line.message,
      );
    const made = (line: { message: string }): boolean =>
      /made its own SQS queue 'ferry-reader-[0-9a-f]{24}'/.test(line.message);
    const [first] = await s.logger.waitFor(gone, { timeoutMs: 30_000 });
    const firstAt = Date.now();
    // Made at start, at once after the first gone, then after 1 s and 2 s (× backoffScale).
    await s.logger.waitFor(made, { count: 4, timeoutMs: 30_000 });
    expect(Date.now() - firstAt).toBeGreaterThanOrEqual((1_000 + 2_000) * backoffScale);
    expect(first?.level).toBe('warn');
    expect(
      proxy.requests().filter((r) => r.operation === 'AmazonSQS.CreateQueue').length,
    ).toBeLessThanOrEqual(5);
  } finally {
    proxy.clear();
    await s.runtime.close();
  }
  // Nothing is left behind: each gone queue was removed with its subscription.
  expect(await aws.subscriptionsOf(topicArn)).toStrictEqual([]);
});
