import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  getDataset,
  MetadataError,
  maxMetadataBytes,
  parseMetadata,
  UnsupportedFormatVersionError,
} from '../src/metadata/index.js';

const fixtureText = readFileSync(
  new URL('../../test-support/fixtures/spice-store/metadata.json', import.meta.url),
  'utf8',
);
const loc = 's3://example-bucket/snapshots/';
const prefix = `Invalid metadata.json in location '${loc}': `;

// biome-ignore lint/suspicious/noExplicitAny: broken variants are built by mutating the parsed JSON freely.
type Doc = Record<string, any>;

/** A fresh, mutable copy of the fixture document for building broken variants. */
function fixture(): Doc {
  return JSON.parse(fixtureText);
}

/** The document as a reader gets it from the store: its UTF-8 bytes, read in place. */
function bytesOf(doc: Doc | string): Uint8Array {
  return new TextEncoder().encode(typeof doc === 'string' ? doc : JSON.stringify(doc, null, 1));
}

function field(name: string, data_type: unknown, nullable: boolean) {
  return { name, data_type, nullable, dict_id: 0, dict_is_ordered: false, metadata: {} };
}

describe('parseMetadata on the Spice fixture', () => {
  const metadata = parseMetadata(fixtureText, loc);

  it('reads the reserved keys and both datasets', () => {
    expect(metadata.formatVersion).toBe(1);
    expect(metadata.location).toBe(loc);
    expect(metadata.lastUpdatedMs).toBe(1795944600000);
    expect([...metadata.datasets.keys()]).toEqual(['orders', 'users']);
    expect(metadata.invalidDatasets.size).toBe(0);
  });

  it('reads a snapshot entry in full', () => {
    const orders = getDataset(metadata, 'orders');
    expect(orders?.snapshots[1]).toEqual({
      snapshotId: 1,
      timestampMs: 1795942800000,
      uri: 's3://example-bucket/snapshots/month=2026-11/day=2026-11-29/dataset=orders/orders_20261129T090000Z.duckdb',
      checksum: 'c5e0d87aa6dfe443d564868ba2c07628b84914add11f9808a0449edcaca4096f',
      checksumAlgorithm: 'SHA256',
      size: 536576,
      engine: 'duckdb',
      rowCount: 8,
      lastUpdatedAtMs: 1795942799000,
    });
  });

  it('reads the orders dataset and its schema in full', () => {
    const orders = getDataset(metadata, 'orders');
    expect(orders).toMatchObject({
      name: 'orders',
      engine: 'duckdb',
      currentSchemaId: 0,
      currentSnapshotId: 1,
      properties: { 'writer-generation': '1' },
    });
    expect(orders?.snapshots.map((s) => s.snapshotId)).toEqual([0, 1]);
    expect(orders?.schemas).toEqual([
      {
        schemaId: 0,
        schema: {
          fields: [
            field('id', 'Int64', false),
            field('customer', 'Utf8', true),
            field('amount', { Decimal128: [18, 2] }, true),
            field('placed_at', { Timestamp: ['Microsecond', null] }, true),
            field('shipped', 'Boolean', true),
            field('day', 'Date32', true),
          ],
          metadata: {},
        },
      },
    ]);
  });

  it('gives a dataset without properties an empty map', () => {
    const users = getDataset(metadata, 'users');
    expect(users?.properties).toEqual({});
    expect(users?.engine).toBe('sqlite');
    expect(users?.currentSnapshotId).toBe(0);
  });

  it('accepts the already-parsed value and the bytes as well as the text', () => {
    expect(parseMetadata(fixture(), loc)).toEqual(metadata);
    expect(parseMetadata(bytesOf(fixtureText), loc)).toEqual(metadata);
  });

  it('returns undefined for a dataset the location does not have', () => {
    expect(getDataset(metadata, 'missing')).toBeUndefined();
  });
});

