import { describe, expect, it } from 'vitest';
import type { DatasetMetadata } from '../src/metadata/types.js';
import { currentSnapshotIds, diffCurrentIds } from '../src/notifications/index.js';

function dataset(name: string, currentSnapshotId?: number): DatasetMetadata {
  return {
    name,
    schemas: [],
    currentSchemaId: 0,
    snapshots: [],
    properties: {},
    ...(currentSnapshotId === undefined ? {} : { currentSnapshotId }),
  };
}

function datasets(...entries: DatasetMetadata[]): Map<string, DatasetMetadata> {
  return new Map(entries.map((entry) => [entry.name, entry]));
}

describe('diffCurrentIds', () => {
  it.each([
    {
      name: 'nothing moved',
      previous: [
        ['orders', 3],
        ['users', 1],
      ] as const,
      now: datasets(dataset('orders', 3), dataset('users', 1)),
      changed: [],
    },
    {
      name: 'one id moved forward',
      previous: [
        ['orders', 3],
        ['users', 1],
      ] as const,
      now: datasets(dataset('orders', 4), dataset('users', 1)),
      changed: ['orders'],
    },
    {
      name: 'an id moved back (a rollback is a change too)',
      previous: [['orders', 3]] as const,
      now: datasets(dataset('orders', 2)),
      changed: ['orders'],
    },
    {
      name: 'a new dataset with a current snapshot',
      previous: [['orders', 3]] as const,
      now: datasets(dataset('orders', 3), dataset('users', 0)),
      changed: ['users'],
    },
    {
      name: 'a new dataset with nothing current yet',
      previous: [] as const,
      now: datasets(dataset('users')),
      changed: [],
    },
    {
      name: 'a dataset lost its current snapshot',
      previous: [['orders', 3]] as const,
      now: datasets(dataset('orders')),
      changed: ['orders'],
    },
    {
      name: 'a dataset vanished from metadata.json',
      previous: [
        ['gone', 1],
        ['orders', 3],
      ] as const,
      now: datasets(dataset('orders', 4)),
      changed: ['orders', 'gone'],
    },
  ])('$name', ({ previous, now, changed }) => {
    expect(diffCurrentIds(new Map(previous), now)).toEqual(changed);
  });

  it('remembers only datasets with a current snapshot', () => {
    expect(currentSnapshotIds(datasets(dataset('orders', 3), dataset('users')))).toEqual(
      new Map([['orders', 3]]),
    );
  });
});
