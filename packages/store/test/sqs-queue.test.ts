import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { NotificationQueue, QueueMessage } from '@ferry/core';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createSqsQueue,
  regionFromQueueUrl,
  SqsDeleteError,
  SqsQueueError,
  type SqsQueueOptions,
} from '../src/sqs-queue.js';

const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
let server: FauxqsServer;
let endpoint: string;
let sender: SQSClient;
const opened: NotificationQueue[] = [];
let queueCount = 0;

beforeAll(async () => {
  server = await startFauxqs({ port: 0, logger: false });
  endpoint = `http://127.0.0.1:${server.port}`;
  sender = new SQSClient({ region: 'us-east-1', endpoint, credentials, useQueueUrlAsEndpoint: false });
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((queue) => queue.close()));
});

afterAll(async () => {
  sender.destroy();
  await server.stop();
});

function newQueue(): { queueUrl: string; queueName: string } {
  queueCount += 1;
  return server.createQueue(`ferry-test-${queueCount}`);
}

function open(options: SqsQueueOptions): NotificationQueue {
  const queue = createSqsQueue({ endpoint, credentials, ...options });
  opened.push(queue);
  return queue;
}

async function send(queueUrl: string, bodies: readonly string[]): Promise<void> {
  for (let start = 0; start < bodies.length; start += 10) {
    const chunk = bodies.slice(start, start + 10);
    await sender.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: chunk.map((body, index) => ({ Id: `e${index}`, MessageBody: body })),
      }),
    );
  }
}

async function receiveAll(queue: NotificationQueue, count: number): Promise<QueueMessage[]> {
  const received: QueueMessage[] = [];
  while (received.length < count) {
    const batch = await queue.receive({ waitSeconds: 1 });
    if (batch.length === 0) throw new Error(`only ${received.length} of ${count} messages arrived`);
    received.push(...batch);
  }
  return received;
}

/** Resolves when an in-process HTTP server receives an SQS request of this action. */
function serverReceived(action: string): Promise<void> {
  return new Promise((resolve) => {
    const listener = (message: unknown) => {
      const { request } = message as { request: IncomingMessage };
      if (request.headers['x-amz-target'] === `AmazonSQS.${action}`) {
        unsubscribe('http.server.request.start', listener);
        resolve();
      }
    };
    subscribe('http.server.request.start', listener);
  });
}

/** Counts the SQS requests of one action that in-process HTTP servers receive until `stop()`. */
function countRequests(action: string): { stop: () => number } {
  let count = 0;
  const listener = (message: unknown) => {
    const { request } = message as { request: IncomingMessage };
    if (request.headers['x-amz-target'] === `AmazonSQS.${action}`) count += 1;
  };
  subscribe('http.server.request.start', listener);
  return {
    stop: () => {
      unsubscribe('http.server.request.start', listener);
      return count;
    },
  };
}

function queueState(queueName: string): { ready: number; inflight: number } {
  const state = server.inspectQueue(queueName);
  if (state === undefined) throw new Error(`queue ${queueName} is gone`);
  return { ready: state.messages.ready.length, inflight: state.messages.inflight.length };
}

