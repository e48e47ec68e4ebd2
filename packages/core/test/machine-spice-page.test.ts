/**
 * Every behaviour sentence of Spice's snapshot-mode documentation page that is a decision of the
 * dataset machine, as a test named after its words (Behavior, Requirements, and the SQS section),
 * run on a SimulatedClock with the fakes of `machine-harness.ts`. The dataset is the page's own
 * example (`my_table`, loaded from its spicepod), so the defaults are the page's too.
 */
import { describe, expect, it } from 'vitest';
import { loadSpicepod, throwIfInvalid } from '../src/config/spicepod.js';
import type { DatasetMachineInput, ReadMetadataOutput, SnapshotsMode } from '../src/machine/index.js';
import {
  checksumMismatch,
  deferred,
  FakeDownloads,
  FakeStore,
  INTERVAL,
  idSchema,
  localSnapshot,
  networkError,
  OLDER,
  type StartOptions,
  start,
  textIdSchema,
} from './machine-harness.js';

const LOCATION = 's3://my-bucket/snapshots/';

/** The page's configuration example, without its `refresh_check_interval` (so the default applies). */
function pageSpicepod(snapshots: SnapshotsMode, behaviour?: string): string {
  return [
    'version: v1',
    'kind: Spicepod',
    'name: page-example',
    'snapshots:',
    '  enabled: true',
    `  location: ${LOCATION}`,
    ...(behaviour === undefined ? [] : [`  bootstrap_on_failure_behavior: ${behaviour}`]),
    '  params:',
    '    s3_auth: iam_role',
    'datasets:',
    '  - from: postgres:public.my_table',
    '    name: my_table',
    '    acceleration:',
    '      enabled: true',
    '      engine: duckdb',
    '      mode: file',
    '      refresh_mode: snapshot',
    `      snapshots: ${snapshots}`,
    '      params:',
    '        duckdb_file: /nvme/my_table.db',
    '',
  ].join('\n');
}

/** The machine input the runtime builds for the page's dataset. */
function pageInput(snapshots: SnapshotsMode = 'enabled', behaviour?: string): DatasetMachineInput {
  const load = loadSpicepod(pageSpicepod(snapshots, behaviour), { file: 'spicepod.yaml', env: {} });
  throwIfInvalid(load);
  const dataset = load.datasets[0];
  if (dataset === undefined) throw new Error('the page example has one dataset');
  return {
    name: dataset.name,
    ...(dataset.engine === undefined ? {} : { engine: dataset.engine }),
    refreshCheckIntervalMs: dataset.refreshCheckIntervalMs,
    bootstrapOnFailure: dataset.bootstrapOnFailure,
    snapshotsMode: dataset.snapshotsMode,
    location: dataset.location,
  };
}

const MINUTE = 60_000;

function page(options: StartOptions & { snapshots?: SnapshotsMode; behaviour?: string } = {}) {
  return start({
    ...options,
    input: { ...pageInput(options.snapshots, options.behaviour), ...options.input },
  });
}

/** The page's dataset, bootstrapped from snapshot 1. */
async function pageServing(options: StartOptions & { snapshots?: SnapshotsMode; behaviour?: string } = {}) {
  const store = options.store ?? new FakeStore();
  if (store.snapshots.length === 0) store.publish(1);
  const h = page({ ...options, store });
  await h.settle();
  expect(h.status().servingSnapshotId).toBe(1);
  return h;
}

