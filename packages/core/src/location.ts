/**
 * Locations and the keys under them: the one place that splits a URI, parses a configured
 * location (`s3://bucket/prefix/`, `file:///dir/`), judges a bucket name, decides whether an object
 * key is safe, and resolves a snapshot URI recorded in metadata.json to a key. Config, metadata,
 * notification routing and both store adapters use these rules, so they all agree on what is inside
 * a location: a hostile or broken metadata.json cannot steer a reader into another bucket or out of
 * its prefix (`..`, `%2e%2e`, an escaped `/`).
 */
import { OutsideLocationError } from './errors.js';

/** The schemes a reader can be configured with. */
export type LocationScheme = 's3' | 'file';

/** A configured location, normalised: lower-case scheme, a trailing `/`. */
export interface Location {
  readonly scheme: LocationScheme;
  /** `s3://bucket/prefix/` or `file:///abs/dir/`. */
  readonly uri: string;
  /** The S3 bucket; `''` for `file://`. */
  readonly bucket: string;
  /**
   * S3: the key prefix under the bucket, `''` or ending in `/` (`snapshots/`). file: the absolute
   * directory path, ending in `/` (`/srv/snapshots/`).
   */
  readonly prefix: string;
}

interface SplitUri {
  /** Lower-cased. */
  readonly scheme: string;
  readonly authority: string;
  /** `''` or starting with `/`. */
  readonly path: string;
}

const absoluteUri = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)$/s;

