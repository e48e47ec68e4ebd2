/**
 * A real local S3 + SQS + SNS for tests: fauxqs running in-process on a free port, fronted by a
 * counting proxy (see request-log.ts) so tests can assert what reached the server. Tests talk to it
 * over HTTP with the real AWS SDK; nothing is mocked. fauxqs delivers an SNS publish to every
 * subscribed SQS queue itself (in the SNS envelope, or the bare message with `RawMessageDelivery`).
 */
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import {
  CreateTopicCommand,
  GetSubscriptionAttributesCommand,
  ListSubscriptionsByTopicCommand,
  SNSClient,
  type SNSClientConfig,
  SubscribeCommand,
} from '@aws-sdk/client-sns';
import {
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ListQueuesCommand,
  ListQueueTagsCommand,
  SQSClient,
  type SQSClientConfig,
} from '@aws-sdk/client-sqs';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { type RequestLog, startCountingProxy } from './request-log.js';

/** Bodies above this size are uploaded in parts (fauxqs refuses single requests over 11 MiB). */
export const MULTIPART_THRESHOLD = 8 * 1024 * 1024;

export interface LocalAwsOptions {
  /** Region the clients sign for and queue ARNs use. Default `us-east-1`. */
  readonly region?: string;
}

export interface LocalAwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

export interface LocalAws {
  /** Endpoint for clients under test: requests through it are counted in {@link LocalAws.requests}. */
  readonly endpoint: string;
  /** The fauxqs server itself; requests sent here bypass the request log. */
  readonly serverEndpoint: string;
  readonly region: string;
  readonly credentials: LocalAwsCredentials;
  /** S3 client on {@link LocalAws.endpoint} (path-style). */
  readonly s3: S3Client;
  /** SQS client on {@link LocalAws.endpoint}, with `useQueueUrlAsEndpoint: false`. */
  readonly sqs: SQSClient;
  /** SNS client on {@link LocalAws.endpoint}. */
  readonly sns: SNSClient;
  /** The underlying fauxqs server (message spy, queue inspection). */
  readonly server: FauxqsServer;
  /** Every request that went through {@link LocalAws.endpoint}. */
  readonly requests: RequestLog;
  /** Client config for another S3 client; pass `{ direct: true }` to bypass the request log. */
  s3Config(options?: { readonly direct?: boolean }): S3ClientConfig;
  /** Client config for another SQS client; pass `{ direct: true }` to bypass the request log. */
  sqsConfig(options?: { readonly direct?: boolean }): SQSClientConfig;
  /** Client config for another SNS client; pass `{ direct: true }` to bypass the request log. */
  snsConfig(options?: { readonly direct?: boolean }): SNSClientConfig;
  createBucket(name: string): Promise<void>;
  /** Create a queue and return its URL (usable by any client configured here). */
  createQueue(name: string, attributes?: Readonly<Record<string, string>>): Promise<string>;
  /** Create an SNS topic (through the SNS API) and return its ARN. */
  createTopic(name: string): Promise<string>;
  /**
   * Subscribe a queue to a topic (through the SNS API); `raw` sets `RawMessageDelivery`. Returns the
   * subscription ARN.
   */
  subscribeQueue(topicArn: string, queueUrl: string, options?: { readonly raw?: boolean }): Promise<string>;
  /** The URLs of the queues whose names start with `prefix`, sorted. */
  listQueues(prefix?: string): Promise<string[]>;
  /** A queue's tags. */
  queueTags(queueUrl: string): Promise<Record<string, string>>;
  deleteQueue(queueUrl: string): Promise<void>;
  /** The topic's subscriptions: ARN, endpoint (a queue ARN) and whether delivery is raw. */
  subscriptionsOf(topicArn: string): Promise<{ arn: string; endpoint: string; raw: boolean }[]>;
  /** Upload an object, in 8 MiB parts when it is larger than that. Returns the quoted ETag. */
  putObject(
    bucket: string,
    key: string,
    body: Uint8Array | string,
    options?: { readonly contentType?: string },
  ): Promise<{ etag: string }>;
  /** The object's bytes, or undefined when it does not exist. */
  getObject(bucket: string, key: string): Promise<Uint8Array | undefined>;
  deleteObject(bucket: string, key: string): Promise<void>;
  /** All keys under a prefix, sorted. */
  listKeys(bucket: string, prefix?: string): Promise<string[]>;
  /** Stop everything; safe to call more than once. */
  close(): Promise<void>;
}

const CREDENTIALS: LocalAwsCredentials = { accessKeyId: 'test', secretAccessKey: 'test' };

function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

