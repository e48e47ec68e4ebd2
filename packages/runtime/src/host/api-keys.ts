/**
 * The API keys a runtime's endpoints require: the spicepod's `runtime.auth.api-key` keys together
 * with any a server is given (`ferry serve --api-key-env`, `startServer({ apiKey })`). The HTTP
 * server, the Flight server and the inspector all ask this one check, so a spicepod that declares
 * keys protects every endpoint, whoever starts it. Keys are compared as SHA-256 digests in
 * constant time, against every configured key, so neither a key's content, its length nor which
 * key matched leaks through timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { SpicepodConfig } from '@ferry/core/base';

export interface ApiKeyCheck {
  /** False when no key is configured: every request is let in. */
  readonly required: boolean;
  /** How many keys are accepted (for logs; never the keys). */
  readonly count: number;
  /** True when no key is required, or one of the presented candidates is a configured key. */
  accepts(presented: readonly (string | undefined)[]): boolean;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * The check for `config`'s keys plus `extra` ones. An empty extra key is a programming error (it
 * would look like protection and let anyone in): it throws.
 */
export function apiKeyCheck(
  config: Pick<SpicepodConfig, 'auth'> | undefined,
  extra: readonly (string | undefined)[] = [],
): ApiKeyCheck {
  for (const key of extra) {
    if (key === '') {
      throw new TypeError(
        'apiKey is empty; pass a non-empty key or leave apiKey unset to serve without one.',
      );
    }
  }
  const keys = [
    ...new Set([
      ...(config?.auth?.apiKeys ?? []).map((entry) => entry.key),
      ...extra.filter((key): key is string => key !== undefined),
    ]),
  ];
  const digests = keys.map(digest);
  return {
    required: digests.length > 0,
    count: digests.length,
    accepts(presented) {
      if (digests.length === 0) return true;
      let matched = false;
      // Every candidate against every key, without stopping early.
      for (const candidate of presented) {
        const got = digest(candidate ?? '');
        for (const want of digests) {
          if (timingSafeEqual(want, got) && candidate !== undefined) matched = true;
        }
      }
      return matched;
    },
  };
}
