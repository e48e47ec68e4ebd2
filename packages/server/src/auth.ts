/**
 * API key checking. The key travels as `Authorization: Bearer <key>` (or Spice's `X-API-Key`
 * header); both sides are hashed before a constant-time compare, so neither the content nor the
 * length of the key leaks through timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** The key the request presents, if any. */
export function presentedKey(req: IncomingMessage): string | undefined {
  const authorization = req.headers.authorization;
  if (authorization !== undefined) {
    const match = /^Bearer[ \t]+(.+)$/i.exec(authorization.trim());
    return match?.[1]?.trim();
  }
  const header = req.headers['x-api-key'];
  return typeof header === 'string' ? header : undefined;
}

/** A checker for one expected key: true when the presented key equals it. */
export function apiKeyChecker(expected: string): (req: IncomingMessage) => boolean {
  const want = digest(expected);
  return (req) => {
    const key = presentedKey(req);
    // Hash even when absent, so a missing key takes as long as a wrong one.
    const got = digest(key ?? '');
    return timingSafeEqual(want, got) && key !== undefined;
  };
}
