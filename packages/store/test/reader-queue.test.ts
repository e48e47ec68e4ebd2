/**
 * Per-reader queues against the real local SNS + SQS (fauxqs over HTTP): a reader's queue is made,
 * tagged, allowed to receive from the topic, subscribed and fed by a publish, refreshed, and removed;
 * a failed subscribe leaves nothing behind; gc removes exactly the abandoned queues of its topic and
 * the subscriptions of reader queues that are gone.
 */
import { ListSubscriptionsByTopicCommand, PublishCommand } from '@aws-sdk/client-sns';
import {
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListQueuesCommand,
  ListQueueTagsCommand,
  ReceiveMessageCommand,
} from '@aws-sdk/client-sqs';
import { type LocalAws, startLocalAws } from '@ferry/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CollectReaderQueuesOptions,
  collectReaderQueues,
  createReaderQueue,
  judgeReaderQueue,
  READER_QUEUE_PREFIX,
  type ReaderQueue,
  type ReaderQueueInfo,
} from '../src/index.js';

let aws: LocalAws;
let topics = 0;

beforeAll(async () => {
  aws = await startLocalAws();
});

afterAll(async () => {
  await aws?.close();
});

async function newTopic(): Promise<string> {
  topics += 1;
  return aws.createTopic(`reader-queue-topic-${topics}`);
}

function fleet(topicArn: string) {
  return {
    topicArn,
    region: aws.region,
    sqsEndpoint: aws.endpoint,
    snsEndpoint: aws.endpoint,
    credentials: aws.credentials,
  };
}

function make(topicArn: string, options: { raw?: boolean; startedAt?: Date; intervalMs?: number } = {}) {
  return createReaderQueue({
    ...fleet(topicArn),
    rawMessageDelivery: options.raw ?? true,
    heartbeatIntervalMs: options.intervalMs ?? 60_000,
    identity: { host: 'reader-host.local', pid: 4242, startedAt: options.startedAt ?? new Date() },
  });
}

async function tagsOf(url: string): Promise<Record<string, string>> {
  return (await aws.sqs.send(new ListQueueTagsCommand({ QueueUrl: url }))).Tags ?? {};
}

async function exists(name: string): Promise<boolean> {
  return aws.sqs.send(new GetQueueUrlCommand({ QueueName: name })).then(
    () => true,
    (error: { name?: string }) => {
      if (error.name === 'QueueDoesNotExist') return false;
      throw error;
    },
  );
}

async function subscriptionsOf(topicArn: string) {
  return (
    (await aws.sns.send(new ListSubscriptionsByTopicCommand({ TopicArn: topicArn }))).Subscriptions ?? []
  );
}

async function readerQueueNames(): Promise<string[]> {
  const urls =
    (await aws.sqs.send(new ListQueuesCommand({ QueueNamePrefix: READER_QUEUE_PREFIX }))).QueueUrls ?? [];
  return urls.map((url) => url.slice(url.lastIndexOf('/') + 1)).sort();
}

