/**
 * The dataset machine's rules, one named test each, run on a SimulatedClock with the fakes of
 * `machine-harness.ts`. No threads, no network, no real time.
 */
import { describe, expect, it } from 'vitest';
import { FerryError, SnapshotRejectedError, SnapshotRejectionCode } from '../src/errors.js';
import type { ReadMetadataOutput } from '../src/machine/index.js';
import {
  checksumMismatch,
  deferred,
  FakeDownloads,
  FakeStore,
  INTERVAL,
  LOCATION,
  localSnapshot,
  networkError,
  OLDER,
  serving,
  start,
  textIdSchema,
  WAITING,
} from './machine-harness.js';

// ---------------------------------------------------------------------------------------------
// The rules.
// ---------------------------------------------------------------------------------------------

describe('dataset machine: startup', () => {
  it('Startup: bootstraps from the most recent snapshot (current-snapshot-id)', async () => {
    const store = new FakeStore();
    store.publish(0);
    store.publish(2);
    store.publish(1, { current: false });
    const h = start({ store });
    await h.settle();
    expect(h.downloads.preparedIds).toEqual([2]);
    expect(h.downloads.swapped.map((s) => s.prepared)).toEqual([{ snapshotId: 2, token: 'tmp-2' }]);
    expect(h.status()).toMatchObject({ state: 'serving', servingSnapshotId: 2, schemaId: 0 });
    expect(h.emitted).toContainEqual({ type: 'swap', dataset: 'orders', from: null, to: 2 });
  });

  it('Startup: a snapshot restored from the live file is served at once and the store is consulted immediately', async () => {
    const store = new FakeStore();
    store.publish(3);
    store.gate = deferred();
    const h = start({ store, restore: localSnapshot(2) });
    await h.until((s) => s.matches('polling') && store.reads.length === 1);
    expect(h.status()).toMatchObject({ state: 'polling', servingSnapshotId: 2 });
    expect(store.reads[0]).toEqual({ dataset: 'orders', trigger: 'startup' });
    store.gate.resolve();
    await h.settle();
    expect(h.downloads.preparedIds).toEqual([3]);
    expect(h.emitted).toContainEqual({ type: 'swap', dataset: 'orders', from: 2, to: 3 });
  });
});

describe('dataset machine: waiting', () => {
  const unpublished: [string, (store: FakeStore) => void][] = [
    ['no metadata.json', (store) => (store.exists = false)],
    ['no entry for the dataset', (store) => (store.hasEntry = false)],
    ['no current snapshot', () => undefined],
  ];

  it.each(unpublished)(
    'Waiting: with %s it waits, logs that it waits, checks every interval and restores the first snapshot once published',
    async (_label, arrange) => {
      const store = new FakeStore();
      arrange(store);
      const h = start({ store });
      await h.settle();
      expect(h.status().state).toBe('waiting');
      const waitingLogs = h.logs.filter((entry) => entry.message.startsWith(WAITING));
      expect(waitingLogs).toHaveLength(1);
      expect(waitingLogs[0]?.level).toBe('info');
      expect(h.status().nextPollDueMs).toBe(INTERVAL);

      await h.advance(INTERVAL - 1);
      expect(store.reads).toHaveLength(1);
      await h.advance(1);
      expect(store.reads).toHaveLength(2);
      expect(h.status().state).toBe('waiting');

      store.exists = true;
      store.hasEntry = true;
      store.publish(0);
      await h.advance(INTERVAL);
      expect(h.status()).toMatchObject({ state: 'serving', servingSnapshotId: 0 });
      expect(h.messages('info').filter((message) => message.startsWith(WAITING))).toHaveLength(1);
      expect(h.messages('debug').filter((message) => message.startsWith(WAITING))).toHaveLength(1);
    },
  );

  it('Waiting: a notification wakes it early', async () => {
    const store = new FakeStore();
    const h = start({ store });
    await h.settle();
    store.publish(0);
    h.actor.send({ type: 'snapshot.announced', snapshotId: 0 });
    await h.settle();
    expect(h.status()).toMatchObject({ state: 'serving', servingSnapshotId: 0 });
    expect(h.clock.now()).toBe(0);
    expect(store.reads).toHaveLength(2);
    expect(store.reads[1]?.ifNoneMatch).toBeUndefined();
  });
});

