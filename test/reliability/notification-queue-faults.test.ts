/**
 * SQS faults that hold or repeat, with SQS reached through the fault proxy. A reader's own queue
 * (`ferry_sns_topic_arn`) that SQS keeps calling gone: a queue deleted under a working reader is
 * replaced at once, one gone again before any receive succeeded only after a backoff, so a reader
 * never churns queues and subscriptions (and warnings) as fast as SQS answers. And a delete that SQS
 * never answers: closing the runtime abandons it (the message is delivered again) instead of waiting
 * out the SDK's three 30 s attempts; nor does removing its own queue when SQS never answers.
 */

import { createRequire } from 'node:module';
import { s3Event } from '@ferry/test-support';
import { useLocalAws } from '@ferry/test-support/suite';
import { expect, it } from 'vitest';
import { BUCKET, publish, snapshotFile, spicepod, startRuntime } from './support.js';

const PREFIX = 'reader-queue/';
const HUNG_PREFIX = 'hung-delete/';
const { aws, proxy } = useLocalAws({ buckets: [BUCKET], faultProxy: true });

/** Sends one message with the real SQS client, from the package that depends on it (@ferry/test-support). */
async function send(queueUrl: string, body: string): Promise<void> {
  const local = createRequire(import.meta.url);
  const { SQSClient, SendMessageCommand } = createRequire(local.resolve('@ferry/test-support'))(
    '@aws-sdk/client-sqs',
  ) as typeof import('@aws-sdk/client-sqs');
  const client = new SQSClient(aws.sqsConfig({ direct: true }));
  try {
    await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
  } finally {
    client.destroy();
  }
}

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
  const since = proxy.requests().length;
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
      proxy
        .requests()
        .slice(since)
        .filter((r) => r.operation === 'AmazonSQS.CreateQueue').length,
    ).toBeLessThanOrEqual(5);
  } finally {
    proxy.clear();
    await s.runtime.close();
  }
  // Nothing is left behind: each gone queue was removed with its subscription.
  expect(await aws.subscriptionsOf(topicArn)).toStrictEqual([]);
});

it('closing the runtime abandons a delete SQS never answers, at once', async () => {
  await publish(aws, HUNG_PREFIX, await snapshotFile('duckdb', 1));
  const queueUrl = await aws.createQueue('ferry-reliability-hung-delete');
  proxy.setRules([{ name: 'hung', operation: 'AmazonSQS.DeleteMessageBatch', fault: { kind: 'hang' } }]);
  const s = await startRuntime(
    spicepod(aws, {
      prefix: HUNG_PREFIX,
      endpoint: aws.endpoint,
      interval: '10m',
      queueUrl,
      queueEndpoint: proxy.endpoint,
    }),
    { notifications: { waitTimeSeconds: 1 } },
  );
  let closeMs: number;
  try {
    await s.runtime.ready('orders', { timeoutMs: 30_000 });
    const since = proxy.requests().length;
    // A notification that needs no reload: deleted at once, and that delete hangs.
    await send(
      queueUrl,
      JSON.stringify(
        s3Event({ eventName: 'ObjectRemoved:Delete', bucket: BUCKET, key: `${HUNG_PREFIX}old.duckdb` }),
      ),
    );
    await proxy.waitForRequest({ rule: 'hung' }, { since, timeoutMs: 30_000 });
  } finally {
    const started = Date.now();
    await s.runtime.close();
    closeMs = Date.now() - started;
    proxy.clear();
  }
  expect(closeMs).toBeLessThan(10_000);
  expect(proxy.hits('hung')).toBe(1);
  // Closing is not a delete failure: no warning that asks for sqs:DeleteMessage.
  expect(
    s.logger.records.filter((r) => r.message.includes('could not delete it from the SQS queue')),
  ).toEqual([]);
  // The message was not deleted: it is delivered again (to this reader's successor).
  const queue = aws.server.inspectQueue('ferry-reliability-hung-delete');
  expect((queue?.messages.ready.length ?? 0) + (queue?.messages.inflight.length ?? 0)).toBe(1);
});

it('closing the runtime gives up removing its own queue when SQS never answers, and names the cleanup', async () => {
  const prefix = 'hung-remove/';
  await publish(aws, prefix, await snapshotFile('duckdb', 1));
  const topicArn = await aws.createTopic('ferry-reliability-hung-remove');
  const s = await startRuntime(
    spicepod(aws, {
      prefix,
      endpoint: aws.endpoint,
      interval: '10m',
      topicArn,
      queueEndpoint: proxy.endpoint,
    }),
    { env: { AWS_ENDPOINT_URL_SNS: aws.endpoint }, notifications: { waitTimeSeconds: 1 } },
  );
  let closeMs: number;
  try {
    await s.runtime.ready('orders', { timeoutMs: 30_000 });
    await s.logger.waitFor((line) => line.message.includes('made its own SQS queue'), { timeoutMs: 30_000 });
    proxy.setRules([{ name: 'hung-remove', operation: 'AmazonSQS.DeleteQueue', fault: { kind: 'hang' } }]);
  } finally {
    const started = Date.now();
    await s.runtime.close();
    closeMs = Date.now() - started;
    proxy.clear();
  }
  // Bounded by the runtime's stop timeout (10 s), not the SDK's three 30 s attempts.
  expect(closeMs).toBeLessThan(20_000);
  expect(proxy.hits('hung-remove')).toBe(1);
  const [warning] = s.logger.records.filter((r) => r.message.startsWith("Removing this reader's SQS queue"));
  expect(warning?.level).toBe('warn');
  expect(warning?.message).toContain(`run \`ferry fleet gc --topic ${topicArn}\``);
});
