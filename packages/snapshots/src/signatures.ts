/**
 * The reader's side of signed snapshots: before a byte of a candidate is downloaded, read its
 * signature object (`<snapshot key>.ferry-sig.json`), check the signature with the dataset's
 * trusted keys, and compare the signed statement with what metadata.json says of the candidate.
 * Each way to fail is a {@link SnapshotRejectedError} of its own code, so the dataset machine
 * refuses the candidate like a schema mismatch and the metrics count refusals by reason. Also the
 * heartbeat statement a reader checks for freshness (`heartbeatFreshness` in core decides).
 */
import {
  type ArrowSchema,
  type DatasetMetadata,
  expectedSnapshotStatement,
  findRecordedSchema,
  type HeartbeatStatement,
  heartbeatKeyOf,
  type ObjectStore,
  parseEnvelope,
  parseHeartbeatStatement,
  parseSnapshotStatement,
  type SignedEnvelope,
  type SnapshotEntry,
  SnapshotRejectedError,
  SnapshotRejectionCode,
  signatureKeyOf,
  snapshotStatementDifference,
} from '@ferry/core/base';
import { schemaSha256, type TrustedKeySet } from '@ferry/store/signing';

/** A signature object is a few hundred bytes; anything far larger is not one. */
const MAX_SIGNATURE_BYTES = 64 * 1024;

export interface AuthenticateInput {
  readonly dataset: DatasetMetadata;
  readonly entry: SnapshotEntry;
  /** The candidate's object key under the store's location (resolved from its URI). */
  readonly key: string;
  /** The location metadata.json records (the statement's `location`). */
  readonly recordedLocation: string;
  readonly trusted: TrustedKeySet;
}

/** The key that signed the candidate, once its statement matched the metadata entry. */
export interface Authenticated {
  readonly keyId: string;
  /**
   * The signature object as read: kept in the live file's manifest, so a restart checks the live
   * file against the keys trusted then ({@link liveSignatureProblem}).
   */
  readonly signature: SignedEnvelope;
}

async function readEnvelope(
  store: ObjectStore,
  key: string,
): Promise<SignedEnvelope | { readonly problem: string } | undefined> {
  const got = await store.get(key, { maxBytes: MAX_SIGNATURE_BYTES });
  if (got.status !== 'ok') return undefined;
  return parseEnvelope(new TextDecoder().decode(got.body));
}

/**
 * Checks the candidate's signature and statement.
 * @throws SnapshotRejectedError `ERR_SNAPSHOT_UNSIGNED`, `ERR_SNAPSHOT_SIGNATURE_INVALID`,
 * `ERR_SNAPSHOT_SIGNER_UNTRUSTED` or `ERR_SNAPSHOT_STATEMENT_MISMATCH`; store errors as they come.
 */
export async function authenticateSnapshot(
  store: ObjectStore,
  input: AuthenticateInput,
): Promise<Authenticated> {
  const { entry, dataset } = input;
  const what = `Snapshot ${entry.snapshotId} of dataset '${dataset.name}'`;
  const sidecar = signatureKeyOf(input.key);
  const refuse = (code: SnapshotRejectionCode, message: string) => new SnapshotRejectedError(code, message);
  const envelope = await readEnvelope(store, sidecar);
  if (envelope === undefined) {
    throw refuse(
      SnapshotRejectionCode.unsigned,
      `${what} is not signed (${store.location}${sidecar} does not exist), but ferry_trusted_keys requires a trusted writer's signature; publish it with ferry publish --signing-key, or remove ferry_trusted_keys to serve unsigned snapshots.`,
    );
  }
  const invalid = (why: string) =>
    refuse(
      SnapshotRejectionCode.signatureInvalid,
      `${what} has an invalid signature (${why}); the signature object was altered or replaced, so republish the snapshot with the writer's key.`,
    );
  if ('problem' in envelope) throw invalid(envelope.problem);
  const check = input.trusted.check(envelope);
  if (check === 'untrusted') {
    throw refuse(
      SnapshotRejectionCode.signerUntrusted,
      `${what} is signed by key ${envelope.keyId}, which is not among the dataset's ferry_trusted_keys; add that writer's public key if it is trusted.`,
    );
  }
  if (check === 'invalid') throw invalid(`it does not verify with trusted key ${envelope.keyId}`);
  const signed = parseSnapshotStatement(envelope.statement);
  if ('problem' in signed) throw invalid(signed.problem);
  if (signed.keyId !== envelope.keyId) throw invalid(`its statement names key ${signed.keyId}`);
  const recorded = findRecordedSchema(dataset);
  const expected = expectedSnapshotStatement({
    keyId: envelope.keyId,
    location: input.recordedLocation,
    dataset,
    entry,
    schemaSha256: recorded === undefined ? '' : schemaSha256(recorded.schema),
  });
  const difference = snapshotStatementDifference(signed, expected);
  if (difference !== undefined) {
    throw refuse(
      SnapshotRejectionCode.statementMismatch,
      `${what} does not match the statement its writer signed: ${difference}; metadata.json was rewritten without the writer's key, or the signature belongs to another snapshot.`,
    );
  }
  return { keyId: envelope.keyId, signature: envelope };
}

