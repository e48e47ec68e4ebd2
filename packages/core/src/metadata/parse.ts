/**
 * Parsing a location's metadata.json into the typed model (see the snapshot-store spec).
 *
 * Failures are scoped as narrowly as the document allows. The document itself (JSON syntax,
 * `format-version`, `location`, `last-updated-ms`) failing throws: nothing in the location is
 * usable. A malformed dataset entry does not: it is left out of `datasets` and recorded in
 * `invalidDatasets` with its error, so only that dataset is refused ({@link getDataset} throws it)
 * while the datasets beside it keep parsing and serving. Unknown keys are ignored everywhere, and
 * top-level keys whose value is not an object are not datasets.
 */

import { OutsideLocationError } from '../errors.js';
import {
  isSafeDatasetName,
  normalizeLocation,
  recordedLocationProblem,
  snapshotKeyResolver,
} from '../location.js';
import { readArrowSchema } from './arrow-schema.js';
import { MetadataError, UnsupportedFormatVersionError } from './errors.js';
import { JsonBytes, JsonSyntaxError } from './json-bytes.js';
import {
  childPath,
  describeValue,
  expectArray,
  expectCount,
  expectNonEmptyString,
  expectRecord,
  expectString,
  Invalid,
  indexPath,
  isRecord,
  optional,
  readStringRecord,
} from './read-json.js';
import type { DatasetMetadata, SchemaEntry, SnapshotEntry, StoreMetadata } from './types.js';

/** Callers refuse (and never parse) metadata.json bodies larger than this: 16 MiB. */
export const maxMetadataBytes = 16 * 1024 * 1024;

const reservedKeys: ReadonlySet<string> = new Set(['format-version', 'location', 'last-updated-ms']);

export interface ParsedMetadata extends StoreMetadata {
  /** Datasets whose entry is malformed, by key, with the error to report for each. */
  readonly invalidDatasets: ReadonlyMap<string, MetadataError>;
}

export interface ParseOptions {
  /**
   * Whether the dataset's entry keeps all its snapshot entries (the default) or only its current one.
   * Every entry is checked either way, so a malformed one refuses the dataset as before. A reader
   * keeps the history only where it uses it (`fallback` tries older snapshots): by the store
   * contract a dataset's entries only grow, and one not kept is memory a poll does not hold.
   */
  readonly keepHistory?: (dataset: string) => boolean;
}

/**
 * Validates metadata.json (its bytes, its text, or the value `JSON.parse` gave) and returns the
 * model. Bytes are read in place ({@link JsonBytes}): the body is never decoded to one string nor
 * built into one tree, only the members the model holds are. `location` is the location the caller
 * read it from; it names the location in errors. Snapshot URIs are checked against the `location`
 * recorded in the document (a store copied elsewhere keeps working); read them through
 * {@link resolveSnapshotKey} with `metadata.location`, never directly.
 * @throws UnsupportedFormatVersionError (permanent) when `format-version` is a number other than 1.
 * @throws MetadataError when the document as a whole is unusable.
 */
export function parseMetadata(input: unknown, location: string, options: ParseOptions = {}): ParsedMetadata {
  const document = readDocument(input, location);
  const version = document.get('format-version');
  if (typeof version !== 'number') {
    const problem =
      version === undefined ? 'is missing' : `must be the number 1, got ${describeValue(version)}`;
    throw new MetadataError(location, 'format-version', problem);
  }
  if (version !== 1) throw new UnsupportedFormatVersionError(version, location);

  let recordedLocation: string;
  let lastUpdatedMs: number;
  try {
    const raw = expectString(document.get('location'), 'location');
    const problem = recordedLocationProblem(raw);
    if (problem !== undefined) throw new Invalid('location', `${problem}, got ${describeValue(raw)}`);
    recordedLocation = normalizeLocation(raw);
    lastUpdatedMs = expectCount(document.get('last-updated-ms'), 'last-updated-ms');
  } catch (error) {
    if (error instanceof Invalid) throw new MetadataError(location, error.path, error.problem);
    throw error;
  }

  const keepHistory = options.keepHistory ?? (() => true);
  const datasets = new Map<string, DatasetMetadata>();
  const invalidDatasets = new Map<string, MetadataError>();
  for (const key of document.keys()) {
    if (reservedKeys.has(key)) continue;
    const fields = document.object(key);
    if (fields === undefined) continue;
    try {
      datasets.set(key, readDataset(key, fields, recordedLocation, keepHistory(key)));
    } catch (error) {
      if (!(error instanceof Invalid)) throw error;
      invalidDatasets.set(
        key,
        new MetadataError(location, error.path, error.problem, {
          dataset: key,
          ...(error.cause === undefined ? {} : { cause: error.cause }),
        }),
      );
    }
  }
  return { formatVersion: 1, location: recordedLocation, lastUpdatedMs, datasets, invalidDatasets };
}

