/**
 * The Ed25519 side of signed snapshots, on `node:crypto` alone: key pairs for `ferry keygen`,
 * signing a statement into its envelope (the writer), verifying an envelope against a reader's
 * trusted keys, and the SHA-256 digests statements name. What is signed (the canonical statement
 * text) and how its fields are compared is core's (`@ferry/core` `signing/`); the objects are
 * written by the writer and read by `@ferry/snapshots`.
 */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign,
  verify,
} from 'node:crypto';
import {
  type ArrowSchema,
  keyIdOf,
  parsePublicKeyPem,
  type SignedEnvelope,
  schemaCanonicalText,
} from '@ferry/core/base';
import { SigningKeyError } from './errors.js';

/** A writer's private key, ready to sign. */
export interface SigningKey {
  readonly privateKey: KeyObject;
  readonly keyId: string;
  /** Its public key as PEM (what readers list in `ferry_trusted_keys`). */
  readonly publicPem: string;
}

export interface GeneratedKeyPair {
  /** PKCS#8 PEM; keep it on the writer only. */
  readonly privatePem: string;
  /** SPKI PEM; give it to readers. */
  readonly publicPem: string;
  readonly keyId: string;
}

function rawPublicKey(key: KeyObject): Uint8Array {
  const der = key.export({ format: 'der', type: 'spki' });
  return new Uint8Array(der.subarray(der.length - 32));
}

export function generateSigningKeyPair(): GeneratedKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privatePem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    publicPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    keyId: keyIdOf(rawPublicKey(publicKey)),
  };
}

/** The private key in `pem`; `source` names where it came from in the error. */
export function readSigningKey(pem: string, source: string): SigningKey {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch (error) {
    throw new SigningKeyError(source, 'is not a PEM private key', { cause: error });
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') {
    throw new SigningKeyError(source, `is an ${privateKey.asymmetricKeyType ?? 'unknown'} key, not Ed25519`);
  }
  const publicKey = createPublicKey(privateKey);
  return {
    privateKey,
    keyId: keyIdOf(rawPublicKey(publicKey)),
    publicPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
  };
}

export function signStatement(key: SigningKey, statement: string): SignedEnvelope {
  const signature = sign(null, Buffer.from(statement, 'utf8'), key.privateKey);
  return { keyId: key.keyId, statement, signature: signature.toString('base64') };
}

/** How an envelope fared against the trusted keys. */
export type EnvelopeCheck = 'verified' | 'untrusted' | 'invalid';

/** A reader's trusted keys, parsed once (a pool worker keeps one set per list). */
export class TrustedKeySet {
  readonly #byId = new Map<string, KeyObject[]>();

  /** `pems`: PEM public keys already checked by the config loader. */
  constructor(pems: readonly string[]) {
    for (const pem of pems) {
      const parsed = parsePublicKeyPem(pem);
      if ('problem' in parsed) continue;
      const keys = this.#byId.get(parsed.keyId) ?? [];
      keys.push(createPublicKey(parsed.pem));
      this.#byId.set(parsed.keyId, keys);
    }
  }

  get size(): number {
    return this.#byId.size;
  }

  /** `verified` when a trusted key with the envelope's id signed its statement. */
  check(envelope: SignedEnvelope): EnvelopeCheck {
    const keys = this.#byId.get(envelope.keyId);
    if (keys === undefined) return 'untrusted';
    const signature = Buffer.from(envelope.signature, 'base64');
    if (signature.length !== 64) return 'invalid';
    const data = Buffer.from(envelope.statement, 'utf8');
    return keys.some((key) => verify(null, data, key, signature)) ? 'verified' : 'invalid';
  }
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** A statement's `schema-sha256`. */
export function schemaSha256(schema: ArrowSchema): string {
  return sha256Hex(schemaCanonicalText(schema));
}
