/**
 * The dataset machine: one XState v5 actor per dataset decides what the dataset serves. It waits
 * for a first snapshot, bootstraps, serves, polls the store's metadata, validates and downloads
 * newer snapshots and swaps them in. Every side effect is a named actor or action the runtime
 * provides with `machine.provide(...)`; time comes only from the actor's clock (`after` delays)
 * and the injected `now`, so tests run it on a `SimulatedClock`. The decisions live in
 * `poll-steps.ts`; this file is the state chart.
 */
import {
  and,
  enqueueActions,
  fromPromise,
  not,
  type ParameterizedObject,
  type SnapshotFrom,
  setup,
} from 'xstate';
import { SPICE_RETRY_BACKOFF } from '../backoff.js';
import { ActorNotProvidedError } from './errors.js';
import * as steps from './poll-steps.js';
import type {
  DatasetContext,
  DatasetEmitted,
  DatasetEvent,
  DatasetMachineInput,
  LoadedSnapshot,
  LogEntry,
  PollTrigger,
  PreparedSnapshot,
  PrepareSnapshotInput,
  ReadMetadataInput,
  ReadMetadataOutput,
  RestoreLocalInput,
  SwapSnapshotInput,
} from './types.js';

type LogAction = { type: 'log'; params: LogEntry };

/** Wrap a pure step as a named action: assign its patch, log its entries, emit its events. */
function stepAction<TParams extends ParameterizedObject['params'] | undefined>(
  compute: (context: DatasetContext, params: TParams) => steps.Step,
) {
  return enqueueActions<
    DatasetContext,
    DatasetEvent,
    TParams,
    DatasetEvent,
    never,
    LogAction,
    never,
    never,
    DatasetEmitted
  >(({ context, enqueue }, params) => {
    const step = compute(context, params);
    if (step.context !== undefined) enqueue.assign(step.context);
    for (const entry of step.logs ?? []) enqueue({ type: 'log', params: entry });
    for (const event of step.emitted ?? []) enqueue.emit(event);
  });
}

function notProvided<TOutput, TInput>(actor: string) {
  return fromPromise<TOutput, TInput>(() => Promise.reject(new ActorNotProvidedError(actor)));
}

const datasetSetup = setup({
  types: {
    context: {} as DatasetContext,
    events: {} as DatasetEvent,
    input: {} as DatasetMachineInput,
    emitted: {} as DatasetEmitted,
  },
  actors: {
    /** The snapshot already in the live file from a previous run, or null. Default: none. */
    restoreLocal: fromPromise<LoadedSnapshot | null, RestoreLocalInput>(() => Promise.resolve(null)),
    readMetadata: notProvided<ReadMetadataOutput, ReadMetadataInput>('readMetadata'),
    prepareSnapshot: notProvided<PreparedSnapshot, PrepareSnapshotInput>('prepareSnapshot'),
    swapSnapshot: notProvided<void, SwapSnapshotInput>('swapSnapshot'),
  },
  actions: {
    /** The one way the machine logs; the runtime routes it to its logger. Default: discard. */
    log: (_args, _entry: LogEntry) => undefined,
    beginPoll: stepAction((context, params: { trigger: PollTrigger }) =>
      steps.beginPoll(context, params.trigger),
    ),
    restored: stepAction((context, params: { snapshot: LoadedSnapshot | null }) =>
      steps.restored(context, params.snapshot),
    ),
    restoreFailed: stepAction((context, params: { error: unknown }) =>
      steps.restoreFailed(context, params.error),
    ),
    readDone: stepAction((context, params: { output: ReadMetadataOutput }) =>
      steps.readDone(context, params.output),
    ),
    readFailed: stepAction((context, params: { error: unknown }) => steps.readFailed(context, params.error)),
    refuseCandidate: stepAction((context) => steps.refuseCandidate(context)),
    prepared: stepAction((context, params: { prepared: PreparedSnapshot }) =>
      steps.prepared(context, params.prepared),
    ),
    prepareFailed: stepAction((context, params: { error: unknown }) =>
      steps.candidateFailed(context, params.error, 'download'),
    ),
    swapDone: stepAction((context) => steps.swapDone(context)),
    swapFailed: stepAction((context, params: { error: unknown }) => steps.swapFailed(context, params.error)),
    finishPoll: stepAction((context) => steps.finishPoll(context)),
    scheduleNextPoll: stepAction((context) => steps.scheduleNextPoll(context)),
    acceptAnnouncement: stepAction((context, params: { snapshotId: number }) =>
      steps.announced(context, params.snapshotId, 'accept'),
    ),
    deferAnnouncement: stepAction((context, params: { snapshotId: number }) =>
      steps.announced(context, params.snapshotId, 'defer'),
    ),
    ignoreAnnouncement: stepAction((context, params: { snapshotId: number }) =>
      steps.announced(context, params.snapshotId, 'ignore'),
    ),
    ignorePollNow: stepAction((context, params: { reason: string }) =>
      steps.pollIgnored(context, params.reason),
    ),
    pause: stepAction((context) => steps.paused(context)),
    resume: stepAction((context) => steps.resumed(context)),
    stopped: stepAction((context) => steps.stopped(context)),
  },
  guards: {
    isServing: ({ context }) => context.serving !== null,
    isPaused: ({ context }) => context.paused,
    isBootstrapOnly: ({ context }) => context.snapshotsMode === 'bootstrap_only',
    reloadRequested: ({ context }) => context.reloadRequested,
    hasCandidate: ({ context }) => {
      const poll = context.poll;
      return poll !== null && poll.result === undefined && poll.index < poll.candidates.length;
    },
    candidateRefused: ({ context }) => steps.candidateRefusal(context) !== undefined,
    isNewAnnouncement: ({ context, event }) =>
      event.type === 'snapshot.announced' && steps.isNewAnnouncement(context, event.snapshotId),
  },
  delays: {
    nextPoll: ({ context }) => context.nextPollDelayMs,
  },
});

