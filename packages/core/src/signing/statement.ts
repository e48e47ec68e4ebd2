/**
 * What a Ferry writer signs, as canonical text: a context line naming the kind of statement and its
 * version, then one `name value` line per field in a fixed order (values JSON-encoded, so no value
 * can forge a line). Two kinds: the snapshot statement (everything metadata.json says about one
 * snapshot, signed beside the snapshot) and the heartbeat statement ("snapshot N is current as of
 * T, valid until T + period", re-signed while nothing changes). The signed envelope (a sidecar
 * JSON object) carries the statement text itself, so a reader verifies the exact bytes that were
 * signed and then compares their fields with what it read. Pure: the signing and verifying are
 * `@ferry/store`'s (`signing.ts`), the object I/O the writer's and `@ferry/snapshots`'.
 */
import type { ArrowSchema, DatasetMetadata, SnapshotEntry } from '../metadata/types.js';

export const SNAPSHOT_STATEMENT = 'ferry-snapshot-statement-v1';
export const HEARTBEAT_STATEMENT = 'ferry-heartbeat-statement-v1';
/** The envelope's `format`. */
export const SIGNATURE_FORMAT = 'ferry-signature-v1';
/** Appended to a snapshot's key for its signature object (a Spice reader never reads it). */
export const SIGNATURE_SUFFIX = '.ferry-sig.json';
/** Where a location's heartbeat statements live, one object per dataset. */
export const HEARTBEAT_PREFIX = 'ferry-heartbeats/';

/** The signature object of the snapshot object at `snapshotKey`. */
export function signatureKeyOf(snapshotKey: string): string {
  return `${snapshotKey}${SIGNATURE_SUFFIX}`;
}

/** The heartbeat object of `dataset` under a location. */
export function heartbeatKeyOf(dataset: string): string {
  return `${HEARTBEAT_PREFIX}${dataset}${SIGNATURE_SUFFIX}`;
}

export interface SnapshotStatement {
  readonly keyId: string;
  /** The location metadata.json records (`location`). */
  readonly location: string;
  readonly dataset: string;
  readonly snapshotId: number;
  readonly uri: string;
  /** Lowercase hex. */
  readonly sha256: string;
  readonly size: number;
  /** Lowercase; the entry's `snapshot-engine`, else the dataset's `engine`, else empty. */
  readonly engine: string;
  /** SHA-256 (hex) of {@link canonicalJson} of the recorded schema (`current-schema-id`). */
  readonly schemaSha256: string;
  readonly timestampMs: number;
  /**
   * SHA-256 (hex) of the snapshot's block manifest when the writer published one (delta
   * downloads), else null: a reader that assembles a file from a manifest must find the manifest's
   * digest here, so a manifest and a statement of two publications cannot be mixed.
   */
  readonly blocksSha256: string | null;
}

export interface HeartbeatStatement {
  readonly keyId: string;
  readonly location: string;
  readonly dataset: string;
  /** The dataset's current snapshot when the statement was signed. */
  readonly snapshotId: number;
  readonly sha256: string;
  readonly issuedAtMs: number;
  readonly validUntilMs: number;
}

type FieldKind = 'string' | 'integer' | 'string-or-null';

interface Field<T> {
  readonly name: string;
  readonly key: keyof T & string;
  readonly kind: FieldKind;
}

const SNAPSHOT_FIELDS: readonly Field<SnapshotStatement>[] = [
  { name: 'key-id', key: 'keyId', kind: 'string' },
  { name: 'location', key: 'location', kind: 'string' },
  { name: 'dataset', key: 'dataset', kind: 'string' },
  { name: 'snapshot-id', key: 'snapshotId', kind: 'integer' },
  { name: 'snapshot', key: 'uri', kind: 'string' },
  { name: 'sha256', key: 'sha256', kind: 'string' },
  { name: 'size', key: 'size', kind: 'integer' },
  { name: 'engine', key: 'engine', kind: 'string' },
  { name: 'schema-sha256', key: 'schemaSha256', kind: 'string' },
  { name: 'timestamp-ms', key: 'timestampMs', kind: 'integer' },
  { name: 'blocks-sha256', key: 'blocksSha256', kind: 'string-or-null' },
];

const HEARTBEAT_FIELDS: readonly Field<HeartbeatStatement>[] = [
  { name: 'key-id', key: 'keyId', kind: 'string' },
  { name: 'location', key: 'location', kind: 'string' },
  { name: 'dataset', key: 'dataset', kind: 'string' },
  { name: 'snapshot-id', key: 'snapshotId', kind: 'integer' },
  { name: 'sha256', key: 'sha256', kind: 'string' },
  { name: 'issued-at-ms', key: 'issuedAtMs', kind: 'integer' },
  { name: 'valid-until-ms', key: 'validUntilMs', kind: 'integer' },
];

function render<T>(context: string, fields: readonly Field<T>[], statement: T): string {
  const lines = fields.map((field) => `${field.name} ${JSON.stringify(statement[field.key])}`);
  return `${[context, ...lines].join('\n')}\n`;
}

