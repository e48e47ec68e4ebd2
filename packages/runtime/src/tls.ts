/**
 * `@ferry/runtime/tls`: the spicepod's `runtime.tls` as the servers use it. The loader has read the
 * certificate and key (files or PEM text) and checked each is PEM of its kind; this checks the
 * pair as node's TLS stack will load it — the key must be the certificate's — so a spicepod whose
 * TLS cannot work stops at load (and in `ferry validate`), naming the key, instead of when the
 * first client connects. Imports nothing but node:tls, so `ferry validate` can use it.
 */
import { createSecureContext } from 'node:tls';
import { ConfigError, type SpicepodConfig } from '@ferry/core/base';

/** What a server serves TLS with: the PEM certificate chain and private key. */
export interface RuntimeTls {
  readonly cert: Buffer;
  readonly key: Buffer;
}

/** Why node cannot serve TLS with the pair, as a config message; undefined when it can. */
export function tlsProblem(config: Pick<SpicepodConfig, 'file' | 'tls'>): string | undefined {
  const tls = config.tls;
  if (tls === undefined) return undefined;
  try {
    createSecureContext({ cert: tls.certificate.pem, key: tls.key.pem });
    return undefined;
  } catch (error) {
    const reason = (error as Error).message;
    const mismatch = /mismatch/i.test(reason);
    return mismatch
      ? `${config.file}: ${tls.key.path}: is not the private key of the certificate in ${tls.certificate.path} (${reason}); give the key that certificate was issued for`
      : `${config.file}: ${tls.certificate.path}: the certificate and the key in ${tls.key.path} cannot be used for TLS (${reason}); give a PEM certificate chain and its private key`;
  }
}

/** The certificate and key to serve with; throws `ERR_CONFIG` (naming the key) when they cannot work. */
export function runtimeTls(config: Pick<SpicepodConfig, 'file' | 'tls'>): RuntimeTls | undefined {
  const tls = config.tls;
  if (tls === undefined) return undefined;
  const problem = tlsProblem(config);
  if (problem !== undefined) {
    throw new ConfigError(config.file, [{ path: tls.key.path, message: problem, fatal: true }]);
  }
  return { cert: Buffer.from(tls.certificate.pem), key: Buffer.from(tls.key.pem) };
}
