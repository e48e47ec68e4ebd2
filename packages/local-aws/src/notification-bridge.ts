/**
 * S3 → SQS notifications for the local server. fauxqs stores objects but does not deliver bucket
 * notifications, so this bridge watches its message spy (which records every S3 upload and delete)
 * and sends the notification AWS would: an S3 event, optionally inside an SNS envelope, or an
 * EventBridge event, to the configured queue — or, with `publishToTopicArn`, publishes the S3 event
 * to an SNS topic as S3 does, and fauxqs's own SNS → SQS delivery carries it to every subscribed
 * queue (enveloped, or raw with `RawMessageDelivery`). Tests await {@link NotificationBridge.next}
 * to learn that a notification is on the queue (or published), never a sleep.
 *
 * Limits: fauxqs records a multipart completion and a single PUT alike as "uploaded", so the event
 * name is chosen from the object's ETag (multipart ETags end in `-<parts>`); a copy is reported as
 * `ObjectCreated:Put`; size and ETag come from a HEAD made when the event is processed, so an object
 * deleted in between yields a created-event without them.
 */

import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { PublishCommand, SNSClient } from '@aws-sdk/client-sns';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { S3SpyEvent, SpyMessage } from 'fauxqs';
import type { LocalAws } from './local-aws.js';
import { eventBridgeEvent, type S3EventInput, type S3EventName, s3Event, snsEnvelope } from './s3-events.js';

export interface NotificationBridgeOptions {
  readonly bucket: string;
  /** The queue to send each notification to; or give `publishToTopicArn`. */
  readonly queueUrl?: string;
  /**
   * Publish each S3 event to this SNS topic instead (as S3 does for an SNS destination); the topic
   * delivers it to its subscribed queues. Not with `sns` or `eventBridge`.
   */
  readonly publishToTopicArn?: string;
  /** Only keys starting with this (like an S3 notification filter rule). */
  readonly prefix?: string;
  /** Only keys ending with this. */
  readonly suffix?: string;
  /** Wrap each S3 event in an SNS envelope. */
  readonly sns?: boolean;
  /** Send EventBridge events instead of S3 events. */
  readonly eventBridge?: boolean;
  readonly configurationId?: string;
  readonly topicArn?: string;
}

export interface SentNotification {
  readonly eventName: S3EventName;
  readonly bucket: string;
  /** The raw (decoded) key. */
  readonly key: string;
  /** The SQS message body exactly as sent (with `publishToTopicArn`: the SNS message published). */
  readonly body: string;
  readonly messageId: string;
  /** When the upload or delete was recorded by fauxqs (its spy's timestamp, epoch ms). */
  readonly eventAtMs: number;
  /** When the send (or publish) was acknowledged (epoch ms): the bridge's own latency is the difference. */
  readonly sentAtMs: number;
}

export interface NotificationBridge {
  /** How many notifications have been sent so far. */
  sent(): number;
  /** All notifications sent so far, oldest first. */
  all(): readonly SentNotification[];
  /**
   * The next notification not yet returned by `next()`, waiting until it is on the queue. Every sent
   * notification is returned exactly once, in order, however late `next()` is called.
   */
  next(): Promise<SentNotification>;
  /** Stop watching; notifications for writes already seen are still sent. Idempotent. */
  stop(): Promise<void>;
}

interface Waiter {
  resolve(notification: SentNotification): void;
  reject(error: unknown): void;
}

function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

/** The subject S3 gives the SNS messages of its event notifications. */
export const S3_SNS_SUBJECT = 'Amazon S3 Notification';

