/**
 * The writer's signatures (file:// store): the snapshot's signature object is written before
 * metadata.json names the snapshot, states exactly what the entry says and verifies with the
 * public key; a writer that loses the metadata race re-signs under the id it finally gets; the
 * heartbeat names the current snapshot and its validity; a key that is not an Ed25519 private key,
 * and a heartbeat with nothing published, are refused.
 */
import { createHash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  blockManifestKey,
  currentSnapshot,
  expectedSnapshotStatement,
  findRecordedSchema,
  heartbeatKeyOf,
  type ObjectStore,
  parseEnvelope,
  parseHeartbeatStatement,
  parseSnapshotStatement,
  signatureKeyOf,
  snapshotStatementDifference,
} from '@ferry/core';
import { createFileStore, generateSigningKeyPair, schemaSha256, TrustedKeySet } from '@ferry/store';
import { afterAll, describe, expect, it } from 'vitest';
import { publishHeartbeat, publishIncremental, publishSnapshot } from '../src/index.js';
import { datasetOf, removeTempDirs, tempDir, withHookBeforeMetadataPut } from './helpers.js';

afterAll(removeTempDirs);

const key = generateSigningKeyPair();
const trusted = new TrustedKeySet([key.publicPem]);

async function newLocation(): Promise<{ location: string; store: ObjectStore }> {
  const root = join(await tempDir(), 'store');
  await mkdir(root);
  const location = pathToFileURL(`${root}/`).href;
  return { location, store: createFileStore({ location }) };
}

/** The SHA-256 (hex) of an object's bytes. */
async function sha256Of(store: ObjectStore, objectKey: string): Promise<string> {
  const got = await store.get(objectKey);
  if (got.status !== 'ok') throw new Error(`${objectKey} is missing`);
  return createHash('sha256').update(got.body).digest('hex');
}

async function envelope(store: ObjectStore, objectKey: string) {
  const got = await store.get(objectKey);
  if (got.status !== 'ok') throw new Error(`${objectKey} is missing`);
  const parsed = parseEnvelope(new TextDecoder().decode(got.body));
  if ('problem' in parsed) throw new Error(parsed.problem);
  return parsed;
}

describe('signed publishing', () => {
  it('signs before metadata.json names the snapshot, stating exactly its entry', async () => {
    const { location, store } = await newLocation();
    let signedFirst: boolean | undefined;
    const hooked = withHookBeforeMetadataPut(createFileStore({ location }), async () => {
      const keys: string[] = [];
      for await (const info of store.list()) keys.push(info.key);
      signedFirst = keys.some(
        (name) => name.endsWith('.ferry-sig.json') && !name.startsWith('ferry-heartbeats/'),
      );
    });
    const result = await publishSnapshot({
      dataset: 'orders',
      location: hooked,
      source: { sql: 'SELECT 1::BIGINT AS id' },
      signingKey: key.privatePem,
      heartbeatValidForMs: 60_000,
    });
    expect(signedFirst).toBe(true);
    expect(result.signed?.keyId).toBe(key.keyId);
    const signed = await envelope(store, signatureKeyOf(result.key));
    expect(trusted.check(signed)).toBe('verified');
    const dataset = await datasetOf(store, 'orders');
    const entry = currentSnapshot(dataset);
    const schema = findRecordedSchema(dataset)?.schema;
    if (entry === undefined || schema === undefined) throw new Error('nothing current');
    const statement = parseSnapshotStatement(signed.statement);
    if ('problem' in statement) throw new Error(statement.problem);
    const expected = expectedSnapshotStatement({
      keyId: key.keyId,
      location,
      dataset,
      entry,
      schemaSha256: schemaSha256(schema),
      blocksSha256: await sha256Of(store, blockManifestKey(result.key)),
    });
    expect(snapshotStatementDifference(statement, expected, { checkBlocks: true })).toBeUndefined();

    const heartbeat = await envelope(store, heartbeatKeyOf('orders'));
    expect(trusted.check(heartbeat)).toBe('verified');
    const beat = parseHeartbeatStatement(heartbeat.statement);
    if ('problem' in beat) throw new Error(beat.problem);
    expect(beat).toMatchObject({ dataset: 'orders', snapshotId: result.snapshotId, sha256: result.checksum });
    expect(beat.validUntilMs - beat.issuedAtMs).toBe(60_000);
  });

  it('a writer that loses the race re-signs under the id it finally gets', async () => {
    const { location, store } = await newLocation();
    const loserStore = withHookBeforeMetadataPut(createFileStore({ location }), async () => {
      await publishSnapshot({ dataset: 'orders', location, source: { sql: 'SELECT 1::BIGINT AS id' } });
    });
    const loser = await publishSnapshot({
      dataset: 'orders',
      location: loserStore,
      source: { sql: 'SELECT 2::BIGINT AS id' },
      signingKey: key.privatePem,
    });
    expect(loser).toMatchObject({ snapshotId: 1, attempts: 2 });
    const statement = parseSnapshotStatement((await envelope(store, signatureKeyOf(loser.key))).statement);
    expect(statement).toMatchObject({ snapshotId: 1, uri: loser.uri });
  });

  it('a writer that loses every race takes back its signature with its snapshot and manifest', async () => {
    const { location, store } = await newLocation();
    const loserStore = withHookBeforeMetadataPut(createFileStore({ location }), async () => {
      await publishSnapshot({ dataset: 'orders', location, source: { sql: 'SELECT 1::BIGINT AS id' } });
    });
    await expect(
      publishSnapshot({
        dataset: 'orders',
        location: loserStore,
        source: { sql: 'SELECT 2::BIGINT AS id' },
        signingKey: key.privatePem,
        maxAttempts: 1,
      }),
    ).rejects.toMatchObject({ code: 'ERR_WRITER_METADATA_CONFLICT' });
    const winner = currentSnapshot(await datasetOf(store, 'orders'));
    if (winner === undefined) throw new Error('nothing current');
    const keys: string[] = [];
    for await (const info of store.list()) keys.push(info.key);
    const winnerKey = winner.uri.slice(location.length);
    expect(keys.sort()).toEqual([blockManifestKey(winnerKey), 'metadata.json', winnerKey].sort());
  });

  it('publishHeartbeat re-signs for the current snapshot; refuses a dataset with nothing published and a key that is not Ed25519', async () => {
    const { location } = await newLocation();
    await expect(
      publishHeartbeat({ dataset: 'orders', location, signingKey: key.privatePem, validForMs: 60_000 }),
    ).rejects.toMatchObject({ code: 'ERR_WRITER_NOTHING_PUBLISHED' });
    const published = await publishSnapshot({
      dataset: 'orders',
      location,
      source: { sql: 'SELECT 1::BIGINT AS id' },
    });
    const beat = await publishHeartbeat({
      dataset: 'orders',
      location,
      signingKey: key.privatePem,
      validForMs: 5_000,
      nowMs: 1_000_000,
    });
    expect(beat).toMatchObject({
      snapshotId: published.snapshotId,
      issuedAtMs: 1_000_000,
      validUntilMs: 1_005_000,
    });
    await expect(
      publishHeartbeat({ dataset: 'orders', location, signingKey: key.publicPem, validForMs: 5_000 }),
    ).rejects.toMatchObject({ code: 'ERR_SIGNING_KEY' });
    await expect(
      publishHeartbeat({ dataset: 'orders', location, signingKey: key.privatePem, validForMs: 10 }),
    ).rejects.toMatchObject({ code: 'ERR_WRITER_OPTIONS' });
  });
});

