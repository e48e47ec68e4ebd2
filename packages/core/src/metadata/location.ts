/**
 * Locations, dataset names and snapshot URIs: the checks that keep a hostile or broken
 * metadata.json from steering a reader outside its location (another bucket, `..`, `%2e%2e`)
 * or from naming a dataset that would become a path.
 */
import { OutsideLocationError } from './errors.js';

interface SplitUri {
  /** Lower-cased. */
  readonly scheme: string;
  readonly authority: string;
  readonly path: string;
}

const absoluteUri = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(\/[^?#]*)?$/;

function splitUri(uri: string): SplitUri | undefined {
  const match = absoluteUri.exec(uri);
  if (match === null) return undefined;
  const [, scheme = '', authority = '', path = '/'] = match;
  return { scheme: scheme.toLowerCase(), authority, path };
}

/**
 * Why `location` is not usable as a location URI, or `undefined` when it is: an absolute
 * `scheme://authority/path` without query or fragment, with a bucket (authority) for every scheme
 * but `file`, whose authority must be empty (`file:///abs/dir/`).
 */
export function locationProblem(location: string): string | undefined {
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

/** The location with a lower-case scheme and a trailing `/`. Assumes {@link locationProblem} passed. */
export function normalizeLocation(location: string): string {
  const parts = splitUri(location);
  if (parts === undefined) return location.endsWith('/') ? location : `${location}/`;
  const path = parts.path.endsWith('/') ? parts.path : `${parts.path}/`;
  return `${parts.scheme}://${parts.authority}${path}`;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point.
const controlCharacters = /[\u0000-\u001f\u007f]/;

function hasControl(text: string): boolean {
  return controlCharacters.test(text);
}

const safeName = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}$/;

/**
 * Dataset names become path segments (`dataset=<name>/<name>_...`, local file names), so only
 * letters, digits, `_`, `-` and `.` are allowed, not leading `-` or `.`, never `..`, at most 255.
 */
export function isSafeDatasetName(name: string): boolean {
  return safeName.test(name) && !name.includes('..');
}

/** Percent-decodes until stable, so `%252e%252e` is seen as `..`; `undefined` on a malformed escape. */
function fullyDecoded(segment: string): string[] | undefined {
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

function keyProblem(key: string): string | undefined {
  if (key === '') return 'it names the location itself, not an object under it';
  for (const segment of key.split('/')) {
    if (segment === '') return "it has an empty path segment ('//' or a trailing '/')";
    const forms = fullyDecoded(segment);
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

/**
 * The key of a snapshot URI relative to `location` (`month=.../dataset=orders/orders_....duckdb`),
 * as written in the URI (not percent-decoded). The URI must be absolute, have the location's
 * scheme and bucket, lie under its prefix, and have no empty, `.` or `..` segment even once
 * percent-decoded (`%2e%2e`, `%252e`), no escaped `/`, no `\`, no control character, no query or
 * fragment.
 * @throws OutsideLocationError naming the URI, the location and the reason.
 */
export function resolveSnapshotKey(location: string, uri: string): string {
  const outside = (reason: string) => new OutsideLocationError(location, uri, reason);
  if (locationProblem(location) !== undefined) throw outside('the location is not an absolute URI');
  const base = splitUri(normalizeLocation(location));
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
}
