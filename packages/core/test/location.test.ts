import { describe, expect, it } from 'vitest';
/** The one set of location rules: parsing, bucket names, safe keys, snapshot URI resolution. */
import { OutsideLocationError } from '../src/errors.js';
import {
  assertKey,
  bucketNameProblem,
  isSafeDatasetName,
  keyProblem,
  locationDisplay,
  parseLocation,
  resolveSnapshotKey,
  snapshotKeyResolver,
} from '../src/location.js';

const s3 = 's3://bucket/snapshots/';
const key = 'month=2026-11/day=2026-11-29/dataset=orders/orders_20261129T080000Z.duckdb';

describe('resolveSnapshotKey', () => {
  it.each([
    [s3, `${s3}${key}`, key],
    ['s3://bucket/snapshots', `${s3}${key}`, key],
    ['S3://bucket/snapshots/', `s3://bucket/snapshots/${key}`, key],
    ['s3://bucket/', `s3://bucket/${key}`, key],
    ['file:///var/lib/ferry/store/', `file:///var/lib/ferry/store/${key}`, key],
    ['file:///var/lib/ferry/store/', `file://localhost/var/lib/ferry/store/${key}`, key],
    ['file://localhost/var/lib/ferry/store/', `file:///var/lib/ferry/store/${key}`, key],
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

describe('snapshotKeyResolver (one location, many entries)', () => {
  const outcome = (run: () => string): string => {
    try {
      return `key ${run()}`;
    } catch (error) {
      return error instanceof OutsideLocationError ? `refused ${error.uri}: ${error.reason}` : String(error);
    }
  };

  it('answers each URI as resolveSnapshotKey does, a refusal leaving the next call unchanged', () => {
    const uris = [
      `${s3}${key}`,
      `${s3}../secret`,
      `${s3}a%20b.duckdb`,
      `s3://other/snapshots/${key}`,
      `${s3}${key}`,
    ];
    for (const location of [s3, 'S3://bucket/snapshots', 'file:///var/lib/ferry/store/']) {
      const resolve = snapshotKeyResolver(location);
      const got = uris.map((uri) => outcome(() => resolve(uri)));
      expect(got).toEqual(uris.map((uri) => outcome(() => resolveSnapshotKey(location, uri))));
    }
    const resolve = snapshotKeyResolver(s3);
    expect(uris.map((uri) => outcome(() => resolve(uri)))).toEqual([
      `key ${key}`,
      `refused ${s3}../secret: it has a '..' path segment`,
      'key a%20b.duckdb',
      `refused s3://other/snapshots/${key}: it is in bucket 'other', not 'bucket'`,
      `key ${key}`,
    ]);
  });

  it('refuses every URI, naming it, when the recorded location is not an absolute URI', () => {
    const resolve = snapshotKeyResolver('snapshots/');
    for (const uri of [`${s3}${key}`, 'snapshots/x.duckdb']) {
      expect(outcome(() => resolve(uri))).toBe(`refused ${uri}: the location is not an absolute URI`);
    }
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

describe('parseLocation', () => {
  it.each([
    ['s3://bucket/prefix', { scheme: 's3', uri: 's3://bucket/prefix/', bucket: 'bucket', prefix: 'prefix/' }],
    [
      's3://bucket/prefix/',
      { scheme: 's3', uri: 's3://bucket/prefix/', bucket: 'bucket', prefix: 'prefix/' },
    ],
    ['s3://bucket', { scheme: 's3', uri: 's3://bucket/', bucket: 'bucket', prefix: '' }],
    ['s3://bucket/', { scheme: 's3', uri: 's3://bucket/', bucket: 'bucket', prefix: '' }],
    [
      'S3://my.bucket-1/a/b',
      { scheme: 's3', uri: 's3://my.bucket-1/a/b/', bucket: 'my.bucket-1', prefix: 'a/b/' },
    ],
    // Names outside today's AWS rules that S3-compatible stores and legacy us-east-1 buckets have.
    ['s3://b/snapshots/', { scheme: 's3', uri: 's3://b/snapshots/', bucket: 'b', prefix: 'snapshots/' }],
    [
      's3://Bucket/prefix/',
      { scheme: 's3', uri: 's3://Bucket/prefix/', bucket: 'Bucket', prefix: 'prefix/' },
    ],
    ['s3://my_bucket/p/', { scheme: 's3', uri: 's3://my_bucket/p/', bucket: 'my_bucket', prefix: 'p/' }],
    [
      `s3://${'b'.repeat(255)}/`,
      { scheme: 's3', uri: `s3://${'b'.repeat(255)}/`, bucket: 'b'.repeat(255), prefix: '' },
    ],
    [
      'file:///srv/snapshots',
      { scheme: 'file', uri: 'file:///srv/snapshots/', bucket: '', prefix: '/srv/snapshots/' },
    ],
    [
      'file://localhost/srv/snapshots/',
      { scheme: 'file', uri: 'file:///srv/snapshots/', bucket: '', prefix: '/srv/snapshots/' },
    ],
  ])('%s', (text, expected) => {
    expect(parseLocation(text)).toStrictEqual(expected);
  });

  it.each([
    ['/srv/snapshots', "'/srv/snapshots' has no scheme; use s3://bucket/prefix/ or file:///absolute/path/"],
    [
      'abfss://c@a.dfs.core.windows.net/p/',
      "scheme 'abfss://' is not supported by this runtime; use s3://bucket/prefix/ or file:///absolute/path/",
    ],
    [
      's3:///prefix/',
      "'s3:///prefix/' does not name a valid S3 bucket (the bucket name is empty); use s3://bucket/prefix/",
    ],
    [
      `s3://${'b'.repeat(256)}/`,
      `'s3://${'b'.repeat(256)}/' does not name a valid S3 bucket (the bucket name has 256 characters, more than the 255 any S3-compatible store allows); use s3://bucket/prefix/`,
    ],
    [
      's3://my bucket/p/',
      `'s3://my bucket/p/' does not name a valid S3 bucket (the bucket name has the character " ", which no S3-compatible store allows in a bucket name (letters, digits, '.', '_' and '-' only)); use s3://bucket/prefix/`,
    ],
    [
      's3://user@bucket/p/',
      `'s3://user@bucket/p/' does not name a valid S3 bucket (the bucket name has the character "@", which no S3-compatible store allows in a bucket name (letters, digits, '.', '_' and '-' only)); use s3://bucket/prefix/`,
    ],
    ['s3://bucket/p\u0007/', '"s3://bucket/p\\u0007/" contains a control character; remove it'],
    ['s3://bucket/a//b/', "'s3://bucket/a//b/' contains an empty path segment ('//'); remove it"],
    [
      's3://bucket/a/../b/',
      "'s3://bucket/a/../b/' contains a query, a fragment, a backslash or a '.'/'..' segment; use a plain prefix such as s3://bucket/prefix/",
    ],
    [
      'file://srv/snapshots',
      "'file://srv/snapshots' is not an absolute file:// URI; use file:///absolute/path/",
    ],
    // It has a scheme: saying it has none sent the operator looking for the wrong mistake.
    [
      'file:/srv/snapshots',
      "'file:/srv/snapshots' is not an absolute file:// URI; use file:///absolute/path/",
    ],
    ['s3:bucket/prefix/', "'s3:bucket/prefix/' has no '//' after 's3:'; use s3://bucket/prefix/"],
  ])('%s is refused', (text, problem) => {
    expect(parseLocation(text)).toStrictEqual({ problem });
  });
});

describe('bucketNameProblem', () => {
  it.each(['b', 'bucket', 'Bucket', 'my_bucket', 'my.bucket-1', '0', 'a'.repeat(255)])(
    'accepts %j',
    (name) => {
      expect(bucketNameProblem(name)).toBeUndefined();
    },
  );

  it.each([
    ['', 'the bucket name is empty'],
    ['a'.repeat(256), 'the bucket name has 256 characters, more than the 255 any S3-compatible store allows'],
    ['a/b', 'the bucket name has the character "/"'],
    ['a:b', 'the bucket name has the character ":"'],
    ['é', 'the bucket name has the character "é"'],
  ])('refuses %j, saying what is wrong', (name, start) => {
    expect(bucketNameProblem(name)).toMatch(new RegExp(`^${start.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  });
});

describe('keyProblem and assertKey (what the store adapters accept as keys)', () => {
  it.each(['metadata.json', 'month=2026-11/dataset=orders/o.duckdb', 'a b/ü.duckdb', 'a%20b'])(
    'accepts %j',
    (key) => {
      expect(keyProblem(key)).toBeUndefined();
      expect(assertKey(key, 's3://b/p/')).toBe(key);
    },
  );

  it.each(['', '../x', 'a/../../x', '/abs', 'a//b', 'dir/', 'a\\b', 'a\u0000b', '%2e%2e/x', 'a%2fb'])(
    'refuses %j with ERR_OUTSIDE_LOCATION naming the key and the location',
    (key) => {
      expect(keyProblem(key)).toBeDefined();
      let caught: unknown;
      try {
        assertKey(key, 's3://b/p/');
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(OutsideLocationError);
      expect(caught).toMatchObject({
        code: 'ERR_OUTSIDE_LOCATION',
        message: `Object key '${key}' is outside location 's3://b/p/' (${keyProblem(key)}); use a relative key under the location.`,
      });
    },
  );
});

describe('locationDisplay', () => {
  it('shows a location as Spice does, without the trailing slash', () => {
    expect(locationDisplay('s3://bucket/prefix/')).toBe('s3://bucket/prefix');
    expect(locationDisplay('s3://bucket/')).toBe('s3://bucket');
  });
});
