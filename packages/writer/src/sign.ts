/**
 * Signing what the writer publishes (Ferry's signed snapshots; a Spice reader never reads these
 * objects). Two statements, both Ed25519 over core's canonical text: the snapshot statement,
 * written beside the snapshot (`<key>.ferry-sig.json`) during the metadata commit, after the
 * snapshot id is known and before metadata.json names it, so a reader never sees a signed store
 * name an unsigned snapshot; and the heartbeat statement ("snapshot N is current as of T, valid
 * until T + period", `ferry-heartbeats/<dataset>.ferry-sig.json`), re-signed on a schedule so
 * readers can tell a live writer from a frozen store.
 */
import {
  currentSnapshot,
  type DatasetMetadata,
  envelopeText,
  expectedSnapshotStatement,
  findRecordedSchema,
  getDataset,
  heartbeatKeyOf,
  heartbeatStatementText,
  type ObjectStore,
  parseEnvelope,
  parseHeartbeatStatement,
  parseMetadata,
  signatureKeyOf,
  snapshotStatementText,
} from '@ferry/core/base';
import {
  createObjectStore,
  type ObjectStoreParams,
  readSigningKey,
  type SigningKey,
  schemaSha256,
  signStatement,
  TrustedKeySet,
} from '@ferry/store';
import { NothingPublishedError, RollbackRefusedError, WriterOptionsError } from './errors.js';
import { readMetadata } from './metadata-commit.js';

/** A private key as the writer is given it: PEM text (PKCS#8, `ferry keygen`'s), or one read already. */
export type SigningKeyInput = string | SigningKey;

export function signingKeyOf(input: SigningKeyInput): SigningKey {
  return typeof input === 'string' ? readSigningKey(input, 'given as signingKey') : input;
}

const JSON_TYPE = { contentType: 'application/json' } as const;

/**
 * Signs the current snapshot of `dataset` in `document` (the metadata.json about to be written) and
 * writes the signature beside the snapshot object at `snapshotKey`.
 */
export async function writeSnapshotSignature(
  store: ObjectStore,
  document: unknown,
  dataset: string,
  snapshotKey: string,
  key: SigningKey,
  blocksSha256?: string,
): Promise<void> {
  const metadata = parseMetadata(document, store.location);
  const entry = getDataset(metadata, dataset);
  const snapshot = entry === undefined ? undefined : currentSnapshot(entry);
  const recorded = entry === undefined ? undefined : findRecordedSchema(entry);
  if (entry === undefined || snapshot === undefined || recorded === undefined) {
    throw new NothingPublishedError(dataset, store.location);
  }
  const statement = expectedSnapshotStatement({
    keyId: key.keyId,
    location: metadata.location,
    dataset: entry,
    entry: snapshot,
    schemaSha256: schemaSha256(recorded.schema),
    ...(blocksSha256 === undefined ? {} : { blocksSha256 }),
  });
  const envelope = signStatement(key, snapshotStatementText(statement));
  await store.put(signatureKeyOf(snapshotKey), new TextEncoder().encode(envelopeText(envelope)), JSON_TYPE);
}

export interface HeartbeatOptions {
  readonly dataset: string;
  /** A location URI (`s3://bucket/prefix/`, `file:///dir/`), or an open store (left open). */
  readonly location: string | ObjectStore;
  readonly storeParams?: ObjectStoreParams;
  readonly signingKey: SigningKeyInput;
  /** How long the statement stays valid; re-sign well within it (every half period, say). */
  readonly validForMs: number;
  /** The signing time; default now. */
  readonly nowMs?: number;
}

export interface HeartbeatResult {
  readonly snapshotId: number;
  readonly issuedAtMs: number;
  readonly validUntilMs: number;
  readonly keyId: string;
  /** The object written, under the location. */
  readonly key: string;
}