describe('dataset machine: polling', () => {
  it('Polling: polls every refresh_check_interval with the previous ETag; "unchanged" ends the poll without downloading', async () => {
    const h = await serving();
    const etag = h.store.etag;
    expect(h.status().etag).toBe(etag);
    expect(h.status().nextPollDueMs).toBe(INTERVAL);

    await h.advance(INTERVAL - 1);
    expect(h.store.reads).toHaveLength(1);
    await h.advance(1);
    expect(h.store.reads).toHaveLength(2);
    expect(h.store.reads[1]).toEqual({ dataset: 'orders', trigger: 'schedule', ifNoneMatch: etag });
    expect(h.status()).toMatchObject({ lastPollResult: 'unchanged', lastPollAtMs: INTERVAL, etag });
    await h.advance(INTERVAL);
    expect(h.store.reads).toHaveLength(3);
    expect(h.downloads.prepared).toHaveLength(1);
    expect(h.status().counters.polls).toBe(3);
  });

  it('Polling: with pollPhaseMs, scheduled polls fall on the interval grid even when a poll ends late', async () => {
    const h = start({ input: { pollPhaseMs: 2_500 } });
    h.store.publish(1);
    const gate = deferred();
    h.downloads.swapGate = gate;
    h.actor.send({ type: 'poll.now' });
    await h.until(() => h.downloads.swapped.length === 1);
    // The bootstrap takes 4 s of clock time: the next poll still lands on the grid (2.5 s + k × 10 s).
    h.clock.increment(4_000);
    gate.resolve();
    await h.settle();
    expect(h.status().nextPollDueMs).toBe(12_500);
    await h.advance(12_500 - 4_000);
    expect(h.store.reads).toHaveLength(2);
    expect(h.status().nextPollDueMs).toBe(22_500);
  });

  it('Newer means a strictly greater current-snapshot-id than the loaded one', async () => {
    const h = await serving();
    h.store.touch();
    await h.advance(INTERVAL);
    expect(h.status().lastPollResult).toBe('same');
    expect(h.downloads.prepared).toHaveLength(1);

    h.store.publish(2);
    await h.advance(INTERVAL);
    expect(h.status()).toMatchObject({ lastPollResult: 'newer', servingSnapshotId: 2 });
    expect(h.downloads.preparedIds).toEqual([1, 2]);
  });
});

describe('dataset machine: validation before download', () => {
  it('Validate before download: a snapshot of another engine is refused before any byte is downloaded and the current one keeps serving', async () => {
    const h = await serving();
    h.store.publish(2, { engine: 'sqlite' });
    await h.advance(INTERVAL);
    expect(h.downloads.preparedIds).toEqual([1]);
    const status = h.status();
    expect(status).toMatchObject({ state: 'serving', servingSnapshotId: 1, lastPollResult: 'refused' });
    expect(status.lastError?.code).toBe(SnapshotRejectionCode.engineMismatch);
    expect(status.lastError?.message).toContain("Snapshot 2 of dataset 'orders'");
    expect(status.lastError?.message).toContain("'sqlite'");
    expect(status.counters.refusals).toBe(1);
    expect(h.emitted).toContainEqual(
      expect.objectContaining({
        type: 'error',
        snapshotId: 2,
        error: expect.objectContaining({ code: 'ERR_SNAPSHOT_ENGINE_MISMATCH' }),
      }),
    );
  });

  it('Validate before download: turso snapshots are compatible with a turso dataset only', async () => {
    const sqliteStore = new FakeStore();
    sqliteStore.publish(0, { engine: 'turso' });
    const sqlite = start({ store: sqliteStore, input: { engine: 'sqlite' } });
    await sqlite.settle();
    expect(sqlite.status()).toMatchObject({ state: 'waiting', lastPollResult: 'refused' });
    expect(sqlite.status().lastError?.code).toBe(SnapshotRejectionCode.engineMismatch);
    expect(sqlite.downloads.prepared).toHaveLength(0);

    const tursoStore = new FakeStore();
    tursoStore.publish(0, { engine: 'turso' });
    const turso = start({ store: tursoStore, input: { engine: 'turso' } });
    await turso.settle();
    expect(turso.status()).toMatchObject({ state: 'serving', servingSnapshotId: 0 });
  });

  it("Validate before download: an entry naming no snapshot-engine downloads with Spice's warning, at each download", async () => {
    // spice-reference §1 "Engine check": absent snapshot-engine → a warning, then the download goes ahead.
    const h = await serving();
    h.store.publish(2);
    const { engine: _engine, ...entry } = h.store.snapshots[h.store.snapshots.length - 1] ?? {};
    h.store.snapshots[h.store.snapshots.length - 1] = entry as (typeof h.store.snapshots)[number];
    h.downloads.failures.set(2, new Error('connection reset'));
    await h.advance(INTERVAL);
    h.downloads.failures.delete(2);
    h.store.touch();
    await h.advance(INTERVAL);
    expect(h.status().servingSnapshotId).toBe(2);
    const warned = h.logs.filter((line) =>
      line.message.startsWith('Downloading snapshot without engine metadata'),
    );
    expect(warned).toEqual(
      [1, 2].map(() => ({
        level: 'warn',
        message:
          'Downloading snapshot without engine metadata; skipping engine compatibility validation which may restore an incompatible snapshot',
        fields: { dataset: 'orders', snapshotId: 2, snapshot: 's3://bucket/snapshots/orders_2.duckdb' },
      })),
    );
    // Entries that name their engine download without it (snapshot 1, bootstrapped above).
    expect(h.downloads.preparedIds).toEqual([1, 2, 2]);
  });

  it("Validate before download: without a configured engine the dataset's metadata engine is used", async () => {
    const store = new FakeStore();
    store.datasetEngine = 'duckdb';
    store.publish(0, { engine: 'sqlite' });
    const h = start({ store, input: { engine: undefined } });
    await h.settle();
    expect(h.status().lastError?.code).toBe(SnapshotRejectionCode.engineMismatch);
    expect(h.downloads.prepared).toHaveLength(0);
    store.publish(1, { engine: 'duckdb' });
    await h.advance(INTERVAL);
    expect(h.downloads.prepared[0]?.engine).toBe('duckdb');
    expect(h.status().servingSnapshotId).toBe(1);
  });

  it('Validate before download: a candidate whose recorded schema differs from the served one is refused, naming the difference', async () => {
    const h = await serving();
    h.store.publish(2, { schema: textIdSchema });
    await h.advance(INTERVAL);
    expect(h.downloads.preparedIds).toEqual([1]);
    const status = h.status();
    expect(status).toMatchObject({ servingSnapshotId: 1, schemaId: 0, lastPollResult: 'refused' });
    expect(status.lastError?.code).toBe(SnapshotRejectionCode.schemaMismatch);
    expect(status.lastError?.message).toContain("Snapshot 2 of dataset 'orders'");
    expect(status.lastError?.message).toContain(
      "field 0 is 'id Utf8 NOT NULL', expected 'id Int64 NOT NULL'",
    );
  });

  it('One metadata read per poll: the id comparison, the schema check and the download use the same read', async () => {
    const h = await serving();
    const reads: ReadMetadataOutput[] = [];
    const read = h.store.read.bind(h.store);
    h.store.read = async (input) => {
      const output = await read(input);
      reads.push(output);
      return output;
    };
    h.store.publish(2);
    await h.advance(INTERVAL);
    expect(reads).toHaveLength(1);
    const output = reads[0];
    if (output?.kind !== 'read' || output.dataset === undefined) throw new Error('expected a full read');
    const prepared = h.downloads.prepared[1];
    expect(prepared?.dataset).toBe(output.dataset);
    expect(prepared?.entry).toBe(output.dataset.snapshots.find((s) => s.snapshotId === 2));
    const verification = h.downloads.verifications[1];
    expect(verification?.entry).toBe(prepared?.entry);
    expect(verification?.schema).toBe(output.dataset.schemas[0]?.schema);
  });
});

