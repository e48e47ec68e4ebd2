/**
 * Pure builders of the notification bodies AWS delivers to SQS for S3 object events: the S3 event
 * (`Records[]`, event version 2.1), the same wrapped in an SNS envelope, and the EventBridge form.
 * The notification bridge sends these; tests use them to craft bodies (and the `s3:TestEvent`).
 */
import { randomUUID } from 'node:crypto';

export type S3EventName =
  | 'ObjectCreated:Put'
  | 'ObjectCreated:Post'
  | 'ObjectCreated:Copy'
  | 'ObjectCreated:CompleteMultipartUpload'
  | 'ObjectRemoved:Delete'
  | 'ObjectRemoved:DeleteMarkerCreated';

export interface S3EventInput {
  readonly eventName: S3EventName;
  readonly bucket: string;
  /** The raw key; the record carries it URL-encoded. */
  readonly key: string;
  /** Object size; omitted from ObjectRemoved records. */
  readonly size?: number;
  /** ETag, with or without quotes; records carry it unquoted. */
  readonly eTag?: string;
  readonly versionId?: string;
  /** Default: a fresh, increasing value. */
  readonly sequencer?: string;
  readonly region?: string;
  /** Default: now. */
  readonly eventTime?: Date;
  readonly configurationId?: string;
  readonly accountId?: string;
}

export interface S3EventRecord {
  readonly eventVersion: '2.1';
  readonly eventSource: 'aws:s3';
  readonly awsRegion: string;
  readonly eventTime: string;
  readonly eventName: S3EventName;
  readonly userIdentity: { readonly principalId: string };
  readonly requestParameters: { readonly sourceIPAddress: string };
  readonly responseElements: { readonly 'x-amz-request-id': string; readonly 'x-amz-id-2': string };
  readonly s3: {
    readonly s3SchemaVersion: '1.0';
    readonly configurationId: string;
    readonly bucket: {
      readonly name: string;
      readonly ownerIdentity: { readonly principalId: string };
      readonly arn: string;
    };
    readonly object: {
      readonly key: string;
      readonly size?: number;
      readonly eTag?: string;
      readonly versionId?: string;
      readonly sequencer: string;
    };
  };
}

export interface S3Event {
  readonly Records: readonly S3EventRecord[];
}

export interface SnsEnvelope {
  readonly Type: 'Notification';
  readonly MessageId: string;
  readonly TopicArn: string;
  readonly Subject: string;
  readonly Message: string;
  readonly Timestamp: string;
  readonly SignatureVersion: '1';
  readonly Signature: string;
  readonly SigningCertURL: string;
  readonly UnsubscribeURL: string;
}

export interface EventBridgeS3Event {
  readonly version: '0';
  readonly id: string;
  readonly 'detail-type': 'Object Created' | 'Object Deleted';
  readonly source: 'aws.s3';
  readonly account: string;
  readonly time: string;
  readonly region: string;
  readonly resources: readonly string[];
  readonly detail: {
    readonly version: '0';
    readonly bucket: { readonly name: string };
    readonly object: {
      readonly key: string;
      readonly size?: number;
      readonly etag?: string;
      readonly 'version-id'?: string;
      readonly sequencer: string;
    };
    readonly 'request-id': string;
    readonly requester: string;
    readonly 'source-ip-address': string;
    readonly reason: string;
    readonly 'deletion-type'?: string;
  };
}

export const DEFAULT_ACCOUNT_ID = '000000000000';
const DEFAULT_REGION = 'us-east-1';
const DEFAULT_CONFIGURATION_ID = 'ferry-snapshots';

let lastSequencer = 0n;

/** A hex sequencer that increases with every call, like S3's per-key event ordering token. */
export function nextSequencer(): string {
  const candidate = BigInt(Date.now()) << 16n;
  lastSequencer = candidate > lastSequencer ? candidate : lastSequencer + 1n;
  return lastSequencer.toString(16).toUpperCase().padStart(18, '0');
}

/**
 * URL-encode a key the way S3 event records do: each path segment percent-encoded as UTF-8, `/`
 * kept, a space as `+` (so a literal `+` becomes `%2B`).
 */
export function encodeS3EventKey(key: string): string {
  return key
    .split('/')
    .map((segment) =>
      encodeURIComponent(segment)
        .replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
        .replaceAll('%20', '+'),
    )
    .join('/');
}

/** The inverse of {@link encodeS3EventKey}: what a consumer must do with a record's key. */
export function decodeS3EventKey(encoded: string): string {
  return decodeURIComponent(encoded.replaceAll('+', ' '));
}

