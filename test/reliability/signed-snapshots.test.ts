/**
 * Signed snapshots end to end on the local S3: the real writer signs what it publishes
 * (`signingKey`), a runtime with `ferry_trusted_keys` serves it, and every way an attacker who can
 * write the bucket but has no key might slip a snapshot in is refused before its object is fetched
 * while the dataset keeps serving what it had: an unsigned snapshot; a signature copied from
 * another snapshot; a file and metadata.json rewritten consistently under a signed key; a statement
 * edited inside its signature; a key removed from the trusted list. Also: rotation to a second
 * key, a rollback (still refused as older), a freeze seen by a fresh reader and an expired
 * heartbeat (stale: a warn line and the metric), and a reader without keys (an info line). After a
 * restart, a live file whose signer was removed (or never checked) is not served; a reader held on
 * an older snapshot, or on a snapshot whose id the writer reused, is stale however often the
 * writer re-signs its heartbeat.
 */
import { blockManifestKey, parseEnvelope, signatureKeyOf } from '@ferry/core';
import type { Runtime } from '@ferry/runtime';
import { createServerMetrics } from '@ferry/server';
import { type GeneratedKeyPair, generateSigningKeyPair } from '@ferry/store';
import { localS3Params, spicepodYaml } from '@ferry/test-support';
import { useLocalAws } from '@ferry/test-support/suite';
import { publishHeartbeat, publishSnapshot } from '@ferry/writer';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  BUCKET,
  collect,
  DATASET,
  datasetEntry,
  location,
  nextEvent,
  publish,
  readMetadata,
  type Started,
  servedVersion,
  setCurrentId,
  settledStatus,
  snapshotFile,
  startRuntime,
  whilePaused,
  writeMetadata,
} from './support.js';

const { aws } = useLocalAws({ buckets: [BUCKET] });

/** How the writer reaches the local S3. */
function storeParams() {
  const params = localS3Params(aws);
  return {
    endpoint: params.s3_endpoint as string,
    region: params.s3_region as string,
    allowHttp: true,
    auth: 'key' as const,
    accessKeyId: params.s3_key as string,
    secretAccessKey: params.s3_secret as string,
  };
}

let keyA: GeneratedKeyPair;
let keyB: GeneratedKeyPair;
beforeAll(() => {
  keyA = generateSigningKeyPair();
  keyB = generateSigningKeyPair();
});

const running: Runtime[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((runtime) => runtime.close()));
});

let prefixes = 0;
function freshPrefix(): string {
  return `signed-${Date.now()}-${++prefixes}/`;
}

/** The writer's signed publish of snapshot file `version`. */
async function signedPublish(prefix: string, version: number, key: GeneratedKeyPair, validForMs?: number) {
  const file = await snapshotFile('duckdb', version);
  return publishSnapshot({
    dataset: DATASET,
    location: location(prefix),
    storeParams: storeParams(),
    source: { file: file.path },
    signingKey: key.privatePem,
    ...(validForMs === undefined ? {} : { heartbeatValidForMs: validForMs }),
  });
}

/** A pod trusting the keys named (passed as secrets, as an operator would). */
async function startReader(
  prefix: string,
  keys: readonly GeneratedKeyPair[] | undefined,
  options: { readonly dataDir?: string } = {},
): Promise<Started> {
  const names = (keys ?? []).map((_, index) => `FERRY_TRUSTED_${index}`);
  const yaml = spicepodYaml({
    name: 'signed',
    location: location(prefix),
    params: {
      ...localS3Params(aws),
      ...(keys === undefined
        ? {}
        : { ferry_trusted_keys: `[${names.map((name) => `"\${secrets:${name}}"`).join(', ')}]` }),
    },
    datasets: [{ name: DATASET, engine: 'duckdb', interval: '300ms' }],
  });
  const env = Object.fromEntries((keys ?? []).map((key, index) => [names[index], key.publicPem]));
  const started = await startRuntime(yaml, {
    env,
    ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
  });
  running.push(started.runtime);
  return started;
}

async function servingSnapshot(started: Started, snapshotId: number): Promise<void> {
  await settledStatus(started.runtime, (status) => status.servingSnapshotId === snapshotId);
}

