import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OutsideLocationError } from '../src/errors.js';
import {
  type AppendSnapshotInput,
  type ArrowField,
  type ArrowSchema,
  ArrowSchemaError,
  appendSnapshot,
  currentSnapshot,
  getDataset,
  IncompatibleSchemaError,
  MetadataError,
  parseMetadata,
  recordedSchema,
} from '../src/metadata/index.js';

const fixtureText = readFileSync(
  new URL('../../test-support/fixtures/spice-store/metadata.json', import.meta.url),
  'utf8',
);
const loc = 's3://example-bucket/snapshots/';
const digest = 'ab'.repeat(32);

function field(name: string, data_type: ArrowField['data_type'], nullable = true): ArrowField {
  return { name, data_type, nullable, dict_id: 0, dict_is_ordered: false, metadata: {} };
}

const ordersSchema: ArrowSchema = {
  fields: [
    field('id', 'Int64', false),
    field('customer', 'Utf8'),
    field('amount', { Decimal128: [18, 2] }),
    field('placed_at', { Timestamp: ['Microsecond', null] }),
    field('shipped', 'Boolean'),
    field('day', 'Date32'),
  ],
  metadata: {},
};

function input(overrides: Partial<AppendSnapshotInput> = {}): AppendSnapshotInput {
  return {
    location: loc,
    dataset: 'orders',
    engine: 'duckdb',
    schema: ordersSchema,
    uri: `${loc}month=2026-11/day=2026-11-30/dataset=orders/orders_20261130T080000Z.duckdb`,
    checksum: digest,
    size: 4096,
    rowCount: 9,
    timestampMs: 1796025600000,
    lastUpdatedAtMs: 1796025599000,
    ...overrides,
  };
}

function roundTrip(document: unknown) {
  return parseMetadata(JSON.parse(JSON.stringify(document)), loc);
}