/** Start fauxqs on a free port with message spies on, and the counting proxy in front of it. */
export async function startLocalAws(options: LocalAwsOptions = {}): Promise<LocalAws> {
  const region = options.region ?? 'us-east-1';
  const server = await startFauxqs({ port: 0, logger: false, messageSpies: true, defaultRegion: region });
  const serverEndpoint = `http://127.0.0.1:${server.port}`;
  let proxy: Awaited<ReturnType<typeof startCountingProxy>>;
  try {
    proxy = await startCountingProxy(server.port);
  } catch (error) {
    await server.stop();
    throw error;
  }
  const endpointFor = (direct: boolean | undefined): string => (direct ? serverEndpoint : proxy.endpoint);
  const s3Config = (o: { readonly direct?: boolean } = {}): S3ClientConfig => ({
    endpoint: endpointFor(o.direct),
    region,
    credentials: CREDENTIALS,
    forcePathStyle: true,
  });
  const sqsConfig = (o: { readonly direct?: boolean } = {}): SQSClientConfig => ({
    endpoint: endpointFor(o.direct),
    region,
    credentials: CREDENTIALS,
    useQueueUrlAsEndpoint: false,
  });
  const snsConfig = (o: { readonly direct?: boolean } = {}): SNSClientConfig => ({
    endpoint: endpointFor(o.direct),
    region,
    credentials: CREDENTIALS,
  });
  const s3 = new S3Client(s3Config());
  const sqs = new SQSClient(sqsConfig());
  const sns = new SNSClient(snsConfig());
  let closing: Promise<void> | undefined;

  async function putMultipart(
    bucket: string,
    key: string,
    body: Uint8Array,
    contentType: string | undefined,
  ): Promise<{ etag: string }> {
    const created = await s3.send(
      new CreateMultipartUploadCommand({
        Bucket: bucket,
        Key: key,
        ...(contentType === undefined ? {} : { ContentType: contentType }),
      }),
    );
    const parts: { PartNumber: number; ETag: string }[] = [];
    for (let offset = 0, n = 1; offset < body.byteLength; offset += MULTIPART_THRESHOLD, n++) {
      const part = await s3.send(
        new UploadPartCommand({
          Bucket: bucket,
          Key: key,
          UploadId: created.UploadId,
          PartNumber: n,
          Body: body.subarray(offset, offset + MULTIPART_THRESHOLD),
        }),
      );
      parts.push({ PartNumber: n, ETag: part.ETag ?? '' });
    }
    const done = await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key: key,
        UploadId: created.UploadId,
        MultipartUpload: { Parts: parts },
      }),
    );
    return { etag: done.ETag ?? '' };
  }

  return {
    endpoint: proxy.endpoint,
    serverEndpoint,
    region,
    credentials: CREDENTIALS,
    s3,
    sqs,
    sns,
    server,
    requests: proxy.log,
    s3Config,
    sqsConfig,
    snsConfig,
    async createBucket(name) {
      server.createBucket(name);
    },
    async createQueue(name, attributes) {
      return server.createQueue(name, attributes === undefined ? {} : { attributes: { ...attributes } })
        .queueUrl;
    },
    async createTopic(name) {
      const out = await sns.send(new CreateTopicCommand({ Name: name }));
      if (out.TopicArn === undefined) throw new Error(`CreateTopic '${name}' returned no TopicArn.`);
      return out.TopicArn;
    },
    async subscribeQueue(topicArn, queueUrl, o = {}) {
      const attributes = await sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
      );
      const out = await sns.send(
        new SubscribeCommand({
          TopicArn: topicArn,
          Protocol: 'sqs',
          Endpoint: attributes.Attributes?.QueueArn,
          Attributes: { RawMessageDelivery: o.raw === true ? 'true' : 'false' },
          ReturnSubscriptionArn: true,
        }),
      );
      if (out.SubscriptionArn === undefined) throw new Error('Subscribe returned no SubscriptionArn.');
      return out.SubscriptionArn;
    },
    async listQueues(prefix = '') {
      const out = await sqs.send(new ListQueuesCommand({ QueueNamePrefix: prefix, MaxResults: 1000 }));
      return [...(out.QueueUrls ?? [])].sort();
    },
    async queueTags(queueUrl) {
      return { ...((await sqs.send(new ListQueueTagsCommand({ QueueUrl: queueUrl }))).Tags ?? {}) };
    },
    async deleteQueue(queueUrl) {
      await sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl }));
    },
    async subscriptionsOf(topicArn) {
      const out = await sns.send(new ListSubscriptionsByTopicCommand({ TopicArn: topicArn }));
      const subscriptions = [];
      for (const subscription of out.Subscriptions ?? []) {
        const arn = subscription.SubscriptionArn ?? '';
        const attributes = await sns.send(new GetSubscriptionAttributesCommand({ SubscriptionArn: arn }));
        subscriptions.push({
          arn,
          endpoint: subscription.Endpoint ?? '',
          raw: attributes.Attributes?.RawMessageDelivery === 'true',
        });
      }
      return subscriptions;
    },
    async putObject(bucket, key, body, o = {}) {
      const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
      if (bytes.byteLength > MULTIPART_THRESHOLD) return putMultipart(bucket, key, bytes, o.contentType);
      const out = await s3.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: bytes,
          ...(o.contentType === undefined ? {} : { ContentType: o.contentType }),
        }),
      );
      return { etag: out.ETag ?? '' };
    },
    async getObject(bucket, key) {
      try {
        const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        return out.Body === undefined ? new Uint8Array() : await out.Body.transformToByteArray();
      } catch (error) {
        if (statusOf(error) === 404) return undefined;
        throw error;
      }
    },
    async deleteObject(bucket, key) {
      await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
    async listKeys(bucket, prefix = '') {
      const keys: string[] = [];
      let token: string | undefined;
      do {
        const page = await s3.send(
          new ListObjectsV2Command({
            Bucket: bucket,
            Prefix: prefix,
            ...(token === undefined ? {} : { ContinuationToken: token }),
          }),
        );
        for (const object of page.Contents ?? []) if (object.Key !== undefined) keys.push(object.Key);
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token !== undefined);
      return keys.sort();
    },
    close() {
      closing ??= (async () => {
        s3.destroy();
        sqs.destroy();
        sns.destroy();
        await proxy.close();
        await server.stop();
      })();
      return closing;
    },
  };
}
