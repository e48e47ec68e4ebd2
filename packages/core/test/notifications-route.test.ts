import { describe, expect, it } from 'vitest';
import {
  locationKey,
  type NotificationLocation,
  type NotificationRecord,
  type RouteDecision,
  routeMessage,
} from '../src/notifications/index.js';

const snapshots: NotificationLocation = { bucket: 'b', prefix: 'snapshots/' };
const other: NotificationLocation = { bucket: 'b', prefix: 'other/' };
const root: NotificationLocation = { bucket: 'c', prefix: '' };
const locations = [snapshots, other, root];

function created(bucket: string, key: string): NotificationRecord {
  return { bucket, key, eventName: 'ObjectCreated:Put', kind: 'created' };
}
function removed(bucket: string, key: string): NotificationRecord {
  return { bucket, key, eventName: 'ObjectRemoved:Delete', kind: 'removed' };
}

const cases: Array<{ name: string; records: NotificationRecord[]; expected: RouteDecision }> = [
  {
    name: 'a put of a location metadata.json commits it',
    records: [created('b', 'snapshots/metadata.json')],
    expected: { kind: 'commit', locations: [snapshots] },
  },
  {
    name: 'a put of metadata.json at a bucket root commits it',
    records: [created('c', 'metadata.json')],
    expected: { kind: 'commit', locations: [root] },
  },
  {
    name: 'an EventBridge-style created record commits',
    records: [{ bucket: 'b', key: 'other/metadata.json', eventName: 'Object Created', kind: 'created' }],
    expected: { kind: 'commit', locations: [other] },
  },
  {
    name: 'a removal of metadata.json is ignored',
    records: [removed('b', 'snapshots/metadata.json')],
    expected: { kind: 'ignore', reason: 'no-commit' },
  },
  {
    name: 'another event on metadata.json is ignored',
    records: [
      { bucket: 'b', key: 'snapshots/metadata.json', eventName: 'ObjectRestore:Completed', kind: 'other' },
    ],
    expected: { kind: 'ignore', reason: 'no-commit' },
  },
  {
    name: 'a snapshot file is ignored',
    records: [
      created('b', 'snapshots/month=2025-11/day=2025-11-29/dataset=orders/orders_20251129T070640Z.duckdb'),
    ],
    expected: { kind: 'ignore', reason: 'no-commit' },
  },
  {
    name: 'a lease is ignored',
    records: [created('b', 'snapshots/leases/orders.json')],
    expected: { kind: 'ignore', reason: 'no-commit' },
  },
  {
    name: 'a nested metadata.json is ignored',
    records: [created('b', 'snapshots/x/metadata.json')],
    expected: { kind: 'ignore', reason: 'no-commit' },
  },
  {
    name: 'a removed snapshot file is ignored',
    records: [removed('c', 'month=2025-11/day=2025-11-29/dataset=orders/orders_20251129T070640Z.duckdb')],
    expected: { kind: 'ignore', reason: 'no-commit' },
  },
  {
    name: 'a key under no prefix of its bucket is outside',
    records: [created('b', 'elsewhere/metadata.json')],
    expected: { kind: 'outside', records: [created('b', 'elsewhere/metadata.json')] },
  },
  {
    name: 'a key sharing the prefix text but not the folder is outside',
    records: [created('b', 'snapshots-old/metadata.json')],
    expected: { kind: 'outside', records: [created('b', 'snapshots-old/metadata.json')] },
  },
  {
    name: 'a bucket of no location is outside, even for a removal',
    records: [removed('d', 'snapshots/metadata.json')],
    expected: { kind: 'outside', records: [removed('d', 'snapshots/metadata.json')] },
  },
  {
    name: 'one outside record keeps the whole message, even with a commit',
    records: [
      created('b', 'snapshots/metadata.json'),
      created('d', 'x'),
      created('b', 'other/metadata.json'),
    ],
    expected: { kind: 'outside', records: [created('d', 'x')] },
  },
  {
    name: 'several commits list each location once, in configuration order',
    records: [
      created('c', 'metadata.json'),
      created('b', 'snapshots/metadata.json'),
      created('b', 'snapshots/metadata.json'),
    ],
    expected: { kind: 'commit', locations: [snapshots, root] },
  },
  {
    name: 'a commit among ignorable records commits',
    records: [created('b', 'snapshots/leases/orders.json'), created('b', 'snapshots/metadata.json')],
    expected: { kind: 'commit', locations: [snapshots] },
  },
];

describe('routeMessage', () => {
  it.each(cases)('$name', ({ records, expected }) => {
    expect(routeMessage({ kind: 'records', records }, locations)).toEqual(expected);
  });

  it('passes an unparseable body through', () => {
    expect(routeMessage({ kind: 'unparseable', reason: 'the body is not JSON' }, locations)).toEqual({
      kind: 'unparseable',
      reason: 'the body is not JSON',
    });
  });

  it('ignores a test event', () => {
    expect(routeMessage({ kind: 'test' }, locations)).toEqual({ kind: 'ignore', reason: 'test' });
  });

  it('puts every record outside when no location is configured', () => {
    const records = [created('b', 'snapshots/metadata.json')];
    expect(routeMessage({ kind: 'records', records }, [])).toEqual({ kind: 'outside', records });
  });

  it('commits the inner location of nested locations only', () => {
    const outer = { bucket: 'b', prefix: 'a/' };
    const inner = { bucket: 'b', prefix: 'a/b/' };
    const records = [created('b', 'a/b/metadata.json')];
    expect(routeMessage({ kind: 'records', records }, [outer, inner])).toEqual({
      kind: 'commit',
      locations: [inner],
    });
  });

  it('treats a prefix without its slash as the folder, and lists a duplicate location once', () => {
    const bare = { bucket: 'b', prefix: 'snapshots' };
    const records = [created('b', 'snapshots/metadata.json')];
    expect(routeMessage({ kind: 'records', records }, [bare, snapshots])).toEqual({
      kind: 'commit',
      locations: [bare],
    });
    expect(
      routeMessage({ kind: 'records', records: [created('b', 'snapshotsmetadata.json')] }, [bare]),
    ).toEqual({ kind: 'outside', records: [created('b', 'snapshotsmetadata.json')] });
  });
});

describe('locationKey', () => {
  it.each([
    ['snapshots/', 's3://b/snapshots/'],
    ['snapshots', 's3://b/snapshots/'],
    ['/a/b', 's3://b/a/b/'],
    ['', 's3://b/'],
    ['/', 's3://b/'],
  ])('formats prefix %j as %s', (prefix, expected) => {
    expect(locationKey({ bucket: 'b', prefix })).toBe(expected);
  });
});