describe('dataset machine: bootstrap_on_failure', () => {
  it('retry: a failed download retries the whole poll with backoff, re-reading metadata in full, and picks up a replacement snapshot', async () => {
    const h = await serving({ input: { bootstrapOnFailure: 'retry' } });
    h.downloads.failures.set(2, networkError());
    h.store.publish(2);
    await h.advance(INTERVAL);
    expect(h.status()).toMatchObject({
      lastPollResult: 'failed',
      etag: null,
      nextPollDueMs: INTERVAL + 1000,
    });

    await h.advance(1000);
    expect(h.status().nextPollDueMs).toBe(INTERVAL + 1000 + 2000);
    await h.advance(2000);
    expect(h.status().nextPollDueMs).toBe(INTERVAL + 3000 + 3000);
    h.store.publish(3);
    await h.advance(3000);

    expect(h.downloads.preparedIds).toEqual([1, 2, 2, 2, 3]);
    expect(h.store.reads.slice(2).map((r) => r.ifNoneMatch)).toEqual([undefined, undefined, undefined]);
    expect(h.status()).toMatchObject({
      servingSnapshotId: 3,
      etag: h.store.etag,
      nextPollDueMs: 16_000 + INTERVAL,
    });
    expect(h.messages('info').filter((m) => m.startsWith('Retrying'))).toHaveLength(3);
  });

  it('retry: each attempt validates again before downloading', async () => {
    const h = await serving({ input: { bootstrapOnFailure: 'retry' } });
    h.downloads.failures.set(2, networkError());
    h.store.publish(2);
    await h.advance(INTERVAL);
    h.store.publish(3, { schema: textIdSchema });
    await h.advance(1000);
    expect(h.downloads.preparedIds).toEqual([1, 2]);
    expect(h.status()).toMatchObject({ lastPollResult: 'refused', servingSnapshotId: 1 });
  });

  it('retry: the backoff jitter source is injectable', async () => {
    const h = await serving({ input: { bootstrapOnFailure: 'retry' }, random: () => 0 });
    h.downloads.failures.set(2, networkError());
    h.store.publish(2);
    await h.advance(INTERVAL);
    expect(h.status().nextPollDueMs).toBe(INTERVAL + 700);
  });

  it('warn (default): a failed download is skipped with a warning and the dataset keeps serving what it has', async () => {
    const h = await serving();
    h.downloads.failures.set(2, networkError());
    h.store.publish(2);
    await h.advance(INTERVAL);
    expect(h.status()).toMatchObject({ state: 'serving', servingSnapshotId: 1, lastPollResult: 'failed' });
    expect(h.status().nextPollDueMs).toBe(2 * INTERVAL);
    expect(
      h.messages('warn').some((m) => m.includes('unreachable') && m.includes('keeping snapshot 1')),
    ).toBe(true);
    expect(h.status().counters.failures).toBe(1);
  });

  it("warn at bootstrap: a failed download logs Spice's line, Failed to bootstrap snapshot; continuing without a downloaded snapshot", async () => {
    const store = new FakeStore();
    store.publish(0);
    const downloads = new FakeDownloads();
    downloads.failures.set(0, networkError());
    const h = start({ store, downloads });
    await h.settle();
    expect(h.status()).toMatchObject({ state: 'waiting', lastPollResult: 'failed' });
    expect(h.logs.filter((entry) => entry.level === 'warn')).toEqual([
      {
        level: 'warn',
        message: `Failed to bootstrap snapshot; continuing without a downloaded snapshot. dataset=orders location=${LOCATION} error=The store at s3://bucket/snapshots/ is unreachable.`,
        fields: { dataset: 'orders', code: 'ERR_NETWORK', snapshotId: 0 },
      },
    ]);
  });

  it("retry at bootstrap: a failed metadata read logs Spice's line, Failed to bootstrap snapshot; retrying, at error", async () => {
    const store = new FakeStore();
    store.failures.push(networkError());
    const h = start({ store, input: { bootstrapOnFailure: 'retry' } });
    await h.settle();
    expect(h.actor.getSnapshot().matches({ waiting: 'backingOff' })).toBe(true);
    expect(h.logs.filter((entry) => entry.level === 'error')).toEqual([
      {
        level: 'error',
        message: `Failed to bootstrap snapshot; retrying. dataset=orders location=${LOCATION} error=The store at s3://bucket/snapshots/ is unreachable.`,
        fields: { dataset: 'orders', code: 'ERR_NETWORK', snapshotId: null },
      },
    ]);
    expect(h.messages('info')).toContain("Retrying the snapshot check of dataset 'orders' in 1000 ms");
  });

  it('fallback: tries the current snapshot, then older ones by id descending, skipping other engines', async () => {
    const store = new FakeStore();
    store.publish(0);
    store.publish(1, { engine: 'sqlite' });
    store.publish(2);
    store.publish(3);
    const downloads = new FakeDownloads();
    downloads.failures.set(3, checksumMismatch(3));
    downloads.failures.set(
      2,
      new SnapshotRejectedError(
        SnapshotRejectionCode.objectMissing,
        "Snapshot 2 of dataset 'orders' is gone.",
      ),
    );
    const h = start({ store, downloads, input: { bootstrapOnFailure: 'fallback' } });
    await h.settle();
    expect(downloads.preparedIds).toEqual([3, 2, 0]);
    expect(h.status()).toMatchObject({ state: 'serving', servingSnapshotId: 0, etag: null });
    expect(h.status().counters.refusals).toBe(2);
    expect(h.messages('warn')).toContain(
      "Dataset 'orders' fell back to snapshot 0 because the current snapshot 3 could not be loaded",
    );
  });

  it('fallback: a current snapshot of another engine is refused, saying why, then an older one of the dataset engine loads', async () => {
    const h = await serving({ input: { bootstrapOnFailure: 'fallback' } });
    h.store.publish(2);
    h.store.publish(3, { engine: 'SQLite' });
    await h.advance(INTERVAL);
    expect(h.downloads.preparedIds).toEqual([1, 2]);
    expect(h.status()).toMatchObject({
      servingSnapshotId: 2,
      etag: null,
      lastError: { code: 'ERR_SNAPSHOT_ENGINE_MISMATCH' },
      counters: { refusals: 1 },
    });
    expect(h.messages('warn')[0]).toMatch(
      /^Snapshot 3 of dataset 'orders' was written by engine 'SQLite'.* \(falling back to snapshot 2\)$/,
    );
  });

  it('fallback: a current-snapshot-id that names no entry falls back to the older ones; without fallback it is ERR_CURRENT_SNAPSHOT_MISSING', async () => {
    const store = new FakeStore();
    store.publish(0);
    store.currentSnapshotId = 7;
    const fallback = start({ store, input: { bootstrapOnFailure: 'fallback' } });
    await fallback.settle();
    expect(fallback.status()).toMatchObject({ servingSnapshotId: 0, etag: null });

    const warn = start({ store });
    await warn.settle();
    expect(warn.steps).toContain('bootstrapping.currentSnapshotMissing');
    expect(warn.status()).toMatchObject({
      state: 'waiting',
      lastPollResult: 'failed',
      lastError: { code: 'ERR_CURRENT_SNAPSHOT_MISSING' },
    });
  });

  it('fallback: an error that is not a snapshot rejection stops the fallback', async () => {
    const store = new FakeStore();
    store.publish(0);
    store.publish(1);
    const downloads = new FakeDownloads();
    downloads.failures.set(1, networkError());
    const h = start({ store, downloads, input: { bootstrapOnFailure: 'fallback' } });
    await h.settle();
    expect(downloads.preparedIds).toEqual([1]);
    expect(h.status()).toMatchObject({ state: 'waiting', servingSnapshotId: null, lastPollResult: 'failed' });
    expect(h.messages('warn')).toContain(
      `Failed to download snapshot while attempting fallback. dataset=orders snapshot=s3://bucket/snapshots/orders_1.duckdb sha=sha-1 error=The store at s3://bucket/snapshots/ is unreachable.`,
    );
    expect(h.messages('error')).toContain(
      `Failed to bootstrap snapshot even after fallback attempts; continuing. dataset=orders location=${LOCATION} error=The store at s3://bucket/snapshots/ is unreachable.`,
    );
  });

  it('fallback: when every candidate fails it logs it and continues without bootstrapping (or keeps serving)', async () => {
    const store = new FakeStore();
    store.publish(0);
    store.publish(1);
    const downloads = new FakeDownloads();
    downloads.failures.set(0, checksumMismatch(0));
    downloads.failures.set(1, checksumMismatch(1));
    const h = start({ store, downloads, input: { bootstrapOnFailure: 'fallback' } });
    await h.settle();
    expect(downloads.preparedIds).toEqual([1, 0]);
    expect(h.status()).toMatchObject({
      state: 'waiting',
      servingSnapshotId: null,
      lastPollResult: 'refused',
    });
    expect(h.messages('warn')).toEqual([
      'Snapshot integrity issue; attempting next available snapshot. dataset=orders snapshot=s3://bucket/snapshots/orders_1.duckdb sha=sha-1',
      'Snapshot integrity issue; attempting next available snapshot. dataset=orders snapshot=s3://bucket/snapshots/orders_0.duckdb sha=sha-0',
    ]);
    expect(h.messages('error')).toContain(
      'All available snapshots failed validation; continuing without bootstrapping. dataset=orders',
    );

    downloads.failures.clear();
    store.publish(2);
    await h.advance(INTERVAL);
    expect(h.status().servingSnapshotId).toBe(2);
    downloads.failures.set(3, checksumMismatch(3));
    store.publish(3);
    await h.advance(INTERVAL);
    expect(downloads.preparedIds).toEqual([1, 0, 2, 3]);
    expect(h.status()).toMatchObject({ state: 'serving', servingSnapshotId: 2, lastPollResult: 'refused' });
    expect(h.messages('error').at(-1)).toContain('keeping snapshot 2');
  });
});