describe('createReaderQueue', () => {
  it('makes a tagged queue the topic may send to, subscribes it, refreshes it and removes it', async () => {
    const topicArn = await newTopic();
    const startedAt = new Date('2026-11-30T10:00:00.000Z');
    const before = Date.now();
    const queue = await make(topicArn, { raw: true, startedAt, intervalMs: 15_000 });

    expect(queue.name).toMatch(/^ferry-reader-[0-9a-f]{24}$/);
    expect(queue.arn).toBe(`arn:aws:sqs:us-east-1:000000000000:${queue.name}`);
    const tags = await tagsOf(queue.url);
    expect(tags).toMatchObject({
      'ferry:role': 'reader',
      'ferry:topic-arn': topicArn,
      'ferry:host': 'reader-host.local',
      'ferry:pid': '4242',
      'ferry:started-at': '2026-11-30T10:00:00.000Z',
      'ferry:heartbeat-interval-seconds': '15',
    });
    expect(Date.parse(tags['ferry:heartbeat-at'] ?? '')).toBeGreaterThanOrEqual(before - 1000);

    const attributes =
      (await aws.sqs.send(new GetQueueAttributesCommand({ QueueUrl: queue.url, AttributeNames: ['All'] })))
        .Attributes ?? {};
    expect(attributes.MessageRetentionPeriod).toBe('3600');
    expect(JSON.parse(attributes.Policy ?? '{}')).toEqual({
      Version: '2012-10-17',
      Statement: [
        {
          Sid: 'ferry-reader-topic',
          Effect: 'Allow',
          Principal: { Service: 'sns.amazonaws.com' },
          Action: 'sqs:SendMessage',
          Resource: queue.arn,
          Condition: { ArnEquals: { 'aws:SourceArn': topicArn } },
        },
      ],
    });

    const subscriptions = await subscriptionsOf(topicArn);
    expect(subscriptions).toEqual([
      expect.objectContaining({
        SubscriptionArn: queue.subscriptionArn,
        Protocol: 'sqs',
        Endpoint: queue.arn,
      }),
    ]);

    // A publish on the topic reaches the queue, raw (the message itself, no SNS envelope).
    await aws.sns.send(new PublishCommand({ TopicArn: topicArn, Message: '{"Records":[]}' }));
    const received = await aws.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queue.url, WaitTimeSeconds: 2, MaxNumberOfMessages: 10 }),
    );
    expect(received.Messages?.map((message) => message.Body)).toStrictEqual(['{"Records":[]}']);

    await queue.heartbeat(new Date('2030-01-01T00:00:00.000Z'));
    expect((await tagsOf(queue.url))['ferry:heartbeat-at']).toBe('2030-01-01T00:00:00.000Z');

    await queue.remove();
    await queue.remove(); // idempotent
    expect(await exists(queue.name)).toBe(false);
    expect(await subscriptionsOf(topicArn)).toStrictEqual([]);
  });

  it('subscribes with the SNS envelope when raw delivery is off', async () => {
    const topicArn = await newTopic();
    const queue = await make(topicArn, { raw: false });
    try {
      await aws.sns.send(new PublishCommand({ TopicArn: topicArn, Message: 'hello' }));
      const received = await aws.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queue.url, WaitTimeSeconds: 2 }),
      );
      const body = JSON.parse(received.Messages?.[0]?.Body ?? '{}') as Record<string, unknown>;
      expect(body).toMatchObject({ Type: 'Notification', TopicArn: topicArn, Message: 'hello' });
    } finally {
      await queue.remove();
    }
  });

  it('a topic that does not exist: ERR_READER_QUEUE_SUBSCRIBE naming the topic and the fix, and no queue left', async () => {
    const before = await readerQueueNames();
    const missing = 'arn:aws:sns:us-east-1:000000000000:no-such-topic';
    const failure = await make(missing).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toMatchObject({ code: 'ERR_READER_QUEUE_SUBSCRIBE' });
    expect((failure as Error).message).toMatch(
      /^Subscribing this reader's SQS queue 'ferry-reader-[0-9a-f]{24}' to the SNS topic 'arn:aws:sns:us-east-1:000000000000:no-such-topic' \(snapshots\.params\.ferry_sns_topic_arn\) failed \(.+\); grant sns:Subscribe on the topic/,
    );
    expect(await readerQueueNames()).toStrictEqual(before);
  });
});

