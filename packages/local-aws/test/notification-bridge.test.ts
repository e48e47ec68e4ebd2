/**
 * The S3 → SQS bridge against the real local server: writes and deletes become notifications on
 * the queue, in the exact AWS shapes, and a test can await each one.
 */
import { DeleteMessageBatchCommand, type Message, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  decodeS3EventKey,
  type LocalAws,
  type NotificationBridge,
  type S3Event,
  type SnsEnvelope,
  startLocalAws,
  startNotificationBridge,
} from '../src/index.js';

let aws: LocalAws;
let queueUrl: string;
let bridge: NotificationBridge | undefined;
const bucket = 'bridge-bucket';

beforeAll(async () => {
  aws = await startLocalAws();
  await aws.createBucket(bucket);
  queueUrl = await aws.createQueue('bridge-queue');
});

afterAll(async () => {
  await aws.close();
});

beforeEach(() => {
  aws.server.reset();
});

afterEach(async () => {
  await bridge?.stop();
  bridge = undefined;
});

/**
 * Every message on the queue (default: the bridge queue) right now, deleted. The bridge has already
 * sent what a test awaited; an SNS delivery may take a moment, hence `waitSeconds`.
 */
async function drainQueue(url = queueUrl, waitSeconds = 0): Promise<Message[]> {
  const out = await aws.sqs.send(
    new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: waitSeconds }),
  );
  const messages = out.Messages ?? [];
  if (messages.length > 0) {
    await aws.sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: url,
        Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
      }),
    );
  }
  return messages;
}

function only<T>(items: readonly T[]): T {
  expect(items).toHaveLength(1);
  const [item] = items;
  if (item === undefined) throw new Error('expected one item');
  return item;
}

