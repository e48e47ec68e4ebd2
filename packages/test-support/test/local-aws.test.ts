/** The local AWS harness: request counting through the proxy, multipart helpers, clean shutdown. */
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emulateConditionalWrites, injectS3Fault, type LocalAws, startLocalAws } from '../src/index.js';

let aws: LocalAws;

beforeAll(async () => {
  aws = await startLocalAws();
  await aws.createBucket('b');
});

afterAll(async () => {
  await aws.close();
});

function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

describe('startLocalAws', () => {
  it('counts requests per method and key, and the body bytes sent back', async () => {
    const { etag } = await aws.putObject('b', 'p/metadata.json', '0123456789');
    aws.requests.clear();
    await aws.s3.send(new HeadObjectCommand({ Bucket: 'b', Key: 'p/metadata.json' }));
    expect(aws.requests.count('GET', 'b/p/metadata.json')).toBe(0);
    expect(await aws.getObject('b', 'p/metadata.json')).toEqual(new TextEncoder().encode('0123456789'));
    expect(aws.requests.count('GET', 'b/p/metadata.json')).toBe(1);
    expect(aws.requests.count('HEAD', 'b/p/metadata.json')).toBe(1);
    expect(aws.requests.responseBytes({ method: 'GET', target: 'b/p/metadata.json' })).toBe(10);

    const notModified = await aws.s3
      .send(new GetObjectCommand({ Bucket: 'b', Key: 'p/metadata.json', IfNoneMatch: etag }))
      .catch((error: unknown) => error);
    expect(statusOf(notModified)).toBe(304);
    expect(aws.requests.list({ method: 'GET', status: 304 })).toHaveLength(1);
    expect(aws.requests.responseBytes({ method: 'GET', status: 304 })).toBe(0);
  });

  it('round-trips objects above the single-request limit through multipart', async () => {
    const body = new Uint8Array(12 * 1024 * 1024);
    for (let i = 0; i < body.length; i++) body[i] = (i * 7) % 251;
    const { etag } = await aws.putObject('b', 'big.bin', body);
    expect(etag).toMatch(/-2"$/);
    expect(Buffer.compare(Buffer.from((await aws.getObject('b', 'big.bin')) ?? []), Buffer.from(body))).toBe(
      0,
    );
    expect(await aws.getObject('b', 'missing')).toBeUndefined();
    expect(await aws.listKeys('b')).toEqual(['big.bin', 'p/metadata.json']);
  });

  it('creates queues the SQS client can use', async () => {
    const queueUrl = await aws.createQueue('harness-q');
    await aws.sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'hello' }));
    const out = await aws.sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 0 }));
    expect(out.Messages?.map((m) => m.Body)).toEqual(['hello']);
    expect(aws.requests.list({ operation: 'AmazonSQS.ReceiveMessage' }).length).toBeGreaterThan(0);
  });

  it('injects S3 error responses that the SDK parses like real ones', async () => {
    const fault = injectS3Fault(aws.s3, ({ commandName }) =>
      commandName === 'HeadObjectCommand'
        ? { status: 403, code: 'AccessDenied', message: 'denied' }
        : undefined,
    );
    try {
      const error = await aws.s3
        .send(new HeadObjectCommand({ Bucket: 'b', Key: 'p/metadata.json' }))
        .catch((e: unknown) => e);
      expect(statusOf(error)).toBe(403);
      expect(fault.injected()).toBe(1);
    } finally {
      fault.remove();
    }
    await aws.s3.send(new HeadObjectCommand({ Bucket: 'b', Key: 'p/metadata.json' }));
    expect(fault.injected()).toBe(1);
  });

  it('emulates S3 conditional writes', async () => {
    const conditional = emulateConditionalWrites(aws.s3, aws);
    try {
      const { etag } = await aws.putObject('b', 'c.json', 'v1');
      const exists = await aws.s3
        .send(new PutObjectCommand({ Bucket: 'b', Key: 'c.json', Body: 'x', IfNoneMatch: '*' }))
        .catch((e: unknown) => e);
      expect(statusOf(exists)).toBe(412);
      const stale = await aws.s3
        .send(new PutObjectCommand({ Bucket: 'b', Key: 'c.json', Body: 'x', IfMatch: '"stale"' }))
        .catch((e: unknown) => e);
      expect(statusOf(stale)).toBe(412);
      await aws.s3.send(new PutObjectCommand({ Bucket: 'b', Key: 'c.json', Body: 'v2', IfMatch: etag }));
      await aws.s3.send(
        new PutObjectCommand({ Bucket: 'b', Key: 'fresh.json', Body: 'v1', IfNoneMatch: '*' }),
      );
      expect(conditional.injected()).toBe(2);
    } finally {
      conditional.remove();
    }
  });

  it('closes idempotently and stops serving', async () => {
    const other = await startLocalAws();
    const endpoint = other.endpoint;
    await other.close();
    await other.close();
    await expect(fetch(`${endpoint}/health`)).rejects.toThrow();
    await expect(fetch(`${other.serverEndpoint}/health`)).rejects.toThrow();
  });
});
