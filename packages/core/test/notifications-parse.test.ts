import { describe, expect, it } from 'vitest';
import { type ParsedNotification, parseNotification } from '../src/notifications/index.js';

function s3Record(eventName: string, bucket: string, key: string): Record<string, unknown> {
  return {
    eventVersion: '2.1',
    eventSource: 'aws:s3',
    awsRegion: 'us-east-1',
    eventName,
    s3: { s3SchemaVersion: '1.0', bucket: { name: bucket, arn: `arn:aws:s3:::${bucket}` }, object: { key } },
  };
}

function s3Event(...records: unknown[]): string {
  return JSON.stringify({ Records: records });
}

function sns(message: string): string {
  return JSON.stringify({
    Type: 'Notification',
    MessageId: 'm-1',
    TopicArn: 'arn:aws:sns:x',
    Message: message,
  });
}

function eventBridge(detailType: string, bucket: string, key: string, source = 'aws.s3'): string {
  return JSON.stringify({
    version: '0',
    'detail-type': detailType,
    source,
    detail: { version: '0', bucket: { name: bucket }, object: { key, size: 5 }, reason: 'PutObject' },
  });
}

const testEvent = JSON.stringify({
  Service: 'Amazon S3',
  Event: 's3:TestEvent',
  Time: '2025-11-29T07:06:40.000Z',
  Bucket: 'b',
  RequestId: 'r',
  HostId: 'h',
});

const cases: Array<{ name: string; body: string; expected: ParsedNotification }> = [
  {
    name: 'an S3 put of metadata.json',
    body: s3Event(s3Record('ObjectCreated:Put', 'b', 'snapshots/metadata.json')),
    expected: {
      kind: 'records',
      records: [
        { bucket: 'b', key: 'snapshots/metadata.json', eventName: 'ObjectCreated:Put', kind: 'created' },
      ],
    },
  },
  {
    name: 'a form-encoded key: + is a space, %2B a plus, %3D an equals sign',
    body: s3Event(
      s3Record('ObjectCreated:CompleteMultipartUpload', 'b', 'my+dir/month%3D2025-11/a%2Bb.duckdb'),
    ),
    expected: {
      kind: 'records',
      records: [
        {
          bucket: 'b',
          key: 'my dir/month=2025-11/a+b.duckdb',
          eventName: 'ObjectCreated:CompleteMultipartUpload',
          kind: 'created',
        },
      ],
    },
  },
  {
    name: 'a UTF-8 escape',
    body: s3Event(s3Record('ObjectCreated:Put', 'b', 'caf%C3%A9/metadata.json')),
    expected: {
      kind: 'records',
      records: [{ bucket: 'b', key: 'café/metadata.json', eventName: 'ObjectCreated:Put', kind: 'created' }],
    },
  },
  {
    name: 'removals, lifecycle expirations, other events and an s3:-prefixed name, in order',
    body: s3Event(
      s3Record('ObjectRemoved:Delete', 'b', 'k1'),
      s3Record('LifecycleExpiration:Delete', 'b', 'k2'),
      s3Record('ObjectRestore:Completed', 'b', 'k3'),
      s3Record('s3:ObjectCreated:Copy', 'b', 'k4'),
    ),
    expected: {
      kind: 'records',
      records: [
        { bucket: 'b', key: 'k1', eventName: 'ObjectRemoved:Delete', kind: 'removed' },
        { bucket: 'b', key: 'k2', eventName: 'LifecycleExpiration:Delete', kind: 'removed' },
        { bucket: 'b', key: 'k3', eventName: 'ObjectRestore:Completed', kind: 'other' },
        { bucket: 'b', key: 'k4', eventName: 's3:ObjectCreated:Copy', kind: 'created' },
      ],
    },
  },
  {
    name: 'an S3 event in an SNS envelope',
    body: sns(s3Event(s3Record('ObjectCreated:Put', 'b', 'p/metadata.json'))),
    expected: {
      kind: 'records',
      records: [{ bucket: 'b', key: 'p/metadata.json', eventName: 'ObjectCreated:Put', kind: 'created' }],
    },
  },
  { name: 'an s3:TestEvent', body: testEvent, expected: { kind: 'test' } },
  { name: 'an s3:TestEvent in an SNS envelope', body: sns(testEvent), expected: { kind: 'test' } },
  {
    // Spice's parse_notification_body takes a top-level eventName of s3:TestEvent as a test event too
    // (spice-reference §4); it was reported as not an S3 event notification, at warn.
    name: 'an s3:TestEvent named by eventName',
    body: JSON.stringify({ eventName: 's3:TestEvent', bucket: 'b' }),
    expected: { kind: 'test' },
  },
  {
    name: 'an EventBridge Object Created event, key used as is',
    body: eventBridge('Object Created', 'b', 'p+q/month=2025-11/metadata.json'),
    expected: {
      kind: 'records',
      records: [
        { bucket: 'b', key: 'p+q/month=2025-11/metadata.json', eventName: 'Object Created', kind: 'created' },
      ],
    },
  },
  {
    name: 'an EventBridge key with a percent sign is not decoded (and not malformed)',
    body: eventBridge('Object Created', 'b', 'p/100%/metadata.json'),
    expected: {
      kind: 'records',
      records: [{ bucket: 'b', key: 'p/100%/metadata.json', eventName: 'Object Created', kind: 'created' }],
    },
  },
  {
    name: 'an EventBridge Object Deleted event',
    body: eventBridge('Object Deleted', 'b', 'p/metadata.json'),
    expected: {
      kind: 'records',
      records: [{ bucket: 'b', key: 'p/metadata.json', eventName: 'Object Deleted', kind: 'removed' }],
    },
  },
  {
    name: 'an EventBridge Object Restore Completed event',
    body: eventBridge('Object Restore Completed', 'b', 'p/x'),
    expected: {
      kind: 'records',
      records: [{ bucket: 'b', key: 'p/x', eventName: 'Object Restore Completed', kind: 'other' }],
    },
  },
  {
    name: 'an EventBridge S3 event in an SNS envelope',
    body: sns(eventBridge('Object Created', 'b', 'p/metadata.json')),
    expected: {
      kind: 'records',
      records: [{ bucket: 'b', key: 'p/metadata.json', eventName: 'Object Created', kind: 'created' }],
    },
  },
];