/**
 * Runs an attack (it makes its snapshot current) and checks it is refused with `code`: the error
 * event, the warn line naming the dataset, the snapshot and the reason, the metric, no GET of the
 * attacker's object, and the previous snapshot still answering queries.
 */
async function expectRefused(
  started: Started,
  code: string,
  attack: () => Promise<{ snapshotId: number; target: string; readonly getsBefore?: number }>,
): Promise<void> {
  const { runtime, logger } = started;
  const served = await servedVersion(runtime);
  const before = runtime.metrics().signatureRefusals[DATASET]?.[code] ?? 0;
  const mark = logger.records.length;
  // An earlier refusal is repeated at every check: wait for this snapshot's.
  const seen = collect(runtime, 'error');
  const { snapshotId, target, getsBefore = 0 } = await attack();
  const ours = (event: { dataset: string; code: string; snapshotId: number | null }) =>
    event.dataset === DATASET && event.code === code && event.snapshotId === snapshotId;
  if (!seen.some(ours)) await nextEvent(runtime, 'error', ours);
  const [line] = await logger.waitFor(
    (record) => record.fields.code === code && record.fields.snapshotId === snapshotId,
    { since: mark },
  );
  expect(line?.level).toBe('warn');
  expect(line?.message).toContain(`Snapshot ${snapshotId} of dataset '${DATASET}'`);
  expect(line?.message).toContain(`(keeping snapshot ${served.snapshotId})`);
  expect(line?.fields).toMatchObject({ dataset: DATASET, snapshotId, code });
  expect(runtime.metrics().signatureRefusals[DATASET]?.[code]).toBeGreaterThan(before);
  expect(aws.requests.count('GET', target)).toBe(getsBefore);
  expect(await servedVersion(runtime)).toEqual(served);
  expect(runtime.status(DATASET).status?.servingSnapshotId).toBe(served.snapshotId);
}

/** The attacker's own file, uploaded and made current with a correct checksum and size, unsigned. */
function unsignedPublish(prefix: string, version: number) {
  return snapshotFile('duckdb', version).then((file) => publish(aws, prefix, file));
}

