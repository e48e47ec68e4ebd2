/**
 * The writer's half of metadata.json, as a pure function: given the document read (or nothing)
 * and a freshly uploaded snapshot, return the document to write back conditionally. It only ever
 * appends: other datasets, unknown keys and old entries are carried over untouched, so a Spice
 * writer sharing the location loses nothing. The result always round-trips through parseMetadata.
 */

import { normalizeLocation, recordedLocationProblem, resolveSnapshotKey } from '../location.js';
import { parseArrowSchema, serializeArrowSchema } from './arrow-schema.js';
import { IncompatibleSchemaError, MetadataError } from './errors.js';
import { getDataset, parseMetadata } from './parse.js';
import { recordedSchema } from './queries.js';
import { childPath, indexPath, isRecord } from './read-json.js';
import { schemaDifference } from './schema.js';
import type { ArrowSchema, DatasetMetadata } from './types.js';

export interface AppendSnapshotInput {
  /** The location published to; must match the document's recorded `location`. */
  readonly location: string;
  readonly dataset: string;
  /** Engine of the file (`duckdb`, `sqlite`): written as the dataset's `engine` and `snapshot-engine`. */
  readonly engine: string;
  /** The Arrow schema of the table in the file. */
  readonly schema: ArrowSchema;
  /** Absolute URI of the uploaded file, under `location`. */
  readonly uri: string;
  /** SHA-256 of the file, hex. */
  readonly checksum: string;
  readonly size: number;
  readonly rowCount?: number;
  /** When the snapshot was taken (`timestamp-ms`: its upload's start, the time in its key). */
  readonly timestampMs: number;
  /**
   * When this document is written (`last-updated-ms`; Spice's writer sets it to now on every write).
   * Default `timestampMs`.
   */
  readonly writtenAtMs?: number;
  /** When the source data last changed. */
  readonly lastUpdatedAtMs?: number;
}

const sha256Hex = /^[0-9a-f]{64}$/;

/**
 * The metadata.json object with `input` appended as the dataset's new current snapshot: id =
 * highest existing + 1 (0 for the first), `current-snapshot-id` and `last-updated-ms` set, and a new
 * schema entry (id = highest + 1, made current) when `input.schema` widens the recorded one by
 * appending fields. Creates the document when `existing` is `undefined`. Unchanged parts of
 * `existing` (a parsed object, or its text) are shared, not copied.
 * @throws IncompatibleSchemaError when the schema neither equals nor widens the recorded one.
 * @throws OutsideLocationError when `uri` is not under the location.
 * @throws ArrowSchemaError when `input.schema` is not valid Arrow JSON.
 * @throws MetadataError when `existing` or this dataset's entry in it is invalid, or the resulting
 * entry would be (unsafe dataset name, negative size, bad checksum, ...).
 * @throws UnsupportedFormatVersionError when `existing` is not format-version 1.
 */
export function appendSnapshot(existing: unknown, input: AppendSnapshotInput): Record<string, unknown> {
  const { dataset } = input;
  const problem = recordedLocationProblem(input.location);
  if (problem !== undefined) throw new MetadataError(input.location, 'location', problem);
  const location = normalizeLocation(input.location);

  let raw: Record<string, unknown>;
  let current: DatasetMetadata | undefined;
  if (existing === undefined) {
    raw = { 'format-version': 1, location };
  } else {
    const parsed = parseMetadata(existing, input.location);
    if (parsed.location !== location) {
      throw new MetadataError(input.location, 'location', `records '${parsed.location}', not this location`);
    }
    current = getDataset(parsed, dataset);
    raw = (typeof existing === 'string' ? JSON.parse(existing) : existing) as Record<string, unknown>;
  }

  resolveSnapshotKey(location, input.uri);
  const schema = parseArrowSchema(input.schema, `dataset '${dataset}'`);
  const rawEntry = isRecord(raw[dataset]) ? (raw[dataset] as Record<string, unknown>) : {};
  const oldSchemas = Array.isArray(rawEntry.schemas) ? rawEntry.schemas : [];
  const oldSnapshots = Array.isArray(rawEntry.snapshots) ? rawEntry.snapshots : [];

  const snapshotId = nextId(current?.snapshots.map((entry) => entry.snapshotId) ?? []);
  const checksum = input.checksum.toLowerCase();
  if (!sha256Hex.test(checksum)) {
    const path = childPath(
      indexPath(childPath(childPath('', dataset), 'snapshots'), oldSnapshots.length),
      'snapshot-checksum',
    );
    throw new MetadataError(input.location, path, 'must be a hex SHA-256 digest (64 characters)', {
      dataset,
    });
  }

  const { schemaId, newSchemaEntry } = schemaChange(current, dataset, schema);
  const snapshotEntry = {
    'snapshot-id': snapshotId,
    'timestamp-ms': input.timestampMs,
    snapshot: input.uri,
    'snapshot-checksum': checksum,
    'snapshot-checksum-algorithm': 'SHA256',
    'snapshot-size': input.size,
    'snapshot-engine': input.engine,
    ...(input.rowCount === undefined ? {} : { 'snapshot-row-count': input.rowCount }),
    ...(input.lastUpdatedAtMs === undefined ? {} : { 'snapshot-last-updated-at-ms': input.lastUpdatedAtMs }),
  };
  const entry = {
    ...rawEntry,
    name: dataset,
    engine: input.engine,
    schemas: newSchemaEntry === undefined ? oldSchemas : [...oldSchemas, newSchemaEntry],
    'current-schema-id': schemaId,
    snapshots: [...oldSnapshots, snapshotEntry],
    'current-snapshot-id': snapshotId,
  };
  const next = { ...raw, 'last-updated-ms': input.writtenAtMs ?? input.timestampMs, [dataset]: entry };

  const check = parseMetadata(next, input.location);
  const invalid = check.invalidDatasets.get(dataset);
  if (invalid !== undefined) throw invalid;
  return next;
}

function nextId(ids: readonly number[]): number {
  return ids.length === 0 ? 0 : Math.max(...ids) + 1;
}

/** Which schema id the new snapshot is recorded under, and the schema entry to append, if any. */
function schemaChange(
  current: DatasetMetadata | undefined,
  dataset: string,
  schema: ArrowSchema,
): { schemaId: number; newSchemaEntry?: Record<string, unknown> } {
  if (current === undefined || current.schemas.length === 0) {
    return { schemaId: 0, newSchemaEntry: { 'schema-id': 0, schema: serializeArrowSchema(schema) } };
  }
  const recorded = recordedSchema(current);
  const difference = schemaDifference(recorded.schema, schema);
  if (difference === undefined) return { schemaId: recorded.schemaId };
  const prefix = { fields: schema.fields.slice(0, recorded.schema.fields.length), metadata: {} };
  // Not equal, yet the recorded fields are an exact prefix: fields were only appended.
  const widened = schemaDifference(recorded.schema, prefix) === undefined;
  if (!widened) throw new IncompatibleSchemaError(dataset, recorded.schemaId, difference);
  const schemaId = nextId(current.schemas.map((entry) => entry.schemaId));
  return { schemaId, newSchemaEntry: { 'schema-id': schemaId, schema: serializeArrowSchema(schema) } };
}