function parse<T>(
  context: string,
  fields: readonly Field<T>[],
  text: string,
): T | { readonly problem: string } {
  const lines = text.split('\n');
  if (lines.pop() !== '') return { problem: 'the statement does not end with a line break' };
  if (lines[0] !== context) return { problem: `the statement is not a ${context}` };
  if (lines.length !== fields.length + 1) {
    return {
      problem: `the statement has ${lines.length - 1} fields, not the ${fields.length} of a ${context}`,
    };
  }
  const statement: Record<string, unknown> = {};
  for (const [index, field] of fields.entries()) {
    const line = lines[index + 1] ?? '';
    const prefix = `${field.name} `;
    if (!line.startsWith(prefix))
      return { problem: `field ${index + 1} of the statement is not ${field.name}` };
    let value: unknown;
    try {
      value = JSON.parse(line.slice(prefix.length));
    } catch {
      return { problem: `the statement's ${field.name} is not a JSON value` };
    }
    const fits =
      field.kind === 'integer'
        ? Number.isSafeInteger(value) && (value as number) >= 0
        : typeof value === 'string' || (field.kind === 'string-or-null' && value === null);
    if (!fits)
      return {
        problem: `the statement's ${field.name} is not ${field.kind === 'integer' ? 'a whole number' : 'a string'}`,
      };
    statement[field.key] = value;
  }
  return statement as T;
}

export function snapshotStatementText(statement: SnapshotStatement): string {
  return render(SNAPSHOT_STATEMENT, SNAPSHOT_FIELDS, statement);
}

export function parseSnapshotStatement(text: string): SnapshotStatement | { readonly problem: string } {
  return parse(SNAPSHOT_STATEMENT, SNAPSHOT_FIELDS, text);
}

export function heartbeatStatementText(statement: HeartbeatStatement): string {
  return render(HEARTBEAT_STATEMENT, HEARTBEAT_FIELDS, statement);
}

export function parseHeartbeatStatement(text: string): HeartbeatStatement | { readonly problem: string } {
  return parse(HEARTBEAT_STATEMENT, HEARTBEAT_FIELDS, text);
}

/** JSON with object keys sorted at every level: one text per value, whatever order it was built in. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The text whose SHA-256 is a statement's `schema-sha256`. */
export function schemaCanonicalText(schema: ArrowSchema): string {
  return canonicalJson(schema);
}

/** What metadata.json says about `entry`, as the statement a trusted writer must have signed. */
export function expectedSnapshotStatement(input: {
  readonly keyId: string;
  readonly location: string;
  readonly dataset: DatasetMetadata;
  readonly entry: SnapshotEntry;
  readonly schemaSha256: string;
  readonly blocksSha256?: string | null;
}): SnapshotStatement {
  const { entry, dataset } = input;
  return {
    keyId: input.keyId,
    location: input.location,
    dataset: dataset.name,
    snapshotId: entry.snapshotId,
    uri: entry.uri,
    sha256: entry.checksum.toLowerCase(),
    size: entry.size,
    engine: (entry.engine ?? dataset.engine ?? '').toLowerCase(),
    schemaSha256: input.schemaSha256,
    timestampMs: entry.timestampMs,
    blocksSha256: input.blocksSha256 ?? null,
  };
}

/**
 * The first field in which the signed statement differs from the expected one, said as
 * "its sha256 is 'a…' where metadata.json records 'b…'" (`recordedBy`: what else records the
 * expected one, such as the live file's manifest); undefined when they agree. `blocks-sha256` is
 * compared only when `checkBlocks` (a reader that uses the block manifest).
 */
export function snapshotStatementDifference(
  signed: SnapshotStatement,
  expected: SnapshotStatement,
  options: { readonly checkBlocks?: boolean; readonly recordedBy?: string } = {},
): string | undefined {
  for (const field of SNAPSHOT_FIELDS) {
    if (field.key === 'blocksSha256' && options.checkBlocks !== true) continue;
    const a = signed[field.key];
    const b = expected[field.key];
    if (a !== b) {
      return `its ${field.name} is ${JSON.stringify(a)} where ${options.recordedBy ?? 'metadata.json'} records ${JSON.stringify(b)}`;
    }
  }
  return undefined;
}

/** The sidecar object: the statement text exactly as signed, the key that signed it, the signature. */
export interface SignedEnvelope {
  readonly keyId: string;
  readonly statement: string;
  /** Base64 of the 64-byte Ed25519 signature of the UTF-8 bytes of `statement`. */
  readonly signature: string;
}

export function envelopeText(envelope: SignedEnvelope): string {
  const wire = {
    format: SIGNATURE_FORMAT,
    'key-id': envelope.keyId,
    statement: envelope.statement,
    signature: envelope.signature,
  };
  return `${JSON.stringify(wire, null, 2)}\n`;
}

export function parseEnvelope(text: string): SignedEnvelope | { readonly problem: string } {
  let wire: unknown;
  try {
    wire = JSON.parse(text);
  } catch {
    return { problem: 'the signature object is not JSON' };
  }
  const record = (wire ?? {}) as Record<string, unknown>;
  if (record.format !== SIGNATURE_FORMAT) {
    return { problem: `the signature object's format is not ${SIGNATURE_FORMAT}` };
  }
  const keyId = record['key-id'];
  const { statement, signature } = record;
  if (typeof keyId !== 'string' || typeof statement !== 'string' || typeof signature !== 'string') {
    return { problem: 'the signature object lacks key-id, statement or signature' };
  }
  return { keyId, statement, signature };
}
