/**
 * The dataset machine through XState's pure API: `initialTransition` / `transition` return the
 * next snapshot and the actions a step WOULD run, without running any of them. Also the
 * inspector-facing definition and the defaults the runtime must override.
 */
import { describe, expect, it } from 'vitest';
import {
  createActor,
  type ExecutableActionsFrom,
  fromPromise,
  initialTransition,
  SimulatedClock,
  transition,
  waitFor,
} from 'xstate';
import {
  createDatasetMachine,
  type DatasetEvent,
  type DatasetMachine,
  type DatasetMachineInput,
  type DatasetSnapshot,
  datasetMachine,
  datasetStatus,
  type LoadedSnapshot,
  type ReadMetadataInput,
  type ReadMetadataOutput,
  type RestoreLocalInput,
} from '../src/machine/index.js';
import type { ArrowSchema, DatasetMetadata } from '../src/metadata/types.js';

const schema: ArrowSchema = {
  fields: [{ name: 'id', data_type: 'Int64', nullable: false, metadata: {} }],
  metadata: {},
};

const input: DatasetMachineInput = {
  name: 'orders',
  engine: 'duckdb',
  refreshCheckIntervalMs: 10_000,
  location: 's3://bucket/snapshots/',
};

/** The machine on a clock that always reads 42 ms. */
const machine = createDatasetMachine({ now: () => 42, random: () => 0.5 });

const local: LoadedSnapshot = { snapshotId: 3, timestampMs: 1_764_400_000_000, checksum: 'sha-3', schema };

function metadata(currentSnapshotId: number, engine = 'duckdb'): DatasetMetadata {
  return {
    name: 'orders',
    schemas: [{ schemaId: 0, schema }],
    currentSchemaId: 0,
    snapshots: [
      {
        snapshotId: currentSnapshotId,
        timestampMs: 1_764_400_100_000,
        uri: `s3://bucket/snapshots/orders_${currentSnapshotId}.duckdb`,
        checksum: 'sha',
        checksumAlgorithm: 'SHA256',
        size: 10,
        engine,
      },
    ],
    currentSnapshotId,
    properties: {},
  };
}

/** The `xstate.done.actor.<id>` event an invoked actor sends its parent when it resolves. */
function done(id: string, output: unknown): DatasetEvent {
  return { type: `xstate.done.actor.${id}`, output } as unknown as DatasetEvent;
}

type Action = ExecutableActionsFrom<DatasetMachine>;

function spawned(actions: readonly Action[]): { src: unknown; input: unknown }[] {
  return actions
    .filter((action) => action.type === 'xstate.spawnChild')
    .map((action) => {
      const params = action.params as { src: unknown; input?: unknown };
      return { src: params.src, input: params.input };
    });
}

function logged(actions: readonly Action[]): unknown[] {
  return actions.filter((action) => action.type === 'log').map((action) => action.params);
}

/** The snapshot of a dataset that restored snapshot 3 and is reading the store's metadata. */
function restoredAndReading(): DatasetSnapshot {
  const [initial] = initialTransition(machine, input);
  const [reading] = transition(machine, initial, done('restoreLocal', local));
  return reading;
}

