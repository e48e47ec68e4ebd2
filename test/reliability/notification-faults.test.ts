/**
 * SQS faults, with the queue reached through the fault proxy: SQS unreachable, SQS answering with a
 * malformed body, messages whose bodies are not S3 notifications, and a notification for another
 * bucket. Notifications only speed reloads up, so in every case the dataset keeps serving and its
 * scheduled checks keep swapping in new snapshots; the consumer logs the outage (once) and the
 * recovery, deletes what it cannot parse, and leaves what belongs to another bucket on the queue.
 */
import { createRequire } from 'node:module';
import { type LocalAws, s3Event } from '@ferry/test-support';
import { useLocalAws } from '@ferry/test-support/suite';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  BUCKET,
  collect,
  DATASET,
  nextEvent,
  publish,
  type Started,
  servedVersion,
  snapshotFile,
  spicepod,
  startRuntime,
} from './support.js';

const PREFIX = 'notifications/';
const QUEUE = 'ferry-reliability-events';
/** The start of Spice's outage line (the cause differs per fault). */
const OUTAGE_START =
  'Failed to receive S3 event notifications from the SQS queue in `s3_queue_url` for snapshot location ';
const isOutage = (r: { message: string }): boolean => r.message.startsWith(OUTAGE_START);
const RECEIVE = 'AmazonSQS.ReceiveMessage';

interface SqsModule {
  readonly SQSClient: new (
    config: ReturnType<LocalAws['sqsConfig']>,
  ) => { send(command: unknown): Promise<unknown>; destroy(): void };
  readonly SendMessageCommand: new (input: { QueueUrl: string; MessageBody: string }) => unknown;
}

/** The real SQS client, from the package that depends on it (@ferry/test-support). */
function sqsModule(): SqsModule {
  const local = createRequire(import.meta.url);
  return createRequire(local.resolve('@ferry/test-support'))('@aws-sdk/client-sqs') as SqsModule;
}

const { aws, proxy } = useLocalAws({ buckets: [BUCKET], faultProxy: true });
let queueUrl: string;
let s: Started;
let version = 1;

async function send(body: string): Promise<void> {
  const { SQSClient, SendMessageCommand } = sqsModule();
  const client = new SQSClient(aws.sqsConfig({ direct: true }));
  try {
    await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
  } finally {
    client.destroy();
  }
}

/** Publishes the next version and waits until the dataset serves it (by whichever path). */
async function publishAndServe(): Promise<void> {
  const swapped = nextEvent(s.runtime, 'swap', (e) => e.dataset === DATASET);
  const published = await publish(aws, PREFIX, await snapshotFile('duckdb', version + 1));
  expect((await swapped).to).toBe(published.snapshotId);
  version++;
  expect(await servedVersion(s.runtime)).toEqual({ version, snapshotId: published.snapshotId });
}

beforeAll(async () => {
  queueUrl = await aws.createQueue(QUEUE);
  await publish(aws, PREFIX, await snapshotFile('duckdb', 1));
  s = await startRuntime(
    spicepod(aws, {
      prefix: PREFIX,
      endpoint: proxy.endpoint,
      interval: '500ms',
      queueUrl,
      queueEndpoint: proxy.endpoint,
    }),
    { notifications: { waitTimeSeconds: 1, backoffScale: 0.05 } },
  );
  await s.runtime.ready(DATASET, { timeoutMs: 30_000 });
  await proxy.waitForRequest({ method: 'POST' }, { since: 0 });
});

afterAll(async () => {
  await s?.runtime.close();
});