const announcement = ({ event }: { event: DatasetEvent }) => ({
  snapshotId: event.type === 'snapshot.announced' ? event.snapshotId : -1,
});

const beginPoll = (trigger: PollTrigger) => ({ type: 'beginPoll', params: { trigger } }) as const;

/** Events while a poll, bootstrap attempt or swap runs: nothing starts a second one. */
const busyEvents = datasetSetup.createStateConfig({
  on: {
    'snapshot.announced': [
      {
        guard: and([not('isBootstrapOnly'), 'isNewAnnouncement']),
        actions: { type: 'deferAnnouncement', params: announcement },
      },
      { actions: { type: 'ignoreAnnouncement', params: announcement } },
    ],
    'poll.now': { actions: { type: 'ignorePollNow', params: { reason: 'a check is already running' } } },
    'polling.pause': { guard: not('isPaused'), actions: 'pause' },
    'polling.resume': { guard: 'isPaused', actions: 'resume' },
  },
}).on;

/** Read the metadata once, pick candidates, refuse or download them: shared by bootstrap and poll. */
const checkStates = {
  reading: datasetSetup.createStateConfig({
    invoke: {
      id: 'readMetadata',
      src: 'readMetadata',
      input: ({ context }) => steps.readMetadataInput(context),
      onDone: {
        target: 'routing',
        actions: { type: 'readDone', params: ({ event }) => ({ output: event.output }) },
      },
      onError: {
        target: 'finished',
        actions: { type: 'readFailed', params: ({ event }) => ({ error: event.error }) },
      },
    },
  }),
  routing: datasetSetup.createStateConfig({
    always: [{ guard: 'hasCandidate', target: 'validating' }, { target: 'finished' }],
  }),
  validating: datasetSetup.createStateConfig({
    always: [
      { guard: 'candidateRefused', target: 'routing', actions: 'refuseCandidate' },
      { target: 'preparing' },
    ],
  }),
  preparing: datasetSetup.createStateConfig({
    invoke: {
      id: 'prepareSnapshot',
      src: 'prepareSnapshot',
      input: ({ context }) => steps.prepareSnapshotInput(context),
      onDone: {
        target: '#dataset.swapping',
        actions: { type: 'prepared', params: ({ event }) => ({ prepared: event.output }) },
      },
      onError: {
        target: 'routing',
        actions: { type: 'prepareFailed', params: ({ event }) => ({ error: event.error }) },
      },
    },
  }),
  finished: datasetSetup.createStateConfig({
    entry: 'finishPoll',
    always: [{ guard: 'isServing', target: '#dataset.serving' }, { target: '#dataset.waiting' }],
  }),
};