describe('Spice snapshot mode, Behavior', () => {
  it('On startup, the runtime bootstraps from the most recent snapshot, identical to other snapshot-enabled modes', async () => {
    const store = new FakeStore();
    store.publish(0);
    store.publish(2);
    store.publish(1, { current: false });
    const h = page({ store });
    await h.settle();
    expect(h.downloads.preparedIds).toEqual([2]);
    expect(h.status()).toMatchObject({ state: 'serving', servingSnapshotId: 2, lastPollResult: 'newer' });
    expect(store.reads).toEqual([{ dataset: 'my_table', trigger: 'startup' }]);
  });

  it.each(['warn', 'retry', 'fallback'])(
    'When no snapshot has been published yet, the dataset waits for the first one, whatever bootstrap_on_failure_behavior is set to (%s)',
    async (behaviour) => {
      const store = new FakeStore();
      const h = page({ store, behaviour });
      await h.settle();
      expect(h.status()).toMatchObject({
        state: 'waiting',
        lastPollResult: 'waiting',
        nextPollDueMs: MINUTE,
      });
      expect(h.actor.getSnapshot().matches({ waiting: 'scheduled' })).toBe(true);
      await h.advance(MINUTE);
      await h.advance(MINUTE);
      expect(store.reads).toHaveLength(3);
      expect(h.status()).toMatchObject({ state: 'waiting', nextPollDueMs: 3 * MINUTE });
      expect(h.messages().some((message) => message.startsWith('Retrying'))).toBe(false);
    },
  );

  it("Spice logs Snapshot acceleration for dataset 'my_table' is waiting for its first snapshot, checks the location every refresh_check_interval, and restores the first snapshot once a writer publishes it", async () => {
    const store = new FakeStore();
    store.exists = false;
    const h = page({ store });
    await h.settle();
    const waiting = h.logs.filter((entry) => entry.message.includes('is waiting for its first snapshot'));
    expect(waiting).toEqual([
      {
        level: 'info',
        message:
          "Snapshot acceleration for dataset 'my_table' is waiting for its first snapshot. Ensure the snapshot location " +
          "'s3://my-bucket/snapshots/' is correct and that the writer has published a snapshot. See: " +
          'https://spiceai.org/docs/features/data-acceleration/snapshots',
        fields: { dataset: 'my_table', reason: 'no metadata.json', location: LOCATION, intervalMs: MINUTE },
      },
    ]);
    await h.advance(MINUTE - 1);
    expect(store.reads).toHaveLength(1);
    await h.advance(1);
    expect(store.reads).toHaveLength(2);
    store.exists = true;
    store.publish(0);
    await h.advance(MINUTE);
    expect(h.status()).toMatchObject({ state: 'serving', servingSnapshotId: 0 });
  });

  it('After bootstrap, the runtime polls the snapshot store at refresh_check_interval (default: 60s) for newer snapshots', async () => {
    const h = await pageServing();
    expect(h.context().refreshCheckIntervalMs).toBe(MINUTE);
    expect(h.status().nextPollDueMs).toBe(MINUTE);
    await h.advance(MINUTE - 1);
    expect(h.store.reads).toHaveLength(1);
    await h.advance(1);
    expect(h.store.reads).toHaveLength(2);
    h.store.publish(2);
    await h.advance(MINUTE);
    expect(h.store.reads).toHaveLength(3);
    expect(h.status()).toMatchObject({ servingSnapshotId: 2, nextPollDueMs: 3 * MINUTE });
  });

  it("Each poll reads the snapshot store's metadata conditionally, sending the ETag recorded by the previous poll in If-None-Match", async () => {
    const h = await pageServing();
    const first = h.store.etag;
    await h.advance(MINUTE);
    h.store.touch();
    await h.advance(MINUTE);
    const second = h.store.etag;
    await h.advance(MINUTE);
    expect(h.store.reads.map((read) => read.ifNoneMatch)).toEqual([undefined, first, first, second]);
  });

  it('When the store reports that the metadata is unchanged, the poll ends without downloading it', async () => {
    const h = await pageServing();
    const mark = h.steps.length;
    await h.advance(MINUTE);
    expect(h.pathSince(mark)).toEqual([
      'polling.readingMetadata',
      'polling.metadataUnchanged',
      'serving.deciding',
      'serving.scheduled',
    ]);
    expect(h.downloads.prepared).toHaveLength(1);
    expect(h.status().lastPollResult).toBe('unchanged');
  });

  it('When a newer snapshot is found, its schema is validated against the current acceleration schema before downloading', async () => {
    const h = await pageServing();
    h.store.publish(2, { schema: textIdSchema });
    const mark = h.steps.length;
    await h.advance(MINUTE);
    expect(h.downloads.preparedIds).toEqual([1]);
    expect(h.pathSince(mark)).toContain('polling.candidateRefused');
    expect(h.status()).toMatchObject({
      servingSnapshotId: 1,
      lastPollResult: 'refused',
      lastError: { code: 'ERR_SNAPSHOT_SCHEMA_MISMATCH' },
    });

    h.store.publish(3);
    await h.advance(MINUTE);
    expect(h.downloads.preparedIds).toEqual([1]);
    h.store.publish(4, { schema: idSchema });
    await h.advance(MINUTE);
    expect(h.downloads.preparedIds).toEqual([1, 4]);
  });

  it('A poll reads the metadata once and uses that read for the snapshot id comparison, the schema validation, and the download, so the snapshot that is downloaded is the one whose schema was validated, even if a writer publishes another snapshot during the poll', async () => {
    const h = await pageServing();
    const outputs: ReadMetadataOutput[] = [];
    const read = h.store.read.bind(h.store);
    h.store.read = async (input) => {
      const output = await read(input);
      outputs.push(output);
      return output;
    };
    h.downloads.prepareGate = deferred();
    h.store.publish(2);
    h.clock.increment(MINUTE);
    await h.until(() => h.downloads.prepared.length === 2);
    // A writer publishes snapshot 3, with another schema, while snapshot 2 downloads.
    h.store.publish(3, { schema: textIdSchema });
    h.downloads.prepareGate.resolve();
    await h.settle();

    expect(outputs).toHaveLength(1);
    const output = outputs[0];
    if (output?.kind !== 'read' || output.dataset === undefined) throw new Error('expected a full read');
    expect(h.downloads.prepared[1]?.dataset).toBe(output.dataset);
    expect(h.downloads.verifications[1]?.entry.snapshotId).toBe(2);
    expect(h.downloads.verifications[1]?.schema).toBe(output.dataset.schemas[0]?.schema);
    expect(h.status()).toMatchObject({ servingSnapshotId: 2, schemaId: 0 });
  });

  it('With bootstrap_on_failure_behavior: retry, a failed download retries the whole poll. Each attempt reads the metadata again and validates the snapshot before downloading it, so a snapshot published to replace a broken one is picked up', async () => {
    const h = await pageServing({ behaviour: 'retry' });
    h.downloads.verifyFailures.set(2, checksumMismatch(2));
    h.store.publish(2);
    await h.advance(MINUTE);
    expect(h.actor.getSnapshot().matches({ serving: 'backingOff' })).toBe(true);
    expect(h.status().nextPollDueMs).toBe(MINUTE + 1000);

    // The replacement has another schema: the retry validates it again and refuses it unread.
    h.store.publish(3, { schema: textIdSchema });
    await h.advance(1000);
    expect(h.downloads.preparedIds).toEqual([1, 2]);
    expect(h.status()).toMatchObject({ lastPollResult: 'refused', servingSnapshotId: 1 });

    // A good replacement, published later, is picked up by a poll that reads in full.
    h.store.publish(4, { schema: idSchema });
    await h.advance(MINUTE);
    // The first poll was conditional; the retry and the poll after the refusal read in full.
    expect(h.store.reads.slice(2).map((r) => r.ifNoneMatch)).toEqual([undefined, undefined]);
    expect(h.downloads.preparedIds).toEqual([1, 2, 4]);
    expect(h.status()).toMatchObject({ servingSnapshotId: 4, etag: h.store.etag });
  });

  it('A poll that does not load the current snapshot records no ETag, so the next poll reads the metadata in full: when bootstrap_on_failure_behavior: warn skipped a failed download', async () => {
    const h = await pageServing({ behaviour: 'warn' });
    h.downloads.failures.set(2, networkError());
    h.store.publish(2);
    const mark = h.steps.length;
    await h.advance(MINUTE);
    expect(h.pathSince(mark)).toContain('polling.downloadSkipped');
    expect(h.status()).toMatchObject({ servingSnapshotId: 1, etag: null, lastPollResult: 'failed' });
    h.downloads.failures.clear();
    await h.advance(MINUTE);
    expect(h.store.reads.at(-1)?.ifNoneMatch).toBeUndefined();
    expect(h.status()).toMatchObject({ servingSnapshotId: 2, etag: h.store.etag });
  });

  it('A poll that does not load the current snapshot records no ETag, so the next poll reads the metadata in full: when fallback loaded an older snapshot', async () => {
    const store = new FakeStore();
    store.publish(0);
    store.publish(1);
    const downloads = new FakeDownloads();
    downloads.verifyFailures.set(1, checksumMismatch(1));
    const h = page({ store, downloads, behaviour: 'fallback' });
    await h.settle();
    expect(h.status()).toMatchObject({ servingSnapshotId: 0, etag: null });
    await h.advance(MINUTE);
    expect(store.reads.map((read) => read.ifNoneMatch)).toEqual([undefined, undefined]);
  });

  it('A poll that does not load the current snapshot records no ETag, so the next poll reads the metadata in full: when the store’s current snapshot id is older than the loaded one, in which case every poll logs the snapshot metadata current id is older than the locally loaded snapshot warning', async () => {
    const store = new FakeStore();
    store.publish(3);
    const h = page({ store, restore: localSnapshot(5) });
    await h.settle();
    await h.advance(MINUTE);
    await h.advance(MINUTE);
    const warnings = h.logs.filter((entry) => entry.level === 'warn');
    expect(warnings).toEqual(
      Array.from({ length: 3 }, () => ({
        level: 'warn',
        message: OLDER,
        fields: { dataset: 'my_table', currentSnapshotId: 3, loadedSnapshotId: 5 },
      })),
    );
    expect(store.reads.map((read) => read.ifNoneMatch)).toEqual([undefined, undefined, undefined]);
    expect(h.status()).toMatchObject({ servingSnapshotId: 5, etag: null, lastPollResult: 'older' });
  });

  it('The accelerator file is swapped atomically — queries continue to be served from the previous snapshot until the swap completes', async () => {
    const h = await pageServing();
    h.downloads.swapGate = deferred();
    h.store.publish(2);
    const served: (number | undefined)[] = [];
    const subscription = h.actor.subscribe((snapshot) => served.push(snapshot.context.serving?.snapshotId));
    h.clock.increment(MINUTE);
    await h.until((s) => s.matches('swapping'));
    expect(h.context().serving?.snapshotId).toBe(1);
    expect(h.downloads.verifications.map((v) => v.entry.snapshotId)).toEqual([1, 2]);
    h.downloads.swapGate.resolve();
    await h.settle();
    subscription.unsubscribe();
    // Every snapshot before the swap actor resolved still served 1; only then 2.
    const firstTwo = served.indexOf(2);
    expect(served.slice(0, firstTwo).every((id) => id === 1)).toBe(true);
    expect(served.slice(firstTwo).every((id) => id === 2)).toBe(true);
    expect(h.status().servingSnapshotId).toBe(2);
  });
});

