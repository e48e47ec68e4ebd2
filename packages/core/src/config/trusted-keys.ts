/**
 * `ferry_trusted_keys` (Ferry only; Spice has no signed snapshots): the Ed25519 public keys whose
 * signatures a reader accepts, in `snapshots.params` for the pod's snapshot datasets, or in a
 * dataset's `params` to override the pod's list for that dataset. Several keys allow rotation (a
 * new key is trusted before the writer switches to it, the old one removed after). Each item may
 * be a `${secrets:…}` or `${env:…}` reference. A key of the wrong form is an error of the exact
 * item, so a reader never starts believing it verifies what it cannot.
 */
import { parsePublicKeyPem } from '../signing/keys.js';
import type { Reporter } from './issues.js';
import type { SecretSource } from './secrets.js';
import type { TrustedKey } from './types.js';
import { readParam } from './values.js';

export const TRUSTED_KEYS_PARAM = 'ferry_trusted_keys';

/** The keys at `path` (a list, or one key), or undefined when any is wrong (each reported). */
export function readTrustedKeys(
  report: Reporter,
  path: string,
  value: unknown,
  secrets: SecretSource,
): readonly TrustedKey[] | undefined {
  const items = Array.isArray(value) ? value : [value];
  if (items.length === 0) {
    report.error(
      path,
      'is an empty list; list the PEM public keys of the writers to trust (ferry keygen writes one), or remove the key to serve unverified snapshots',
    );
    return undefined;
  }
  const keys: TrustedKey[] = [];
  let failed = false;
  for (const [index, item] of items.entries()) {
    const at = Array.isArray(value) ? `${path}[${index}]` : path;
    const text = readParam(report, at, item, secrets);
    if (text === undefined) {
      failed = true;
      continue;
    }
    const parsed = parsePublicKeyPem(text);
    if ('problem' in parsed) {
      report.error(
        at,
        `${parsed.problem}; give the PEM text of an Ed25519 public key (-----BEGIN PUBLIC KEY-----)`,
      );
      failed = true;
      continue;
    }
    if (keys.some((key) => key.keyId === parsed.keyId)) {
      report.warn(at, `repeats key ${parsed.keyId}; remove the copy`);
      continue;
    }
    keys.push(parsed);
  }
  return failed ? undefined : keys;
}