/** `scheme://authority/path` without query or fragment, or `undefined`. */
function splitUri(uri: string): SplitUri | undefined {
  const match = absoluteUri.exec(uri);
  if (match === null) return undefined;
  const [, rawScheme = '', rawAuthority = '', path = ''] = match;
  const scheme = rawScheme.toLowerCase();
  // RFC 8089: `file://localhost/p` and `file:///p` name the same file.
  const authority = scheme === 'file' && rawAuthority.toLowerCase() === 'localhost' ? '' : rawAuthority;
  return { scheme, authority, path };
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point.
const controlCharacters = /[\u0000-\u001f\u007f]/;

function hasControl(text: string): boolean {
  return controlCharacters.test(text);
}

function withTrailingSlash(path: string): string {
  return path.endsWith('/') ? path : `${path}/`;
}

/** Longest bucket name any S3-compatible store accepts (legacy us-east-1 names). */
export const MAX_BUCKET_NAME_LENGTH = 255;

const bucketCharacter = /^[A-Za-z0-9._-]$/;

/**
 * Why `name` cannot be an S3 bucket, or `undefined` when some S3-compatible store may have it.
 * Today's AWS rules (3–63 lower-case characters) are stricter than what legacy us-east-1 buckets,
 * MinIO, Ceph and others allow, so only what no store accepts is refused: an empty name, more than
 * 255 characters, or a character other than a letter, a digit, `.`, `_` or `-`.
 */
export function bucketNameProblem(name: string): string | undefined {
  if (name === '') return 'the bucket name is empty';
  if (name.length > MAX_BUCKET_NAME_LENGTH) {
    return `the bucket name has ${name.length} characters, more than the ${MAX_BUCKET_NAME_LENGTH} any S3-compatible store allows`;
  }
  for (const character of name) {
    if (!bucketCharacter.test(character)) {
      return `the bucket name has the character ${JSON.stringify(character)}, which no S3-compatible store allows in a bucket name (letters, digits, '.', '_' and '-' only)`;
    }
  }
  return undefined;
}

const LOCATION_FORMS = 'use s3://bucket/prefix/ or file:///absolute/path/';

/** The normalised location, or a clause saying what is wrong with `text` and how to fix it. */
export function parseLocation(text: string): Location | { readonly problem: string } {
  const value = text.trim();
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(value)?.[1]?.toLowerCase();
  if (scheme === undefined) {
    // `file:/dir` and `s3:bucket` name a scheme but not in the form a location takes.
    const named = /^(file|s3):/i.exec(value)?.[1]?.toLowerCase();
    if (named === 'file') {
      return { problem: `'${text}' is not an absolute file:// URI; use file:///absolute/path/` };
    }
    if (named === 's3') return { problem: `'${text}' has no '//' after 's3:'; use s3://bucket/prefix/` };
    return { problem: `'${text}' has no scheme; ${LOCATION_FORMS}` };
  }
  if (scheme !== 's3' && scheme !== 'file') {
    return { problem: `scheme '${scheme}://' is not supported by this runtime; ${LOCATION_FORMS}` };
  }
  if (hasControl(value)) {
    return { problem: `${JSON.stringify(text)} contains a control character; remove it` };
  }
  const parts = splitUri(value);
  if (
    parts === undefined ||
    value.includes('\\') ||
    parts.path.split('/').some((segment) => segment === '..' || segment === '.')
  ) {
    return {
      problem: `'${text}' contains a query, a fragment, a backslash or a '.'/'..' segment; use a plain prefix such as s3://bucket/prefix/`,
    };
  }
  if (parts.path.includes('//')) {
    return { problem: `'${text}' contains an empty path segment ('//'); remove it` };
  }
  if (scheme === 's3') {
    const problem = bucketNameProblem(parts.authority);
    if (problem !== undefined) {
      return { problem: `'${text}' does not name a valid S3 bucket (${problem}); use s3://bucket/prefix/` };
    }
    const prefix = parts.path === '' || parts.path === '/' ? '' : withTrailingSlash(parts.path.slice(1));
    return { scheme, uri: `s3://${parts.authority}/${prefix}`, bucket: parts.authority, prefix };
  }
  if ((parts.authority !== '' && parts.authority !== 'localhost') || !parts.path.startsWith('/')) {
    return { problem: `'${text}' is not an absolute file:// URI; use file:///absolute/path/` };
  }
  const path = withTrailingSlash(parts.path);
  return { scheme, uri: `file://${path}`, bucket: '', prefix: path };
}

/** Like {@link parseLocation}, but throws a `TypeError` carrying the problem (for already-validated input). */
export function requireLocation(text: string): Location {
  const parsed = parseLocation(text);
  if ('problem' in parsed) throw new TypeError(`Invalid snapshot location: ${parsed.problem}.`);
  return parsed;
}

/** How Spice's messages show a location: `s3://bucket/prefix`, without the trailing `/`. */
export function locationDisplay(location: string): string {
  return location.endsWith('/') ? location.slice(0, -1) : location;
}

/**
 * Why `location` is not usable as a *recorded* location (metadata.json's `location`, written by
 * any Spice-compatible writer, whatever its store), or `undefined` when it is: an absolute
 * `scheme://authority/path` without query, fragment or control character, with a bucket
 * (authority) for every scheme but `file`, whose authority must be empty (`file:///abs/dir/`).
 */
export function recordedLocationProblem(location: string): string | undefined {
  const parts = splitUri(location);
  if (parts === undefined || hasControl(location)) {
    return 'must be an absolute URI such as s3://bucket/prefix/ or file:///dir/';
  }
  if (parts.scheme === 'file' ? parts.authority !== '' : parts.authority === '') {
    return parts.scheme === 'file'
      ? 'must be a file:/// URI with an empty host'
      : `must name a bucket after ${parts.scheme}://`;
  }
  return undefined;
}

/** A recorded location with a lower-case scheme and a trailing `/`. Assumes {@link recordedLocationProblem} passed. */
export function normalizeLocation(location: string): string {
  const parts = splitUri(location);
  if (parts === undefined) return withTrailingSlash(location);
  return `${parts.scheme}://${parts.authority}${withTrailingSlash(parts.path === '' ? '/' : parts.path)}`;
}

/** Percent-decodes until stable, so `%252e%252e` is seen as `..`; `undefined` on a malformed escape. */
function decodedForms(segment: string): string[] | undefined {
  const forms = [segment];
  let current = segment;
  for (let round = 0; round < 4 && current.includes('%'); round++) {
    let next: string;
    try {
      next = decodeURIComponent(current);
    } catch {
      return undefined;
    }
    if (next === current) break;
    forms.push(next);
    current = next;
  }
  return forms;
}

/**
 * Why `key` may not name an object under a location, or `undefined` when it may. A key is relative
 * and stays inside: not empty, no empty segment (so not absolute, no `//`, no trailing `/`), and —
 * also once percent-decoded, however often (`%2e%2e`, `%252e`) — no `.` or `..` segment, no escaped
 * `/`, no `\`, no control character.
 */
export function keyProblem(key: string): string | undefined {
  if (key === '') return 'it names the location itself, not an object under it';
  for (const segment of key.split('/')) {
    if (segment === '') return "it has an empty path segment ('//' or a trailing '/')";
    const forms = decodedForms(segment);
    if (forms === undefined) return 'it has a malformed percent-escape';
    for (const form of forms) {
      if (form === '.' || form === '..') return `it has a '${form}' path segment`;
      if (form !== segment && form.includes('/')) return "it has an escaped '/'";
      if (form.includes('\\')) return "it has a '\\'";
      if (hasControl(form)) return 'it has a control character';
    }
  }
  return undefined;
}

/** `key`, or `ERR_OUTSIDE_LOCATION` when it may not name an object under `location`. */
export function assertKey(key: string, location: string): string {
  const problem = keyProblem(key);
  if (problem !== undefined) throw new OutsideLocationError(location, key, problem, 'key');
  return key;
}

/** `prefix` (empty, or a key start optionally ending in `/`), or `ERR_OUTSIDE_LOCATION`. */
export function assertPrefix(prefix: string, location: string): string {
  if (prefix === '') return prefix;
  const problem = keyProblem(prefix.endsWith('/') ? prefix.slice(0, -1) : prefix);
  if (problem !== undefined) throw new OutsideLocationError(location, prefix, problem, 'key');
  return prefix;
}

/**
 * The key of a snapshot URI relative to `location` (`month=.../dataset=orders/orders_....duckdb`),
 * as written in the URI (not percent-decoded). The URI must be absolute, have the location's
 * scheme and bucket, lie under its prefix, and its key must pass {@link keyProblem}; no query or
 * fragment. Resolve against metadata.json's recorded `location`, so a store mirrored elsewhere
 * (an S3 store copied to a directory) keeps working.
 * @throws OutsideLocationError naming the URI, the location and the reason.
 */
export function resolveSnapshotKey(location: string, uri: string): string {
  return snapshotKeyResolver(location)(uri);
}

/**
 * {@link resolveSnapshotKey} for one location, the location read once: a metadata.json check
 * resolves every snapshot entry's URI against the same recorded location (thousands of entries).
 * A bad location is refused by the first call, naming that call's URI, as before.
 */
export function snapshotKeyResolver(location: string): (uri: string) => string {
  const base =
    recordedLocationProblem(location) === undefined ? splitUri(normalizeLocation(location)) : undefined;
  return (uri) => {
    const outside = (reason: string) => new OutsideLocationError(location, uri, reason);
    if (base === undefined) throw outside('the location is not an absolute URI');
    if (uri.includes('?') || uri.includes('#')) throw outside('it has a query or fragment');
    const target = splitUri(uri);
    if (target === undefined || hasControl(uri)) throw outside('it is not an absolute URI');
    if (target.scheme !== base.scheme) throw outside(`its scheme is ${target.scheme}, not ${base.scheme}`);
    if (target.authority !== base.authority) {
      throw outside(`it is in bucket '${target.authority}', not '${base.authority}'`);
    }
    if (!target.path.startsWith(base.path)) throw outside(`it is not under the prefix '${base.path}'`);
    const key = target.path.slice(base.path.length);
    const problem = keyProblem(key);
    if (problem !== undefined) throw outside(problem);
    return key;
  };
}

const safeName = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}$/;

/**
 * A name a spicepod may give a dataset or a view: up to 128 letters, digits and underscores (an
 * SQL identifier no statement must quote). Stricter than {@link isSafeDatasetName}: a store may
 * hold other names, but no reader serves them.
 */
export const SPICEPOD_NAME = /^[A-Za-z0-9_]{1,128}$/;

/**
 * Dataset names become path segments (`dataset=<name>/<name>_...`, local file names), so only
 * letters, digits, `_`, `-` and `.` are allowed, not leading `-` or `.`, never `..`, at most 255.
 */
export function isSafeDatasetName(name: string): boolean {
  return safeName.test(name) && !name.includes('..');
}
