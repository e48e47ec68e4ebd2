/**
 * Per-reader SQS queues subscribed to an SNS topic (Ferry's `ferry_sns_topic_arn`): Spice's fan-out
 * (one queue per reader process, each subscribed to the topic the bucket notifies) for readers an
 * autoscaler adds and removes, so nobody makes queues by hand. A reader makes its queue, lets the
 * topic send to it, subscribes it, refreshes a heartbeat tag while it runs and removes both on
 * shutdown. A crashed reader's queue is recognisable by its name prefix and tags, its messages expire
 * after {@link READER_QUEUE_RETENTION_SECONDS}, and {@link collectReaderQueues} (`ferry fleet gc`)
 * removes the queues whose heartbeat stopped, with their subscriptions.
 *
 * Queue URLs and ARNs carry the account id, so errors name the queue by its name and the topic by
 * its ARN (already in the spicepod), never the URL.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { hostname } from 'node:os';
import type * as SnsSdk from '@aws-sdk/client-sns';
import type { Subscription } from '@aws-sdk/client-sns';
import type * as SqsSdk from '@aws-sdk/client-sqs';
import { ReaderQueueError, ReaderQueueErrorCode } from './errors.js';
import { type AwsClientOptions, awsClientConfig } from './sqs-queue.js';

// CommonJS, loaded with `require` for the reason given in s3-store.ts.
const require = createRequire(import.meta.url);
const { ListSubscriptionsByTopicCommand, SNSClient, SubscribeCommand, UnsubscribeCommand } =
  require('@aws-sdk/client-sns') as typeof SnsSdk;
type SNSClient = InstanceType<typeof SNSClient>;
const {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListQueuesCommand,
  ListQueueTagsCommand,
  SetQueueAttributesCommand,
  SQSClient,
  TagQueueCommand,
} = require('@aws-sdk/client-sqs') as typeof SqsSdk;
type SQSClient = InstanceType<typeof SQSClient>;

/** Every queue a reader makes is named this plus 24 random hex digits. */
export const READER_QUEUE_PREFIX = 'ferry-reader-';
/** A crashed reader's undelivered notifications expire after an hour (SQS allows 60 s … 14 days). */
export const READER_QUEUE_RETENTION_SECONDS = 3_600;
/** `ferry fleet gc` judges a queue abandoned after this many missed heartbeats. */
export const MISSED_HEARTBEATS = 3;

/** The tags on a reader's queue: what makes it recognisable, and whose it is. */
export const ReaderQueueTag = {
  role: 'ferry:role',
  topic: 'ferry:topic-arn',
  host: 'ferry:host',
  pid: 'ferry:pid',
  startedAt: 'ferry:started-at',
  heartbeatAt: 'ferry:heartbeat-at',
  heartbeatInterval: 'ferry:heartbeat-interval-seconds',
} as const;

export interface FleetClientOptions {
  /** The topic's region; the queue is made there. */
  readonly region: string;
  /** SQS endpoint override (local servers); default `AWS_ENDPOINT_URL_SQS`, else AWS. */
  readonly sqsEndpoint?: string;
  /** SNS endpoint override; default `AWS_ENDPOINT_URL_SNS`, else AWS. */
  readonly snsEndpoint?: string;
  /** Default: the SDK's credential chain. */
  readonly credentials?: AwsClientOptions['credentials'];
}

export interface ReaderIdentity {
  readonly host: string;
  readonly pid: number;
  readonly startedAt: Date;
}

export interface CreateReaderQueueOptions extends FleetClientOptions {
  readonly topicArn: string;
  /** `RawMessageDelivery` of the subscription: the S3 event itself instead of the SNS envelope. */
  readonly rawMessageDelivery: boolean;
  readonly heartbeatIntervalMs: number;
  /** Default: this process (host name, pid, now). */
  readonly identity?: ReaderIdentity;
}

export interface ReaderQueue {
  readonly name: string;
  readonly url: string;
  readonly arn: string;
  readonly subscriptionArn: string;
  readonly topicArn: string;
  /** Refreshes the heartbeat tag (`ferry fleet gc` keeps queues whose heartbeat is recent). */
  heartbeat(at?: Date): Promise<void>;
  /**
   * Unsubscribes, then deletes the queue; the clients are closed afterwards. Idempotent. `signal`
   * abandons what is left (then it throws, naming `ferry fleet gc`), so a shutdown is bounded.
   */
  remove(options?: { signal?: AbortSignal }): Promise<void>;
}

interface Clients {
  readonly sqs: SQSClient;
  readonly sns: SNSClient;
  destroy(): void;
}