describe('Spice snapshot mode, Requirements', () => {
  /** The same story told to a dataset: what it reads, emits and ends up serving. */
  async function story(snapshots: SnapshotsMode) {
    const h = await pageServing({ snapshots });
    await h.advance(MINUTE);
    h.store.publish(2);
    await h.advance(MINUTE);
    h.actor.send({ type: 'poll.now' });
    await h.settle();
    h.store.publish(3);
    h.actor.send({ type: 'snapshot.announced', snapshotId: 3 });
    await h.settle();
    const { snapshotsMode, ...status } = h.status();
    return { snapshotsMode, status, reads: h.store.reads, emitted: h.emitted, steps: h.steps };
  }

  it('acceleration.snapshots must be enabled or bootstrap_only; snapshot mode is a snapshot consumer only, so the two behave identically here', async () => {
    const enabled = await story('enabled');
    const bootstrapOnly = await story('bootstrap_only');
    expect(enabled.snapshotsMode).toBe('enabled');
    expect(bootstrapOnly.snapshotsMode).toBe('bootstrap_only');
    expect(bootstrapOnly.reads).toEqual(enabled.reads);
    expect(bootstrapOnly.emitted).toEqual(enabled.emitted);
    expect(bootstrapOnly.steps).toEqual(enabled.steps);
    expect(bootstrapOnly.status).toEqual(enabled.status);
    // And the story is not empty: it polled on schedule, on command and on the notification.
    expect(enabled.reads.map((read) => read.trigger)).toEqual([
      'startup',
      'schedule',
      'schedule',
      'command',
      'notification',
    ]);
    expect(enabled.status.servingSnapshotId).toBe(3);
  });
});

