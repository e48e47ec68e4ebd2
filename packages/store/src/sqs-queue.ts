/**
 * The SQS adapter of the `NotificationQueue` port: long-polls an SQS queue for S3 event notifications
 * and deletes what the coordinator has handled. Closing aborts an in-flight long poll (and deletes) at once, so a
 * runtime shuts down without waiting out the poll. The queue URL never appears in an error message
 * (it carries the account id); errors name "the SQS queue" and keep the SDK error as `cause`.
 */
import { createRequire } from 'node:module';
import type * as SqsSdk from '@aws-sdk/client-sqs';
import type { DeleteMessageBatchRequestEntry } from '@aws-sdk/client-sqs';
import { FerryError, type NotificationQueue, type QueueMessage, registerErrors } from '@ferry/core/base';

// CommonJS, loaded with `require` for the reason given in s3-store.ts.
const require = createRequire(import.meta.url);
const { DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient } =
  require('@aws-sdk/client-sqs') as typeof SqsSdk;

export const SqsErrorCode = {
  queueUrl: 'ERR_SQS_QUEUE_URL',
  option: 'ERR_SQS_OPTION',
  receive: 'ERR_SQS_RECEIVE',
  delete: 'ERR_SQS_DELETE',
  closed: 'ERR_SQS_CLOSED',
} as const;
export type SqsErrorCode = (typeof SqsErrorCode)[keyof typeof SqsErrorCode];

export class SqsQueueError extends FerryError {
  constructor(code: SqsErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, options);
    this.name = 'SqsQueueError';
  }
}

/** One message SQS did not delete; it will be delivered again after its visibility timeout. */
export interface SqsDeleteFailure {
  readonly messageId: string;
  readonly code: string;
  readonly message: string;
  readonly senderFault: boolean;
}

/** Some messages of a `delete()` call were not deleted; the others were. */
export class SqsDeleteError extends SqsQueueError {
  readonly failures: readonly SqsDeleteFailure[];

  constructor(failures: readonly SqsDeleteFailure[], total: number, options: { cause?: unknown } = {}) {
    const first = failures[0];
    const detail = first === undefined ? '' : ` (${first.code}: ${first.message})`;
    super(
      SqsErrorCode.delete,
      `Deleting ${failures.length} of ${total} messages from the SQS queue failed${detail}; ` +
        'they will be delivered again after their visibility timeout.',
      options,
    );
    this.name = 'SqsDeleteError';
    this.failures = failures;
  }
}
registerErrors({ SqsQueueError, SqsDeleteError });

export interface SqsQueueOptions {
  readonly queueUrl: string;
  /** Default: from the queue URL's host (`sqs.<region>.amazonaws.com`), else the SDK's (AWS_REGION). */
  readonly region?: string;
  /** Default: `AWS_ENDPOINT_URL_SQS`. When set, requests go there instead of the queue URL's host. */
  readonly endpoint?: string;
  /** Default: the SDK's credential chain. */
  readonly credentials?: {
    readonly accessKeyId: string;
    readonly secretAccessKey: string;
    readonly sessionToken?: string;
  };
  /** How long a received message stays hidden from other receives (0–43200). Default 300. */
  readonly visibilityTimeoutSeconds?: number;
  /** Long-poll duration of a receive (0–20). Default 20. */
  readonly waitTimeSeconds?: number;
  /** Messages per receive (1–10). Default 10. */
  readonly maxMessages?: number;
}

const LEGACY_HOST = /^(?:([a-z0-9-]+)\.)?queue\.amazonaws\.com$/;

/**
 * The region in a queue URL's host: `sqs.<region>.amazonaws.com[.cn]`, `sqs.<region>.localhost`
 * (local emulators), or the legacy `<region>.queue.amazonaws.com`. Undefined when the host names none.
 */
export function regionFromQueueUrl(queueUrl: string): string | undefined {
  let host: string;
  try {
    host = new URL(queueUrl).hostname;
  } catch {
    return undefined;
  }
  const modern = /^sqs\.([a-z0-9-]+)\.(?:amazonaws\.com(?:\.cn)?|localhost)$/.exec(host);
  if (modern?.[1] !== undefined) return modern[1];
  const legacy = LEGACY_HOST.exec(host);
  if (legacy !== null) return legacy[1] ?? 'us-east-1';
  return undefined;
}