function clientsFor(options: FleetClientOptions): Clients {
  const common = {
    region: options.region,
    ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
  };
  const sqs = new SQSClient(
    awsClientConfig({
      ...common,
      service: 'sqs',
      ...(options.sqsEndpoint === undefined ? {} : { endpoint: options.sqsEndpoint }),
    }),
  );
  const sns = new SNSClient(
    awsClientConfig({
      ...common,
      service: 'sns',
      ...(options.snsEndpoint === undefined ? {} : { endpoint: options.snsEndpoint }),
    }),
  );
  return {
    sqs,
    sns,
    destroy() {
      sqs.destroy();
      sns.destroy();
    },
  };
}

/** `Name: message` of an SDK error, for the sentence that quotes it. */
function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.name !== '' && error.name !== 'Error' ? `${error.name}: ${error.message}` : error.message;
}

function errorName(error: unknown): string | undefined {
  const name = (error as { name?: unknown; Code?: unknown } | null)?.name;
  return typeof name === 'string' ? name : undefined;
}

/** An SQS tag value may hold letters, digits, spaces and `_ . : / = + - @`, up to 256 characters. */
function tagValue(text: string): string {
  return text.replace(/[^\p{L}\p{N} _.:/=+\-@]/gu, '_').slice(0, 256);
}

/** The policy that lets (only) this topic send to the queue. */
export function topicSendPolicy(queueArn: string, topicArn: string): string {
  return JSON.stringify({
    Version: '2012-10-17',
    Statement: [
      {
        Sid: 'ferry-reader-topic',
        Effect: 'Allow',
        Principal: { Service: 'sns.amazonaws.com' },
        Action: 'sqs:SendMessage',
        Resource: queueArn,
        Condition: { ArnEquals: { 'aws:SourceArn': topicArn } },
      },
    ],
  });
}

/**
 * Makes this reader's queue (tagged, `MessageRetentionPeriod` one hour), lets the topic send to it,
 * and subscribes it. A failure at any step removes what was made and throws a
 * {@link ReaderQueueError} naming the permission to grant.
 */