describe('dataset machine: ETag bookkeeping', () => {
  it('ETag bookkeeping: a download skipped by warn records no ETag, so the next poll reads metadata in full', async () => {
    const h = await serving();
    h.downloads.failures.set(2, networkError());
    h.store.publish(2);
    await h.advance(INTERVAL);
    expect(h.status().etag).toBeNull();
    h.downloads.failures.clear();
    await h.advance(INTERVAL);
    expect(h.store.reads.at(-1)?.ifNoneMatch).toBeUndefined();
    expect(h.status()).toMatchObject({ servingSnapshotId: 2, etag: h.store.etag });
  });

  it('ETag bookkeeping: loading an older snapshot through fallback records no ETag', async () => {
    const store = new FakeStore();
    store.publish(0);
    store.publish(1);
    const downloads = new FakeDownloads();
    downloads.failures.set(1, checksumMismatch(1));
    const h = start({ store, downloads, input: { bootstrapOnFailure: 'fallback' } });
    await h.settle();
    expect(h.status()).toMatchObject({ servingSnapshotId: 0, etag: null });
    await h.advance(INTERVAL);
    expect(store.reads.at(-1)?.ifNoneMatch).toBeUndefined();
    expect(downloads.preparedIds).toEqual([1, 0, 1]);
  });

  it('ETag bookkeeping: a store whose current id is older than the loaded one warns on every poll and reloads nothing', async () => {
    const store = new FakeStore();
    store.publish(3);
    const h = start({ store, restore: localSnapshot(5) });
    await h.settle();
    await h.advance(INTERVAL);
    await h.advance(INTERVAL);
    expect(h.messages('warn').filter((m) => m === OLDER)).toHaveLength(3);
    expect(h.downloads.prepared).toHaveLength(0);
    expect(store.reads.map((r) => r.ifNoneMatch)).toEqual([undefined, undefined, undefined]);
    expect(h.status()).toMatchObject({ servingSnapshotId: 5, etag: null, lastPollResult: 'older' });
  });

  it('a serving dataset whose store lost metadata.json warns once, keeps serving, and says so again only after a current snapshot was seen', async () => {
    const store = new FakeStore();
    store.publish(4);
    const h = start({ store });
    await h.settle();
    const gone =
      "The store has no current snapshot for dataset 'orders' (no metadata.json); keeping snapshot 4";
    store.exists = false;
    await h.advance(INTERVAL);
    await h.advance(INTERVAL);
    expect(h.messages('warn').filter((m) => m.startsWith('The store has no current snapshot'))).toEqual([
      gone,
    ]);
    expect(h.status()).toMatchObject({ servingSnapshotId: 4, lastPollResult: 'waiting' });
    store.exists = true;
    await h.advance(INTERVAL);
    store.exists = false;
    await h.advance(INTERVAL);
    expect(h.messages('warn').filter((m) => m.startsWith('The store has no current snapshot'))).toEqual([
      gone,
      gone,
    ]);
  });

  it('a store whose current id is the served one with another SHA-256 (the id reused) warns once per change of metadata.json and loads nothing', async () => {
    const store = new FakeStore();
    store.publish(4);
    const h = start({ store, restore: { ...localSnapshot(4), checksum: 'SHA-OTHER' } });
    await h.settle();
    const reused =
      "Snapshot 4 of dataset 'orders' in metadata.json has SHA-256 sha-4, not that of the snapshot 4 this reader serves (sha-other): the writer published other content under the same id, which a reader does not load; publish it as a new snapshot (a new id)";
    expect(h.messages('warn')).toEqual([reused]);
    expect(h.status()).toMatchObject({ servingSnapshotId: 4, lastPollResult: 'same', etag: store.etag });
    await h.advance(INTERVAL);
    expect(h.messages('warn')).toEqual([reused]);
    store.touch();
    await h.advance(INTERVAL);
    expect(h.messages('warn')).toEqual([reused, reused]);
    expect(h.downloads.prepared).toHaveLength(0);
  });

  it('ETag bookkeeping: a poll that finds the loaded id records the ETag', async () => {
    const store = new FakeStore();
    store.publish(4);
    const h = start({ store, restore: localSnapshot(4) });
    await h.settle();
    expect(h.status()).toMatchObject({ lastPollResult: 'same', etag: store.etag });
    await h.advance(INTERVAL);
    expect(store.reads.at(-1)?.ifNoneMatch).toBe(store.etag);
    expect(h.downloads.prepared).toHaveLength(0);
  });
});