/** Start sending notifications for writes and deletes under `bucket`/`prefix` to `queueUrl`. */
export function startNotificationBridge(
  aws: LocalAws,
  options: NotificationBridgeOptions,
): NotificationBridge {
  if (options.sns === true && options.eventBridge === true) {
    throw new Error('startNotificationBridge: choose one of `sns` and `eventBridge`, not both.');
  }
  const { queueUrl, publishToTopicArn } = options;
  if ((queueUrl === undefined) === (publishToTopicArn === undefined)) {
    throw new Error('startNotificationBridge: give one of `queueUrl` and `publishToTopicArn`.');
  }
  if (publishToTopicArn !== undefined && (options.sns === true || options.eventBridge === true)) {
    throw new Error(
      'startNotificationBridge: `publishToTopicArn` publishes S3 events; the topic adds the SNS envelope itself.',
    );
  }
  // The bridge's own calls go straight to the server so they never show in the request log.
  const s3 = new S3Client(aws.s3Config({ direct: true }));
  const sqs = new SQSClient(aws.sqsConfig({ direct: true }));
  const sns = new SNSClient(aws.snsConfig({ direct: true }));
  const prefix = options.prefix ?? '';
  const suffix = options.suffix ?? '';
  const pending: S3SpyEvent[] = [];
  const sentList: SentNotification[] = [];
  const waiters: Waiter[] = [];
  let cursor = 0;
  let failure: unknown;
  let stopped = false;
  let draining: Promise<void> | undefined;
  let stopping: Promise<void> | undefined;

  const wanted = (message: SpyMessage): message is S3SpyEvent =>
    message.service === 's3' &&
    (message.status === 'uploaded' || message.status === 'deleted') &&
    message.bucket === options.bucket &&
    message.key.startsWith(prefix) &&
    message.key.endsWith(suffix);

  // The spy has no subscribe API, but a waiter's predicate is evaluated synchronously for every
  // message recorded after it is registered. A predicate that never matches is therefore a tap that
  // sees every event in order. Messages already buffered are skipped by arming after registration.
  // Once stopped, it matches the next message so the spy drops the waiter.
  function tap(): void {
    let armed = false;
    aws.server.spy
      .waitForMessage((message) => {
        if (!armed) return false;
        if (stopped) return true;
        if (wanted(message)) {
          pending.push(message);
          draining ??= drain().finally(() => {
            draining = undefined;
          });
        }
        return false;
      })
      .catch(() => {
        // The spy rejects its waiters only when it is cleared (`aws.server.reset()`, `spy.clear()`;
        // no timeout is given): tap again, so the bridge goes on seeing every later write.
        if (!stopped) tap();
      });
    armed = true;
  }
  tap();

  function settleWaiters(): void {
    while (waiters.length > 0 && cursor < sentList.length) {
      const notification = sentList[cursor++];
      const waiter = waiters.shift();
      if (notification !== undefined) waiter?.resolve(notification);
    }
    if (failure !== undefined || (stopped && draining === undefined)) {
      const reason =
        failure ?? new Error('The notification bridge was stopped before another notification was sent.');
      for (const waiter of waiters.splice(0)) waiter.reject(reason);
    }
  }

  async function describe(event: S3SpyEvent): Promise<S3EventInput> {
    const base = {
      bucket: event.bucket,
      key: event.key,
      region: aws.region,
      eventTime: new Date(event.timestamp),
      ...(options.configurationId === undefined ? {} : { configurationId: options.configurationId }),
    };
    if (event.status === 'deleted') return { ...base, eventName: 'ObjectRemoved:Delete' };
    try {
      const head = await s3.send(new HeadObjectCommand({ Bucket: event.bucket, Key: event.key }));
      const eTag = head.ETag ?? '';
      return {
        ...base,
        eventName: /-\d+"?$/.test(eTag) ? 'ObjectCreated:CompleteMultipartUpload' : 'ObjectCreated:Put',
        size: head.ContentLength ?? 0,
        eTag,
      };
    } catch (error) {
      if (statusOf(error) === 404) return { ...base, eventName: 'ObjectCreated:Put' };
      throw error;
    }
  }

  function bodyOf(input: S3EventInput): string {
    if (options.eventBridge === true) return JSON.stringify(eventBridgeEvent(input));
    const event = s3Event(input);
    if (options.sns === true) {
      return JSON.stringify(
        snsEnvelope(event, {
          region: aws.region,
          ...(options.topicArn === undefined ? {} : { topicArn: options.topicArn }),
        }),
      );
    }
    return JSON.stringify(event);
  }

  async function drain(): Promise<void> {
    for (let event = pending.shift(); event !== undefined; event = pending.shift()) {
      if (failure !== undefined) return;
      try {
        const input = await describe(event);
        const body = bodyOf(input);
        const out =
          publishToTopicArn === undefined
            ? await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }))
            : await sns.send(
                new PublishCommand({ TopicArn: publishToTopicArn, Message: body, Subject: S3_SNS_SUBJECT }),
              );
        sentList.push({
          eventName: input.eventName,
          bucket: input.bucket,
          key: input.key,
          body,
          messageId: out.MessageId ?? '',
          eventAtMs: event.timestamp,
          sentAtMs: Date.now(),
        });
      } catch (error) {
        failure = error;
      }
      settleWaiters();
    }
  }

  return {
    sent: () => sentList.length,
    all: () => [...sentList],
    next() {
      return new Promise<SentNotification>((resolve, reject) => {
        waiters.push({ resolve, reject });
        settleWaiters();
      });
    },
    stop() {
      stopping ??= (async () => {
        stopped = true;
        while (draining !== undefined) await draining;
        settleWaiters();
        s3.destroy();
        sqs.destroy();
        sns.destroy();
      })();
      return stopping;
    },
  };
}