describe('SQS faults: notifications fail, snapshots keep flowing', () => {
  it.each([
    { name: 'SQS unreachable (connections reset)', fault: { kind: 'drop' } as const },
    {
      name: 'SQS answering with a malformed body',
      fault: {
        kind: 'replace',
        body: '{"Messages": [ {"Body": ',
        headers: { 'content-type': 'application/x-amz-json-1.0' },
      } as const,
    },
  ])('$name: outage logged once, polling still swaps, recovery logged', async ({ fault }) => {
    const mark = s.logger.records.length;
    proxy.setRules([{ name: 'sqs', operation: RECEIVE, fault }]);
    await s.logger.waitFor(isOutage, { since: mark });
    // Scheduled checks do not depend on the queue.
    await publishAndServe();
    await proxy.waitForRequest({ rule: 'sqs' });
    expect(s.logger.since(mark).filter((r) => isOutage(r) && r.level !== 'debug')).toHaveLength(1);
    expect(s.logger.since(mark).find(isOutage)?.level).toBe('warn');
    expect(s.runtime.status(DATASET).status?.lastPollResult).toMatch(/newer|same|unchanged/);

    proxy.clear();
    const recovered = await s.logger.waitFor(
      (r) =>
        r.message.includes(
          'is receiving S3 event notifications from the SQS queue in `s3_queue_url` again after ',
        ),
      {
        since: mark,
      },
    );
    expect(recovered[0]?.level).toBe('info');
    // The queue works again: a commit notification reloads the dataset.
    await publishAndServe();
  });

  it('messages that are not S3 notifications are deleted with a warning; the dataset is undisturbed', async () => {
    const mark = s.logger.records.length;
    const notifications = collect(s.runtime, 'notification');
    // Counted from just after a check (the next is ~500 ms away, and with a listener the dataset
    // checks for itself, one poll event each), so no check's GET is under way at the start.
    const seen = collect(s.runtime, 'poll');
    await nextEvent(s.runtime, 'poll', (e) => e.dataset === DATASET);
    const gets = aws.requests.count('GET', `${BUCKET}/${PREFIX}metadata.json`);
    const checked = seen.length;
    await send('this is not json');
    await send('{"Records":"nope"}');
    await send('{"Type":"Notification","Message":"{broken"}');
    const dropped = await s.logger.waitFor(
      (r) =>
        r.message.includes(
          ' dropped an SQS message that is not an S3 event notification, so it was deleted without reloading any dataset. Cause: ',
        ),
      { since: mark, count: 3 },
    );
    expect(dropped.map((r) => r.level)).toEqual(['warn', 'warn', 'warn']);
    const total = (outcome: string): number =>
      notifications.filter((e) => e.outcome === outcome).reduce((n, e) => n + e.count, 0);
    if (total('deleted') < 3) await nextEvent(s.runtime, 'notification', () => total('deleted') >= 3);
    expect(total('unparseable')).toBe(3);
    const queue = aws.server.inspectQueue(QUEUE);
    expect((queue?.messages.ready.length ?? 0) + (queue?.messages.inflight.length ?? 0)).toBe(0);
    // No reload was asked for: only the scheduled checks read metadata.json meanwhile. The local S3
    // logs a check's GET as it answers it, before the check's poll event: one under way may lead.
    const polls = () => seen.slice(checked);
    await vi.waitFor(
      () =>
        expect(aws.requests.count('GET', `${BUCKET}/${PREFIX}metadata.json`) - gets).toBeLessThanOrEqual(
          polls().length,
        ),
      { timeout: 5_000, interval: 20 },
    );
    expect(polls().every((p) => p.result !== 'failed')).toBe(true);
    expect(await servedVersion(s.runtime)).toMatchObject({ version });
  });

  it('a notification for another bucket stays on the queue with an error; the dataset is undisturbed', async () => {
    const mark = s.logger.records.length;
    const left = nextEvent(s.runtime, 'notification', (e) => e.outcome === 'left');
    await send(
      JSON.stringify(
        s3Event({ eventName: 'ObjectCreated:Put', bucket: 'someone-else', key: `${PREFIX}metadata.json` }),
      ),
    );
    expect((await left).count).toBe(1);
    const line = s.logger
      .since(mark)
      .find((r) =>
        r.message.includes(
          `received an S3 event notification for 's3://someone-else/${PREFIX}metadata.json', which is outside the location, so the SQS message was left on the queue (not deleted)`,
        ),
      );
    expect(line?.level).toBe('error');
    const queue = aws.server.inspectQueue(QUEUE);
    expect(queue?.messages.inflight.map((m) => m.message.body)).toEqual([
      expect.stringContaining('someone-else'),
    ]);
    expect(s.runtime.status(DATASET).status?.servingSnapshotId).not.toBeNull();
    await publishAndServe();
  });
});