describe('dataset machine: swapping', () => {
  it('Swapping: queries keep being served from the previous snapshot until the swap completes', async () => {
    const h = await serving();
    h.downloads.swapGate = deferred();
    h.store.publish(2);
    h.clock.increment(INTERVAL);
    await h.until((s) => s.matches('swapping'));
    expect(h.status()).toMatchObject({ state: 'swapping', servingSnapshotId: 1 });
    expect(h.context().serving?.snapshotId).toBe(1);
    h.downloads.swapGate.resolve();
    await h.settle();
    expect(h.status()).toMatchObject({ state: 'serving', servingSnapshotId: 2 });
  });
});

describe('dataset machine: notifications', () => {
  it('Notifications: an announcement of a newer id polls at once, reading metadata without the ETag', async () => {
    const h = await serving();
    h.store.publish(2);
    h.actor.send({ type: 'snapshot.announced', snapshotId: 2 });
    await h.settle();
    expect(h.clock.now()).toBe(0);
    expect(h.store.reads[1]).toEqual({ dataset: 'orders', trigger: 'notification' });
    expect(h.status()).toMatchObject({ servingSnapshotId: 2, nextPollDueMs: INTERVAL });
    expect(h.status().counters.notifications).toBe(1);
  });

  it('Notifications: an id not greater than both the loaded and the last requested id is ignored', async () => {
    const h = await serving();
    h.actor.send({ type: 'snapshot.announced', snapshotId: 1 });
    h.actor.send({ type: 'snapshot.announced', snapshotId: 0 });
    await h.settle();
    expect(h.store.reads).toHaveLength(1);

    h.actor.send({ type: 'snapshot.announced', snapshotId: 5 });
    await h.settle();
    expect(h.store.reads).toHaveLength(2);
    h.actor.send({ type: 'snapshot.announced', snapshotId: 5 });
    h.actor.send({ type: 'snapshot.announced', snapshotId: 4 });
    await h.settle();
    expect(h.store.reads).toHaveLength(2);
    expect(h.status().counters.notifications).toBe(5);
  });

  it('Notifications: announcements during a poll coalesce into one follow-up poll', async () => {
    const h = await serving();
    h.store.gate = deferred();
    h.actor.send({ type: 'snapshot.announced', snapshotId: 2 });
    await h.until(() => h.store.reads.length === 2);
    for (const snapshotId of [3, 4, 5]) h.actor.send({ type: 'snapshot.announced', snapshotId });
    h.store.publish(2);
    h.store.publish(3);
    h.store.gate.resolve();
    h.store.gate = undefined;
    await h.until((s) => s.matches({ serving: 'scheduled' }) && h.store.reads.length === 3);
    await h.settle();
    expect(h.store.reads).toHaveLength(3);
    expect(h.store.reads[2]).toEqual({ dataset: 'orders', trigger: 'notification' });
    expect(h.status().servingSnapshotId).toBe(3);
    expect(h.clock.now()).toBe(0);
  });
});