/** Signs the heartbeat of the dataset as metadata.json has it now (`signedHeartbeat` of a read document). */
async function signHeartbeat(
  store: ObjectStore,
  dataset: DatasetMetadata | undefined,
  name: string,
  location: string,
  key: SigningKey,
  issuedAtMs: number,
  validForMs: number,
): Promise<HeartbeatResult> {
  const snapshot = dataset === undefined ? undefined : currentSnapshot(dataset);
  if (snapshot === undefined) throw new NothingPublishedError(name, store.location);
  const validUntilMs = issuedAtMs + validForMs;
  const text = heartbeatStatementText({
    keyId: key.keyId,
    location,
    dataset: name,
    snapshotId: snapshot.snapshotId,
    sha256: snapshot.checksum.toLowerCase(),
    issuedAtMs,
    validUntilMs,
  });
  const objectKey = heartbeatKeyOf(name);
  const body = new TextEncoder().encode(envelopeText(signStatement(key, text)));
  await store.put(objectKey, body, JSON_TYPE);
  return { snapshotId: snapshot.snapshotId, issuedAtMs, validUntilMs, keyId: key.keyId, key: objectKey };
}

/** Signs the heartbeat of the document just committed (a signed publish does this after its commit). */
export function heartbeatOfDocument(
  store: ObjectStore,
  document: unknown,
  dataset: string,
  key: SigningKey,
  validForMs: number,
  nowMs: number,
): Promise<HeartbeatResult> {
  const metadata = parseMetadata(document, store.location);
  return signHeartbeat(
    store,
    getDataset(metadata, dataset),
    dataset,
    metadata.location,
    key,
    nowMs,
    validForMs,
  );
}

/**
 * The snapshot the dataset's heartbeat statement names when this key signed it (undefined: none,
 * unreadable, or signed by another key).
 */
async function lastHeartbeatSnapshotId(
  store: ObjectStore,
  dataset: string,
  key: SigningKey,
): Promise<number | undefined> {
  const got = await store.get(heartbeatKeyOf(dataset), { maxBytes: 64 * 1024 });
  if (got.status !== 'ok') return undefined;
  const envelope = parseEnvelope(new TextDecoder().decode(got.body));
  if ('problem' in envelope || new TrustedKeySet([key.publicPem]).check(envelope) !== 'verified') {
    return undefined;
  }
  const statement = parseHeartbeatStatement(envelope.statement);
  return 'problem' in statement || statement.dataset !== dataset ? undefined : statement.snapshotId;
}

/**
 * Re-signs the writer's heartbeat statement for the dataset's current snapshot (`ferry publish
 * --heartbeat`): run it more often than `validForMs`, even when nothing changed.
 * Refuses (`RollbackRefusedError`) when the current snapshot is older than one metadata.json lists
 * or than the one this key's last heartbeat named: someone without the key set metadata.json back,
 * and a statement vouching for it would hide the rollback from readers that start fresh.
 * @throws NothingPublishedError when the dataset has no current snapshot; RollbackRefusedError;
 * SigningKeyError; store errors.
 */
export async function publishHeartbeat(options: HeartbeatOptions): Promise<HeartbeatResult> {
  assertValidFor(options.validForMs);
  const key = signingKeyOf(options.signingKey);
  const owned = typeof options.location === 'string';
  const store =
    typeof options.location === 'string'
      ? createObjectStore(options.location, options.storeParams ?? {})
      : options.location;
  try {
    // Read before metadata.json: a publish between the two reads names a newer snapshot in both.
    const lastNamed = await lastHeartbeatSnapshotId(store, options.dataset, key);
    const read = await readMetadata(store);
    if (read.text === undefined) throw new NothingPublishedError(options.dataset, store.location);
    const metadata = parseMetadata(read.text, store.location);
    const dataset = getDataset(metadata, options.dataset);
    const current = dataset === undefined ? undefined : currentSnapshot(dataset);
    if (dataset !== undefined && current !== undefined) {
      const newest = Math.max(lastNamed ?? 0, ...dataset.snapshots.map((entry) => entry.snapshotId));
      if (newest > current.snapshotId) {
        throw new RollbackRefusedError(options.dataset, store.location, current.snapshotId, newest);
      }
    }
    return await signHeartbeat(
      store,
      dataset,
      options.dataset,
      metadata.location,
      key,
      options.nowMs ?? Date.now(),
      options.validForMs,
    );
  } finally {
    if (owned) await store.close();
  }
}

export function assertValidFor(validForMs: number): void {
  if (!Number.isSafeInteger(validForMs) || validForMs < 1000) {
    throw new WriterOptionsError(
      'heartbeatValidForMs',
      `A heartbeat statement must stay valid for at least 1 s (whole milliseconds), got ${validForMs}.`,
    );
  }
}
