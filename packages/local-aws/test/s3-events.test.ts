/** The pure notification-body builders: key encoding and the three AWS shapes. */
import { describe, expect, it } from 'vitest';
import {
  decodeS3EventKey,
  encodeS3EventKey,
  eventBridgeEvent,
  nextSequencer,
  s3Event,
  s3EventRecord,
  s3TestEvent,
  snsEnvelope,
} from '../src/index.js';

const time = new Date('2026-11-29T08:00:00.123Z');

describe('encodeS3EventKey', () => {
  it.each([
    ['metadata.json', 'metadata.json'],
    ['a b', 'a+b'],
    ['a+b', 'a%2Bb'],
    ['month=2026-11/day=2026-11-29/x.duckdb', 'month%3D2026-11/day%3D2026-11-29/x.duckdb'],
    ['é/雪', '%C3%A9/%E9%9B%AA'],
    ["it's (1)!~*", 'it%27s+%281%29%21%7E*'],
  ])('encodes %j as %j and decodes it back', (key, encoded) => {
    expect(encodeS3EventKey(key)).toBe(encoded);
    expect(decodeS3EventKey(encoded)).toBe(key);
  });
});

describe('s3EventRecord', () => {
  it('builds a created record with unquoted ETag and encoded key', () => {
    const record = s3EventRecord({
      eventName: 'ObjectCreated:Put',
      bucket: 'b',
      key: 'p/a b.json',
      size: 3,
      eTag: '"abc"',
      sequencer: '00AB',
      eventTime: time,
      region: 'eu-west-1',
    });
    expect(record).toMatchObject({
      eventVersion: '2.1',
      eventSource: 'aws:s3',
      awsRegion: 'eu-west-1',
      eventTime: '2026-11-29T08:00:00.123Z',
      s3: {
        s3SchemaVersion: '1.0',
        bucket: { name: 'b', arn: 'arn:aws:s3:::b' },
        object: { key: 'p/a+b.json', size: 3, eTag: 'abc', sequencer: '00AB' },
      },
    });
  });

  it('leaves size and ETag out of removed records', () => {
    const record = s3EventRecord({
      eventName: 'ObjectRemoved:Delete',
      bucket: 'b',
      key: 'k',
      size: 3,
      eTag: 'x',
    });
    expect(Object.keys(record.s3.object).sort()).toEqual(['key', 'sequencer']);
  });

  it('wraps records in a Records array', () => {
    const event = s3Event(
      { eventName: 'ObjectCreated:Put', bucket: 'b', key: 'one' },
      { eventName: 'ObjectCreated:Put', bucket: 'b', key: 'two' },
    );
    expect(event.Records.map((r) => r.s3.object.key)).toEqual(['one', 'two']);
  });
});

describe('snsEnvelope', () => {
  it('carries the event as a JSON string', () => {
    const event = s3Event({ eventName: 'ObjectCreated:Put', bucket: 'b', key: 'k' });
    const envelope = snsEnvelope(event, { timestamp: time, topicArn: 'arn:aws:sns:us-east-1:1:t' });
    expect(envelope).toMatchObject({
      Type: 'Notification',
      Subject: 'Amazon S3 Notification',
      TopicArn: 'arn:aws:sns:us-east-1:1:t',
      Timestamp: '2026-11-29T08:00:00.123Z',
    });
    expect(JSON.parse(envelope.Message)).toEqual(event);
    expect(snsEnvelope('raw').Message).toBe('raw');
  });
});

describe('eventBridgeEvent', () => {
  it('keeps the key raw and the time without milliseconds', () => {
    const event = eventBridgeEvent({
      eventName: 'ObjectRemoved:Delete',
      bucket: 'b',
      key: 'a b/c',
      eventTime: time,
    });
    expect(event).toMatchObject({
      source: 'aws.s3',
      'detail-type': 'Object Deleted',
      time: '2026-11-29T08:00:00Z',
      resources: ['arn:aws:s3:::b'],
      detail: {
        bucket: { name: 'b' },
        object: { key: 'a b/c' },
        reason: 'DeleteObject',
        'deletion-type': 'Permanently Deleted',
      },
    });
  });
});

describe('helpers', () => {
  it('makes strictly increasing sequencers', () => {
    const a = nextSequencer();
    const b = nextSequencer();
    expect(BigInt(`0x${b}`)).toBeGreaterThan(BigInt(`0x${a}`));
  });

  it('builds the records-less s3:TestEvent', () => {
    expect(s3TestEvent('b', time)).toMatchObject({
      Service: 'Amazon S3',
      Event: 's3:TestEvent',
      Bucket: 'b',
    });
  });
});