describe('dataset machine: commands', () => {
  it('Commands: poll.now polls at once and is ignored with a log while a poll runs', async () => {
    const h = await serving();
    h.store.gate = deferred();
    h.actor.send({ type: 'poll.now' });
    expect(h.status().state).toBe('polling');
    h.actor.send({ type: 'poll.now' });
    expect(h.messages('info')).toContain("Poll of dataset 'orders' ignored: a check is already running");
    h.store.gate.resolve();
    await h.settle();
    expect(h.store.reads).toHaveLength(2);
    expect(h.store.reads[1]?.ifNoneMatch).toBe(h.store.etag);
    expect(h.clock.now()).toBe(0);
  });

  it('Commands: polling.pause stops scheduled polls and polling.resume restarts them', async () => {
    const h = await serving();
    h.actor.send({ type: 'polling.pause' });
    expect(h.status()).toMatchObject({ paused: true, nextPollDueMs: null });
    await h.advance(5 * INTERVAL);
    expect(h.store.reads).toHaveLength(1);
    h.actor.send({ type: 'polling.resume' });
    expect(h.status()).toMatchObject({ paused: false, nextPollDueMs: 6 * INTERVAL });
    await h.advance(INTERVAL);
    expect(h.store.reads).toHaveLength(2);
  });

  it('Commands: an announcement while paused is kept and polled, in full, once polling resumes', async () => {
    const h = await serving();
    h.actor.send({ type: 'polling.pause' });
    h.store.publish(2);
    h.actor.send({ type: 'snapshot.announced', snapshotId: 2 });
    await h.settle();
    expect(h.store.reads).toHaveLength(1);
    h.actor.send({ type: 'polling.resume' });
    await h.settle();
    expect(h.store.reads[1]).toEqual({ dataset: 'orders', trigger: 'notification' });
    expect(h.status()).toMatchObject({ servingSnapshotId: 2, paused: false, nextPollDueMs: INTERVAL });
  });

  it('Commands: stop cancels timers, stops an in-flight download and ends in the final stopped state', async () => {
    const h = await serving();
    h.downloads.prepareGate = deferred();
    h.store.publish(2);
    h.clock.increment(INTERVAL);
    await h.until(() => h.downloads.prepared.length === 2);
    h.actor.send({ type: 'stop' });
    expect(h.actor.getSnapshot().status).toBe('done');
    expect(h.status()).toMatchObject({ state: 'stopped', servingSnapshotId: 1, nextPollDueMs: null });
    expect(h.downloads.lastSignal?.aborted).toBe(true);
    h.clock.increment(10 * INTERVAL);
    h.downloads.prepareGate.resolve();
    await Promise.resolve();
    expect(h.store.reads).toHaveLength(2);
    expect(h.downloads.swapped).toHaveLength(1);
  });

  it('snapshots: bootstrap_only behaves as enabled: it polls at the interval, honours poll.now and reloads on notifications', async () => {
    const h = await serving({ input: { snapshotsMode: 'bootstrap_only' } });
    expect(h.actor.getSnapshot().matches({ serving: 'scheduled' })).toBe(true);
    expect(h.status()).toMatchObject({ snapshotsMode: 'bootstrap_only', nextPollDueMs: INTERVAL });
    await h.advance(INTERVAL);
    expect(h.store.reads).toHaveLength(2);
    h.actor.send({ type: 'poll.now' });
    await h.settle();
    expect(h.store.reads).toHaveLength(3);
    h.store.publish(2);
    h.actor.send({ type: 'snapshot.announced', snapshotId: 2 });
    await h.settle();
    expect(h.store.reads).toHaveLength(4);
    expect(h.status()).toMatchObject({ servingSnapshotId: 2, counters: { notifications: 1 } });
  });
});