export interface AwsClientOptions {
  /** Default: the SDK's (AWS_REGION, profile). */
  readonly region?: string;
  /** Default: `AWS_ENDPOINT_URL_SQS` / `AWS_ENDPOINT_URL_SNS` for the service. */
  readonly endpoint?: string;
  /** Default: the SDK's credential chain. */
  readonly credentials?: SqsQueueOptions['credentials'];
}

/** What {@link awsClientConfig} sets: assignable to the SQS and the SNS client's configuration. */
export interface AwsClientConfig {
  readonly region?: string;
  readonly endpoint?: string;
  readonly useQueueUrlAsEndpoint?: boolean;
  readonly credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  readonly requestHandler: {
    readonly connectionTimeout: number;
    readonly requestTimeout: number;
    readonly throwOnRequestTimeout: boolean;
  };
}

/**
 * One client configuration for Ferry's SQS and SNS clients: region, an endpoint override (then an
 * SQS client sends to it, not to the queue URL's host), static credentials when given, and
 * timeouts sized for a 20 s long poll (past 30 s the connection is dead, not slow).
 */
export function awsClientConfig(
  options: AwsClientOptions & { readonly service: 'sqs' | 'sns' },
): AwsClientConfig {
  const envName = options.service === 'sqs' ? 'AWS_ENDPOINT_URL_SQS' : 'AWS_ENDPOINT_URL_SNS';
  const envEndpoint = process.env[envName];
  const endpoint =
    options.endpoint ?? (envEndpoint === undefined || envEndpoint === '' ? undefined : envEndpoint);
  const credentials = options.credentials;
  return {
    ...(options.region === undefined ? {} : { region: options.region }),
    ...(endpoint === undefined
      ? {}
      : options.service === 'sqs'
        ? { endpoint, useQueueUrlAsEndpoint: false }
        : { endpoint }),
    ...(credentials === undefined
      ? {}
      : {
          credentials: {
            accessKeyId: credentials.accessKeyId,
            secretAccessKey: credentials.secretAccessKey,
            ...(credentials.sessionToken === undefined ? {} : { sessionToken: credentials.sessionToken }),
          },
        }),
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 30_000, throwOnRequestTimeout: true },
  };
}