export async function createReaderQueue(options: CreateReaderQueueOptions): Promise<ReaderQueue> {
  const identity = options.identity ?? { host: hostname(), pid: process.pid, startedAt: new Date() };
  const name = `${READER_QUEUE_PREFIX}${randomBytes(12).toString('hex')}`;
  const clients = clientsFor(options);
  const { sqs, sns } = clients;
  const topicArn = options.topicArn;
  let url: string | undefined;
  let subscriptionArn: string | undefined;

  // Undoes a half-made queue while the error that stopped it is thrown: a failed delete or unsubscribe
  // leaves a queue with no heartbeat, which `ferry fleet gc` removes with its subscription.
  const undo = async (): Promise<void> => {
    if (subscriptionArn !== undefined) {
      await sns.send(new UnsubscribeCommand({ SubscriptionArn: subscriptionArn })).catch(() => undefined);
    }
    if (url !== undefined) await sqs.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
    clients.destroy();
  };

  let arn: string;
  try {
    const created = await sqs.send(
      new CreateQueueCommand({
        QueueName: name,
        Attributes: { MessageRetentionPeriod: String(READER_QUEUE_RETENTION_SECONDS) },
        tags: {
          [ReaderQueueTag.role]: 'reader',
          [ReaderQueueTag.topic]: topicArn,
          [ReaderQueueTag.host]: tagValue(identity.host),
          [ReaderQueueTag.pid]: String(identity.pid),
          [ReaderQueueTag.startedAt]: identity.startedAt.toISOString(),
          [ReaderQueueTag.heartbeatAt]: new Date().toISOString(),
          [ReaderQueueTag.heartbeatInterval]: String(
            Math.max(1, Math.round(options.heartbeatIntervalMs / 1000)),
          ),
        },
      }),
    );
    url = created.QueueUrl;
    if (url === undefined) throw new Error('CreateQueue returned no queue URL');
    const attributes = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
    );
    const queueArn = attributes.Attributes?.QueueArn;
    if (queueArn === undefined) throw new Error('GetQueueAttributes returned no QueueArn');
    arn = queueArn;
    await sqs.send(
      new SetQueueAttributesCommand({
        QueueUrl: url,
        Attributes: { Policy: topicSendPolicy(arn, topicArn) },
      }),
    );
  } catch (cause) {
    await undo();
    throw new ReaderQueueError(
      ReaderQueueErrorCode.create,
      `Making this reader's SQS queue '${name}' for the SNS topic '${topicArn}' (snapshots.params.ferry_sns_topic_arn) failed (${reasonOf(cause)}); grant sqs:CreateQueue, sqs:TagQueue, sqs:GetQueueAttributes and sqs:SetQueueAttributes in the topic's region, and check the SQS endpoint.`,
      { cause },
    );
  }

  try {
    const subscribed = await sns.send(
      new SubscribeCommand({
        TopicArn: topicArn,
        Protocol: 'sqs',
        Endpoint: arn,
        Attributes: { RawMessageDelivery: options.rawMessageDelivery ? 'true' : 'false' },
        ReturnSubscriptionArn: true,
      }),
    );
    subscriptionArn = subscribed.SubscriptionArn;
    if (subscriptionArn === undefined || !subscriptionArn.startsWith('arn:')) {
      subscriptionArn = undefined;
      throw new Error(
        'the subscription is pending confirmation, so the topic would not deliver to the queue',
      );
    }
  } catch (cause) {
    await undo();
    throw new ReaderQueueError(
      ReaderQueueErrorCode.subscribe,
      `Subscribing this reader's SQS queue '${name}' to the SNS topic '${topicArn}' (snapshots.params.ferry_sns_topic_arn) failed (${reasonOf(cause)}); grant sns:Subscribe on the topic (a topic in another account must allow this account in its topic policy) and check the ARN and the SNS endpoint.`,
      { cause },
    );
  }

  const queueUrl = url;
  const subscription = subscriptionArn;
  let removing: Promise<void> | undefined;
  return {
    name,
    url: queueUrl,
    arn,
    subscriptionArn: subscription,
    topicArn,
    async heartbeat(at = new Date()) {
      try {
        await sqs.send(
          new TagQueueCommand({
            QueueUrl: queueUrl,
            Tags: { [ReaderQueueTag.heartbeatAt]: at.toISOString() },
          }),
        );
      } catch (cause) {
        throw new ReaderQueueError(
          ReaderQueueErrorCode.heartbeat,
          `Refreshing the heartbeat tag of this reader's SQS queue '${name}' failed (${reasonOf(cause)}); grant sqs:TagQueue on it, or \`ferry fleet gc\` will take the queue for a crashed reader's and remove it.`,
          { cause },
        );
      }
    },
    remove(removeOptions = {}) {
      const abort = removeOptions.signal === undefined ? {} : { abortSignal: removeOptions.signal };
      removing ??= (async () => {
        const failures: string[] = [];
        try {
          await sns.send(new UnsubscribeCommand({ SubscriptionArn: subscription }), abort);
        } catch (error) {
          failures.push(`sns:Unsubscribe: ${reasonOf(error)}`);
        }
        try {
          await sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl }), abort);
        } catch (error) {
          if (errorName(error) !== 'QueueDoesNotExist') failures.push(`sqs:DeleteQueue: ${reasonOf(error)}`);
        }
        clients.destroy();
        if (failures.length > 0) {
          throw new ReaderQueueError(
            ReaderQueueErrorCode.remove,
            `Removing this reader's SQS queue '${name}' and its subscription to '${topicArn}' failed (${failures.join('; ')}); grant sns:Unsubscribe and sqs:DeleteQueue, or run \`ferry fleet gc --topic ${topicArn}\` once the reader is gone.`,
          );
        }
      })();
      return removing;
    },
  };
}

// -------------------------------------------------------------------------------------------------
// Garbage collection: `ferry fleet gc`.
// -------------------------------------------------------------------------------------------------

/** A reader queue of the topic, as its tags describe it. */
export interface ReaderQueueInfo {
  readonly name: string;
  readonly url: string;
  readonly arn: string | undefined;
  readonly host: string | undefined;
  readonly pid: number | undefined;
  readonly startedAt: string | undefined;
  /** Epoch ms of the last heartbeat, when the tag holds a time. */
  readonly heartbeatAtMs: number | undefined;
  readonly heartbeatIntervalMs: number | undefined;
}

export type ReaderQueueVerdict =
  | { readonly verdict: 'live'; readonly reason: string }
  | { readonly verdict: 'abandoned'; readonly reason: string }
  | { readonly verdict: 'unknown'; readonly reason: string };

function seconds(ms: number): string {
  return `${Math.round(ms / 1000)}s`;
}

/**
 * Live or abandoned, from the heartbeat alone: abandoned when the last heartbeat is older than
 * `staleAfterMs`, by default {@link MISSED_HEARTBEATS} of the intervals the reader tagged. A queue
 * whose tags cannot be read that way is `unknown` and never removed.
 */
