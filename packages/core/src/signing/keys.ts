/**
 * The form of an Ed25519 public key as Ferry's readers are given it (`ferry_trusted_keys`): PEM
 * `PUBLIC KEY` text holding the 44-byte SubjectPublicKeyInfo of an Ed25519 key, as `ferry keygen`
 * and `openssl genpkey -algorithm ed25519` write it. Checked here without `node:crypto`, so
 * `ferry validate` and the spicepod loader can say what is wrong with a key before anything runs,
 * and so the key id, which statements name, is one pure function everywhere.
 */
import { pemProblem } from '../config/runtime-section.js';

/** The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): the 32 key bytes follow it. */
const ED25519_SPKI_PREFIX = [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00];
const SPKI_LENGTH = ED25519_SPKI_PREFIX.length + 32;
const PEM_BLOCK = /-----BEGIN PUBLIC KEY-----([\s\S]*?)-----END PUBLIC KEY-----/;

/** A trusted key as parsed: its PEM (normalised) and its id. */
export interface PublicKeyForm {
  /** The PEM text, one `PUBLIC KEY` block with 64-column lines. */
  readonly pem: string;
  /** {@link keyIdOf} the raw key. */
  readonly keyId: string;
}

/**
 * A key's id: the first 8 bytes of its raw 32-byte Ed25519 public key, as 16 lowercase hex digits.
 * It only tells a reader which of its trusted keys to try (an Ed25519 public key is a random point,
 * so its bytes are as good as a hash of them); trust comes from the signature, never from the id.
 */
export function keyIdOf(raw: Uint8Array): string {
  return [...raw.subarray(0, 8)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/**
 * The key in `text`, or why it is not an Ed25519 public key in PEM. `text` may carry literal `\n`
 * for its line breaks (as one-line environment variables and secret stores often do).
 */
export function parsePublicKeyPem(text: string): PublicKeyForm | { readonly problem: string } {
  const pem = text.replace(/\\n/g, '\n').trim();
  if (/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/.test(pem)) {
    return {
      problem:
        'is a private key; readers are given the public key only (the .pub file ferry keygen writes), and the private key never leaves the writer',
    };
  }
  const problem = pemProblem(pem, 'PUBLIC KEY');
  if (problem !== undefined) return { problem };
  const body = PEM_BLOCK.exec(pem)?.[1]?.replace(/\s+/g, '') ?? '';
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body)) return { problem: 'has a PEM body that is not base64' };
  const der = Uint8Array.from(atob(body), (char) => char.charCodeAt(0));
  const ed25519 =
    der.length === SPKI_LENGTH && ED25519_SPKI_PREFIX.every((byte, index) => der[index] === byte);
  if (!ed25519) {
    return {
      problem: `is not an Ed25519 public key (${der.length} bytes of DER, not the 44 of an Ed25519 SubjectPublicKeyInfo); generate one with ferry keygen`,
    };
  }
  const raw = der.subarray(ED25519_SPKI_PREFIX.length);
  const lines = btoa(String.fromCharCode(...der)).match(/.{1,64}/g) ?? [];
  return {
    pem: `-----BEGIN PUBLIC KEY-----\n${lines.join('\n')}\n-----END PUBLIC KEY-----\n`,
    keyId: keyIdOf(raw),
  };
}