export const datasetMachine = datasetSetup.createMachine({
  id: 'dataset',
  initial: 'bootstrapping',
  context: ({ input }) => ({
    name: input.name,
    engine: input.engine,
    refreshCheckIntervalMs: input.refreshCheckIntervalMs,
    bootstrapOnFailure: input.bootstrapOnFailure ?? 'warn',
    snapshotsMode: input.snapshotsMode ?? 'enabled',
    maxBackoffMs: input.maxBackoffMs ?? SPICE_RETRY_BACKOFF.maxMs,
    pollPhaseMs: input.pollPhaseMs ?? null,
    now: input.now,
    random: input.random ?? Math.random,
    serving: null,
    etag: null,
    paused: false,
    lastRequestedId: null,
    reloadRequested: false,
    backoffAttempt: 0,
    nextPollDelayMs: input.refreshCheckIntervalMs,
    nextPollDueMs: null,
    lastPoll: null,
    lastError: null,
    counters: { polls: 0, swaps: 0, refusals: 0, failures: 0, notifications: 0 },
    poll: null,
  }),
  on: {
    stop: { target: '.stopped', actions: 'stopped' },
  },
  states: {
    waiting: {
      initial: 'deciding',
      on: {
        'snapshot.announced': [
          {
            guard: not('isPaused'),
            target: '#dataset.bootstrapping.reading',
            actions: [{ type: 'acceptAnnouncement', params: announcement }, beginPoll('notification')],
          },
          { actions: { type: 'deferAnnouncement', params: announcement } },
        ],
        'poll.now': { target: '#dataset.bootstrapping.reading', actions: beginPoll('command') },
        'polling.pause': { guard: not('isPaused'), target: '.paused', actions: 'pause' },
        'polling.resume': { guard: 'isPaused', target: '.deciding', actions: 'resume' },
      },
      states: {
        deciding: {
          always: [
            { guard: 'isPaused', target: 'paused' },
            {
              guard: 'reloadRequested',
              target: '#dataset.bootstrapping.reading',
              actions: beginPoll('notification'),
            },
            { target: 'scheduled' },
          ],
        },
        scheduled: {
          entry: 'scheduleNextPoll',
          after: { nextPoll: { target: '#dataset.bootstrapping.reading', actions: beginPoll('schedule') } },
        },
        paused: {},
      },
    },
    bootstrapping: {
      initial: 'restoring',
      on: busyEvents,
      states: {
        restoring: {
          invoke: {
            id: 'restoreLocal',
            src: 'restoreLocal',
            input: ({ context }) => ({ dataset: context.name }),
            onDone: [
              {
                guard: ({ event }) => event.output !== null,
                target: '#dataset.polling',
                actions: [
                  { type: 'restored', params: ({ event }) => ({ snapshot: event.output }) },
                  beginPoll('startup'),
                ],
              },
              { target: 'reading', actions: beginPoll('startup') },
            ],
            onError: {
              target: 'reading',
              actions: [
                { type: 'restoreFailed', params: ({ event }) => ({ error: event.error }) },
                beginPoll('startup'),
              ],
            },
          },
        },
        ...checkStates,
      },
    },
    serving: {
      initial: 'deciding',
      on: {
        'snapshot.announced': [
          {
            guard: and([not('isBootstrapOnly'), not('isPaused'), 'isNewAnnouncement']),
            target: '#dataset.polling',
            actions: [{ type: 'acceptAnnouncement', params: announcement }, beginPoll('notification')],
          },
          {
            guard: and([not('isBootstrapOnly'), 'isNewAnnouncement']),
            actions: { type: 'deferAnnouncement', params: announcement },
          },
          { actions: { type: 'ignoreAnnouncement', params: announcement } },
        ],
        'poll.now': [
          {
            guard: 'isBootstrapOnly',
            actions: { type: 'ignorePollNow', params: { reason: 'snapshots are bootstrap_only' } },
          },
          { target: '#dataset.polling', actions: beginPoll('command') },
        ],
        'polling.pause': { guard: not('isPaused'), target: '.paused', actions: 'pause' },
        'polling.resume': { guard: 'isPaused', target: '.deciding', actions: 'resume' },
      },
      states: {
        deciding: {
          always: [
            { guard: 'isBootstrapOnly', target: 'idle' },
            { guard: 'isPaused', target: 'paused' },
            { guard: 'reloadRequested', target: '#dataset.polling', actions: beginPoll('notification') },
            { target: 'scheduled' },
          ],
        },
        scheduled: {
          entry: 'scheduleNextPoll',
          after: { nextPoll: { target: '#dataset.polling', actions: beginPoll('schedule') } },
        },
        paused: {},
        /** bootstrap_only: serve what was bootstrapped, never poll. */
        idle: {},
      },
    },
    polling: {
      initial: 'reading',
      on: busyEvents,
      states: checkStates,
    },
    swapping: {
      on: busyEvents,
      invoke: {
        id: 'swapSnapshot',
        src: 'swapSnapshot',
        input: ({ context }) => steps.swapSnapshotInput(context),
        onDone: { target: 'serving', actions: ['swapDone', 'finishPoll'] },
        onError: [
          {
            guard: 'isServing',
            target: 'serving',
            actions: [{ type: 'swapFailed', params: ({ event }) => ({ error: event.error }) }, 'finishPoll'],
          },
          {
            target: 'waiting',
            actions: [{ type: 'swapFailed', params: ({ event }) => ({ error: event.error }) }, 'finishPoll'],
          },
        ],
      },
    },
    stopped: {
      type: 'final',
    },
  },
});

export type DatasetMachine = typeof datasetMachine;
export type DatasetSnapshot = SnapshotFrom<DatasetMachine>;