const unparseable: Array<{ name: string; body: string; reason: string }> = [
  { name: 'not JSON', body: 'hello', reason: 'the body is not JSON' },
  { name: 'an empty body', body: '', reason: 'the body is not JSON' },
  { name: 'a JSON array', body: '[]', reason: 'the body is not a JSON object' },
  { name: 'JSON null', body: 'null', reason: 'the body is not a JSON object' },
  {
    name: 'an unknown object',
    body: '{"hello":"world"}',
    reason: 'the body is not an S3 event, an EventBridge S3 event or an s3:TestEvent',
  },
  { name: 'no records', body: s3Event(), reason: 'the Records array is empty' },
  { name: 'a record that is not an object', body: s3Event('x'), reason: 'record 0 is not an object' },
  {
    name: 'a record from another source',
    body: s3Event(s3Record('ObjectCreated:Put', 'b', 'k'), {
      ...s3Record('ObjectCreated:Put', 'b', 'k'),
      eventSource: 'minio:s3',
    }),
    reason: 'record 1 is not an S3 event',
  },
  {
    name: 'a record without eventName',
    body: s3Event({ ...s3Record('x', 'b', 'k'), eventName: undefined }),
    reason: 'record 0 has no eventName',
  },
  {
    name: 'a record without a bucket',
    body: s3Event({ eventSource: 'aws:s3', eventName: 'ObjectCreated:Put', s3: { object: { key: 'k' } } }),
    reason: 'record 0 has no s3.bucket.name',
  },
  {
    name: 'a record without a key',
    body: s3Event({ eventSource: 'aws:s3', eventName: 'ObjectCreated:Put', s3: { bucket: { name: 'b' } } }),
    reason: 'record 0 has no s3.object.key',
  },
  {
    name: 'a malformed escape',
    body: s3Event(s3Record('ObjectCreated:Put', 'b', 'p/%zz/metadata.json')),
    reason: 'record 0 has a malformed URL-encoded s3.object.key',
  },
  {
    name: 'a lone percent sign',
    body: s3Event(s3Record('ObjectCreated:Put', 'b', 'p/100%/metadata.json')),
    reason: 'record 0 has a malformed URL-encoded s3.object.key',
  },
  {
    name: 'an escape that is not UTF-8',
    body: s3Event(s3Record('ObjectCreated:Put', 'b', 'p/%C3/metadata.json')),
    reason: 'record 0 has a malformed URL-encoded s3.object.key',
  },
  {
    name: 'an SNS Message that is not a string',
    body: JSON.stringify({ Type: 'Notification', Message: { Records: [] } }),
    reason: 'the SNS Message is not a string',
  },
  { name: 'an SNS Message that is not JSON', body: sns('not json'), reason: 'the SNS Message is not JSON' },
  {
    name: 'an SNS Message that is a string',
    body: sns('"x"'),
    reason: 'the SNS Message is not a JSON object',
  },
  {
    name: 'an EventBridge event from another service',
    body: eventBridge('Object Created', 'b', 'k', 'aws.ec2'),
    reason: 'the EventBridge event is not from aws.s3',
  },
  {
    name: 'an EventBridge event without detail-type',
    body: JSON.stringify({ source: 'aws.s3', detail: { bucket: { name: 'b' }, object: { key: 'k' } } }),
    reason: 'the EventBridge event has no detail-type',
  },
  {
    name: 'an EventBridge event without a bucket',
    body: JSON.stringify({
      source: 'aws.s3',
      'detail-type': 'Object Created',
      detail: { object: { key: 'k' } },
    }),
    reason: 'the EventBridge event has no detail.bucket.name',
  },
  {
    name: 'an EventBridge event without a key',
    body: JSON.stringify({
      source: 'aws.s3',
      'detail-type': 'Object Created',
      detail: { bucket: { name: 'b' } },
    }),
    reason: 'the EventBridge event has no detail.object.key',
  },
];

describe('parseNotification', () => {
  it.each(cases)('parses $name', ({ body, expected }) => {
    expect(parseNotification(body)).toEqual(expected);
  });

  it.each(unparseable)('reports $name as unparseable', ({ body, reason }) => {
    expect(parseNotification(body)).toEqual({ kind: 'unparseable', reason });
  });
});
