/**
 * Snapshot locations: a URI prefix with an `s3://` or `file://` scheme, normalised to end in `/`
 * (the snapshot-store spec treats every location as a prefix).
 */

export type LocationScheme = 's3' | 'file';

export interface ParsedLocation {
  readonly scheme: LocationScheme;
  /** Normalised: ends in `/`. */
  readonly uri: string;
}

const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;

/** The normalised location, or a clause saying what is wrong with `text` and how to fix it. */
export function parseLocation(text: string): ParsedLocation | { readonly problem: string } {
  const value = text.trim();
  const fix = 'use s3://bucket/prefix/ or file:///absolute/path/';
  const scheme = SCHEME.exec(value)?.[1]?.toLowerCase();
  if (scheme === undefined) return { problem: `'${text}' has no scheme; ${fix}` };
  if (scheme !== 's3' && scheme !== 'file') {
    return { problem: `scheme '${scheme}://' is not supported by this runtime; ${fix}` };
  }
  const rest = value.slice(scheme.length + 3);
  if (/[?#\\]/.test(rest) || rest.split('/').some((segment) => segment === '..' || segment === '.')) {
    return {
      problem: `'${text}' contains a query, a fragment, a backslash or a '.'/'..' segment; use a plain prefix such as s3://bucket/prefix/`,
    };
  }
  const slash = rest.indexOf('/');
  const host = slash === -1 ? rest : rest.slice(0, slash);
  const path = slash === -1 ? '' : rest.slice(slash);
  if (scheme === 's3') {
    if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(host)) {
      return { problem: `'${text}' does not name a valid S3 bucket; use s3://bucket/prefix/` };
    }
    if (path.includes('//')) return { problem: `'${text}' contains an empty path segment ('//'); remove it` };
    return { scheme, uri: `s3://${host}${withTrailingSlash(path === '' ? '/' : path)}` };
  }
  if ((host !== '' && host !== 'localhost') || !path.startsWith('/')) {
    return { problem: `'${text}' is not an absolute file:// URI; use file:///absolute/path/` };
  }
  if (path.includes('//')) return { problem: `'${text}' contains an empty path segment ('//'); remove it` };
  return { scheme, uri: `file://${withTrailingSlash(path)}` };
}

function withTrailingSlash(path: string): string {
  return path.endsWith('/') ? path : `${path}/`;
}