describe('judgeReaderQueue', () => {
  const info = (patch: Partial<ReaderQueueInfo>): ReaderQueueInfo => ({
    name: 'ferry-reader-x',
    url: 'u',
    arn: undefined,
    host: undefined,
    pid: undefined,
    startedAt: undefined,
    heartbeatAtMs: 1_000_000,
    heartbeatIntervalMs: 60_000,
    ...patch,
  });

  it.each([
    ['a heartbeat within 3 intervals', info({}), 1_000_000 + 180_000, undefined, 'live'],
    ['a heartbeat older than 3 intervals', info({}), 1_000_000 + 180_001, undefined, 'abandoned'],
    ['--stale-after overrides the interval', info({}), 1_000_000 + 20_000, 10_000, 'abandoned'],
    ['no heartbeat tag', info({ heartbeatAtMs: undefined }), 9e12, undefined, 'unknown'],
    [
      'no interval tag and no --stale-after',
      info({ heartbeatIntervalMs: undefined }),
      9e12,
      undefined,
      'unknown',
    ],
    [
      'no interval tag, with --stale-after',
      info({ heartbeatIntervalMs: undefined }),
      9e12,
      60_000,
      'abandoned',
    ],
    ['a heartbeat from a clock ahead of ours', info({}), 1_000_000 - 5_000, undefined, 'live'],
  ] as const)('%s', (_name, queue, nowMs, staleAfterMs, verdict) => {
    expect(judgeReaderQueue(queue, nowMs, staleAfterMs).verdict).toBe(verdict);
  });
});

describe('collectReaderQueues', () => {
  it('removes the abandoned queues of its topic with their subscriptions, and subscriptions of vanished queues; keeps the rest', async () => {
    const topicArn = await newTopic();
    const otherTopic = await newTopic();
    const live = await make(topicArn);
    const dead = await make(topicArn);
    const foreign = await make(otherTopic);
    const vanished = await make(topicArn);
    const opened: ReaderQueue[] = [live, dead, foreign];
    try {
      const longAgo = new Date(Date.now() - 3_600_000);
      await dead.heartbeat(longAgo);
      await foreign.heartbeat(longAgo);
      // A queue deleted without unsubscribing (by hand): its subscription is left on the topic.
      await aws.sqs.send(new DeleteQueueCommand({ QueueUrl: vanished.url }));
      const options: CollectReaderQueuesOptions = fleet(topicArn);

      const dry = await collectReaderQueues({ ...options, dryRun: true });
      const byName = (report: typeof dry) =>
        Object.fromEntries(report.queues.map((queue) => [queue.name, [queue.verdict, queue.action]]));
      expect(byName(dry)).toStrictEqual({
        [live.name]: ['live', 'kept'],
        [dead.name]: ['abandoned', 'would remove'],
      });
      expect(dry.subscriptions.map((s) => [s.endpoint, s.reason, s.action]).sort()).toStrictEqual(
        [
          [dead.arn, 'queue removed', 'would remove'],
          [vanished.arn, 'queue gone', 'would remove'],
        ].sort(),
      );
      expect(await exists(dead.name)).toBe(true);
      expect((await subscriptionsOf(topicArn)).length).toBe(3);

      const report = await collectReaderQueues(options);
      expect(byName(report)).toStrictEqual({
        [live.name]: ['live', 'kept'],
        [dead.name]: ['abandoned', 'removed'],
      });
      const deadEntry = report.queues.find((queue) => queue.name === dead.name);
      expect(deadEntry).toMatchObject({ host: 'reader-host.local', pid: 4242, arn: dead.arn });
      expect(deadEntry?.reason).toMatch(/^last heartbeat \d+s ago, over 180s$/);
      expect(await exists(dead.name)).toBe(false);
      expect(await exists(live.name)).toBe(true);
      expect(await exists(foreign.name)).toBe(true);
      expect((await subscriptionsOf(topicArn)).map((s) => s.Endpoint)).toStrictEqual([live.arn]);
      expect((await subscriptionsOf(otherTopic)).map((s) => s.Endpoint)).toStrictEqual([foreign.arn]);

      // Nothing left to do.
      const again = await collectReaderQueues(options);
      expect(again.subscriptions).toStrictEqual([]);
      expect(again.queues.map((queue) => queue.action)).toStrictEqual(['kept']);
    } finally {
      await Promise.all(opened.map((queue) => queue.remove().catch(() => undefined)));
    }
  });
});