describe('parseMetadata leniency', () => {
  it('ignores unknown keys and non-object top-level values', () => {
    const doc = fixture();
    doc['writer-info'] = 'spice 1.9';
    doc.extra = [1, 2];
    doc.orders['future-key'] = { anything: true };
    doc.orders.snapshots[0]['snapshot-future'] = 1;
    const metadata = parseMetadata(doc, loc);
    expect([...metadata.datasets.keys()]).toEqual(['orders', 'users']);
  });

  it('stringifies non-string property values and drops nulls', () => {
    const doc = fixture();
    doc.orders.properties = { generation: 3, enabled: true, note: 'x', gone: null, nested: { a: 1 } };
    expect(getDataset(parseMetadata(doc, loc), 'orders')?.properties).toEqual({
      generation: '3',
      enabled: 'true',
      note: 'x',
      nested: '{"a":1}',
    });
  });

  it('reads a dataset without schemas or snapshots as one with empty lists, as Spice does', () => {
    const doc = fixture();
    delete doc.orders.schemas;
    delete doc.orders.snapshots;
    delete doc.orders['current-snapshot-id'];
    const orders = getDataset(parseMetadata(doc, loc), 'orders');
    expect(orders?.schemas).toEqual([]);
    expect(orders?.snapshots).toEqual([]);
    expect(orders?.currentSnapshotId).toBeUndefined();
    // The same from the bytes, which the runtime parses.
    const fromBytes = getDataset(parseMetadata(Buffer.from(JSON.stringify(doc)), loc), 'orders');
    expect(fromBytes).toEqual(orders);
  });

  it('treats null optional fields as absent', () => {
    const doc = fixture();
    const entry = doc.orders.snapshots[0];
    entry['snapshot-engine'] = null;
    entry['snapshot-row-count'] = null;
    entry['snapshot-last-updated-at-ms'] = null;
    doc.orders.engine = null;
    doc.orders.properties = null;
    doc.orders['current-snapshot-id'] = null;
    const orders = getDataset(parseMetadata(doc, loc), 'orders');
    expect(orders?.snapshots[0]).toEqual({
      snapshotId: 0,
      timestampMs: 1795939200000,
      uri: entry.snapshot,
      checksum: entry['snapshot-checksum'],
      checksumAlgorithm: 'SHA256',
      size: 536576,
    });
    expect(orders?.engine).toBeUndefined();
    expect(orders?.currentSnapshotId).toBeUndefined();
    expect(orders?.properties).toEqual({});
  });

  it('normalises the recorded location to end in a slash', () => {
    const doc = fixture();
    doc.location = 's3://example-bucket/snapshots';
    expect(parseMetadata(doc, loc).location).toBe(loc);
  });
});