describe('a heartbeat never vouches for a rollback', () => {
  /** metadata.json of `store` rewritten by someone without the key. */
  async function rewriteMetadata(store: ObjectStore, edit: (orders: Record<string, unknown>) => void) {
    const got = await store.get('metadata.json');
    if (got.status !== 'ok') throw new Error('metadata.json is missing');
    const document = JSON.parse(new TextDecoder().decode(got.body)) as Record<
      string,
      Record<string, unknown>
    >;
    edit(document.orders as Record<string, unknown>);
    await store.put('metadata.json', new TextEncoder().encode(JSON.stringify(document)));
  }

  it('refuses a current snapshot older than one listed, or than the one its last heartbeat named, and leaves the heartbeat as it was', async () => {
    const { location, store } = await newLocation();
    const sign = { dataset: 'orders', location, signingKey: key.privatePem };
    const first = await publishSnapshot({ ...sign, source: { sql: 'SELECT 1::BIGINT AS id' } });
    const second = await publishSnapshot({ ...sign, source: { sql: 'SELECT 2::BIGINT AS id' } });
    const before = await envelope(store, heartbeatKeyOf('orders'));
    expect(parseHeartbeatStatement(before.statement)).toMatchObject({ snapshotId: second.snapshotId });

    // current-snapshot-id set back to the first snapshot, the second still listed.
    await rewriteMetadata(store, (orders) => {
      orders['current-snapshot-id'] = first.snapshotId;
    });
    await expect(publishHeartbeat({ ...sign, validForMs: 60_000 })).rejects.toMatchObject({
      code: 'ERR_WRITER_ROLLBACK',
      message: expect.stringContaining(`names snapshot ${first.snapshotId} as current`),
    });
    // The second entry removed too: the writer's last heartbeat still names it.
    await rewriteMetadata(store, (orders) => {
      orders.snapshots = (orders.snapshots as { 'snapshot-id': number }[]).filter(
        (entry) => entry['snapshot-id'] === first.snapshotId,
      );
    });
    await expect(publishHeartbeat({ ...sign, validForMs: 60_000 })).rejects.toMatchObject({
      code: 'ERR_WRITER_ROLLBACK',
      message: expect.stringContaining(`snapshot ${second.snapshotId}`),
    });
    expect(await envelope(store, heartbeatKeyOf('orders'))).toEqual(before);
    await store.close();
  });
});

describe('signed publishing with block manifests', () => {
  it('covers the block manifest in the statement (blocks-sha256), for a plain and an incremental publish', async () => {
    const { location, store } = await newLocation();
    const first = await publishSnapshot({
      dataset: 'orders',
      location,
      source: { sql: 'SELECT i::BIGINT AS id FROM range(1000) t(i)' },
      signingKey: key.privatePem,
    });
    const next = await publishIncremental({
      dataset: 'orders',
      location,
      statements: ['INSERT INTO orders SELECT i::BIGINT FROM range(1000, 1010) t(i)'],
      stateDir: await tempDir(),
      signingKey: key.privatePem,
    });
    for (const result of [first, next]) {
      const signed = await envelope(store, signatureKeyOf(result.key));
      expect(trusted.check(signed)).toBe('verified');
      const statement = parseSnapshotStatement(signed.statement);
      if ('problem' in statement) throw new Error(statement.problem);
      expect(statement.blocksSha256).toBe(await sha256Of(store, blockManifestKey(result.key)));
      expect(statement.snapshotId).toBe(result.snapshotId);
    }
    expect(next.signed?.keyId).toBe(key.keyId);
  });
});