describe('dataset machine: pure transitions', () => {
  it('initialTransition: starts bootstrapping by restoring the live file (would spawn restoreLocal)', () => {
    const [snapshot, actions] = initialTransition(machine, input);
    expect(snapshot.value).toEqual({ bootstrapping: 'restoring' });
    expect(spawned(actions)).toEqual([{ src: 'restoreLocal', input: { dataset: 'orders' } }]);
    expect(datasetStatus(snapshot)).toMatchObject({ state: 'bootstrapping', servingSnapshotId: null });
  });

  it('transition: a restored snapshot is served at once and the store is read without an ETag', () => {
    const [initial] = initialTransition(machine, input);
    const [snapshot, actions] = transition(machine, initial, done('restoreLocal', local));
    expect(snapshot.value).toEqual({ polling: 'readingMetadata' });
    expect(snapshot.context.serving).toEqual(local);
    expect(snapshot.context.poll).toMatchObject({ trigger: 'startup', startedAtMs: 42 });
    expect(spawned(actions)).toEqual([
      { src: 'readMetadata', input: { dataset: 'orders', trigger: 'startup' } },
    ]);
    expect(logged(actions)).toContainEqual(
      expect.objectContaining({ level: 'info', fields: { dataset: 'orders', snapshotId: 3 } }),
    );
  });

  it('transition: a newer snapshot would be downloaded from the entry of the same read', () => {
    const read: ReadMetadataOutput = { kind: 'read', etag: '"e1"', dataset: metadata(4) };
    const [snapshot, actions] = transition(machine, restoredAndReading(), done('readMetadata', read));
    expect(snapshot.value).toEqual({ polling: 'downloading' });
    expect(spawned(actions)).toEqual([{ src: 'downloadSnapshot', input: expect.anything() }]);
    const prepare = spawned(actions)[0]?.input as { entry: unknown } | undefined;
    expect(prepare?.entry).toBe(read.kind === 'read' ? read.dataset?.snapshots[0] : null);
    expect(snapshot.context.serving?.snapshotId).toBe(3);
  });

  it('transition: a refused candidate would never spawn downloadSnapshot', () => {
    const read: ReadMetadataOutput = { kind: 'read', etag: '"e1"', dataset: metadata(4, 'sqlite') };
    const [snapshot, actions] = transition(machine, restoredAndReading(), done('readMetadata', read));
    expect(snapshot.value).toEqual({ serving: 'scheduled' });
    expect(spawned(actions)).toEqual([{ src: 'pollTimer', input: { dueMs: 42 + 10_000 } }]);
    expect(logged(actions)).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        fields: expect.objectContaining({ code: 'ERR_SNAPSHOT_ENGINE_MISMATCH' }),
      }),
    );
    expect(datasetStatus(snapshot)).toMatchObject({ lastPollResult: 'refused', nextPollDueMs: 42 + 10_000 });
  });

  it('transition: poll.now while a check runs stays put and would only log', () => {
    const reading = restoredAndReading();
    const [snapshot, actions] = transition(machine, reading, { type: 'poll.now' });
    expect(snapshot.value).toEqual({ polling: 'readingMetadata' });
    expect(actions.map((action) => action.type)).toEqual(['log']);
  });

  it('transition: stop from any state ends in the final stopped state', () => {
    const [snapshot, actions] = transition(machine, restoredAndReading(), { type: 'stop' });
    expect(snapshot.value).toBe('stopped');
    expect(snapshot.status).toBe('done');
    expect(actions.map((action) => action.type)).toContain('xstate.stopChild');
  });
});