function unquote(etag: string): string {
  return etag.replace(/^W\//, '').replace(/^"(.*)"$/, '$1');
}

function requestId(): string {
  return randomUUID().replaceAll('-', '').slice(0, 16).toUpperCase();
}

/** One record of an S3 event notification, exactly as AWS formats it. */
export function s3EventRecord(input: S3EventInput): S3EventRecord {
  const removed = input.eventName.startsWith('ObjectRemoved:');
  const accountId = input.accountId ?? DEFAULT_ACCOUNT_ID;
  return {
    eventVersion: '2.1',
    eventSource: 'aws:s3',
    awsRegion: input.region ?? DEFAULT_REGION,
    eventTime: (input.eventTime ?? new Date()).toISOString(),
    eventName: input.eventName,
    userIdentity: { principalId: `AWS:${accountId}` },
    requestParameters: { sourceIPAddress: '127.0.0.1' },
    responseElements: { 'x-amz-request-id': requestId(), 'x-amz-id-2': 'ferry-test-support' },
    s3: {
      s3SchemaVersion: '1.0',
      configurationId: input.configurationId ?? DEFAULT_CONFIGURATION_ID,
      bucket: {
        name: input.bucket,
        ownerIdentity: { principalId: accountId },
        arn: `arn:aws:s3:::${input.bucket}`,
      },
      object: {
        key: encodeS3EventKey(input.key),
        ...(removed || input.size === undefined ? {} : { size: input.size }),
        ...(removed || input.eTag === undefined ? {} : { eTag: unquote(input.eTag) }),
        ...(input.versionId === undefined ? {} : { versionId: input.versionId }),
        sequencer: input.sequencer ?? nextSequencer(),
      },
    },
  };
}

/** A whole S3 event notification (one SQS message body, as an object). */
export function s3Event(...inputs: readonly S3EventInput[]): S3Event {
  return { Records: inputs.map(s3EventRecord) };
}

/** The `s3:TestEvent` S3 sends when a notification configuration is saved: it has no records. */
export function s3TestEvent(bucket: string, time: Date = new Date()): Record<string, string> {
  return {
    Service: 'Amazon S3',
    Event: 's3:TestEvent',
    Time: time.toISOString(),
    Bucket: bucket,
    RequestId: requestId(),
    HostId: 'ferry-test-support',
  };
}

export interface SnsEnvelopeOptions {
  readonly topicArn?: string;
  readonly region?: string;
  readonly messageId?: string;
  readonly subject?: string;
  readonly timestamp?: Date;
}

/** Wrap a message (an S3 event object or an already serialised string) as SNS delivers it to SQS. */
export function snsEnvelope(message: string | object, options: SnsEnvelopeOptions = {}): SnsEnvelope {
  const region = options.region ?? DEFAULT_REGION;
  const topicArn = options.topicArn ?? `arn:aws:sns:${region}:${DEFAULT_ACCOUNT_ID}:ferry-snapshots`;
  return {
    Type: 'Notification',
    MessageId: options.messageId ?? randomUUID(),
    TopicArn: topicArn,
    Subject: options.subject ?? 'Amazon S3 Notification',
    Message: typeof message === 'string' ? message : JSON.stringify(message),
    Timestamp: (options.timestamp ?? new Date()).toISOString(),
    SignatureVersion: '1',
    Signature: Buffer.from(`ferry-test-support:${topicArn}`).toString('base64'),
    SigningCertURL: `https://sns.${region}.amazonaws.com/SimpleNotificationService-ferrytestsupport.pem`,
    UnsubscribeURL: `https://sns.${region}.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=${topicArn}:${randomUUID()}`,
  };
}

/**
 * The EventBridge form of an S3 object event. Unlike S3 event records, EventBridge carries the key
 * as is (not URL-encoded) and its `time` has no milliseconds.
 */
export function eventBridgeEvent(input: S3EventInput): EventBridgeS3Event {
  const removed = input.eventName.startsWith('ObjectRemoved:');
  const accountId = input.accountId ?? DEFAULT_ACCOUNT_ID;
  const reasons: Record<S3EventName, string> = {
    'ObjectCreated:Put': 'PutObject',
    'ObjectCreated:Post': 'POST Object',
    'ObjectCreated:Copy': 'CopyObject',
    'ObjectCreated:CompleteMultipartUpload': 'CompleteMultipartUpload',
    'ObjectRemoved:Delete': 'DeleteObject',
    'ObjectRemoved:DeleteMarkerCreated': 'DeleteObject',
  };
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': removed ? 'Object Deleted' : 'Object Created',
    source: 'aws.s3',
    account: accountId,
    time: (input.eventTime ?? new Date()).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: input.region ?? DEFAULT_REGION,
    resources: [`arn:aws:s3:::${input.bucket}`],
    detail: {
      version: '0',
      bucket: { name: input.bucket },
      object: {
        key: input.key,
        ...(removed || input.size === undefined ? {} : { size: input.size }),
        ...(removed || input.eTag === undefined ? {} : { etag: unquote(input.eTag) }),
        ...(input.versionId === undefined ? {} : { 'version-id': input.versionId }),
        sequencer: input.sequencer ?? nextSequencer(),
      },
      'request-id': requestId(),
      requester: accountId,
      'source-ip-address': '127.0.0.1',
      reason: reasons[input.eventName],
      ...(input.eventName === 'ObjectRemoved:Delete'
        ? { 'deletion-type': 'Permanently Deleted' }
        : input.eventName === 'ObjectRemoved:DeleteMarkerCreated'
          ? { 'deletion-type': 'Delete Marker Created' }
          : {}),
    },
  };
}
