/**
 * Key and location rules shared by the adapters. A key is relative to the location and may never
 * climb out of it, so both adapters refuse the same keys: empty, absolute, with `\`, NUL, or an
 * empty, `.` or `..` segment (also when percent-encoded).
 */
import { OutsideLocationError } from './errors.js';

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** Why `key` is not a usable object key, or undefined when it is. */
export function keyProblem(key: string): string | undefined {
  if (key === '') return 'the key is empty';
  if (key.startsWith('/')) return 'the key is absolute';
  if (key.includes('\\')) return 'the key contains a backslash';
  if (key.includes('\0')) return 'the key contains a NUL byte';
  for (const segment of key.split('/')) {
    if (segment === '') return 'the key has an empty path segment';
    const decoded = decodeSegment(segment);
    if (decoded === '.' || decoded === '..') return `the key has a '${segment}' segment`;
  }
  return undefined;
}

/** Throw `ERR_OUTSIDE_LOCATION` unless `key` is a usable key of `location`. */
export function assertKey(key: string, location: string): string {
  const problem = keyProblem(key);
  if (problem !== undefined) throw new OutsideLocationError(key, location, problem);
  return key;
}

/** Throw `ERR_OUTSIDE_LOCATION` unless `prefix` is a usable list prefix (empty, or a key start). */
export function assertPrefix(prefix: string, location: string): string {
  if (prefix === '') return prefix;
  const problem = keyProblem(prefix.endsWith('/') ? prefix.slice(0, -1) : prefix);
  if (problem !== undefined)
    throw new OutsideLocationError(prefix, location, problem.replace('key', 'prefix'));
  return prefix;
}

export interface S3Location {
  readonly bucket: string;
  /** The key prefix, empty or ending in `/`. */
  readonly prefix: string;
  /** `s3://bucket/prefix/`. */
  readonly uri: string;
}

/** Parse `s3://bucket/prefix/` (the trailing `/` is added when missing), or undefined when it is not one. */
export function parseS3Location(location: string): S3Location | undefined {
  const match = /^s3:\/\/([^/?#]+)(?:\/(.*))?$/is.exec(location);
  const bucket = match?.[1];
  if (match === null || bucket === undefined) return undefined;
  const rest = match[2] ?? '';
  const prefix = rest === '' || rest.endsWith('/') ? rest : `${rest}/`;
  if (prefix !== '' && keyProblem(prefix.slice(0, -1)) !== undefined) return undefined;
  return { bucket, prefix, uri: `s3://${bucket}/${prefix}` };
}