export function judgeReaderQueue(
  info: ReaderQueueInfo,
  nowMs: number,
  staleAfterMs?: number,
): ReaderQueueVerdict {
  if (info.heartbeatAtMs === undefined) {
    return { verdict: 'unknown', reason: `no readable ${ReaderQueueTag.heartbeatAt} tag` };
  }
  const limit =
    staleAfterMs ??
    (info.heartbeatIntervalMs === undefined ? undefined : MISSED_HEARTBEATS * info.heartbeatIntervalMs);
  if (limit === undefined) {
    return {
      verdict: 'unknown',
      reason: `no readable ${ReaderQueueTag.heartbeatInterval} tag (pass --stale-after)`,
    };
  }
  const age = nowMs - info.heartbeatAtMs;
  return age > limit
    ? { verdict: 'abandoned', reason: `last heartbeat ${seconds(age)} ago, over ${seconds(limit)}` }
    : { verdict: 'live', reason: `last heartbeat ${seconds(Math.max(0, age))} ago` };
}

export interface CollectReaderQueuesOptions extends FleetClientOptions {
  readonly topicArn: string;
  /** Default: {@link MISSED_HEARTBEATS} × each queue's tagged heartbeat interval. */
  readonly staleAfterMs?: number;
  /** Default: `Date.now()`. */
  readonly nowMs?: number;
  /** Report what would be removed, remove nothing. */
  readonly dryRun?: boolean;
}

export type GcAction = 'kept' | 'removed' | 'would remove' | 'failed';

export interface CollectedQueue extends ReaderQueueInfo {
  readonly verdict: ReaderQueueVerdict['verdict'];
  readonly reason: string;
  readonly action: GcAction;
  readonly error?: string;
}

export interface CollectedSubscription {
  readonly arn: string;
  /** The queue ARN the subscription delivers to. */
  readonly endpoint: string;
  /** Why it is listed: the queue it belonged to was removed, or no longer exists. */
  readonly reason: 'queue removed' | 'queue gone';
  readonly action: GcAction;
  readonly error?: string;
}

export interface CollectReport {
  readonly topicArn: string;
  readonly queues: readonly CollectedQueue[];
  readonly subscriptions: readonly CollectedSubscription[];
}

function parseTime(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : undefined;
}

function parseCount(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d+$/.test(text)) return undefined;
  return Number(text);
}

/** `arn:aws:sqs:<region>:<account>:<name>` → its account and name. */
function queueOfArn(arn: string): { readonly account: string; readonly name: string } | undefined {
  const parts = arn.split(':');
  const [, , service, , account, name] = parts;
  return service === 'sqs' && parts.length === 6 && account !== undefined && name !== undefined
    ? { account, name }
    : undefined;
}

async function listAll<T>(
  fetchPage: (token: string | undefined) => Promise<{ items: T[]; next?: string | undefined }>,
): Promise<T[]> {
  const all: T[] = [];
  let token: string | undefined;
  do {
    const page = await fetchPage(token);
    all.push(...page.items);
    token = page.next;
  } while (token !== undefined && token !== '');
  return all;
}

/**
 * The topic's reader queues (name prefix and `ferry:topic-arn` tag), judged by heartbeat; removes
 * the abandoned ones (their subscriptions first, then the queue) and the subscriptions of the topic
 * that deliver to a reader queue that no longer exists. Queues of other topics, live queues and
 * queues it cannot judge are left alone.
 */
