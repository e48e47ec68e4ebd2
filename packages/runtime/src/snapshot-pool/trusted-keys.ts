/**
 * The trusted key sets of a snapshot pool worker, parsed once per list: every signature check of a
 * dataset reuses the `KeyObject`s of its `ferry_trusted_keys` instead of parsing PEM per swap.
 */
import { TrustedKeySet } from '@ferry/store/signing';

const sets = new Map<string, TrustedKeySet>();

export function trustedKeySet(pems: readonly string[]): TrustedKeySet {
  const id = pems.join('\n');
  let set = sets.get(id);
  if (set === undefined) {
    set = new TrustedKeySet(pems);
    sets.set(id, set);
  }
  return set;
}
