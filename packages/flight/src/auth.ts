/**
 * API keys on Flight: the runtime's keys (the spicepod's `runtime.auth.api-key` keys plus the
 * server's own), sent as `authorization: Bearer <key>` metadata on every call (or `x-api-key`, as
 * over HTTP). Flight SQL drivers (JDBC, ADBC, ODBC) log in with a Basic auth Handshake instead;
 * the key is the password (the user name is not checked), and the Handshake answers with the
 * bearer token to send from then on — the key itself, in an `authorization` header and as the
 * response payload. The runtime's {@link ApiKeyCheck} compares digests in constant time.
 */

import type { ApiKeyCheck } from '@ferry/runtime';
import type { Metadata } from '@grpc/grpc-js';

/** What the Handshake hands back when the server has no key: any token is accepted then. */
export const ANONYMOUS_TOKEN = 'anonymous';

function header(metadata: Metadata, name: string): string | undefined {
  const [value] = metadata.get(name);
  return typeof value === 'string' ? value.trim() : value?.toString('utf8').trim();
}

/** The keys a call presents: a bearer token or Basic password, and `x-api-key`. */
export function presentedKeys(metadata: Metadata): (string | undefined)[] {
  const authorization = header(metadata, 'authorization');
  let fromAuthorization: string | undefined;
  if (authorization !== undefined) {
    const [scheme = '', credentials = ''] = authorization.split(/[ \t]+/, 2);
    if (/^bearer$/i.test(scheme)) fromAuthorization = credentials;
    else if (/^basic$/i.test(scheme)) {
      const decoded = Buffer.from(credentials, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      fromAuthorization = colon === -1 ? undefined : decoded.slice(colon + 1);
    }
  }
  return [fromAuthorization, header(metadata, 'x-api-key')];
}

/**
 * The key a call may proceed with: `ANONYMOUS_TOKEN` when no key is required, the presented key
 * that is one of the runtime's, or undefined (refused). `fallback` is a key found elsewhere (a
 * Handshake payload).
 */
export type KeyCheck = (metadata: Metadata, fallback?: string) => string | undefined;

export function keyCheck(keys: ApiKeyCheck): KeyCheck {
  if (!keys.required) return () => ANONYMOUS_TOKEN;
  return (metadata, fallback) => {
    const candidates = [...presentedKeys(metadata), fallback];
    if (!keys.accepts(candidates)) return undefined;
    return candidates.find((candidate) => candidate !== undefined && keys.accepts([candidate]));
  };
}
