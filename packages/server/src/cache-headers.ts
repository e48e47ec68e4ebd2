/**
 * The results cache on HTTP, as Spice answers `POST /v1/sql`: `Results-Cache-Status` (`HIT`,
 * `MISS`, `BYPASS`) and the older `X-Cache` (`Hit from spiceai` / `Miss from spiceai`), neither
 * when the cache does not apply; `Cache-Control: no-cache` on the request bypasses it. And an
 * `ETag` from the result's `version` (statement, parameters, snapshots of the datasets read) and
 * the answer's format, so a client holding it gets `304 Not Modified` — without the query running —
 * while no dataset it read has swapped (and, under `X-Ferry-Max-Staleness`, none is staler than it).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { QueryParam } from '@ferry/core/base';
import { asksNoCache, cacheStatusFields, type QueryProvenance, resultVersion } from '@ferry/runtime';
import type { FastifyReply } from 'fastify';

/** Whether the request says `Cache-Control: no-cache` (or `no-store`): not answered from the cache. */
export function bypassesCache(headers: IncomingHttpHeaders): boolean {
  const value = headers['cache-control'];
  return asksNoCache(Array.isArray(value) ? value.join(',') : value);
}

/** The ETag of a result of `version` answered as `contentType`. */
export function entityTag(version: string, contentType: string): string {
  const format = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  let hash = 0;
  for (let i = 0; i < format.length; i++) hash = (hash * 31 + format.charCodeAt(i)) >>> 0;
  return `"${version}.${hash.toString(36)}"`;
}

/** Whether `If-None-Match` holds `tag` (or `*`), weak tags compared as strong ones' text. */
export function matchesIfNoneMatch(headers: IncomingHttpHeaders, tag: string): boolean {
  const value = headers['if-none-match'];
  if (value === undefined) return false;
  return value
    .split(',')
    .map((candidate) => candidate.trim().replace(/^W\//, ''))
    .some((candidate) => candidate === tag || candidate === '*');
}

/**
 * Sets the cache headers of the answer to `sql` with `params` (`contentType`: the format it is
 * answered in); the ETag is the version of the snapshots the query read.
 */
export function cacheHeaders(
  reply: FastifyReply,
  sql: string,
  params: readonly QueryParam[],
  result: QueryProvenance,
  contentType: string,
): void {
  if (result.cache === undefined) return;
  reply.headers(cacheStatusFields(result.cache));
  reply.header('etag', entityTag(resultVersion(sql, params, result.datasets), contentType));
}
