/**
 * Spice's `runtime.cors` (off by default): with `enabled: true`, browsers on the `allowed_origins`
 * (default `["*"]`, any) may call the HTTP API — each answer to such an origin carries
 * `Access-Control-Allow-Origin`, and a preflight (`OPTIONS` with `Access-Control-Request-Method`)
 * is answered 204 before any API key is asked for (browsers send none on a preflight; the request
 * that follows still needs one). An origin not allowed gets no CORS header, so its browser refuses
 * the answer.
 */
import type { CorsConfig } from '@ferry/core/base';
import type { FastifyReply, FastifyRequest } from 'fastify';

const METHODS = 'GET, POST, OPTIONS';
const MAX_AGE_SECONDS = '600';

/** The `onRequest` step of CORS; true when it answered the request (a preflight). */
export function corsStep(config: CorsConfig): (request: FastifyRequest, reply: FastifyReply) => boolean {
  const any = config.allowedOrigins.includes('*');
  const allowed = new Set(config.allowedOrigins.map((origin) => origin.toLowerCase()));
  return (request, reply) => {
    // With a list of origins every answer depends on the Origin (its CORS header, or none), so
    // every answer says so: a cache must not hand one origin's answer (or one without the header) to another.
    if (!any) reply.header('vary', 'Origin');
    const origin = request.headers.origin;
    if (origin === undefined) return false;
    if (!any && !allowed.has(origin.toLowerCase())) return false;
    reply.header('access-control-allow-origin', any ? '*' : origin);
    reply.header(
      'access-control-expose-headers',
      'ETag, Results-Cache-Status, X-Cache, X-Ferry-Dataset, X-Ferry-Snapshot-Id, X-Ferry-Snapshot, Retry-After',
    );
    if (request.method !== 'OPTIONS' || request.headers['access-control-request-method'] === undefined)
      return false;
    const headers = request.headers['access-control-request-headers'];
    reply
      .code(204)
      .header('access-control-allow-methods', METHODS)
      .header('access-control-allow-headers', headers ?? 'Content-Type, Authorization, X-API-Key')
      .header('access-control-max-age', MAX_AGE_SECONDS)
      .send();
    return true;
  };
}
