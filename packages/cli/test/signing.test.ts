/**
 * The CLI of signed snapshots, run as a user runs it (the built `ferry`, a file:// store):
 * `ferry keygen` (a 0600 private key, the .pub beside it, no overwrite without --force),
 * `ferry publish --signing-key` (the signature beside the snapshot, verified with the public key),
 * `ferry publish --heartbeat`, and `ferry validate` on a spicepod whose trusted key is wrong.
 */
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  heartbeatKeyOf,
  parseEnvelope,
  parseHeartbeatStatement,
  parseSnapshotStatement,
  signatureKeyOf,
} from '@ferry/core';
import { TrustedKeySet } from '@ferry/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ferry } from './helpers.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ferry-signing-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function envelopeAt(path: string) {
  const envelope = parseEnvelope(await readFile(path, 'utf8'));
  if ('problem' in envelope) throw new Error(envelope.problem);
  return envelope;
}

describe('signed snapshots from the command line', () => {
  it('keygen, a signed publish, a heartbeat, and validate', async () => {
    const key = join(dir, 'writer.key');
    const made = await ferry(['keygen', '--out', key]);
    expect(made.code).toBe(0);
    const keyId = /^Key ([0-9a-f]{16})$/m.exec(made.stdout)?.[1];
    expect(keyId).toBeDefined();
    expect((await stat(key)).mode & 0o777).toBe(0o600);
    const publicPem = await readFile(`${key}.pub`, 'utf8');
    expect(made.stdout).toContain('ferry_trusted_keys:');
    const again = await ferry(['keygen', '--out', key]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`Key file '${key}' exists (pass --force to replace it)`);

    const storeDir = join(dir, 'store');
    const location = `${pathToFileURL(storeDir).href}/`;
    const published = await ferry([
      'publish',
      '--location',
      location,
      '--dataset',
      'orders',
      '--sql',
      'SELECT 1::BIGINT AS id',
      '--signing-key',
      key,
      '--valid-for',
      '10m',
      '--json',
    ]);
    expect(published.stderr).not.toContain('can be read by others');
    expect(published.code).toBe(0);
    const result = JSON.parse(published.stdout) as {
      key: string;
      snapshotId: number;
      signed: { keyId: string };
    };
    expect(result.signed.keyId).toBe(keyId);
    const trusted = new TrustedKeySet([publicPem]);
    const signature = await envelopeAt(join(storeDir, signatureKeyOf(result.key)));
    expect(trusted.check(signature)).toBe('verified');
    expect(parseSnapshotStatement(signature.statement)).toMatchObject({
      dataset: 'orders',
      snapshotId: result.snapshotId,
    });

    const heartbeat = await ferry([
      'publish',
      '--heartbeat',
      '--location',
      location,
      '--dataset',
      'orders',
      '--signing-key',
      key,
      '--valid-for',
      '2m',
    ]);
    expect(heartbeat.code).toBe(0);
    expect(heartbeat.stdout).toContain(
      `Signed the heartbeat of orders: snapshot ${result.snapshotId} is current`,
    );
    const statement = await envelopeAt(join(storeDir, heartbeatKeyOf('orders')));
    expect(trusted.check(statement)).toBe('verified');
    const parsed = parseHeartbeatStatement(statement.statement);
    if ('problem' in parsed) throw new Error(parsed.problem);
    expect(parsed.validUntilMs - parsed.issuedAtMs).toBe(120_000);

    const unkeyed = await ferry(['publish', '--heartbeat', '--location', location, '--dataset', 'orders']);
    expect(unkeyed.code).toBe(2);
    expect(unkeyed.stderr).toContain('--heartbeat needs --signing-key FILE');

    const pod = (keys: string) => `version: v1
kind: Spicepod
name: signed
snapshots:
  location: ${location}
  params:
    ferry_trusted_keys: ${keys}
datasets:
  - from: postgres:public.orders
    name: orders
    acceleration: { engine: duckdb, mode: file, refresh_mode: snapshot, snapshots: enabled }
`;
    const good = join(dir, 'good.yaml');
    await writeFile(good, pod(JSON.stringify([publicPem])));
    const valid = await ferry(['validate', good]);
    expect(valid.stdout).toBe('ok: 1 dataset\n');
    expect(valid.code).toBe(0);
    const broken = join(dir, 'broken.yaml');
    await writeFile(broken, pod(`["\${secrets:WRITER_KEY}"]`));
    const invalid = await ferry(['validate', broken], { env: { WRITER_KEY: await readFile(key, 'utf8') } });
    expect(invalid.code).toBe(1);
    expect(invalid.stdout).toContain(
      `error: ${broken}: snapshots.params.ferry_trusted_keys[0]: is a private key`,
    );
  });
});