describe('dataset machine: metadata read failures', () => {
  it('Metadata read failures: keep serving, record the error and poll again at the next interval', async () => {
    const h = await serving();
    const etag = h.store.etag;
    h.store.failures.push(networkError());
    await h.advance(INTERVAL);
    expect(h.status()).toMatchObject({
      state: 'serving',
      servingSnapshotId: 1,
      lastPollResult: 'failed',
      lastError: { code: 'ERR_NETWORK', message: 'The store at s3://bucket/snapshots/ is unreachable.' },
      etag,
      nextPollDueMs: 2 * INTERVAL,
    });
    expect(h.status().counters.failures).toBe(1);
    h.store.publish(2);
    await h.advance(INTERVAL);
    expect(h.status()).toMatchObject({ servingSnapshotId: 2, lastPollResult: 'newer' });
  });

  it('Metadata read failures: retry mode backs off', async () => {
    const h = await serving({ input: { bootstrapOnFailure: 'retry' } });
    h.store.failures.push(networkError(), networkError());
    await h.advance(INTERVAL);
    expect(h.status().nextPollDueMs).toBe(INTERVAL + 1000);
    await h.advance(1000);
    expect(h.status().nextPollDueMs).toBe(INTERVAL + 1000 + 2000);
    await h.advance(2000);
    expect(h.status()).toMatchObject({ lastPollResult: 'unchanged', nextPollDueMs: 13_000 + INTERVAL });
  });

  it('Metadata read failures: a permanent error is logged as an error on every poll and nothing is loaded', async () => {
    const store = new FakeStore();
    store.publish(0);
    const permanent = Object.assign(
      new FerryError(
        'ERR_UNSUPPORTED_FORMAT_VERSION',
        "unsupported format version 2 in location 's3://bucket/snapshots/'.",
      ),
      { permanent: true },
    );
    store.failures.push(permanent, permanent, permanent);
    const h = start({ store, input: { bootstrapOnFailure: 'retry' } });
    await h.settle();
    await h.advance(INTERVAL);
    await h.advance(INTERVAL);
    expect(h.messages('error').filter((m) => m.includes('unsupported format version 2'))).toHaveLength(3);
    expect(h.downloads.prepared).toHaveLength(0);
    expect(h.status()).toMatchObject({
      state: 'waiting',
      servingSnapshotId: null,
      nextPollDueMs: 3 * INTERVAL,
    });
  });
});