describe('Spice snapshot mode, Reload on S3 event notifications', () => {
  it('A reader that is still waiting for its first snapshot restores it when the notification arrives', async () => {
    const store = new FakeStore();
    const h = page({ store });
    await h.settle();
    expect(h.status().state).toBe('waiting');
    store.publish(0);
    h.actor.send({ type: 'snapshot.announced', snapshotId: 0 });
    await h.settle();
    expect(h.clock.now()).toBe(0);
    expect(h.status()).toMatchObject({ state: 'serving', servingSnapshotId: 0 });
    expect(store.reads.at(-1)).toEqual({ dataset: 'my_table', trigger: 'notification' });
  });

  it('…and reloads only the datasets whose current snapshot changed: an announcement of the snapshot already loaded wakes nobody', async () => {
    const h = await pageServing();
    h.actor.send({ type: 'snapshot.announced', snapshotId: 1 });
    await h.settle();
    expect(h.store.reads).toHaveLength(1);
    expect(h.status()).toMatchObject({ state: 'serving', counters: { notifications: 1, polls: 1 } });
  });

  it('…with the same snapshot id, schema, and checksum checks as a poll', async () => {
    const h = await pageServing();
    h.store.publish(2, { schema: textIdSchema });
    h.actor.send({ type: 'snapshot.announced', snapshotId: 2 });
    await h.settle();
    expect(h.status()).toMatchObject({
      servingSnapshotId: 1,
      lastError: { code: 'ERR_SNAPSHOT_SCHEMA_MISMATCH' },
    });
    h.downloads.verifyFailures.set(3, checksumMismatch(3));
    h.store.publish(3, { schema: idSchema });
    h.actor.send({ type: 'snapshot.announced', snapshotId: 3 });
    await h.settle();
    expect(h.status()).toMatchObject({
      servingSnapshotId: 1,
      lastError: { code: 'ERR_SNAPSHOT_CHECKSUM_MISMATCH' },
    });
  });

  it('A dataset waits for the reload it asked for before asking for the next one; announcements that arrive meanwhile are coalesced', async () => {
    const h = await pageServing();
    h.store.gate = deferred();
    h.actor.send({ type: 'snapshot.announced', snapshotId: 2 });
    await h.until(() => h.store.reads.length === 2);
    for (const snapshotId of [3, 4, 5]) h.actor.send({ type: 'snapshot.announced', snapshotId });
    expect(h.store.reads).toHaveLength(2);
    h.store.publish(2);
    h.store.publish(3);
    h.store.gate.resolve();
    h.store.gate = undefined;
    await h.until((s) => s.matches({ serving: 'scheduled' }) && h.store.reads.length === 3);
    expect(h.store.reads.map((read) => read.trigger)).toEqual(['startup', 'notification', 'notification']);
    expect(h.status()).toMatchObject({ servingSnapshotId: 3, counters: { notifications: 4 } });
  });

  it('Datasets keep checking the location every refresh_check_interval, which covers notifications that never arrive', async () => {
    const h = await pageServing();
    h.actor.send({ type: 'snapshot.announced', snapshotId: 1 });
    h.store.publish(2);
    await h.advance(MINUTE);
    expect(h.status()).toMatchObject({ servingSnapshotId: 2, counters: { notifications: 1 } });
    expect(h.store.reads.at(-1)?.trigger).toBe('schedule');
  });
});