describe('dataset machine: a check answered without a read', () => {
  /** Restored snapshot 3, then a read of metadata.json (ETag "e1") whose current snapshot is 3. */
  function servingWithEtag(on: DatasetMachine = machine): DatasetSnapshot {
    const [initial] = initialTransition(on, input);
    const [reading] = transition(on, initial, done('restoreLocal', local));
    const read: ReadMetadataOutput = { kind: 'read', etag: '"e1"', dataset: metadata(3) };
    const [serving] = transition(on, reading, done('readMetadata', read));
    return serving;
  }

  it('the poll timer of a serving dataset is given the ETag it holds', () => {
    const [initial] = initialTransition(machine, input);
    const [reading] = transition(machine, initial, done('restoreLocal', local));
    const read: ReadMetadataOutput = { kind: 'read', etag: '"e1"', dataset: metadata(3) };
    const [serving, actions] = transition(machine, reading, done('readMetadata', read));
    expect(serving.value).toEqual({ serving: 'scheduled' });
    expect(spawned(actions)).toEqual([{ src: 'pollTimer', input: { dueMs: 42 + 10_000, etag: '"e1"' } }]);
  });

  it('checks a parked dataset did not see are recorded as unchanged polls, in place, and the timer is armed again', () => {
    const serving = servingWithEtag();
    const unseen = { count: 3, lastPollAtMs: 30_042, lastReadAtMs: 30_040, nextPollDueMs: 40_042 };
    const [after, actions] = transition(machine, serving, { type: 'checks.unseen', ...unseen });
    expect(after.value).toEqual({ serving: 'scheduled' });
    expect(after.context.counters.polls).toBe(serving.context.counters.polls + 3);
    expect(after.context.lastPoll).toEqual({ atMs: 30_042, result: 'unchanged' });
    expect(after.context.freshAtMs).toBe(30_040);
    expect(after.context.nextPollDueMs).toBe(40_042);
    expect(after.context.etag).toBe('"e1"');
    expect(spawned(actions)).toEqual([]);
    expect(actions.map((action) => action.type)).toContain('xstate.sendTo');
  });

  it('poll.due reads metadata.json with the ETag held', () => {
    const serving = servingWithEtag();
    const [after, actions] = transition(machine, serving, { type: 'poll.due' });
    expect(after.value).toEqual({ polling: 'readingMetadata' });
    expect(spawned(actions)).toEqual([
      { src: 'readMetadata', input: { dataset: 'orders', trigger: 'schedule', ifNoneMatch: '"e1"' } },
    ]);
  });

  /**
   * A started machine on a simulated clock whose `park` answers `taken()`, recording what it was
   * offered, the reads it made (the ETag each sent) and its poll events. A read with an ETag finds
   * metadata.json unchanged.
   */
  function parkableOnClock(taken: () => boolean) {
    const clock = new SimulatedClock();
    const offered: [string, number][] = [];
    const reads: (string | undefined)[] = [];
    const onClock = createDatasetMachine({
      now: () => clock.now(),
      random: () => 0.5,
      park: (etag, dueMs) => {
        offered.push([etag, dueMs]);
        return taken();
      },
    }).provide({
      actors: {
        restoreLocal: fromPromise<LoadedSnapshot | null, RestoreLocalInput>(() => Promise.resolve(local)),
        readMetadata: fromPromise<ReadMetadataOutput, ReadMetadataInput>(({ input: read }) => {
          reads.push(read.ifNoneMatch);
          return Promise.resolve(
            read.ifNoneMatch === undefined
              ? { kind: 'read', etag: '"e1"', dataset: metadata(3) }
              : { kind: 'unchanged' },
          );
        }),
      },
    });
    const actor = createActor(onClock, { clock, input });
    const pollEvents: string[] = [];
    actor.on('poll', (event) => pollEvents.push(event.result));
    actor.start();
    return { clock, actor, offered, reads, pollEvents };
  }

  it('on a simulated clock, a parked dataset arms no timer: it checks when the runtime wakes it', () => {
    let taken = true;
    const { clock, actor, offered, reads, pollEvents } = parkableOnClock(() => taken);
    return (async () => {
      await waitFor(actor, (s) => s.matches({ serving: 'scheduled' }), { timeout: 1000 });
      expect(offered).toEqual([['"e1"', 10_000]]);
      clock.increment(30_000);
      expect(reads).toEqual([undefined]);
      expect(actor.getSnapshot().context.counters.polls).toBe(1);
      // The runtime answered three checks, then found metadata.json changed.
      actor.send({
        type: 'checks.unseen',
        count: 3,
        lastPollAtMs: 30_000,
        lastReadAtMs: 29_990,
        nextPollDueMs: 40_000,
      });
      expect(actor.getSnapshot().context.counters.polls).toBe(4);
      // No poll event for them: the runtime counted those checks when it made them.
      expect(pollEvents).toEqual(['same']);
      expect(offered.at(-1)).toEqual(['"e1"', 40_000]);
      actor.send({ type: 'poll.due' });
      await waitFor(actor, (s) => s.context.counters.polls === 5 && s.matches({ serving: 'scheduled' }), {
        timeout: 1000,
      });
      expect(reads).toEqual([undefined, '"e1"']);
      // Declined: the timer is armed and fires on its own.
      taken = false;
      actor.send({
        type: 'checks.unseen',
        count: 0,
        lastPollAtMs: 30_000,
        lastReadAtMs: 29_990,
        nextPollDueMs: 40_000,
      });
      clock.increment(10_000);
      await waitFor(actor, (s) => s.context.counters.polls === 6 && s.matches({ serving: 'scheduled' }), {
        timeout: 1000,
      });
      expect(reads).toEqual([undefined, '"e1"', '"e1"']);
      actor.stop();
    })();
  });

  it('poll.rearm offers the checks again, due when they were, and records nothing', () => {
    let taken = false;
    const { clock, actor, offered, reads, pollEvents } = parkableOnClock(() => taken);
    return (async () => {
      await waitFor(actor, (s) => s.matches({ serving: 'scheduled' }), { timeout: 1000 });
      // Declined (someone watched each check): the timer is armed.
      expect(offered).toEqual([['"e1"', 10_000]]);
      clock.increment(4_000);
      const before = actor.getSnapshot().context;
      // Nobody watches any more: offered again, due at the same time; no check is recorded.
      taken = true;
      actor.send({ type: 'poll.rearm' });
      expect(offered).toEqual([
        ['"e1"', 10_000],
        ['"e1"', 10_000],
      ]);
      const after = actor.getSnapshot();
      expect(after.value).toEqual({ serving: 'scheduled' });
      expect(after.context.counters).toEqual(before.counters);
      expect(after.context.lastPoll).toEqual(before.lastPoll);
      // Taken: the armed timer was cancelled, so no check is made at its due time.
      clock.increment(30_000);
      expect(reads).toEqual([undefined]);
      expect(pollEvents).toEqual(['same']);
      actor.stop();
    })();
  });

  it('a machine the runtime told nothing reads at every check', () => {
    const clock = new SimulatedClock();
    let reads = 0;
    const onClock = createDatasetMachine({ now: () => clock.now(), random: () => 0.5 }).provide({
      actors: {
        restoreLocal: fromPromise<LoadedSnapshot | null, RestoreLocalInput>(() => Promise.resolve(local)),
        readMetadata: fromPromise<ReadMetadataOutput, ReadMetadataInput>(() => {
          reads++;
          return Promise.resolve({ kind: 'read', etag: '"e1"', dataset: metadata(3) });
        }),
      },
    });
    const actor = createActor(onClock, { clock, input }).start();
    return (async () => {
      await waitFor(actor, (s) => s.matches({ serving: 'scheduled' }), { timeout: 1000 });
      clock.increment(10_000);
      await waitFor(actor, (s) => s.context.counters.polls === 2 && s.matches({ serving: 'scheduled' }), {
        timeout: 1000,
      });
      expect(reads).toBe(2);
      actor.stop();
    })();
  });
});

describe('dataset machine: definition and defaults', () => {
  it('the machine definition serialises with JSON.stringify and names the five states', () => {
    const json = JSON.parse(JSON.stringify(datasetMachine.definition)) as { states: Record<string, unknown> };
    expect(Object.keys(json.states)).toEqual(
      expect.arrayContaining(['waiting', 'bootstrapping', 'serving', 'polling', 'swapping', 'stopped']),
    );
    expect(JSON.stringify(datasetMachine.toJSON())).toContain('"#dataset.swapping"');
  });

  it('an actor the runtime did not provide fails with ERR_ACTOR_NOT_PROVIDED and the dataset waits', async () => {
    const clock = new SimulatedClock();
    const onClock = createDatasetMachine({ now: () => clock.now(), random: () => 0.5 });
    const actor = createActor(onClock, { clock, input }).start();
    const snapshot = await waitFor(actor, (s) => s.matches('waiting'), { timeout: 1000 });
    expect(snapshot.context.lastError?.code).toBe('ERR_ACTOR_NOT_PROVIDED');
    expect(snapshot.context.lastError?.message).toContain("'readMetadata'");
    actor.stop();
  });
});