export async function collectReaderQueues(options: CollectReaderQueuesOptions): Promise<CollectReport> {
  const nowMs = options.nowMs ?? Date.now();
  const { topicArn } = options;
  const clients = clientsFor(options);
  const { sqs, sns } = clients;
  try {
    let urls: string[];
    let subscriptions: Subscription[];
    try {
      urls = await listAll(async (token) => {
        const page = await sqs.send(
          new ListQueuesCommand({
            QueueNamePrefix: READER_QUEUE_PREFIX,
            MaxResults: 1000,
            ...(token === undefined ? {} : { NextToken: token }),
          }),
        );
        return { items: page.QueueUrls ?? [], next: page.NextToken };
      });
      subscriptions = await listAll(async (token) => {
        const page = await sns.send(
          new ListSubscriptionsByTopicCommand({
            TopicArn: topicArn,
            ...(token === undefined ? {} : { NextToken: token }),
          }),
        );
        return { items: page.Subscriptions ?? [], next: page.NextToken };
      });
    } catch (cause) {
      throw new ReaderQueueError(
        ReaderQueueErrorCode.list,
        `Listing the reader queues and the subscriptions of the SNS topic '${topicArn}' failed (${reasonOf(cause)}); grant sqs:ListQueues, sqs:ListQueueTags, sqs:GetQueueAttributes and sns:ListSubscriptionsByTopic, and check the topic ARN, region and endpoints.`,
        { cause },
      );
    }

    const queues: CollectedQueue[] = [];
    const removedQueueArns = new Set<string>();
    const knownQueueArns = new Set<string>();
    for (const url of urls) {
      const name = url.slice(url.lastIndexOf('/') + 1);
      let tags: Record<string, string>;
      let arn: string | undefined;
      try {
        tags = (await sqs.send(new ListQueueTagsCommand({ QueueUrl: url }))).Tags ?? {};
        if (tags[ReaderQueueTag.topic] !== topicArn) continue;
        arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] })))
          .Attributes?.QueueArn;
      } catch (error) {
        if (errorName(error) === 'QueueDoesNotExist') continue; // removed meanwhile
        throw new ReaderQueueError(
          ReaderQueueErrorCode.list,
          `Reading the tags and attributes of SQS queue '${name}' failed (${reasonOf(error)}); grant sqs:ListQueueTags and sqs:GetQueueAttributes.`,
          { cause: error },
        );
      }
      if (arn !== undefined) knownQueueArns.add(arn);
      const intervalSeconds = parseCount(tags[ReaderQueueTag.heartbeatInterval]);
      const info: ReaderQueueInfo = {
        name,
        url,
        arn,
        host: tags[ReaderQueueTag.host],
        pid: parseCount(tags[ReaderQueueTag.pid]),
        startedAt: tags[ReaderQueueTag.startedAt],
        heartbeatAtMs: parseTime(tags[ReaderQueueTag.heartbeatAt]),
        heartbeatIntervalMs: intervalSeconds === undefined ? undefined : intervalSeconds * 1000,
      };
      const judged = judgeReaderQueue(info, nowMs, options.staleAfterMs);
      if (judged.verdict !== 'abandoned') {
        queues.push({ ...info, ...judged, action: 'kept' });
        continue;
      }
      if (options.dryRun === true) {
        queues.push({ ...info, ...judged, action: 'would remove' });
        if (arn !== undefined) removedQueueArns.add(arn);
        continue;
      }
      try {
        for (const subscription of subscriptions) {
          if (
            arn !== undefined &&
            subscription.Endpoint === arn &&
            subscription.SubscriptionArn?.startsWith('arn:')
          ) {
            await sns.send(new UnsubscribeCommand({ SubscriptionArn: subscription.SubscriptionArn }));
          }
        }
        await sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
        if (arn !== undefined) removedQueueArns.add(arn);
        queues.push({ ...info, ...judged, action: 'removed' });
      } catch (error) {
        queues.push({ ...info, ...judged, action: 'failed', error: reasonOf(error) });
      }
    }

    const collected: CollectedSubscription[] = [];
    for (const subscription of subscriptions) {
      const endpoint = subscription.Endpoint ?? '';
      const subscriptionArn = subscription.SubscriptionArn ?? '';
      const queue = queueOfArn(endpoint);
      if (
        subscription.Protocol !== 'sqs' ||
        queue === undefined ||
        !queue.name.startsWith(READER_QUEUE_PREFIX)
      )
        continue;
      if (!subscriptionArn.startsWith('arn:')) continue;
      if (removedQueueArns.has(endpoint)) {
        collected.push({
          arn: subscriptionArn,
          endpoint,
          reason: 'queue removed',
          action: options.dryRun === true ? 'would remove' : 'removed',
        });
        continue;
      }
      if (knownQueueArns.has(endpoint)) continue;
      // Not listed: gone, or too new for ListQueues (eventually consistent). Ask for it by name.
      const gone = await sqs
        .send(new GetQueueUrlCommand({ QueueName: queue.name, QueueOwnerAWSAccountId: queue.account }))
        .then(
          () => false,
          (error: unknown) => errorName(error) === 'QueueDoesNotExist',
        );
      if (!gone) continue;
      if (options.dryRun === true) {
        collected.push({ arn: subscriptionArn, endpoint, reason: 'queue gone', action: 'would remove' });
        continue;
      }
      try {
        await sns.send(new UnsubscribeCommand({ SubscriptionArn: subscriptionArn }));
        collected.push({ arn: subscriptionArn, endpoint, reason: 'queue gone', action: 'removed' });
      } catch (error) {
        collected.push({
          arn: subscriptionArn,
          endpoint,
          reason: 'queue gone',
          action: 'failed',
          error: reasonOf(error),
        });
      }
    }
    return { topicArn, queues, subscriptions: collected };
  } finally {
    clients.destroy();
  }
}
