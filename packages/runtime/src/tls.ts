/**
 * `@ferry/runtime/tls`: the spicepod's `runtime.tls` as the servers use it. The loader has read the
 * certificate and key (files or PEM text) and checked each is PEM of its kind; this checks the
 * pair as node's TLS stack will load it — the key must be the certificate's — so a spicepod whose
 * TLS cannot work stops at load (and in `ferry validate`), naming the key, instead of when the
 * first client connects. Imports nothing but node:tls and node:crypto, so `ferry validate` can use it.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { ConfigError, type SpicepodConfig } from '@ferry/core/base';

/** What a server serves TLS with: the PEM certificate chain and private key. */
export interface RuntimeTls {
  readonly cert: Buffer;
  readonly key: Buffer;
}

/**
 * Why node's TLS stack cannot serve with this certificate chain and private key (`mismatch`: the
 * key is not the certificate's), or undefined when it can. The one check of `runtime.tls` and of
 * `ferry serve --tls-cert/--tls-key`.
 */
export function tlsPairProblem(
  cert: string | Buffer,
  key: string | Buffer,
): { readonly reason: string; readonly mismatch: boolean } | undefined {
  try {
    createSecureContext({ cert, key });
  } catch (error) {
    const reason = (error as Error).message;
    return { reason, mismatch: /mismatch/i.test(reason) };
  }
  // OpenSSL compares the key with the certificate only when both are of one type: an EC key beside
  // an RSA certificate loads, and every handshake then fails. Compare them whatever their types.
  try {
    if (!new X509Certificate(cert).checkPrivateKey(createPrivateKey(key))) {
      return { reason: 'the key does not match the certificate', mismatch: true };
    }
  } catch (error) {
    return { reason: (error as Error).message, mismatch: false };
  }
  return undefined;
}

/** Why node cannot serve TLS with the pair, as a config message; undefined when it can. */
export function tlsProblem(config: Pick<SpicepodConfig, 'file' | 'tls'>): string | undefined {
  const tls = config.tls;
  if (tls === undefined) return undefined;
  const problem = tlsPairProblem(tls.certificate.pem, tls.key.pem);
  if (problem === undefined) return undefined;
  const { reason, mismatch } = problem;
  return mismatch
    ? `${config.file}: ${tls.key.path}: is not the private key of the certificate in ${tls.certificate.path} (${reason}); give the key that certificate was issued for`
    : `${config.file}: ${tls.certificate.path}: the certificate and the key in ${tls.key.path} cannot be used for TLS (${reason}); give a PEM certificate chain and its private key`;
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