describe('appendSnapshot', () => {
  it('creates the document on the first publish', () => {
    const doc = appendSnapshot(
      undefined,
      input({ dataset: 'users', engine: 'sqlite', uri: `${loc}u.sqlite` }),
    );
    expect(doc).toEqual({
      'format-version': 1,
      location: loc,
      'last-updated-ms': 1796025600000,
      users: {
        name: 'users',
        engine: 'sqlite',
        schemas: [
          {
            'schema-id': 0,
            schema: { fields: ordersSchema.fields, metadata: {} },
          },
        ],
        'current-schema-id': 0,
        snapshots: [
          {
            'snapshot-id': 0,
            'timestamp-ms': 1796025600000,
            snapshot: `${loc}u.sqlite`,
            'snapshot-checksum': digest,
            'snapshot-checksum-algorithm': 'SHA256',
            'snapshot-size': 4096,
            'snapshot-engine': 'sqlite',
            'snapshot-row-count': 9,
            'snapshot-last-updated-at-ms': 1796025599000,
          },
        ],
        'current-snapshot-id': 0,
      },
    });
    expect(Object.keys(doc)).toEqual(['format-version', 'location', 'last-updated-ms', 'users']);
    const users = getDataset(roundTrip(doc), 'users');
    expect(users?.currentSnapshotId).toBe(0);
    expect(users && recordedSchema(users).schema).toEqual(ordersSchema);
  });

  it('appends the next id to an existing dataset without a new schema entry', () => {
    const existing = JSON.parse(fixtureText);
    const before = structuredClone(existing);
    const doc = appendSnapshot(existing, input({ checksum: digest.toUpperCase() }));
    expect(existing).toEqual(before);
    const metadata = roundTrip(doc);
    const orders = getDataset(metadata, 'orders');
    expect(orders?.snapshots.map((s) => s.snapshotId)).toEqual([0, 1, 2]);
    expect(orders?.currentSnapshotId).toBe(2);
    expect(orders?.schemas).toHaveLength(1);
    expect(orders?.currentSchemaId).toBe(0);
    expect(orders?.properties).toEqual({ 'writer-generation': '1' });
    expect(orders && currentSnapshot(orders)).toEqual({
      snapshotId: 2,
      timestampMs: 1796025600000,
      uri: input().uri,
      checksum: digest,
      checksumAlgorithm: 'SHA256',
      size: 4096,
      engine: 'duckdb',
      rowCount: 9,
      lastUpdatedAtMs: 1796025599000,
    });
    expect(metadata.lastUpdatedMs).toBe(1796025600000);
    expect(metadata.datasets.get('users')).toEqual(parseMetadata(fixtureText, loc).datasets.get('users'));
  });

  it('accepts the existing document as text and chains publishes', () => {
    const first = appendSnapshot(fixtureText, input());
    const second = appendSnapshot(first, input({ timestampMs: 1796029200000 }));
    const orders = getDataset(roundTrip(second), 'orders');
    expect(orders?.snapshots.map((s) => s.snapshotId)).toEqual([0, 1, 2, 3]);
    expect(orders?.currentSnapshotId).toBe(3);
  });

  it('records a widened schema as a new current schema entry', () => {
    const widened: ArrowSchema = { ...ordersSchema, fields: [...ordersSchema.fields, field('note', 'Utf8')] };
    const doc = appendSnapshot(fixtureText, input({ schema: widened }));
    const orders = getDataset(roundTrip(doc), 'orders');
    expect(orders?.schemas.map((s) => s.schemaId)).toEqual([0, 1]);
    expect(orders?.currentSchemaId).toBe(1);
    expect(orders && recordedSchema(orders).schema).toEqual(widened);
    const next = appendSnapshot(doc, input({ schema: widened }));
    expect(getDataset(roundTrip(next), 'orders')?.schemas).toHaveLength(2);
  });

  it.each([
    [
      'a changed type',
      {
        ...ordersSchema,
        fields: ordersSchema.fields.map((f) => (f.name === 'amount' ? field('amount', 'Float64') : f)),
      },
      `field 2 is 'amount Float64', expected 'amount {"Decimal128":[18,2]}'`,
    ],
    [
      'a dropped field',
      { ...ordersSchema, fields: ordersSchema.fields.slice(0, 5) },
      "missing field 5 'day Date32'",
    ],
    [
      'a field inserted in the middle',
      {
        ...ordersSchema,
        fields: [ordersSchema.fields[0] as ArrowField, field('x', 'Utf8'), ...ordersSchema.fields.slice(1)],
      },
      "field 1 is 'x Utf8', expected 'customer Utf8'",
    ],
    [
      'a nullability change',
      { ...ordersSchema, fields: [field('id', 'Int64', true), ...ordersSchema.fields.slice(1)] },
      "field 0 is 'id Int64', expected 'id Int64 NOT NULL'",
    ],
  ])('refuses %s', (_name, schema, difference) => {
    let caught: unknown;
    try {
      appendSnapshot(fixtureText, input({ schema }));
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(IncompatibleSchemaError);
    expect(caught).toMatchObject({
      code: 'ERR_INCOMPATIBLE_SCHEMA',
      dataset: 'orders',
      difference,
      message:
        `Cannot publish dataset 'orders': its schema is incompatible with recorded schema 0 (${difference}); ` +
        'keep the recorded fields in order and only append new ones, or publish a new dataset.',
    });
  });

  it('preserves unknown keys and other datasets untouched', () => {
    const existing = JSON.parse(fixtureText);
    existing['writer-info'] = { by: 'spice', version: '1.9' };
    existing.orders['x-retention'] = 'P30D';
    existing.orders.snapshots[0]['x-origin'] = 'spice';
    existing.orders.schemas[0]['x-note'] = 1;
    existing.legacy = { name: 'legacy', schemas: 'broken' };
    const doc = appendSnapshot(existing, input());
    expect(doc['writer-info']).toEqual({ by: 'spice', version: '1.9' });
    expect(doc.users).toEqual(existing.users);
    expect(doc.legacy).toEqual({ name: 'legacy', schemas: 'broken' });
    const orders = doc.orders as Record<string, unknown> & { snapshots: unknown[]; schemas: unknown[] };
    expect(orders['x-retention']).toBe('P30D');
    expect(orders.snapshots[0]).toEqual(existing.orders.snapshots[0]);
    expect(orders.schemas[0]).toEqual(existing.orders.schemas[0]);
    expect(Object.keys(doc)).toEqual(Object.keys(existing));
  });

  it('refuses to append to a malformed entry of the same dataset', () => {
    const existing = JSON.parse(fixtureText);
    existing.orders.snapshots[0]['snapshot-size'] = -1;
    expect(() => appendSnapshot(existing, input())).toThrow(MetadataError);
    expect(() => appendSnapshot(existing, input())).toThrow('orders.snapshots[0].snapshot-size');
  });

  it('refuses a URI outside the location', () => {
    expect(() => appendSnapshot(fixtureText, input({ uri: 's3://other/snapshots/x.duckdb' }))).toThrow(
      OutsideLocationError,
    );
  });

  it('refuses a location that differs from the recorded one', () => {
    expect(() => appendSnapshot(fixtureText, input({ location: 's3://example-bucket/other/' }))).toThrow(
      "Invalid metadata.json in location 's3://example-bucket/other/': location: records 's3://example-bucket/snapshots/', not this location; fix the writer that publishes this location.",
    );
  });

  it('refuses an invalid Arrow schema', () => {
    const schema = { fields: [field('x', 'Float128')], metadata: {} };
    expect(() => appendSnapshot(undefined, input({ schema }))).toThrow(ArrowSchemaError);
    expect(() => appendSnapshot(undefined, input({ schema }))).toThrow(
      "Invalid Arrow schema for dataset 'orders': fields[0].data_type: unknown Arrow type 'Float128';",
    );
  });

  it.each([
    [
      { checksum: 'not-hex' },
      'orders.snapshots[0].snapshot-checksum: must be a hex SHA-256 digest (64 characters)',
    ],
    [{ size: -1 }, 'orders.snapshots[0].snapshot-size: must be a non-negative safe integer, got -1'],
    [
      { rowCount: 1.5 },
      'orders.snapshots[0].snapshot-row-count: must be a non-negative safe integer, got 1.5',
    ],
    [{ engine: '' }, 'orders.engine: must be a non-empty string, got ""'],
  ])('refuses input %j', (overrides, detail) => {
    expect(() => appendSnapshot(undefined, input(overrides))).toThrow(
      `Invalid metadata.json in location '${loc}': ${detail}; dataset 'orders' is refused until its writer publishes a valid entry.`,
    );
  });

  it('refuses an unsafe dataset name', () => {
    expect(() => appendSnapshot(undefined, input({ dataset: '../etc' }))).toThrow(
      `["../etc"]: is not a safe dataset name`,
    );
  });
});