/** What the live file's manifest records of the snapshot in it (`LocalSnapshot`). */
export interface LiveSnapshot {
  readonly snapshotId: number;
  readonly timestampMs: number;
  readonly uri: string;
  readonly checksum: string;
  readonly size: number;
  readonly schema: ArrowSchema;
  /** The signature that authenticated it when it was downloaded; absent when none was checked. */
  readonly signature?: SignedEnvelope | undefined;
}

/**
 * Why the live file a restart found may not be served under the dataset's trusted keys (undefined:
 * it may): it was downloaded unchecked (no keys then), or its signer is no longer trusted (a key
 * removed after a leak), or the signature recorded does not describe it. Without this, a restart
 * served such a file as long as metadata.json named it, and a leaked key's snapshot with a high
 * snapshot id outlived the key's removal (every later publish refused as older).
 */
export function liveSignatureProblem(
  live: LiveSnapshot,
  dataset: string,
  trusted: TrustedKeySet,
): string | undefined {
  const envelope = live.signature;
  if (envelope === undefined) {
    return 'was not verified when it was downloaded (ferry_trusted_keys was not set then)';
  }
  const check = trusted.check(envelope);
  if (check === 'untrusted') {
    return `is signed by key ${envelope.keyId}, which is not among the dataset's ferry_trusted_keys`;
  }
  if (check === 'invalid') return 'has a signature that does not verify';
  const signed = parseSnapshotStatement(envelope.statement);
  if ('problem' in signed) return `has a signature whose statement is unreadable (${signed.problem})`;
  // What the manifest records of the file, as the statement its writer signed must say it (the
  // location and engine it does not record: the statement's own stand).
  const difference = snapshotStatementDifference(
    signed,
    {
      ...signed,
      keyId: envelope.keyId,
      dataset,
      snapshotId: live.snapshotId,
      uri: live.uri,
      sha256: live.checksum.toLowerCase(),
      size: live.size,
      timestampMs: live.timestampMs,
      schemaSha256: schemaSha256(live.schema),
    },
    { recordedBy: "the live file's manifest" },
  );
  return difference === undefined ? undefined : `has a signature of another snapshot (${difference})`;
}

/** The dataset's heartbeat statement, verified with the trusted keys, or why there is none to trust. */
export async function readHeartbeat(
  store: ObjectStore,
  dataset: string,
  trusted: TrustedKeySet,
): Promise<HeartbeatStatement | { readonly problem: string }> {
  const key = heartbeatKeyOf(dataset);
  const envelope = await readEnvelope(store, key);
  if (envelope === undefined) {
    return { problem: `there is no heartbeat statement (${store.location}${key} does not exist)` };
  }
  if ('problem' in envelope) return { problem: `the heartbeat statement is unreadable: ${envelope.problem}` };
  const check = trusted.check(envelope);
  if (check === 'untrusted') {
    return { problem: `the heartbeat statement is signed by key ${envelope.keyId}, which is not trusted` };
  }
  if (check === 'invalid') return { problem: 'the heartbeat statement does not verify with its key' };
  const statement = parseHeartbeatStatement(envelope.statement);
  if ('problem' in statement)
    return { problem: `the heartbeat statement is unreadable: ${statement.problem}` };
  if (statement.keyId !== envelope.keyId) {
    return { problem: `the heartbeat statement names key ${statement.keyId}, not its signer` };
  }
  return statement;
}
