/**
 * The Ed25519 check of signed snapshots against hostile envelopes: a trusted key's id on another
 * key's signature, a signature of another statement, a wrong length, a non-canonical S (S + L,
 * Ed25519's malleability), an unknown key id, and a key listed twice (one vote, no threshold).
 */
import { parsePublicKeyPem } from '@ferry/core';
import { describe, expect, it } from 'vitest';
import { generateSigningKeyPair, readSigningKey, signStatement, TrustedKeySet } from '../src/index.js';

const writer = generateSigningKeyPair();
const other = generateSigningKeyPair();
const key = readSigningKey(writer.privatePem, 'test');
const statement = 'ferry-heartbeat-statement-v1\nsnapshot-id 1\n';

/** The group order L of Ed25519, little-endian. */
const L = 2n ** 252n + 27742317777372353535851937790883648493n;

function addL(signature: Buffer): Buffer {
  const s = signature.subarray(32);
  let value = 0n;
  for (let i = 31; i >= 0; i--) value = (value << 8n) | BigInt(s[i] as number);
  value += L;
  const out = Buffer.from(signature);
  for (let i = 0; i < 32; i++) {
    out[32 + i] = Number(value & 0xffn);
    value >>= 8n;
  }
  return out;
}

describe('TrustedKeySet.check', () => {
  const trusted = new TrustedKeySet([writer.publicPem]);
  const signed = signStatement(key, statement);

  it('verifies the statement its trusted key signed, and nothing else', () => {
    expect(trusted.check(signed)).toBe('verified');
    expect(trusted.check({ ...signed, statement: `${statement}x` })).toBe('invalid');
    const forged = signStatement(readSigningKey(other.privatePem, 'test'), statement);
    expect(trusted.check(forged)).toBe('untrusted');
    // Another key's signature under the trusted key's id.
    expect(trusted.check({ ...forged, keyId: writer.keyId })).toBe('invalid');
  });

  it('refuses a signature of the wrong length, and a non-canonical S', () => {
    const bytes = Buffer.from(signed.signature, 'base64');
    expect(trusted.check({ ...signed, signature: bytes.subarray(0, 63).toString('base64') })).toBe('invalid');
    expect(
      trusted.check({ ...signed, signature: Buffer.concat([bytes, Buffer.of(0)]).toString('base64') }),
    ).toBe('invalid');
    expect(trusted.check({ ...signed, signature: '' })).toBe('invalid');
    expect(trusted.check({ ...signed, signature: addL(bytes).toString('base64') })).toBe('invalid');
  });

  it('a key listed twice is one key', () => {
    const twice = new TrustedKeySet([writer.publicPem, writer.publicPem]);
    expect(twice.size).toBe(1);
    expect(twice.check(signStatement(key, statement))).toBe('verified');
    const parsed = parsePublicKeyPem(writer.publicPem);
    expect('keyId' in parsed && parsed.keyId).toBe(writer.keyId);
  });
});