/**
 * The dataset's entry, or `undefined` when the location has none (nothing published yet).
 * @throws MetadataError when the dataset's entry is malformed.
 */
export function getDataset(metadata: ParsedMetadata, name: string): DatasetMetadata | undefined {
  const invalid = metadata.invalidDatasets.get(name);
  if (invalid !== undefined) throw invalid;
  return metadata.datasets.get(name);
}

/** A JSON object's members as the parser reads them: from a parsed value, or from bytes one slice at a time. */
interface Fields {
  keys(): Iterable<string>;
  get(key: string): unknown;
  /** The member when it is an object; `undefined` otherwise. */
  object(key: string): Fields | undefined;
  /** The member's elements, one at a time, when it is an array; `undefined` otherwise. */
  elements(key: string): Iterable<unknown> | undefined;
}

function valueFields(record: Record<string, unknown>): Fields {
  return {
    keys: () => Object.keys(record),
    get: (key) => record[key],
    object: (key) => {
      const value = record[key];
      return isRecord(value) ? valueFields(value) : undefined;
    },
    elements: (key) => {
      const value = record[key];
      return Array.isArray(value) ? value : undefined;
    },
  };
}

function byteFields(json: JsonBytes, start: number): Fields {
  // As JSON.parse: a repeated key keeps its first position and its last value.
  const slices = new Map<string, readonly [number, number]>();
  for (const [key, from, to] of json.members(start)) slices.set(key, [from, to]);
  const member = (key: string, first: number): number | undefined => {
    const slice = slices.get(key);
    return slice !== undefined && json.first(slice[0]) === first ? slice[0] : undefined;
  };
  return {
    keys: () => slices.keys(),
    get: (key) => {
      const slice = slices.get(key);
      return slice === undefined ? undefined : json.parse(slice[0], slice[1]);
    },
    object: (key) => {
      const from = member(key, 0x7b);
      return from === undefined ? undefined : byteFields(json, from);
    },
    elements: (key) => {
      const from = member(key, 0x5b);
      if (from === undefined) return undefined;
      return (function* () {
        for (const [a, b] of json.elements(from)) yield json.parse(a, b);
      })();
    },
  };
}

function readDocument(input: unknown, location: string): Fields {
  if (input instanceof Uint8Array) {
    if (input.byteLength > maxMetadataBytes) {
      throw new MetadataError(location, '', `the document is larger than ${maxMetadataBytes} bytes`);
    }
    const json = new JsonBytes(input);
    let start: number;
    let end: number;
    try {
      ({ start, end } = json.document());
    } catch (error) {
      if (!(error instanceof JsonSyntaxError)) throw error;
      throw new MetadataError(location, '', `not valid JSON (${error.message})`, { cause: error });
    }
    if (json.first(start) === 0x7b) return byteFields(json, start);
    const shown = json.first(start) === 0x5b ? 'an array' : describeValue(json.parse(start, end));
    throw new MetadataError(location, '', `the document must be a JSON object, got ${shown}`);
  }
  let value = input;
  if (typeof input === 'string') {
    // A UTF-16 length above the cap means at least as many UTF-8 bytes.
    if (input.length > maxMetadataBytes) {
      throw new MetadataError(location, '', `the document is larger than ${maxMetadataBytes} bytes`);
    }
    try {
      value = JSON.parse(input);
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      throw new MetadataError(location, '', `not valid JSON (${detail})`, { cause: error });
    }
  }
  if (!isRecord(value)) {
    throw new MetadataError(location, '', `the document must be a JSON object, got ${describeValue(value)}`);
  }
  return valueFields(value);
}

