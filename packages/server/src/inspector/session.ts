/**
 * The inspector's sessions: how a page behind an API key reads its event stream without putting
 * the key in a URL (`EventSource` cannot send headers, and a URL ends up in logs and history).
 * The page sends the key once, as a header, to `POST /inspector/session`; the answer sets a cookie
 * that is `HttpOnly` (scripts cannot read it), `SameSite=Strict` (no other site's page sends it),
 * `Secure` on TLS, scoped to `/inspector` and short-lived (10 minutes by default). While the page is
 * open it renews the session with the cookie alone, up to a maximum age (12 hours) after which the
 * key is asked for again.
 *
 * A session is a signed token — issue and expiry times and an HMAC-SHA256 under a secret drawn
 * when the routes are built — so the server keeps no session table; a new process (a new secret)
 * ends every session.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';

export const SESSION_COOKIE = 'ferry_inspector_session';
const COOKIE_PATH = '/inspector';

export interface InspectorSessionOptions {
  /** How long a session lasts unless renewed; default 600 000 ms (10 minutes). */
  readonly ttlMs?: number;
  /** Renewals end this long after the key was given; default 43 200 000 ms (12 hours). */
  readonly maxAgeMs?: number;
}

export interface Session {
  readonly issuedAtMs: number;
  readonly expiresAtMs: number;
}

function cookieValue(req: IncomingMessage, name: string): string | undefined {
  const header = req.headers.cookie;
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const index = part.indexOf('=');
    if (index !== -1 && part.slice(0, index).trim() === name) return part.slice(index + 1).trim();
  }
  return undefined;
}

function isTls(req: IncomingMessage): boolean {
  return (req.socket as Partial<TLSSocket>).encrypted === true;
}

export class InspectorSessions {
  readonly ttlMs: number;
  readonly maxAgeMs: number;
  readonly #secret = randomBytes(32);

  constructor(options: InspectorSessionOptions = {}) {
    this.ttlMs = options.ttlMs ?? 10 * 60_000;
    this.maxAgeMs = options.maxAgeMs ?? 12 * 60 * 60_000;
  }

  /** The valid session a request's cookie carries, if any. */
  fromRequest(req: IncomingMessage, now = Date.now()): Session | undefined {
    const token = cookieValue(req, SESSION_COOKIE);
    return token === undefined ? undefined : this.#verify(token, now);
  }

  /**
   * A session starting now (`renewing` undefined) or a renewal of `renewing` (same issue time);
   * undefined when a renewal would pass the maximum age.
   */
  issue(now = Date.now(), renewing?: Session): { session: Session; token: string } | undefined {
    const issuedAtMs = renewing?.issuedAtMs ?? now;
    const expiresAtMs = Math.min(now + this.ttlMs, issuedAtMs + this.maxAgeMs);
    if (expiresAtMs <= now) return undefined;
    const payload = `${issuedAtMs.toString(36)}.${expiresAtMs.toString(36)}`;
    return { session: { issuedAtMs, expiresAtMs }, token: `${payload}.${this.#mac(payload)}` };
  }

  /** The `Set-Cookie` value carrying `token` until `expiresAtMs`. */
  setCookie(req: IncomingMessage, token: string, session: Session, now = Date.now()): string {
    const maxAge = Math.max(0, Math.floor((session.expiresAtMs - now) / 1000));
    return this.#cookie(req, token, maxAge);
  }

  /** The `Set-Cookie` value that removes the cookie. */
  clearCookie(req: IncomingMessage): string {
    return this.#cookie(req, '', 0);
  }

  #cookie(req: IncomingMessage, value: string, maxAgeSeconds: number): string {
    const parts = [
      `${SESSION_COOKIE}=${value}`,
      `Path=${COOKIE_PATH}`,
      `Max-Age=${maxAgeSeconds}`,
      'HttpOnly',
      'SameSite=Strict',
    ];
    if (isTls(req)) parts.push('Secure');
    return parts.join('; ');
  }

  #mac(payload: string): string {
    return createHmac('sha256', this.#secret)
      .update(`ferry-inspector-session.${payload}`)
      .digest('base64url');
  }

  #verify(token: string, now: number): Session | undefined {
    const match = /^([0-9a-z]+)\.([0-9a-z]+)\.([A-Za-z0-9_-]+)$/.exec(token);
    if (match === null) return undefined;
    const [, issued, expires, mac] = match as unknown as [string, string, string, string];
    const want = Buffer.from(this.#mac(`${issued}.${expires}`));
    const got = Buffer.from(mac);
    if (got.length !== want.length || !timingSafeEqual(got, want)) return undefined;
    const session = { issuedAtMs: Number.parseInt(issued, 36), expiresAtMs: Number.parseInt(expires, 36) };
    return session.expiresAtMs > now ? session : undefined;
  }
}