describe('dataset machine: the chart shows its decisions', () => {
  /** The states a scheduled poll passes through, from the timer to the next resting state. */
  async function pollPath(h: Awaited<ReturnType<typeof serving>>): Promise<string[]> {
    const mark = h.steps.length;
    await h.advance(h.status().nextPollDueMs === null ? 0 : (h.status().nextPollDueMs ?? 0) - h.clock.now());
    return h.pathSince(mark);
  }

  it('an unchanged poll ends in metadataUnchanged', async () => {
    const h = await serving();
    expect(await pollPath(h)).toEqual([
      'polling.readingMetadata',
      'polling.metadataUnchanged',
      'serving.deciding',
      'serving.scheduled',
    ]);
  });

  it('an older current id ends in olderSnapshot', async () => {
    const store = new FakeStore();
    store.publish(3);
    const h = start({ store, restore: localSnapshot(5) });
    await h.settle();
    expect(await pollPath(h)).toEqual([
      'polling.readingMetadata',
      'polling.comparingSnapshotIds',
      'polling.olderSnapshot',
      'serving.deciding',
      'serving.scheduled',
    ]);
  });

  it('the same id ends in sameSnapshot; nothing published ends in noSnapshotYet', async () => {
    const h = await serving();
    h.store.touch();
    expect(await pollPath(h)).toContain('polling.sameSnapshot');
    const empty = start();
    await empty.settle();
    expect(empty.steps).toContain('bootstrapping.noSnapshotYet');
    expect(empty.steps.at(-1)).toBe('waiting.scheduled');
  });

  it('a candidate refused before download ends in candidateRefused', async () => {
    const h = await serving();
    h.store.publish(2, { engine: 'sqlite' });
    expect(await pollPath(h)).toEqual([
      'polling.readingMetadata',
      'polling.comparingSnapshotIds',
      'polling.newerSnapshotFound',
      'polling.validatingCandidate',
      'polling.candidateFailed',
      'polling.candidateRefused',
      'serving.deciding',
      'serving.scheduled',
    ]);
  });

  it('retry: a failed download ends in retryScheduled and the dataset backs off', async () => {
    const h = await serving({ input: { bootstrapOnFailure: 'retry' } });
    h.downloads.failures.set(2, networkError());
    h.store.publish(2);
    expect(await pollPath(h)).toEqual([
      'polling.readingMetadata',
      'polling.comparingSnapshotIds',
      'polling.newerSnapshotFound',
      'polling.validatingCandidate',
      'polling.downloading',
      'polling.candidateFailed',
      'polling.retryScheduled',
      'serving.deciding',
      'serving.backingOff',
    ]);
    h.downloads.failures.clear();
    expect(await pollPath(h)).toEqual(expect.arrayContaining(['polling.verifying', 'swapping.installing']));
    expect(h.steps.at(-1)).toBe('serving.scheduled');
  });

  it('warn: a failed verification ends in downloadSkipped', async () => {
    const h = await serving();
    h.downloads.verifyFailures.set(2, checksumMismatch(2));
    h.store.publish(2);
    const path = await pollPath(h);
    expect(path.slice(-5)).toEqual([
      'polling.verifying',
      'polling.candidateFailed',
      'polling.downloadSkipped',
      'serving.deciding',
      'serving.scheduled',
    ]);
    expect(h.status()).toMatchObject({ lastPollResult: 'refused', servingSnapshotId: 1 });
  });

  it('fallback: a rejected candidate moves through fallingBack to the next one, then swaps', async () => {
    const store = new FakeStore();
    store.publish(0);
    store.publish(1);
    const downloads = new FakeDownloads();
    downloads.verifyFailures.set(1, checksumMismatch(1));
    const h = start({ store, downloads, input: { bootstrapOnFailure: 'fallback' } });
    await h.settle();
    // (The initial state, bootstrapping.restoring, is entered before any microstep.)
    expect(h.steps).toEqual([
      'bootstrapping.readingMetadata',
      'bootstrapping.comparingSnapshotIds',
      'bootstrapping.newerSnapshotFound',
      'bootstrapping.validatingCandidate',
      'bootstrapping.downloading',
      'bootstrapping.verifying',
      'bootstrapping.candidateFailed',
      'bootstrapping.fallingBack',
      'bootstrapping.validatingCandidate',
      'bootstrapping.downloading',
      'bootstrapping.verifying',
      'swapping.installing',
      'swapping.swapped',
      'serving.deciding',
      'serving.scheduled',
    ]);
  });

  it('a failed swap under retry ends in swapping.retryScheduled', async () => {
    const store = new FakeStore();
    store.publish(0);
    const downloads = new FakeDownloads();
    const h = start({ store, downloads, input: { bootstrapOnFailure: 'retry' } });
    downloads.swap = () => Promise.reject(networkError());
    await h.settle();
    expect(h.steps.slice(-5)).toEqual([
      'swapping.installing',
      'swapping.swapFailed',
      'swapping.retryScheduled',
      'waiting.deciding',
      'waiting.backingOff',
    ]);
    expect(h.messages('error')).toContain(
      `Failed to bootstrap snapshot; retrying. dataset=orders location=${LOCATION} error=The store at s3://bucket/snapshots/ is unreachable.`,
    );
  });
});

describe('dataset machine: status and events', () => {
  it('Status: datasetStatus is a serialisable view of the snapshot', async () => {
    const h = await serving();
    h.store.publish(2, { engine: 'sqlite' });
    await h.advance(INTERVAL);
    h.actor.send({ type: 'snapshot.announced', snapshotId: 1 });
    const status = h.status();
    expect(JSON.parse(JSON.stringify(status))).toEqual(status);
    expect(status).toEqual({
      dataset: 'orders',
      state: 'serving',
      paused: false,
      snapshotsMode: 'enabled',
      servingSnapshotId: 1,
      servingTimestampMs: 1_764_400_001_000,
      schemaId: 0,
      etag: null,
      lastPollAtMs: INTERVAL,
      lastPollResult: 'refused',
      nextPollDueMs: 2 * INTERVAL,
      // The refused snapshot 2 is known and not loaded: freshness stays at the bootstrap's check.
      freshAtMs: 0,
      storeSnapshotId: 2,
      announcedSnapshotId: null,
      lastError: {
        code: 'ERR_SNAPSHOT_ENGINE_MISMATCH',
        message: expect.stringContaining("Snapshot 2 of dataset 'orders'"),
      },
      counters: { polls: 2, swaps: 1, refusals: 1, failures: 0, notifications: 1 },
    });
    expect(JSON.parse(JSON.stringify(h.actor.getPersistedSnapshot()))).toMatchObject({
      value: { serving: 'scheduled' },
    });
  });

  it('Emitted events: swap, poll and error are emitted, and every log goes through the one log action', async () => {
    const h = await serving();
    h.store.publish(2, { engine: 'sqlite' });
    await h.advance(INTERVAL);
    expect(h.emitted).toEqual([
      { type: 'swap', dataset: 'orders', from: null, to: 1 },
      { type: 'poll', dataset: 'orders', result: 'newer', currentSnapshotId: 1 },
      expect.objectContaining({ type: 'error', dataset: 'orders', snapshotId: 2 }),
      { type: 'poll', dataset: 'orders', result: 'refused', currentSnapshotId: 2 },
    ]);
    expect(h.logs.length).toBeGreaterThan(4);
    for (const entry of h.logs) expect(entry.fields.dataset).toBe('orders');
  });
});