describe('signed snapshots on the local S3', () => {
  it('a signed store serves; each tampering is refused before download and the dataset keeps serving; the next signed snapshot is served', async () => {
    const prefix = freshPrefix();
    const first = await signedPublish(prefix, 1, keyA);
    expect(first.signed?.keyId).toBe(keyA.keyId);
    const started = await startReader(prefix, [keyA]);
    await servingSnapshot(started, first.snapshotId);
    expect(await servedVersion(started.runtime)).toEqual({ version: 1, snapshotId: first.snapshotId });
    const firstKey = `${prefix}${first.key}`;
    const firstSignature = await aws.getObject(BUCKET, signatureKeyOf(firstKey));
    expect(firstSignature).toBeDefined();

    // An unsigned snapshot, correct in every other way.
    await expectRefused(started, 'ERR_SNAPSHOT_UNSIGNED', () => unsignedPublish(prefix, 2));

    // A signature copied from another (signed) snapshot beside the attacker's file.
    await expectRefused(started, 'ERR_SNAPSHOT_STATEMENT_MISMATCH', async () => {
      const published = await unsignedPublish(prefix, 3);
      await aws.putObject(BUCKET, signatureKeyOf(published.key), firstSignature as Uint8Array);
      return published;
    });

    // The file and metadata.json rewritten consistently: the attacker's file replaces the signed
    // object under its key, and a new entry names that key with the new file's checksum and size.
    await expectRefused(started, 'ERR_SNAPSHOT_STATEMENT_MISMATCH', async () => {
      const file = await snapshotFile('duckdb', 4);
      // The reader downloaded the signed object once, to bootstrap.
      const getsBefore = aws.requests.count('GET', `${BUCKET}/${firstKey}`);
      await aws.putObject(BUCKET, firstKey, file.bytes);
      const published = await publish(aws, prefix, file, {
        skipUpload: true,
        mutate: (entry) => {
          entry.snapshot = `s3://${BUCKET}/${firstKey}`;
        },
      });
      return { snapshotId: published.snapshotId, target: `${BUCKET}/${firstKey}`, getsBefore };
    });

    // The statement edited inside a copied signature to describe the attacker's file.
    await expectRefused(started, 'ERR_SNAPSHOT_SIGNATURE_INVALID', async () => {
      const published = await unsignedPublish(prefix, 5);
      const document = await readMetadata(aws, prefix);
      const entry = (document[DATASET] as { snapshots: Record<string, unknown>[] }).snapshots.at(-1);
      const envelope = parseEnvelope(new TextDecoder().decode(firstSignature));
      if ('problem' in envelope) throw new Error(envelope.problem);
      const statement = envelope.statement
        .replace(/^snapshot-id .*$/m, `snapshot-id ${published.snapshotId}`)
        .replace(/^snapshot .*$/m, `snapshot ${JSON.stringify(published.uri)}`)
        .replace(/^sha256 .*$/m, `sha256 ${JSON.stringify(entry?.['snapshot-checksum'])}`)
        .replace(/^size .*$/m, `size ${entry?.['snapshot-size']}`)
        .replace(/^timestamp-ms .*$/m, `timestamp-ms ${entry?.['timestamp-ms']}`);
      const forged = JSON.stringify({ ...JSON.parse(new TextDecoder().decode(firstSignature)), statement });
      await aws.putObject(BUCKET, signatureKeyOf(published.key), forged);
      return published;
    });

    // The writer publishes again: served. The check's HEAD of the object is the download's too.
    let next: Awaited<ReturnType<typeof signedPublish>> | undefined;
    let headsBefore = 0;
    await whilePaused(started.runtime, async () => {
      next = await signedPublish(prefix, 6, keyA);
      headsBefore = aws.requests.count('HEAD', `${BUCKET}/${prefix}${next.key}`);
    });
    if (next === undefined) throw new Error('not published');
    await servingSnapshot(started, next.snapshotId);
    expect(aws.requests.count('HEAD', `${BUCKET}/${prefix}${next.key}`)).toBe(headsBefore + 1);
    expect(await servedVersion(started.runtime)).toEqual({ version: 6, snapshotId: next.snapshotId });

    const exposition = await createServerMetrics(started.runtime).scrape();
    expect(exposition).toMatch(
      /ferry_snapshot_signature_refusals_total\{dataset="orders",reason="ERR_SNAPSHOT_UNSIGNED"\} [1-9]/,
    );
    expect(started.logger.records).toContainEqual({
      level: 'info',
      message: `Snapshots are served only when signed by a trusted key for 1 dataset(s): ${DATASET}`,
      fields: { component: 'runtime', datasets: DATASET, keyIds: keyA.keyId },
    });
  });

  it('rotation: a second key is trusted beside the first, the writer switches, the first is removed; a snapshot signed with the removed key is refused', async () => {
    const prefix = freshPrefix();
    const first = await signedPublish(prefix, 1, keyA);
    const both = await startReader(prefix, [keyA, keyB]);
    await servingSnapshot(both, first.snapshotId);
    const rotated = await signedPublish(prefix, 2, keyB);
    await servingSnapshot(both, rotated.snapshotId);
    expect(await servedVersion(both.runtime)).toEqual({ version: 2, snapshotId: rotated.snapshotId });
    await both.runtime.close();

    // Restarted with the old key removed: it serves its live file, and a snapshot signed with the
    // removed key (a leaked key, an old writer) is refused.
    const onlyB = await startReader(prefix, [keyB], { dataDir: both.dataDir });
    await servingSnapshot(onlyB, rotated.snapshotId);
    await expectRefused(onlyB, 'ERR_SNAPSHOT_SIGNER_UNTRUSTED', async () => {
      const published = await signedPublish(prefix, 3, keyA);
      return { snapshotId: published.snapshotId, target: `${BUCKET}/${prefix}${published.key}` };
    });
    const third = await signedPublish(prefix, 4, keyB);
    await servingSnapshot(onlyB, third.snapshotId);
    expect(await servedVersion(onlyB.runtime)).toEqual({ version: 4, snapshotId: third.snapshotId });
  });

  it('revocation: after a restart, a live file signed only by a key removed from the list is not served, nor one downloaded before the keys were set', async () => {
    const prefix = freshPrefix();
    // Snapshot 1, signed with key A (a key that leaks): the reader trusting A serves it.
    const leaked = await signedPublish(prefix, 1, keyA);
    const trustingA = await startReader(prefix, [keyA]);
    await servingSnapshot(trustingA, leaked.snapshotId);
    await trustingA.runtime.close();

    // The operator revokes A (only B trusted) and restarts; metadata.json still names snapshot 1.
    // Its live file is not served: the store's snapshot 1 is refused as signed by an untrusted key.
    const onlyB = await startReader(prefix, [keyB], { dataDir: trustingA.dataDir });
    const [refused] = await onlyB.logger.waitFor(
      (record) =>
        record.fields.code === 'ERR_SNAPSHOT_SIGNER_UNTRUSTED' &&
        record.fields.snapshotId === leaked.snapshotId,
    );
    expect(refused?.level).toBe('warn');
    expect(onlyB.runtime.status(DATASET).status?.servingSnapshotId ?? null).toBeNull();
    expect(onlyB.logger.records).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        message: expect.stringContaining(
          `The live file of dataset '${DATASET}' (snapshot ${leaked.snapshotId}) is signed by key ${keyA.keyId}`,
        ),
      }),
    );
    await expect(onlyB.runtime.query(`SELECT count(*) FROM ${DATASET}`)).rejects.toThrow(/not ready/);
    // The writer publishes with B: served.
    const next = await signedPublish(prefix, 2, keyB);
    await servingSnapshot(onlyB, next.snapshotId);
    expect(await servedVersion(onlyB.runtime)).toEqual({ version: 2, snapshotId: next.snapshotId });
    await onlyB.runtime.close();

    // A reader that ran without keys (an unsigned snapshot current), restarted with keys: its live
    // file was never verified and is not served either.
    const unsignedPrefix = freshPrefix();
    const unsigned = await unsignedPublish(unsignedPrefix, 3);
    const noKeys = await startReader(unsignedPrefix, undefined);
    await servingSnapshot(noKeys, unsigned.snapshotId);
    await noKeys.runtime.close();
    const withKeys = await startReader(unsignedPrefix, [keyA], { dataDir: noKeys.dataDir });
    await withKeys.logger.waitFor(
      (record) =>
        record.fields.code === 'ERR_SNAPSHOT_UNSIGNED' && record.fields.snapshotId === unsigned.snapshotId,
    );
    expect(withKeys.runtime.status(DATASET).status?.servingSnapshotId ?? null).toBeNull();
  });

  it('rollback: an older, validly signed snapshot made current again is refused as older; a fresh reader served it is stale by the heartbeat', async () => {
    const prefix = freshPrefix();
    const first = await signedPublish(prefix, 1, keyA);
    const second = await signedPublish(prefix, 2, keyA);
    const started = await startReader(prefix, [keyA]);
    await servingSnapshot(started, second.snapshotId);
    const older = nextEvent(
      started.runtime,
      'poll',
      (event) => event.dataset === DATASET && event.result === 'older',
    );
    await setCurrentId(aws, prefix, first.snapshotId);
    await older;
    expect(await servedVersion(started.runtime)).toEqual({ version: 2, snapshotId: second.snapshotId });

    // A reader that starts now loads the old snapshot (its signature is valid): the writer's
    // heartbeat names snapshot 2, so once the grace is over the dataset is stale.
    const fresh = await startReader(prefix, [keyA]);
    await servingSnapshot(fresh, first.snapshotId);
    const [line] = await fresh.logger.waitFor(
      (record) => record.level === 'warn' && record.message.includes('is stale'),
    );
    expect(line?.message).toContain(
      `names snapshot ${second.snapshotId}, but the dataset serves snapshot ${first.snapshotId}`,
    );
    expect(fresh.runtime.metrics().freshness[DATASET]).toEqual({ stale: true, staleTimes: 1 });
    expect(await createServerMetrics(fresh.runtime).scrape()).toContain(
      'ferry_dataset_heartbeat_stale{dataset="orders"} 1',
    );
  });

  it('rollback after a restart: the live file, still signed by a trusted key, keeps the reader from going back', async () => {
    const prefix = freshPrefix();
    const first = await signedPublish(prefix, 1, keyA);
    const second = await signedPublish(prefix, 2, keyA);
    const before = await startReader(prefix, [keyA]);
    await servingSnapshot(before, second.snapshotId);
    await before.runtime.close();
    await setCurrentId(aws, prefix, first.snapshotId);
    const after = await startReader(prefix, [keyA], { dataDir: before.dataDir });
    await after.logger.waitFor((record) => record.message.includes('older than the locally loaded snapshot'));
    expect(await servedVersion(after.runtime)).toEqual({ version: 2, snapshotId: second.snapshotId });
    expect(aws.requests.count('GET', `${BUCKET}/${prefix}${first.key}`)).toBe(0);
  });

  it('held back: a reader kept on an older snapshot is stale once the grace is over, however often the writer re-signs its heartbeat', async () => {
    const prefix = freshPrefix();
    const first = await signedPublish(prefix, 1, keyA);
    const started = await startReader(prefix, [keyA]);
    await servingSnapshot(started, first.snapshotId);
    // The writer publishes snapshot 2; the attacker deletes its signature, so the reader refuses it
    // and keeps snapshot 1.
    let second: Awaited<ReturnType<typeof signedPublish>> | undefined;
    await whilePaused(started.runtime, async () => {
      second = await signedPublish(prefix, 2, keyA);
      await aws.deleteObject(BUCKET, signatureKeyOf(`${prefix}${second.key}`));
    });
    if (second === undefined) throw new Error('not published');
    // The writer's schedule re-signs the heartbeat (naming snapshot 2, its current one) more often
    // than the reader's grace (two 300 ms intervals): the statement read is always freshly signed.
    let writing = true;
    const writer = (async () => {
      while (writing) {
        await publishHeartbeat({
          dataset: DATASET,
          location: location(prefix),
          storeParams: storeParams(),
          signingKey: keyA.privatePem,
          validForMs: 60_000,
        });
      }
    })();
    try {
      const [line] = await started.logger.waitFor(
        (record) => record.level === 'warn' && record.message.includes('is stale'),
      );
      expect(line?.message).toContain(
        `names snapshot ${second.snapshotId}, but the dataset serves snapshot ${first.snapshotId}`,
      );
      expect(started.runtime.metrics().freshness[DATASET]?.stale).toBe(true);
      expect(await servedVersion(started.runtime)).toEqual({ version: 1, snapshotId: first.snapshotId });
    } finally {
      writing = false;
      await writer;
    }
  });

  it('an id reused: metadata.json loses the served entry and the writer signs another snapshot under its id; the reader keeping the old one is stale', async () => {
    const prefix = freshPrefix();
    await signedPublish(prefix, 1, keyA);
    const second = await signedPublish(prefix, 2, keyA);
    const started = await startReader(prefix, [keyA]);
    await servingSnapshot(started, second.snapshotId);
    let third: Awaited<ReturnType<typeof signedPublish>> | undefined;
    await whilePaused(started.runtime, async () => {
      // The attacker drops the served entry and sets the current id back; the writer's next
      // publish takes the dropped id (the highest listed + 1) for another file, signed.
      const document = await readMetadata(aws, prefix);
      const entry = datasetEntry(document);
      entry.snapshots = (entry.snapshots as { 'snapshot-id': number }[]).filter(
        (item) => item['snapshot-id'] !== second.snapshotId,
      );
      entry['current-snapshot-id'] = second.snapshotId - 1;
      await writeMetadata(aws, prefix, document);
      third = await signedPublish(prefix, 3, keyA);
    });
    expect(third?.snapshotId).toBe(second.snapshotId);
    // The reader finds its snapshot id current and keeps version 2; the writer's heartbeat vouches
    // for version 3 under that id.
    const [line] = await started.logger.waitFor(
      (record) => record.level === 'warn' && record.message.includes('is stale'),
    );
    expect(line?.message).toContain(`names snapshot ${second.snapshotId} of SHA-256`);
    expect(await servedVersion(started.runtime)).toEqual({ version: 2, snapshotId: second.snapshotId });
    expect(started.runtime.metrics().freshness[DATASET]?.stale).toBe(true);
  });

  it('a block manifest rewritten beside a signed snapshot is not used for its delta: the writer signed its SHA-256', async () => {
    const prefix = freshPrefix();
    const first = await signedPublish(prefix, 1, keyA);
    const reader = await startReader(prefix, [keyA]);
    await servingSnapshot(reader, first.snapshotId);
    const mark = reader.logger.records.length;
    let second: Awaited<ReturnType<typeof signedPublish>> | undefined;
    await whilePaused(reader.runtime, async () => {
      second = await signedPublish(prefix, 2, keyA);
      // Rewritten without the key: the writer's own manifest and one more space, still a valid one.
      const manifestKey = `${prefix}${blockManifestKey(second.key)}`;
      const manifest = await aws.getObject(BUCKET, manifestKey);
      expect(manifest).toBeDefined();
      await aws.putObject(BUCKET, manifestKey, `${new TextDecoder().decode(manifest)} `);
    });
    const snapshotId = second?.snapshotId;
    await servingSnapshot(reader, snapshotId as number);
    const [line] = await reader.logger.waitFor(
      (record) => record.fields.snapshotId === snapshotId && typeof record.fields.fallback === 'string',
      { since: mark },
    );
    expect(line?.level).toBe('warn');
    expect(line?.fields.fallback).toMatch(
      /its SHA-256 [0-9a-f]{64} is not the [0-9a-f]{64} its writer signed/,
    );
    expect(await servedVersion(reader.runtime)).toEqual({ version: 2, snapshotId });
  });

  it('freeze: a heartbeat statement that expires makes the dataset stale; the next heartbeat makes it fresh again', async () => {
    const prefix = freshPrefix();
    const first = await signedPublish(prefix, 1, keyA, 1_500);
    const started = await startReader(prefix, [keyA]);
    await servingSnapshot(started, first.snapshotId);
    const [stale] = await started.logger.waitFor(
      (record) => record.level === 'warn' && record.message.includes('is stale'),
    );
    expect(stale?.message).toContain("the writer's heartbeat statement expired at");
    expect(stale?.fields).toMatchObject({ dataset: DATASET });
    expect(started.runtime.metrics().freshness[DATASET]?.stale).toBe(true);
    // Staleness counts from the heartbeat's signing (over its 1.5 s validity), however recently
    // the reader's 300 ms polls read metadata.json: a frozen store answers them all.
    expect(started.runtime.status(DATASET).stalenessMs).toBeGreaterThan(1_500);
    const mark = started.logger.records.length;
    await publishHeartbeat({
      dataset: DATASET,
      location: location(prefix),
      storeParams: storeParams(),
      signingKey: keyA.privatePem,
      validForMs: 60_000,
    });
    await started.logger.waitFor((record) => record.level === 'info' && record.message.includes('is fresh'), {
      since: mark,
    });
    expect(started.runtime.metrics().freshness[DATASET]).toEqual({ stale: false, staleTimes: 1 });
    // Vouched for again: staleness is the time since the last poll that found nothing newer.
    expect(started.runtime.status(DATASET).stalenessMs).toBeLessThan(1_500);
  });

  it('without trusted keys: unsigned snapshots are served, with one info line saying they are not verified', async () => {
    const prefix = freshPrefix();
    const published = await unsignedPublish(prefix, 1);
    const started = await startReader(prefix, undefined);
    await servingSnapshot(started, published.snapshotId);
    const lines = started.logger.records.filter((record) => record.message.includes('are not verified'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'info', fields: { component: 'runtime', datasets: DATASET } });
    expect(started.runtime.metrics().freshness[DATASET]).toBeUndefined();
  });

  it('a spicepod whose trusted key is not an Ed25519 public key does not start, naming the key', async () => {
    const prefix = freshPrefix();
    const yaml = spicepodYaml({
      name: 'signed',
      location: location(prefix),
      params: { ...localS3Params(aws), ferry_trusted_keys: `["\${secrets:BROKEN}"]` },
      datasets: [{ name: DATASET, engine: 'duckdb' }],
    });
    await expect(startRuntime(yaml, { env: { BROKEN: keyA.privatePem } })).rejects.toThrow(
      /snapshots\.params\.ferry_trusted_keys\[0\]: is a private key/,
    );
  });
});
