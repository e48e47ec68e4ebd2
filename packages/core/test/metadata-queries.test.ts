import { describe, expect, it } from 'vitest';
import { sameEngine } from '../src/engines.js';
import {
  currentSnapshot,
  type DatasetMetadata,
  fallbackCandidates,
  findRecordedSchema,
  isNewer,
  recordedSchema,
  SchemaNotFoundError,
  type SnapshotEntry,
  writtenByEngine,
} from '../src/metadata/index.js';

function snapshot(snapshotId: number, engine?: string): SnapshotEntry {
  return {
    snapshotId,
    timestampMs: 1_000 + snapshotId,
    uri: `s3://b/p/orders_${snapshotId}.duckdb`,
    checksum: 'a'.repeat(64),
    checksumAlgorithm: 'SHA256',
    size: 10,
    ...(engine === undefined ? {} : { engine }),
  };
}

function dataset(snapshots: SnapshotEntry[], currentSnapshotId?: number): DatasetMetadata {
  return {
    name: 'orders',
    engine: 'duckdb',
    schemas: [
      { schemaId: 0, schema: { fields: [], metadata: {} } },
      {
        schemaId: 1,
        schema: { fields: [{ name: 'id', data_type: 'Int64', nullable: false, metadata: {} }], metadata: {} },
      },
    ],
    currentSchemaId: 1,
    snapshots,
    ...(currentSnapshotId === undefined ? {} : { currentSnapshotId }),
    properties: {},
  };
}

const ids = (entries: readonly SnapshotEntry[]) => entries.map((entry) => entry.snapshotId);

describe('currentSnapshot', () => {
  it('finds the entry of current-snapshot-id wherever it sits', () => {
    expect(currentSnapshot(dataset([snapshot(2), snapshot(0), snapshot(1)], 0))).toEqual(snapshot(0));
  });

  it('is undefined when nothing is current or the entry is missing', () => {
    expect(currentSnapshot(dataset([snapshot(0)]))).toBeUndefined();
    expect(currentSnapshot(dataset([snapshot(0)], 4))).toBeUndefined();
  });
});

describe('recordedSchema', () => {
  it('returns the entry of current-schema-id', () => {
    expect(recordedSchema(dataset([])).schemaId).toBe(1);
  });

  it('names the dataset when the entry is missing (findRecordedSchema answers undefined)', () => {
    const broken = { ...dataset([]), currentSchemaId: 7 };
    expect(findRecordedSchema(broken)).toBeUndefined();
    expect(findRecordedSchema(dataset([]))?.schemaId).toBe(1);
    expect(() => recordedSchema(broken)).toThrow(SchemaNotFoundError);
    expect(() => recordedSchema(broken)).toThrow(
      "Dataset 'orders' has no schema entry for its current-schema-id 7; republish the dataset so metadata.json records its schema.",
    );
  });
});

describe('fallbackCandidates', () => {
  it('puts the current snapshot first, then older ones newest first', () => {
    const ds = dataset([snapshot(0), snapshot(3), snapshot(1), snapshot(2)], 3);
    expect(ids(fallbackCandidates(ds, 'duckdb'))).toEqual([3, 2, 1, 0]);
  });

  it('skips entries recorded for another engine, keeps entries without one', () => {
    const ds = dataset([snapshot(0, 'duckdb'), snapshot(1, 'sqlite'), snapshot(2), snapshot(3, 'DuckDB')], 3);
    expect(ids(fallbackCandidates(ds, 'duckdb'))).toEqual([3, 2, 0]);
    expect(ids(fallbackCandidates(ds, 'sqlite'))).toEqual([2, 1]);
  });

  it('leaves out entries newer than a current pointer that was moved back', () => {
    const ds = dataset([snapshot(0), snapshot(1), snapshot(2)], 1);
    expect(ids(fallbackCandidates(ds, 'duckdb'))).toEqual([1, 0]);
  });

  it('still offers older entries when the current entry is missing', () => {
    const ds = dataset([snapshot(0), snapshot(1)], 2);
    expect(ids(fallbackCandidates(ds, 'duckdb'))).toEqual([1, 0]);
  });

  it('is empty when nothing is current', () => {
    expect(fallbackCandidates(dataset([snapshot(0)]), 'duckdb')).toEqual([]);
  });

  // The cases of the dataset machine's former copy of this rule (`loadCandidates`).
  it('offers only snapshots newer than the loaded one', () => {
    const ds = dataset([snapshot(0), snapshot(1), snapshot(2), snapshot(3)], 3);
    expect(ids(fallbackCandidates(ds, 'duckdb', 1))).toEqual([3, 2]);
    expect(ids(fallbackCandidates(ds, 'duckdb', 3))).toEqual([]);
  });

  it('keeps every engine when the dataset engine is unknown', () => {
    const ds = dataset([snapshot(0, 'sqlite'), snapshot(1, 'duckdb')], 1);
    expect(ids(fallbackCandidates(ds, undefined))).toEqual([1, 0]);
  });
});

describe('writtenByEngine', () => {
  it('compares engine names case-insensitively, as Spice does', () => {
    expect(sameEngine('DuckDB', 'duckdb')).toBe(true);
    expect(sameEngine('sqlite', 'turso')).toBe(false);
    expect(writtenByEngine(snapshot(0, 'DUCKDB'), 'duckdb')).toBe(true);
    expect(writtenByEngine(snapshot(0, 'turso'), 'sqlite')).toBe(false);
  });

  it('accepts an entry without snapshot-engine, or a dataset of unknown engine', () => {
    expect(writtenByEngine(snapshot(0), 'duckdb')).toBe(true);
    expect(writtenByEngine(snapshot(0, 'sqlite'), undefined)).toBe(true);
  });
});

describe('isNewer', () => {
  it.each([
    [1, 0, true],
    [5, 4, true],
    [4, 4, false],
    [3, 4, false],
    [0, undefined, true],
    [undefined, 2, false],
    [undefined, undefined, false],
  ])('isNewer(%s, %s) is %s', (candidate, loaded, expected) => {
    expect(isNewer(candidate, loaded)).toBe(expected);
  });
});