describe('startNotificationBridge', () => {
  it('goes on sending notifications after the server is reset (which clears the spy it taps)', async () => {
    bridge = startNotificationBridge(aws, { bucket, queueUrl, prefix: 'snapshots/' });
    aws.server.reset();
    await aws.putObject(bucket, 'snapshots/after-reset.json', '{}');
    expect(await bridge.next()).toMatchObject({
      eventName: 'ObjectCreated:Put',
      key: 'snapshots/after-reset.json',
    });
    await drainQueue();
  });

  it('turns a PUT into an S3 event on the queue, in the exact AWS format', async () => {
    bridge = startNotificationBridge(aws, { bucket, queueUrl, prefix: 'snapshots/' });
    const before = Date.now();
    const { etag } = await aws.putObject(bucket, 'snapshots/metadata.json', '{"format-version":1}');
    const sent = await bridge.next();
    expect(sent).toMatchObject({ eventName: 'ObjectCreated:Put', bucket, key: 'snapshots/metadata.json' });

    const message = only(await drainQueue());
    expect(message.Body).toBe(sent.body);
    const event = JSON.parse(message.Body ?? '') as S3Event;
    const record = only(event.Records);
    expect(record).toEqual({
      eventVersion: '2.1',
      eventSource: 'aws:s3',
      awsRegion: 'us-east-1',
      eventTime: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      eventName: 'ObjectCreated:Put',
      userIdentity: { principalId: expect.any(String) },
      requestParameters: { sourceIPAddress: '127.0.0.1' },
      responseElements: { 'x-amz-request-id': expect.any(String), 'x-amz-id-2': expect.any(String) },
      s3: {
        s3SchemaVersion: '1.0',
        configurationId: 'ferry-snapshots',
        bucket: {
          name: bucket,
          ownerIdentity: { principalId: expect.any(String) },
          arn: `arn:aws:s3:::${bucket}`,
        },
        object: {
          key: 'snapshots/metadata.json',
          size: 20,
          eTag: etag.replaceAll('"', ''),
          sequencer: expect.stringMatching(/^[0-9A-F]{16,}$/),
        },
      },
    });
    expect(Date.parse(record.eventTime)).toBeGreaterThanOrEqual(before - 1000);
  });

  it('reports a delete as ObjectRemoved:Delete without size or ETag', async () => {
    await aws.putObject(bucket, 'snapshots/old.duckdb', 'old');
    bridge = startNotificationBridge(aws, { bucket, queueUrl });
    await aws.deleteObject(bucket, 'snapshots/old.duckdb');
    expect((await bridge.next()).eventName).toBe('ObjectRemoved:Delete');
    const record = only((JSON.parse(only(await drainQueue()).Body ?? '') as S3Event).Records);
    expect(record.eventName).toBe('ObjectRemoved:Delete');
    expect(record.s3.object).toEqual({ key: 'snapshots/old.duckdb', sequencer: expect.any(String) });
  });

  it('URL-encodes keys with spaces and unicode as S3 does (space as +)', async () => {
    bridge = startNotificationBridge(aws, { bucket, queueUrl });
    const key = 'month=2026-11/a b+c ünï 雪.json';
    await aws.putObject(bucket, key, '{}');
    await bridge.next();
    const record = only((JSON.parse(only(await drainQueue()).Body ?? '') as S3Event).Records);
    expect(record.s3.object.key).toBe('month%3D2026-11/a+b%2Bc+%C3%BCn%C3%AF+%E9%9B%AA.json');
    expect(decodeS3EventKey(record.s3.object.key)).toBe(key);
  });

  it('names a multipart upload ObjectCreated:CompleteMultipartUpload', async () => {
    bridge = startNotificationBridge(aws, { bucket, queueUrl });
    const body = new Uint8Array(9 * 1024 * 1024).fill(1);
    await aws.putObject(bucket, 'big.duckdb', body);
    const sent = await bridge.next();
    expect(sent.eventName).toBe('ObjectCreated:CompleteMultipartUpload');
    const record = only((JSON.parse(only(await drainQueue()).Body ?? '') as S3Event).Records);
    expect(record.s3.object.size).toBe(body.byteLength);
    expect(record.s3.object.eTag).toMatch(/^[0-9a-f]{32}-2$/);
  });

  it('wraps the event in an SNS envelope when asked', async () => {
    bridge = startNotificationBridge(aws, { bucket, queueUrl, sns: true });
    await aws.putObject(bucket, 'snapshots/metadata.json', '{}');
    await bridge.next();
    const envelope = JSON.parse(only(await drainQueue()).Body ?? '') as SnsEnvelope;
    expect(envelope).toEqual({
      Type: 'Notification',
      MessageId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      TopicArn: expect.stringMatching(/^arn:aws:sns:us-east-1:\d{12}:/),
      Subject: 'Amazon S3 Notification',
      Message: expect.any(String),
      Timestamp: expect.stringMatching(/Z$/),
      SignatureVersion: '1',
      Signature: expect.any(String),
      SigningCertURL: expect.stringMatching(/^https:\/\/sns\.us-east-1\.amazonaws\.com\//),
      UnsubscribeURL: expect.stringMatching(
        /^https:\/\/sns\.us-east-1\.amazonaws\.com\/\?Action=Unsubscribe/,
      ),
    });
    const inner = JSON.parse(envelope.Message) as S3Event;
    expect(only(inner.Records).s3.object.key).toBe('snapshots/metadata.json');
  });

  it('sends EventBridge events with the raw key when asked', async () => {
    bridge = startNotificationBridge(aws, { bucket, queueUrl, eventBridge: true });
    await aws.putObject(bucket, 'a b.json', '{}');
    await bridge.next();
    const event = JSON.parse(only(await drainQueue()).Body ?? '') as Record<string, unknown>;
    expect(event).toMatchObject({
      source: 'aws.s3',
      'detail-type': 'Object Created',
      detail: { bucket: { name: bucket }, object: { key: 'a b.json', size: 2 }, reason: 'PutObject' },
    });
  });

  it('only reports keys under the prefix, and returns every notification once, in order', async () => {
    bridge = startNotificationBridge(aws, { bucket, queueUrl, prefix: 'snapshots/' });
    await aws.putObject(bucket, 'elsewhere/x.json', '1');
    await aws.putObject(bucket, 'snapshots/one.json', '1');
    await aws.putObject(bucket, 'snapshots/two.json', '2');
    expect((await bridge.next()).key).toBe('snapshots/one.json');
    expect((await bridge.next()).key).toBe('snapshots/two.json');
    expect(bridge.sent()).toBe(2);
    const keys = (await drainQueue()).map(
      (m) => only((JSON.parse(m.Body ?? '') as S3Event).Records).s3.object.key,
    );
    expect(keys.sort()).toEqual(['snapshots/one.json', 'snapshots/two.json']);
  });

  it('rejects a pending next() when stopped', async () => {
    const stopped = startNotificationBridge(aws, { bucket, queueUrl });
    const pending = stopped.next();
    await stopped.stop();
    await expect(pending).rejects.toThrow(/stopped/);
  });

  it('refuses sns and eventBridge together', () => {
    expect(() => startNotificationBridge(aws, { bucket, queueUrl, sns: true, eventBridge: true })).toThrow(
      /not both/,
    );
  });
});

describe('startNotificationBridge with publishToTopicArn (S3 → SNS → SQS)', () => {
  const drain = (url: string) => drainQueue(url, 1);

  it('publishes the S3 event to the topic; fauxqs delivers it to every subscribed queue, raw or enveloped', async () => {
    const topicArn = await aws.createTopic('bridge-topic');
    expect(topicArn).toBe('arn:aws:sns:us-east-1:000000000000:bridge-topic');
    const raw = await aws.createQueue('bridge-raw');
    const enveloped = await aws.createQueue('bridge-enveloped');
    const unsubscribed = await aws.createQueue('bridge-unsubscribed');
    await aws.subscribeQueue(topicArn, raw, { raw: true });
    await aws.subscribeQueue(topicArn, enveloped);

    bridge = startNotificationBridge(aws, { bucket, publishToTopicArn: topicArn, prefix: 'snapshots/' });
    const { etag } = await aws.putObject(bucket, 'snapshots/metadata.json', '{"format-version":1}');
    const sent = await bridge.next();
    expect(sent).toMatchObject({ eventName: 'ObjectCreated:Put', key: 'snapshots/metadata.json' });

    const rawMessage = only(await drain(raw));
    expect(rawMessage.Body).toBe(sent.body);
    const record = only((JSON.parse(rawMessage.Body ?? '') as S3Event).Records);
    expect(record.s3.object).toMatchObject({
      key: 'snapshots/metadata.json',
      eTag: etag.replaceAll('"', ''),
    });

    const envelope = JSON.parse(only(await drain(enveloped)).Body ?? '') as SnsEnvelope;
    expect(envelope).toMatchObject({
      Type: 'Notification',
      TopicArn: topicArn,
      Subject: 'Amazon S3 Notification',
      Message: sent.body,
      MessageId: sent.messageId,
    });
    expect(await drain(unsubscribed)).toStrictEqual([]);
  });

  it('refuses a queue and a topic together, and an envelope on top of the topic', () => {
    const topicArn = 'arn:aws:sns:us-east-1:000000000000:t';
    expect(() => startNotificationBridge(aws, { bucket, queueUrl, publishToTopicArn: topicArn })).toThrow(
      /one of `queueUrl` and `publishToTopicArn`/,
    );
    expect(() => startNotificationBridge(aws, { bucket })).toThrow(/one of/);
    expect(() => startNotificationBridge(aws, { bucket, publishToTopicArn: topicArn, sns: true })).toThrow(
      /envelope itself/,
    );
  });
});