describe('createSqsQueue against fauxqs', () => {
  it('receives sent messages with their receive count, and deletes them', async () => {
    const { queueUrl, queueName } = newQueue();
    const queue = open({ queueUrl });
    await send(queueUrl, ['a', 'b', 'c']);

    const messages = await receiveAll(queue, 3);
    expect(messages.map((message) => message.body).sort()).toEqual(['a', 'b', 'c']);
    expect(messages.map((message) => message.receiveCount)).toEqual([1, 1, 1]);
    expect(new Set(messages.map((message) => message.id)).size).toBe(3);
    expect(queueState(queueName)).toEqual({ ready: 0, inflight: 3 });

    await queue.delete(messages);
    expect(queueState(queueName)).toEqual({ ready: 0, inflight: 0 });
    expect(await queue.receive({ waitSeconds: 0 })).toEqual([]);
  });

  it('deletes more than ten messages in batches of ten', async () => {
    const { queueUrl, queueName } = newQueue();
    const queue = open({ queueUrl });
    const bodies = Array.from({ length: 23 }, (_, index) => `m${index}`);
    await send(queueUrl, bodies);
    const messages = await receiveAll(queue, 23);

    const requests = countRequests('DeleteMessageBatch');
    await queue.delete(messages);
    expect(requests.stop()).toBe(3);
    expect(queueState(queueName)).toEqual({ ready: 0, inflight: 0 });
  });

  it('counts a redelivery after the visibility timeout expires', async () => {
    const { queueUrl } = newQueue();
    const queue = open({ queueUrl, visibilityTimeoutSeconds: 1 });
    await send(queueUrl, ['again']);

    const [first] = await receiveAll(queue, 1);
    // This long poll returns when the message becomes visible again, a second later.
    const second = await queue.receive({ waitSeconds: 10 });
    expect(second).toHaveLength(1);
    expect(second[0]).toMatchObject({ id: first?.id, body: 'again', receiveCount: 2 });
    expect(second[0]?.receiptHandle).not.toBe(first?.receiptHandle);
  });

  it('close() ends an in-flight long poll at once with no messages', async () => {
    const { queueUrl } = newQueue();
    const queue = open({ queueUrl, waitTimeSeconds: 20 });
    const polling = serverReceived('ReceiveMessage');
    const pending = queue.receive();
    await polling;

    const closedAt = performance.now();
    await queue.close();
    expect(await pending).toEqual([]);
    expect(performance.now() - closedAt).toBeLessThan(2_000);

    await expect(queue.receive()).rejects.toMatchObject({ code: 'ERR_SQS_CLOSED' });
    await expect(queue.delete([])).rejects.toMatchObject({ code: 'ERR_SQS_CLOSED' });
    await queue.close();
  });

  it("a caller's abort signal rejects the receive with its reason and leaves the queue usable", async () => {
    const { queueUrl } = newQueue();
    const queue = open({ queueUrl, waitTimeSeconds: 20, visibilityTimeoutSeconds: 1 });
    const controller = new AbortController();
    const polling = serverReceived('ReceiveMessage');
    const pending = queue.receive({ signal: controller.signal });
    await polling;

    const abortedAt = performance.now();
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(performance.now() - abortedAt).toBeLessThan(2_000);
    await expect(queue.receive({ signal: controller.signal })).rejects.toMatchObject({ name: 'AbortError' });

    // The server may still hand the next message to the abandoned poll (SQS does too); it then
    // comes back after the visibility timeout, which this long poll waits for.
    await send(queueUrl, ['still here']);
    const next = await queue.receive({ waitSeconds: 10 });
    expect(next.map((message) => message.body)).toEqual(['still here']);
  });

  it('takes its endpoint from AWS_ENDPOINT_URL_SQS when none is given', async () => {
    const { queueUrl } = newQueue();
    const previous = process.env.AWS_ENDPOINT_URL_SQS;
    process.env.AWS_ENDPOINT_URL_SQS = endpoint;
    try {
      const queue = createSqsQueue({ queueUrl, credentials });
      opened.push(queue);
      await send(queueUrl, ['via env']);
      expect((await receiveAll(queue, 1)).map((message) => message.body)).toEqual(['via env']);
    } finally {
      if (previous === undefined) delete process.env.AWS_ENDPOINT_URL_SQS;
      else process.env.AWS_ENDPOINT_URL_SQS = previous;
    }
  });

  it('reports a missing queue without its URL', async () => {
    const queueUrl = `http://sqs.us-east-1.localhost:${server.port}/000000000000/secret-queue-name`;
    const queue = open({ queueUrl });
    const error = await queue.receive({ waitSeconds: 0 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SqsQueueError);
    expect(error).toMatchObject({ code: 'ERR_SQS_RECEIVE' });
    expect((error as Error).message).toMatch(/^Receiving from the SQS queue failed \(QueueDoesNotExist: /);
    expect((error as Error).message).not.toContain('secret-queue-name');
    expect((error as Error).cause).toBeDefined();

    const message: QueueMessage = { id: 'x1', receiptHandle: 'h', body: '', receiveCount: 1 };
    const deleteError = await queue.delete([message]).catch((caught: unknown) => caught);
    expect(deleteError).toBeInstanceOf(SqsDeleteError);
    expect((deleteError as SqsDeleteError).failures).toEqual([
      {
        messageId: 'x1',
        code: 'QueueDoesNotExist',
        message: 'The specified queue does not exist.',
        senderFault: false,
      },
    ]);
  });
});

/**
 * fauxqs never fails single delete entries and never quotes a queue URL in an error, so these two
 * paths are checked against a tiny HTTP server speaking the SQS JSON protocol (the SDK stays real).
 */
describe('createSqsQueue against a scripted SQS endpoint', () => {
  let scripted: Server;
  let scriptedEndpoint: string;
  const queueUrl = 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders-notifications';

  beforeAll(async () => {
    scripted = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        const target = request.headers['x-amz-target'];
        response.setHeader('content-type', 'application/x-amz-json-1.0');
        if (target === 'AmazonSQS.DeleteMessageBatch') {
          response.end(
            JSON.stringify({
              Successful: [{ Id: 'm0' }],
              Failed: [
                {
                  Id: 'm1',
                  Code: 'ReceiptHandleIsInvalid',
                  Message: `The receipt handle for ${queueUrl} is invalid`,
                  SenderFault: true,
                },
              ],
            }),
          );
          return;
        }
        response.statusCode = 400;
        response.end(
          JSON.stringify({
            __type: 'com.amazonaws.sqs#AccessDenied',
            message: `Access to the resource ${queueUrl} is denied.`,
          }),
        );
      });
    });
    await new Promise<void>((resolve) => scripted.listen(0, '127.0.0.1', resolve));
    scriptedEndpoint = `http://127.0.0.1:${(scripted.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => scripted.close(resolve));
  });

  it('reports each entry SQS failed to delete, by message id', async () => {
    const queue = open({ queueUrl, endpoint: scriptedEndpoint });
    const messages: QueueMessage[] = [
      { id: 'kept', receiptHandle: 'h0', body: '', receiveCount: 1 },
      { id: 'lost', receiptHandle: 'h1', body: '', receiveCount: 1 },
    ];
    const error = await queue.delete(messages).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SqsDeleteError);
    expect((error as SqsDeleteError).failures).toEqual([
      {
        messageId: 'lost',
        code: 'ReceiptHandleIsInvalid',
        message: 'The receipt handle for <queue> is invalid',
        senderFault: true,
      },
    ]);
    expect((error as Error).message).toBe(
      'Deleting 1 of 2 messages from the SQS queue failed (ReceiptHandleIsInvalid: The receipt handle for ' +
        '<queue> is invalid); they will be delivered again after their visibility timeout.',
    );
  });

  it('scrubs the queue URL from an SQS error message', async () => {
    const queue = open({ queueUrl, endpoint: scriptedEndpoint });
    const error = await queue.receive({ waitSeconds: 0 }).catch((caught: unknown) => caught);
    expect((error as Error).message).toBe(
      'Receiving from the SQS queue failed (AccessDenied: Access to the resource <queue> is denied.); ' +
        'check the queue URL, region, endpoint and credentials.',
    );
  });
});

describe('createSqsQueue options', () => {
  it.each([
    ['https://sqs.eu-west-1.amazonaws.com/123456789012/q', 'eu-west-1'],
    ['https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q', 'cn-north-1'],
    ['http://sqs.us-east-1.localhost:4566/000000000000/q', 'us-east-1'],
    ['https://eu-central-1.queue.amazonaws.com/123456789012/q', 'eu-central-1'],
    ['https://queue.amazonaws.com/123456789012/q', 'us-east-1'],
    ['http://localhost:4566/000000000000/q', undefined],
    ['not a url', undefined],
  ])('finds the region of %s: %s', (queueUrl, region) => {
    expect(regionFromQueueUrl(queueUrl)).toBe(region);
  });

  it('refuses a queue URL that is not a URL, without quoting it', () => {
    expect(() => createSqsQueue({ queueUrl: 'secret-queue' })).toThrow(
      expect.objectContaining({
        code: 'ERR_SQS_QUEUE_URL',
        message: expect.not.stringContaining('secret-queue'),
      }),
    );
  });

  it.each([
    [
      { visibilityTimeoutSeconds: -1 },
      "The SQS option 'visibilityTimeoutSeconds' must be a whole number from 0 to 43200 (got -1); fix its value.",
    ],
    [
      { waitTimeSeconds: 21 },
      "The SQS option 'waitTimeSeconds' must be a whole number from 0 to 20 (got 21); fix its value.",
    ],
    [
      { maxMessages: 11 },
      "The SQS option 'maxMessages' must be a whole number from 1 to 10 (got 11); fix its value.",
    ],
    [
      { maxMessages: 1.5 },
      "The SQS option 'maxMessages' must be a whole number from 1 to 10 (got 1.5); fix its value.",
    ],
  ])('refuses %j', (options, message) => {
    expect(() => createSqsQueue({ queueUrl: 'https://sqs.eu-west-1.amazonaws.com/1/q', ...options })).toThrow(
      expect.objectContaining({ code: 'ERR_SQS_OPTION', message }),
    );
  });
});
