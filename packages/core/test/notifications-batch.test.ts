import { describe, expect, it } from 'vitest';
import {
  BatchLogMessage,
  type BatchPlan,
  type NotificationLocation,
  planBatch,
  settleCommits,
} from '../src/notifications/index.js';

const DISPLAY = 's3://b/snapshots';

const locations: NotificationLocation[] = [
  { bucket: 'b', prefix: 'snapshots/' },
  { bucket: 'c', prefix: '' },
];

function put(bucket: string, key: string): string {
  return JSON.stringify({
    Records: [
      {
        eventSource: 'aws:s3',
        eventName: 'ObjectCreated:Put',
        s3: { bucket: { name: bucket }, object: { key } },
      },
    ],
  });
}

describe('planBatch', () => {
  it('groups commits by location and sorts the rest into delete and keep, with exact logs', () => {
    const plan = planBatch(
      [
        { id: 'm1', body: put('b', 'snapshots/metadata.json') },
        { id: 'm2', body: 'garbage' },
        { id: 'm3', body: put('x', 'metadata.json') },
        { id: 'm4', body: put('b', 'snapshots/metadata.json') },
        { id: 'm5', body: JSON.stringify({ Event: 's3:TestEvent' }) },
        { id: 'm6', body: put('b', 'snapshots/leases/orders.json') },
        { id: 'm7', body: put('c', 'metadata.json') },
      ],
      locations,
      DISPLAY,
    );
    const expected: BatchPlan = {
      commits: new Map([
        ['s3://b/snapshots/', ['m1', 'm4']],
        ['s3://c/', ['m7']],
      ]),
      toDelete: ['m2', 'm5', 'm6'],
      toKeep: ['m3'],
      logs: [
        {
          level: 'debug',
          message: BatchLogMessage.commit,
          fields: { messageId: 'm1', locations: ['s3://b/snapshots/'] },
        },
        {
          level: 'warn',
          message:
            "Snapshot location 's3://b/snapshots' dropped an SQS message that is not an S3 event notification, so it was deleted without reloading any dataset. " +
            "Cause: the body is not JSON. Point only the location's S3 event notifications at the queue in `s3_queue_url`. See: https://spiceai.org/docs/features/data-acceleration/snapshots",
          fields: { messageId: 'm2', reason: 'the body is not JSON' },
        },
        {
          level: 'error',
          message:
            "Snapshot location 's3://b/snapshots' received an S3 event notification for 's3://x/metadata.json', which is outside the location, so the SQS message was left on the queue (not deleted) and will be delivered again after each visibility timeout until it expires. " +
            "The queue in `s3_queue_url` must receive only this location's notifications: filter the bucket notification by the location's prefix, or fan out through SNS to a queue per consumer. See: https://spiceai.org/docs/features/data-acceleration/snapshots",
          fields: { messageId: 'm3', objects: ['s3://x/metadata.json'] },
        },
        {
          level: 'debug',
          message: BatchLogMessage.commit,
          fields: { messageId: 'm4', locations: ['s3://b/snapshots/'] },
        },
        { level: 'debug', message: 'Deleting an s3:TestEvent message', fields: { messageId: 'm5' } },
        {
          level: 'debug',
          message: 'Deleting a notification that needs no reload',
          fields: { messageId: 'm6' },
        },
        {
          level: 'debug',
          message: BatchLogMessage.commit,
          fields: { messageId: 'm7', locations: ['s3://c/'] },
        },
      ],
    };
    expect(plan).toEqual(expected);
  });

  it('lists a message committing two locations under both', () => {
    const body = JSON.stringify({
      Records: [
        {
          eventSource: 'aws:s3',
          eventName: 'ObjectCreated:Put',
          s3: { bucket: { name: 'c' }, object: { key: 'metadata.json' } },
        },
        {
          eventSource: 'aws:s3',
          eventName: 'ObjectCreated:Copy',
          s3: { bucket: { name: 'b' }, object: { key: 'snapshots/metadata.json' } },
        },
      ],
    });
    const plan = planBatch([{ id: 'm1', body }], locations, DISPLAY);
    expect(plan.commits).toEqual(
      new Map([
        ['s3://b/snapshots/', ['m1']],
        ['s3://c/', ['m1']],
      ]),
    );
    expect(plan.toDelete).toEqual([]);
    expect(plan.toKeep).toEqual([]);
  });

  it('plans an empty batch as nothing', () => {
    expect(planBatch([], locations, DISPLAY)).toEqual({
      commits: new Map(),
      toDelete: [],
      toKeep: [],
      logs: [],
    });
  });
});

describe('settleCommits', () => {
  const commits = new Map([
    ['s3://b/snapshots/', ['m1', 'm2']],
    ['s3://c/', ['m2', 'm3']],
  ]);

  it.each([
    {
      name: 'every read succeeded',
      succeeded: ['s3://b/snapshots/', 's3://c/'],
      toDelete: ['m1', 'm2', 'm3'],
      toKeep: [],
    },
    { name: 'one read failed', succeeded: ['s3://b/snapshots/'], toDelete: ['m1'], toKeep: ['m2', 'm3'] },
    { name: 'every read failed', succeeded: [], toDelete: [], toKeep: ['m1', 'm2', 'm3'] },
  ])('$name', ({ succeeded, toDelete, toKeep }) => {
    expect(settleCommits(commits, new Set(succeeded))).toEqual({ toDelete, toKeep });
  });
});

describe('notification log lines', () => {
  it('escape control characters in an outside object so the line stays one line', () => {
    const body = put('x', 'a\nb\u0007.json');
    const [line] = planBatch([{ id: 'm1', body }], locations, DISPLAY).logs;
    expect(line?.message).toContain("for 's3://x/a\\u000ab\\u0007.json', which is outside the location");
    expect(line?.message.includes('\n') || line?.message.includes(String.fromCharCode(7))).toBe(false);
  });
});
