/**
 * API keys on Flight: the same key as the HTTP API, sent as `authorization: Bearer <key>`
 * metadata on every call (or `x-api-key`, as over HTTP). Flight SQL drivers (JDBC, ADBC, ODBC)
 * log in with a Basic auth Handshake instead; the key is the password (the user name is not
 * checked), and the Handshake answers with the bearer token to send from then on — the key itself,
 * in an `authorization` header and as the response payload. Keys are compared as SHA-256 digests
 * in constant time, so neither the content nor the length of the key leaks through timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Metadata } from '@grpc/grpc-js';

/** What the Handshake hands back when the server has no key: any token is accepted then. */
export const ANONYMOUS_TOKEN = 'anonymous';

function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

function header(metadata: Metadata, name: string): string | undefined {
  const [value] = metadata.get(name);
  return typeof value === 'string' ? value.trim() : value?.toString('utf8').trim();
}

/** The key a call presents: a bearer token, a Basic password, or `x-api-key`. */
export function presentedKey(metadata: Metadata): string | undefined {
  const authorization = header(metadata, 'authorization');
  if (authorization !== undefined) {
    const [scheme = '', credentials = ''] = authorization.split(/[ \t]+/, 2);
    if (/^bearer$/i.test(scheme)) return credentials;
    if (/^basic$/i.test(scheme)) {
      const decoded = Buffer.from(credentials, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      return colon === -1 ? undefined : decoded.slice(colon + 1);
    }
    return undefined;
  }
  return header(metadata, 'x-api-key');
}

/** True when the call may proceed: no key is configured, or it presents the configured one. */
export type KeyCheck = (metadata: Metadata, fallback?: string) => boolean;

/** The check for one configured key (or none); `fallback` is a key found elsewhere (a Handshake payload). */
export function keyCheck(apiKey: string | undefined): KeyCheck {
  if (apiKey === undefined) return () => true;
  const expected = sha256(apiKey);
  return (metadata, fallback) => {
    const presented = presentedKey(metadata) ?? fallback;
    // Digest even when absent, so a missing key takes as long as a wrong one.
    return timingSafeEqual(expected, sha256(presented ?? '')) && presented !== undefined;
  };
}