function checkRange(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new SqsQueueError(
      SqsErrorCode.option,
      `The SQS option '${name}' must be a whole number from ${min} to ${max} (got ${value}); fix its value.`,
    );
  }
  return value;
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code !== '') return code;
  return error instanceof Error ? error.name : 'Error';
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function createSqsQueue(options: SqsQueueOptions): NotificationQueue {
  const { queueUrl } = options;
  let parsedUrl: URL;
  try {
    parsedUrl = new URL(queueUrl);
  } catch (cause) {
    throw new SqsQueueError(
      SqsErrorCode.queueUrl,
      'The SQS queue URL is not a valid URL; set it to the URL the SQS console shows ' +
        '(https://sqs.<region>.amazonaws.com/<account>/<queue>).',
      { cause },
    );
  }
  const visibilityTimeout = checkRange(
    'visibilityTimeoutSeconds',
    options.visibilityTimeoutSeconds ?? 300,
    0,
    43_200,
  );
  const defaultWait = checkRange('waitTimeSeconds', options.waitTimeSeconds ?? 20, 0, 20);
  const defaultMax = checkRange('maxMessages', options.maxMessages ?? 10, 1, 10);

  const region = options.region ?? regionFromQueueUrl(queueUrl);
  const client = new SQSClient(
    awsClientConfig({
      ...(region === undefined ? {} : { region }),
      ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
      ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
      service: 'sqs',
    }),
  );

  // SDK and server messages may quote the URL (or its /<account>/<queue> path): scrub both.
  const secrets = [queueUrl, parsedUrl.pathname.length > 1 ? parsedUrl.pathname : undefined].filter(
    (secret): secret is string => secret !== undefined,
  );
  const scrub = (text: string): string =>
    secrets.reduce((result, secret) => result.split(secret).join('<queue>'), text);

  const closing = new AbortController();
  const inFlight = new Set<Promise<unknown>>();
  let closed = false;

  function closedError(): SqsQueueError {
    return new SqsQueueError(
      SqsErrorCode.closed,
      'The SQS queue adapter is closed; create a new one with createSqsQueue() to use the queue again.',
    );
  }

  function track<T>(promise: Promise<T>): Promise<T> {
    inFlight.add(promise);
    const untrack = () => inFlight.delete(promise);
    promise.then(untrack, untrack);
    return promise;
  }

  async function receiveOnce(
    waitSeconds: number,
    maxMessages: number,
    signal: AbortSignal | undefined,
  ): Promise<QueueMessage[]> {
    const abortSignal = signal === undefined ? closing.signal : AbortSignal.any([closing.signal, signal]);
    try {
      const output = await client.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: maxMessages,
          WaitTimeSeconds: waitSeconds,
          VisibilityTimeout: visibilityTimeout,
          MessageSystemAttributeNames: ['ApproximateReceiveCount'],
        }),
        { abortSignal },
      );
      const messages: QueueMessage[] = [];
      for (const message of output.Messages ?? []) {
        if (message.MessageId === undefined || message.ReceiptHandle === undefined) continue;
        const count = Number.parseInt(message.Attributes?.ApproximateReceiveCount ?? '', 10);
        messages.push({
          id: message.MessageId,
          receiptHandle: message.ReceiptHandle,
          body: message.Body ?? '',
          receiveCount: Number.isInteger(count) && count > 0 ? count : 1,
        });
      }
      return messages;
    } catch (error) {
      if (closing.signal.aborted) return [];
      if (signal?.aborted) throw signal.reason;
      throw new SqsQueueError(
        SqsErrorCode.receive,
        `Receiving from the SQS queue failed (${errorCode(error)}: ${scrub(errorMessage(error))}); ` +
          'check the queue URL, region, endpoint and credentials.',
        { cause: error },
      );
    }
  }

  /** The chunk's failures; a request that failed as a whole fails every entry, with its error. */
  async function deleteChunk(
    chunk: readonly QueueMessage[],
    abortSignal: AbortSignal,
  ): Promise<{ failures: SqsDeleteFailure[]; error?: unknown }> {
    const byEntryId = new Map(chunk.map((message, index) => [`m${index}`, message]));
    const entries: DeleteMessageBatchRequestEntry[] = [...byEntryId].map(([Id, message]) => ({
      Id,
      ReceiptHandle: message.receiptHandle,
    }));
    try {
      const output = await client.send(
        new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }),
        { abortSignal },
      );
      const failures = (output.Failed ?? []).map((failed) => ({
        messageId: byEntryId.get(failed.Id ?? '')?.id ?? failed.Id ?? '',
        code: failed.Code ?? 'Unknown',
        message: scrub(failed.Message ?? ''),
        senderFault: failed.SenderFault ?? false,
      }));
      return { failures };
    } catch (error) {
      const failures = chunk.map((message) => ({
        messageId: message.id,
        code: errorCode(error),
        message: scrub(errorMessage(error)),
        senderFault: false,
      }));
      return { failures, error };
    }
  }

  return {
    async receive(receiveOptions = {}) {
      if (closed) throw closedError();
      receiveOptions.signal?.throwIfAborted();
      const waitSeconds = checkRange('waitSeconds', receiveOptions.waitSeconds ?? defaultWait, 0, 20);
      const maxMessages = checkRange('maxMessages', receiveOptions.maxMessages ?? defaultMax, 1, 10);
      return track(receiveOnce(waitSeconds, maxMessages, receiveOptions.signal));
    },

    async delete(messages, deleteOptions = {}) {
      if (closed) throw closedError();
      if (messages.length === 0) return;
      const { signal } = deleteOptions;
      // Closing, or the caller's signal, abandons the deletes: a hung DeleteMessageBatch (the SDK
      // tries three times, 30 s each) must not hold a shutdown for minutes.
      const abortSignal = signal === undefined ? closing.signal : AbortSignal.any([closing.signal, signal]);
      const chunks: QueueMessage[][] = [];
      for (let start = 0; start < messages.length; start += 10)
        chunks.push(messages.slice(start, start + 10));
      const results = await track(Promise.all(chunks.map((chunk) => deleteChunk(chunk, abortSignal))));
      if (signal?.aborted) throw signal.reason;
      const failures = results.flatMap((result) => result.failures);
      const cause = results.find((result) => 'error' in result)?.error;
      if (failures.length > 0) {
        throw new SqsDeleteError(failures, messages.length, cause === undefined ? {} : { cause });
      }
    },

    async close() {
      if (closed) return;
      closed = true;
      closing.abort();
      await Promise.allSettled([...inFlight]);
      client.destroy();
    },
  };
}