describe('parseMetadata document errors', () => {
  const cases: [string, (doc: Doc) => unknown, string][] = [
    ['format-version missing', (d) => delete d['format-version'], 'format-version: is missing'],
    [
      'format-version as a string',
      (d) => {
        d['format-version'] = '1';
      },
      'format-version: must be the number 1, got "1"',
    ],
    ['location missing', (d) => delete d.location, 'location: is missing'],
    [
      'location not absolute',
      (d) => {
        d.location = 'snapshots/';
      },
      'location: must be an absolute URI such as s3://bucket/prefix/ or file:///dir/, got "snapshots/"',
    ],
    [
      'last-updated-ms negative',
      (d) => {
        d['last-updated-ms'] = -1;
      },
      'last-updated-ms: must be a non-negative safe integer, got -1',
    ],
    [
      'last-updated-ms fractional',
      (d) => {
        d['last-updated-ms'] = 1.5;
      },
      'last-updated-ms: must be a non-negative safe integer, got 1.5',
    ],
  ];

  it.each(cases)('%s', (_name, mutate, detail) => {
    const doc = fixture();
    mutate(doc);
    for (const input of [doc, bytesOf(doc)]) {
      expect(() => parseMetadata(input, loc)).toThrow(MetadataError);
      expect(() => parseMetadata(input, loc)).toThrow(
        `${prefix}${detail}; fix the writer that publishes this location.`,
      );
    }
  });

  it.each([
    ['text', '{"format-version": 1,', /^Invalid metadata\.json in location '.+': not valid JSON \(/],
    [
      'bytes',
      bytesOf('{"format-version": 1,'),
      /^Invalid metadata\.json in location '.+': not valid JSON \(Unexpected end of JSON input, expected a property name in double quotes at byte 21\)/,
    ],
  ])('refuses %s that is not JSON', (_form, input, message) => {
    const error = catchError(() => parseMetadata(input, loc));
    expect(error).toBeInstanceOf(MetadataError);
    expect(error).toMatchObject({ code: 'ERR_METADATA_INVALID', path: '', permanent: false });
    expect((error as Error).message).toMatch(message);
  });

  it.each([
    ['[1]', 'an array'],
    ['"metadata"', '"metadata"'],
    ['null', 'null'],
  ])('refuses the document %s, which is not an object, as text and as bytes', (text, shown) => {
    for (const input of [text, bytesOf(text)]) {
      expect(() => parseMetadata(input, loc)).toThrow(
        `${prefix}the document must be a JSON object, got ${shown}; fix the writer that publishes this location.`,
      );
    }
  });

  it('refuses text and bytes over the size cap before parsing them', () => {
    const text = ' '.repeat(maxMetadataBytes + 1);
    for (const input of [text, bytesOf(text)]) {
      expect(() => parseMetadata(input, loc)).toThrow(
        `${prefix}the document is larger than 16777216 bytes; fix the writer that publishes this location.`,
      );
    }
  });

  it.each([2, 0, 1.5])('refuses format-version %s as permanent', (version) => {
    const doc = fixture();
    doc['format-version'] = version;
    const error = catchError(() => parseMetadata(doc, loc));
    expect(error).toBeInstanceOf(UnsupportedFormatVersionError);
    expect(error).toMatchObject({
      code: 'ERR_UNSUPPORTED_FORMAT_VERSION',
      permanent: true,
      formatVersion: version,
      location: loc,
      message: `unsupported format version ${version} in location '${loc}'; upgrade Ferry or point it at a location written with format-version 1.`,
    });
  });

  it('checks format-version before anything else', () => {
    const error = catchError(() => parseMetadata({ 'format-version': 2, orders: 'new layout' }, loc));
    expect(error).toBeInstanceOf(UnsupportedFormatVersionError);
  });
});

describe('parseMetadata dataset errors are isolated', () => {
  const cases: [string, (doc: Doc) => unknown, string, string?][] = [
    [
      'negative snapshot size',
      (d) => {
        d.orders.snapshots[1]['snapshot-size'] = -1;
      },
      'orders.snapshots[1].snapshot-size: must be a non-negative safe integer, got -1',
    ],
    [
      'size beyond a safe integer',
      (d) => {
        d.orders.snapshots[1]['snapshot-size'] = 2 ** 53;
      },
      'orders.snapshots[1].snapshot-size: must be a non-negative safe integer, got 9007199254740992',
    ],
    [
      'size as a string',
      (d) => {
        d.orders.snapshots[0]['snapshot-size'] = '536576';
      },
      'orders.snapshots[0].snapshot-size: must be a non-negative safe integer, got "536576"',
    ],
    [
      'missing checksum',
      (d) => delete d.orders.snapshots[0]['snapshot-checksum'],
      'orders.snapshots[0].snapshot-checksum: is missing',
    ],
    [
      'missing checksum algorithm',
      (d) => delete d.orders.snapshots[0]['snapshot-checksum-algorithm'],
      'orders.snapshots[0].snapshot-checksum-algorithm: is missing',
    ],
    [
      'negative snapshot id',
      (d) => {
        d.orders.snapshots[0]['snapshot-id'] = -3;
      },
      'orders.snapshots[0].snapshot-id: must be a non-negative safe integer, got -3',
    ],
    [
      'duplicate snapshot id',
      (d) => {
        d.orders.snapshots[1]['snapshot-id'] = 0;
      },
      'orders.snapshots[1].snapshot-id: duplicates snapshot-id 0',
    ],
    [
      'timestamp missing',
      (d) => delete d.orders.snapshots[0]['timestamp-ms'],
      'orders.snapshots[0].timestamp-ms: is missing',
    ],
    [
      'row count wrongly typed',
      (d) => {
        d.orders.snapshots[0]['snapshot-row-count'] = 'many';
      },
      'orders.snapshots[0].snapshot-row-count: must be a non-negative safe integer, got "many"',
    ],
    [
      'snapshot entry not an object',
      (d) => {
        d.orders.snapshots[0] = 'x';
      },
      'orders.snapshots[0]: must be an object, got "x"',
    ],
    [
      'snapshots not an array',
      (d) => {
        d.orders.snapshots = 'none';
      },
      'orders.snapshots: must be an array, got "none"',
    ],
    [
      'schemas not an array',
      (d) => {
        d.orders.schemas = {};
      },
      'orders.schemas: must be an array, got an object',
    ],
    [
      'current-schema-id missing',
      (d) => delete d.orders['current-schema-id'],
      'orders.current-schema-id: is missing',
    ],
    [
      'name not matching its key',
      (d) => {
        d.orders.name = 'users';
      },
      `orders.name: must equal its key 'orders', got "users"`,
    ],
    ['name missing', (d) => delete d.orders.name, 'orders.name: is missing'],
    [
      'engine not a string',
      (d) => {
        d.orders.engine = 7;
      },
      'orders.engine: must be a non-empty string, got 7',
    ],
    [
      'properties not an object',
      (d) => {
        d.orders.properties = ['a'];
      },
      'orders.properties: must be an object, got an array',
    ],
    [
      'unknown Arrow type',
      (d) => {
        d.orders.schemas[0].schema.fields[2].data_type = 'Float128';
      },
      "orders.schemas[0].schema.fields[2].data_type: unknown Arrow type 'Float128'",
    ],
    [
      'nullable missing',
      (d) => delete d.orders.schemas[0].schema.fields[0].nullable,
      'orders.schemas[0].schema.fields[0].nullable: is missing',
    ],
    [
      'snapshot in another bucket',
      (d) => {
        d.orders.snapshots[1].snapshot = 's3://other-bucket/snapshots/orders.duckdb';
      },
      `orders.snapshots[1].snapshot: is outside the location '${loc}' (it is in bucket 'other-bucket', not 'example-bucket')`,
    ],
    [
      'snapshot escaping with ..',
      (d) => {
        d.orders.snapshots[1].snapshot = `${loc}month=2026-11/../../secret.duckdb`;
      },
      `orders.snapshots[1].snapshot: is outside the location '${loc}' (it has a '..' path segment)`,
    ],
    [
      'snapshot escaping with %2e%2e',
      (d) => {
        d.orders.snapshots[1].snapshot = `${loc}%2e%2e/secret.duckdb`;
      },
      `orders.snapshots[1].snapshot: is outside the location '${loc}' (it has a '..' path segment)`,
    ],
    [
      'relative snapshot URI',
      (d) => {
        d.orders.snapshots[1].snapshot = 'month=2026-11/orders.duckdb';
      },
      `orders.snapshots[1].snapshot: is outside the location '${loc}' (it is not an absolute URI)`,
    ],
  ];

  it.each(cases)('%s refuses only that dataset', (_name, mutate, detail) => {
    const doc = fixture();
    mutate(doc);
    const metadata = parseMetadata(doc, loc);
    // The bytes, read in place, refuse the same dataset with the same error, whatever history is kept.
    for (const keepHistory of [() => true, () => false]) {
      const fromBytes = parseMetadata(bytesOf(doc), loc, { keepHistory });
      expect([...fromBytes.datasets.keys()]).toEqual(['users']);
      expect(fromBytes.invalidDatasets.get('orders')?.message).toBe(
        metadata.invalidDatasets.get('orders')?.message,
      );
    }
    expect([...metadata.datasets.keys()]).toEqual(['users']);
    expect([...metadata.invalidDatasets.keys()]).toEqual(['orders']);
    const error = catchError(() => getDataset(metadata, 'orders'));
    expect(error).toBeInstanceOf(MetadataError);
    expect(error).toMatchObject({ code: 'ERR_METADATA_INVALID', dataset: 'orders', permanent: false });
    expect((error as Error).message).toBe(
      `${prefix}${detail}; dataset 'orders' is refused until its writer publishes a valid entry.`,
    );
    expect(getDataset(metadata, 'users')?.snapshots).toHaveLength(1);
  });

  it.each(['../evil', 'a/b', 'nul\u0000x', '.hidden', '-x', 'a..b', ''])(
    'refuses the unsafe dataset name %j',
    (name) => {
      const doc = fixture();
      doc[name] = { ...doc.users, name };
      const metadata = parseMetadata(doc, loc);
      expect(metadata.datasets.has(name)).toBe(false);
      const error = metadata.invalidDatasets.get(name);
      expect(error?.path).toBe(`[${JSON.stringify(name)}]`);
      expect(error?.problem).toBe(
        "is not a safe dataset name (letters, digits, '_', '-', '.'; no leading '.' or '-', no '..')",
      );
      expect(metadata.datasets.has('users')).toBe(true);
    },
  );

  it('keeps the URI check against the recorded location, not the one read from', () => {
    const doc = fixture();
    const copied = 'file:///tmp/copied-store/';
    const metadata = parseMetadata(doc, copied);
    expect(metadata.location).toBe(loc);
    expect(metadata.invalidDatasets.size).toBe(0);
  });
});

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('parseMetadata keeping only the current snapshot entry', () => {
  /** The fixture with `orders` grown to `count` snapshots, the current one `current`. */
  function grown(count: number, current: number): Doc {
    const doc = fixture();
    const template = doc.orders.snapshots[0];
    doc.orders.snapshots = Array.from({ length: count }, (_, id) => ({ ...template, 'snapshot-id': id }));
    doc.orders['current-snapshot-id'] = current;
    return doc;
  }

  it('keeps every entry by default and only the current one when told', () => {
    const doc = grown(50, 31);
    const full = parseMetadata(bytesOf(doc), loc);
    expect(getDataset(full, 'orders')?.snapshots).toHaveLength(50);
    const lean = parseMetadata(bytesOf(doc), loc, { keepHistory: (name) => name !== 'orders' });
    const orders = getDataset(lean, 'orders');
    expect(orders?.snapshots.map((entry) => entry.snapshotId)).toEqual([31]);
    expect(orders).toEqual({
      ...getDataset(full, 'orders'),
      snapshots: [getDataset(full, 'orders')?.snapshots[31]],
    });
    expect(getDataset(lean, 'users')).toEqual(getDataset(full, 'users'));
  });

  it('keeps no entry when the current id names none, and still checks the entries it drops', () => {
    const doc = grown(5, 9);
    const lean = parseMetadata(bytesOf(doc), loc, { keepHistory: () => false });
    expect(getDataset(lean, 'orders')).toMatchObject({ currentSnapshotId: 9, snapshots: [] });

    doc.orders['current-snapshot-id'] = 4;
    doc.orders.snapshots[1]['snapshot-size'] = 'big';
    const refused = parseMetadata(bytesOf(doc), loc, { keepHistory: () => false });
    expect(refused.invalidDatasets.get('orders')?.path).toBe('orders.snapshots[1].snapshot-size');

    doc.orders.snapshots[1]['snapshot-size'] = 1;
    doc.orders.snapshots[3]['snapshot-id'] = 4;
    const duplicated = parseMetadata(bytesOf(doc), loc, { keepHistory: () => false });
    expect(duplicated.invalidDatasets.get('orders')?.problem).toBe('duplicates snapshot-id 4');
  });

  it('reads repeated keys as JSON.parse does: the last value, at the first position', () => {
    const text = fixtureText.replace(
      '"format-version": 1,',
      '"users": 1, "format-version": 0, "format-version": 1,',
    );
    expect(text).not.toBe(fixtureText);
    const fromBytes = parseMetadata(bytesOf(text), loc);
    expect(fromBytes).toEqual(parseMetadata(text, loc));
    expect([...fromBytes.datasets.keys()]).toEqual(['users', 'orders']);
  });
});