describe('a file_format: snapshot dataset says what Spice’s snapshot data connector says (spice-reference §3d)', () => {
  const input = { form: 'file_format', location: LOCATION } as const;

  it('nothing published: it has no snapshot to load yet, naming what is missing', async () => {
    const store = new FakeStore();
    store.exists = false;
    const h = start({ store, input });
    await h.settle();
    expect(h.messages('info')).toContain(
      `Dataset 'orders' has no snapshot to load yet, so it cannot be queried until one is published: '${LOCATION}metadata.json' does not exist. Spice keeps checking for it. See: https://spiceai.org/docs/features/data-acceleration/snapshots`,
    );
    expect(h.messages().some((m) => m.includes('is waiting for its first snapshot'))).toBe(false);
  });

  it('the snapshot list cannot be read: it says so with the S3 auth pointer; once loaded, what it loads', async () => {
    const store = new FakeStore();
    store.publish(1);
    store.failures.push(networkError());
    const h = start({ store, input });
    await h.settle();
    expect(h.messages('warn')).toContain(
      "Failed to read the snapshot list of dataset 'orders', so it cannot be queried until a read succeeds. Check that the dataset's `s3_*` params reach the bucket and that its credentials can read the object; Spice keeps retrying. Cause: The store at s3://bucket/snapshots/ is unreachable.. See: https://spiceai.org/docs/components/data-connectors/s3#auth",
    );
    expect(h.messages().some((m) => m.startsWith('Failed to bootstrap snapshot'))).toBe(false);
    await h.advance(INTERVAL);
    expect(h.status()).toMatchObject({ servingSnapshotId: 1 });
    const loads = `Dataset 'orders' loads the duckdb snapshots published at '${LOCATION}'; it is read-only and checks for newer snapshots on its refresh interval`;
    expect(h.messages('info').filter((m) => m === loads)).toHaveLength(1);
    store.publish(2);
    await h.advance(INTERVAL);
    expect(h.status()).toMatchObject({ servingSnapshotId: 2 });
    expect(h.messages('info').filter((m) => m === loads)).toHaveLength(1);
  });
});