function readDataset(key: string, fields: Fields, location: string, keepHistory: boolean): DatasetMetadata {
  const path = childPath('', key);
  if (!isSafeDatasetName(key)) {
    throw new Invalid(
      path,
      "is not a safe dataset name (letters, digits, '_', '-', '.'; no leading '.' or '-', no '..')",
    );
  }
  const name = expectString(fields.get('name'), childPath(path, 'name'));
  if (name !== key) {
    throw new Invalid(childPath(path, 'name'), `must equal its key '${key}', got ${describeValue(name)}`);
  }
  const engine = optional(fields.get('engine'), (v) => expectNonEmptyString(v, childPath(path, 'engine')));

  const schemasPath = childPath(path, 'schemas');
  // `schemas` and `snapshots` default to empty lists, as in Spice (a writer's entry before its first snapshot).
  const schemas = (optional(fields.get('schemas'), (v) => expectArray(v, schemasPath)) ?? []).map((item, i) =>
    readSchemaEntry(item, indexPath(schemasPath, i)),
  );
  rejectDuplicates(
    schemas.map((entry) => entry.schemaId),
    schemasPath,
    'schema-id',
  );
  const currentSchemaId = expectCount(fields.get('current-schema-id'), childPath(path, 'current-schema-id'));

  // Checked before it is read (below, in the spec's order of problems), to know which entry to keep.
  const rawCurrentId = fields.get('current-snapshot-id');
  const snapshotsPath = childPath(path, 'snapshots');
  const items =
    fields.elements('snapshots') ??
    optional(fields.get('snapshots'), (v) => expectArray(v, snapshotsPath)) ??
    [];
  const snapshots: SnapshotEntry[] = [];
  const ids: number[] = [];
  const resolveKey = snapshotKeyResolver(location);
  let index = 0;
  for (const item of items) {
    const entry = readSnapshotEntry(item, indexPath(snapshotsPath, index), location, resolveKey);
    ids.push(entry.snapshotId);
    if (keepHistory || entry.snapshotId === rawCurrentId) snapshots.push(entry);
    index++;
  }
  rejectDuplicates(ids, snapshotsPath, 'snapshot-id');
  const currentSnapshotId = optional(rawCurrentId, (v) =>
    expectCount(v, childPath(path, 'current-snapshot-id')),
  );
  const properties =
    optional(fields.get('properties'), (v) => readStringRecord(v, childPath(path, 'properties'))) ?? {};

  return {
    name,
    ...(engine === undefined ? {} : { engine }),
    schemas,
    currentSchemaId,
    snapshots,
    ...(currentSnapshotId === undefined ? {} : { currentSnapshotId }),
    properties,
  };
}

function rejectDuplicates(ids: readonly number[], path: string, key: string): void {
  const seen = new Set<number>();
  ids.forEach((id, i) => {
    if (seen.has(id)) throw new Invalid(childPath(indexPath(path, i), key), `duplicates ${key} ${id}`);
    seen.add(id);
  });
}

function readSchemaEntry(value: unknown, path: string): SchemaEntry {
  const entry = expectRecord(value, path);
  return {
    schemaId: expectCount(entry['schema-id'], childPath(path, 'schema-id')),
    schema: readArrowSchema(entry.schema, childPath(path, 'schema')),
  };
}

function readSnapshotEntry(
  value: unknown,
  path: string,
  location: string,
  resolveKey: (uri: string) => string,
): SnapshotEntry {
  const entry = expectRecord(value, path);
  const field = (key: string) => childPath(path, key);
  const snapshotId = expectCount(entry['snapshot-id'], field('snapshot-id'));
  const timestampMs = expectCount(entry['timestamp-ms'], field('timestamp-ms'));
  const uri = expectNonEmptyString(entry.snapshot, field('snapshot'));
  try {
    resolveKey(uri);
  } catch (error) {
    if (error instanceof OutsideLocationError) {
      throw new Invalid(field('snapshot'), `is outside the location '${location}' (${error.reason})`, error);
    }
    throw error;
  }
  const checksum = expectNonEmptyString(entry['snapshot-checksum'], field('snapshot-checksum'));
  const checksumAlgorithm = expectNonEmptyString(
    entry['snapshot-checksum-algorithm'],
    field('snapshot-checksum-algorithm'),
  );
  const size = expectCount(entry['snapshot-size'], field('snapshot-size'));
  const engine = optional(entry['snapshot-engine'], (v) => expectNonEmptyString(v, field('snapshot-engine')));
  const rowCount = optional(entry['snapshot-row-count'], (v) => expectCount(v, field('snapshot-row-count')));
  const lastUpdatedAtMs = optional(entry['snapshot-last-updated-at-ms'], (v) =>
    expectCount(v, field('snapshot-last-updated-at-ms')),
  );
  return {
    snapshotId,
    timestampMs,
    uri,
    checksum,
    checksumAlgorithm,
    size,
    ...(engine === undefined ? {} : { engine }),
    ...(rowCount === undefined ? {} : { rowCount }),
    ...(lastUpdatedAtMs === undefined ? {} : { lastUpdatedAtMs }),
  };
}
