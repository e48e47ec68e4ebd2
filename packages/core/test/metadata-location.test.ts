import { describe, expect, it } from 'vitest';
import { isSafeDatasetName, OutsideLocationError, resolveSnapshotKey } from '../src/metadata/index.js';

const s3 = 's3://bucket/snapshots/';
const key = 'month=2026-11/day=2026-11-29/dataset=orders/orders_20261129T080000Z.duckdb';

describe('resolveSnapshotKey', () => {
  it.each([
    [s3, `${s3}${key}`, key],
    ['s3://bucket/snapshots', `${s3}${key}`, key],
    ['S3://bucket/snapshots/', `s3://bucket/snapshots/${key}`, key],
    ['s3://bucket/', `s3://bucket/${key}`, key],
    ['file:///var/lib/ferry/store/', `file:///var/lib/ferry/store/${key}`, key],
    [s3, `${s3}a%20b.duckdb`, 'a%20b.duckdb'],
  ])('under %s resolves %s', (location, uri, expected) => {
    expect(resolveSnapshotKey(location, uri)).toBe(expected);
  });

  it.each([
    [`s3://other/snapshots/${key}`, "it is in bucket 'other', not 'bucket'"],
    [`file:///snapshots/${key}`, 'its scheme is file, not s3'],
    [`s3://bucket/snapshots-evil/${key}`, "it is not under the prefix '/snapshots/'"],
    [`s3://bucket/${key}`, "it is not under the prefix '/snapshots/'"],
    [`${s3}../secret`, "it has a '..' path segment"],
    [`${s3}month=2026-11/../../secret`, "it has a '..' path segment"],
    [`${s3}./x.duckdb`, "it has a '.' path segment"],
    [`${s3}%2e%2e/secret`, "it has a '..' path segment"],
    [`${s3}%2E%2E/secret`, "it has a '..' path segment"],
    [`${s3}%252e%252e/secret`, "it has a '..' path segment"],
    [`${s3}a%2f..%2fb`, "it has an escaped '/'"],
    [`${s3}a%5cb`, "it has a '\\'"],
    [`${s3}a%00b`, 'it has a control character'],
    [`${s3}a%zzb`, 'it has a malformed percent-escape'],
    [`${s3}a//b`, "it has an empty path segment ('//' or a trailing '/')"],
    [`${s3}dir/`, "it has an empty path segment ('//' or a trailing '/')"],
    [s3, 'it names the location itself, not an object under it'],
    [`${s3}x.duckdb?versionId=1`, 'it has a query or fragment'],
    [`${s3}x.duckdb#frag`, 'it has a query or fragment'],
    [key, 'it is not an absolute URI'],
    ['/abs/path.duckdb', 'it is not an absolute URI'],
  ])('refuses %s', (uri, reason) => {
    let caught: unknown;
    try {
      resolveSnapshotKey(s3, uri);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(OutsideLocationError);
    expect(caught).toMatchObject({
      code: 'ERR_OUTSIDE_LOCATION',
      uri,
      location: s3,
      reason,
      message: `Snapshot URI '${uri}' is outside location '${s3}' (${reason}); record snapshot URIs as absolute URIs under the location.`,
    });
  });
});

describe('isSafeDatasetName', () => {
  it.each(['orders', 'Orders_2', 'taxi-trips', 'sales.eu', '0day', 'a'.repeat(255)])('accepts %j', (name) => {
    expect(isSafeDatasetName(name)).toBe(true);
  });

  it.each(['', '..', 'a..b', '../x', 'a/b', 'a\\b', 'a\u0000', '.x', '-x', 'a b', 'é', 'a'.repeat(256)])(
    'refuses %j',
    (name) => {
      expect(isSafeDatasetName(name)).toBe(false);
    },
  );
});
