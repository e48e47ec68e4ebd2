/**
 * API keys on HTTP. A request presents its key as Spice's `X-API-Key` header or as
 * `Authorization: Bearer <key>`; the runtime's {@link ApiKeyCheck} (the spicepod's
 * `runtime.auth.api-key` keys plus the server's own) decides, comparing digests in constant time.
 */
import type { IncomingMessage } from 'node:http';
import type { ApiKeyCheck } from '@ferry/runtime';

/** The keys a request presents: its bearer token and its `X-API-Key` header, where given. */
export function presentedKeys(req: IncomingMessage): (string | undefined)[] {
  const authorization = req.headers.authorization;
  const bearer =
    authorization === undefined ? undefined : /^Bearer[ \t]+(.+)$/i.exec(authorization.trim())?.[1]?.trim();
  const header = req.headers['x-api-key'];
  return [bearer, typeof header === 'string' ? header.trim() : undefined];
}

/** A request check over `keys`: true when no key is required or the request presents one. */
export function requestKeyChecker(keys: ApiKeyCheck): (req: IncomingMessage) => boolean {
  return (req) => keys.accepts(presentedKeys(req));
}
