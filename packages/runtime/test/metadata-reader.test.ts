/**
 * The coordinator's shared metadata reader over a real file:// store: what a dataset's reply
 * carries as the document grows (by the store contract, a dataset's snapshot entries only grow),
 * and what a listing reads.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createObjectStore } from '@ferry/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocationMetadataReader } from '../src/coordinator/metadata-reader.js';
import { tempDir } from './support.js';

let work: string;
let location: string;

beforeAll(async () => {
  work = await tempDir('ferry-metadata-reader-');
  await mkdir(join(work, 'store'));
  location = `file://${join(work, 'store')}/`;
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** metadata.json with `orders` holding `count` snapshot entries, the last one current. */
async function publish(count: number): Promise<void> {
  const fixture = JSON.parse(
    await readFile(new URL('../../test-support/fixtures/spice-store/metadata.json', import.meta.url), 'utf8'),
  );
  const template = fixture.orders.snapshots[0];
  const entry = (id: number) => ({
    ...template,
    'snapshot-id': id,
    snapshot: `${location}month=2026-12/orders_${id}.duckdb`,
  });
  const document = {
    ...fixture,
    location,
    orders: {
      ...fixture.orders,
      snapshots: Array.from({ length: count }, (_, id) => entry(id)),
      'current-snapshot-id': count - 1,
    },
    users: {
      ...fixture.users,
      snapshots: fixture.users.snapshots.map((s: { snapshot: string }) => ({
        ...s,
        snapshot: `${location}users.sqlite`,
      })),
    },
  };
  await writeFile(join(work, 'store', 'metadata.json'), JSON.stringify(document));
}

describe('LocationMetadataReader', () => {
  it("replies with a dataset's current entry only, unless the dataset falls back to older ones", async () => {
    await publish(40);
    const store = createObjectStore(location, {});
    const reader = new LocationMetadataReader(store, {
      windowMs: 0,
      keepHistory: (name) => name === 'users',
    });
    try {
      const orders = await reader.readFor('orders', undefined);
      expect(orders.kind).toBe('read');
      if (orders.kind !== 'read') return;
      expect(orders.dataset?.currentSnapshotId).toBe(39);
      expect(orders.dataset?.snapshots.map((entry) => entry.snapshotId)).toEqual([39]);

      await publish(41);
      const next = await reader.readFor('orders', orders.etag);
      expect(next.kind === 'read' && next.dataset?.snapshots.map((entry) => entry.snapshotId)).toEqual([40]);

      const users = await reader.readFor('users', undefined);
      expect(users.kind === 'read' && users.dataset?.snapshots).toHaveLength(1);

      // A listing reads the whole history of the dataset it lists.
      const listed = await reader.history('orders');
      expect(listed?.datasets.get('orders')?.snapshots).toHaveLength(41);
    } finally {
      await store.close();
    }
  });

  it('keeps every entry for a dataset that falls back', async () => {
    await publish(12);
    const store = createObjectStore(location, {});
    const reader = new LocationMetadataReader(store, {
      windowMs: 0,
      keepHistory: (name) => name === 'orders',
    });
    try {
      const orders = await reader.readFor('orders', undefined);
      expect(orders.kind === 'read' && orders.dataset?.snapshots.map((entry) => entry.snapshotId)).toEqual([
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
      ]);
      expect(await reader.history('missing-dataset')).toBeDefined();
    } finally {
      await store.close();
    }
  });
});
