/**
 * The dataset machine: one XState v5 actor per dataset decides what the dataset serves. The chart
 * reads as the behaviour list of Spice's snapshot-mode page: on startup it bootstraps from the most
 * recent snapshot; when no snapshot has been published yet it waits for the first one; after
 * bootstrap it polls at `refresh_check_interval`; each poll reads the metadata conditionally (an
 * unchanged store ends it), compares the current id, validates a newer snapshot's engine and schema
 * before downloading it, downloads, verifies and swaps it; `warn` skips a failed download, `retry`
 * repeats the whole poll after a backoff, `fallback` moves on to the next candidate. Every outcome
 * is its own state, reached by a guarded transition, so the inspector shows which one happened.
 *
 * Side effects are named actors and the `log` action the runtime provides with `.provide(...)`.
 * Time and randomness are given to {@link createDatasetMachine} (never kept in the context), and
 * the poll timer is an invoked actor with an absolute due time, so a persisted snapshot restores
 * with its timer re-armed. The pure decisions are in `decisions.ts`, the bookkeeping in `steps.ts`.
 */
import {
  and,
  enqueueActions,
  fromCallback,
  fromPromise,
  not,
  type ParameterizedObject,
  type SnapshotFrom,
  sendTo,
  setup,
} from 'xstate';
import { SPICE_RETRY_BACKOFF } from '../backoff.js';
import * as decide from './decisions.js';
import { ActorNotProvidedError } from './errors.js';
import { freshnessClock } from './staleness.js';
import * as steps from './steps.js';
import type {
  AuthenticateSnapshotInput,
  DatasetContext,
  DatasetEmitted,
  DatasetEvent,
  DatasetMachineClock,
  DatasetMachineInput,
  DownloadedSnapshot,
  DownloadSnapshotInput,
  FailureStage,
  LoadedSnapshot,
  LogEntry,
  PollResult,
  PollTrigger,
  PreparedSnapshot,
  ReadMetadataInput,
  ReadMetadataOutput,
  RestoreLocalInput,
  SwapSnapshotInput,
  UnseenChecks,
  VerifySnapshotInput,
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

export interface PollTimerInput {
  /** When the check is due, on the machine's `now()` clock. */
  readonly dueMs: number;
  /** The ETag of a serving dataset's scheduled check: the timer offers the checks to the runtime (`park`). */
  readonly etag?: string | null;
}

/**
 * Sent to the poll timer when a parked dataset wakes in place, or the machine takes `poll.rearm`:
 * the next check is due at `dueMs` (offered to `park` again when it carries an ETag).
 */
export interface PollTimerRearm extends PollTimerInput {
  readonly type: 'timer.rearm';
}

/** The chart's vocabulary (actors, actions, guards) for one clock. */
function datasetSetup({ now, random, park }: DatasetMachineClock) {
  return setup({
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
      authenticateSnapshot: notProvided<void, AuthenticateSnapshotInput>('authenticateSnapshot'),
      downloadSnapshot: notProvided<DownloadedSnapshot, DownloadSnapshotInput>('downloadSnapshot'),
      verifySnapshot: notProvided<PreparedSnapshot, VerifySnapshotInput>('verifySnapshot'),
      swapSnapshot: notProvided<void, SwapSnapshotInput>('swapSnapshot'),
      /**
       * Sends `poll.due` at `dueMs` on the actor system's clock. An invoked actor rather than an
       * `after` delay: a restored snapshot restarts its invoked actors (not its delays), so a
       * dataset restored mid-wait still checks on schedule. Given an ETag, it first offers the
       * checks to the runtime (`park`); taken, it arms nothing and the runtime sends `poll.due`.
       */
      pollTimer: fromCallback<{ readonly type: 'poll.due' } | PollTimerRearm, PollTimerInput>(
        ({ input, system, self, sendBack, receive }) => {
          const arm = (dueMs: number, etag: string | null | undefined): void => {
            system.scheduler.cancel(self, 'due');
            if (typeof etag === 'string' && park?.(etag, dueMs) === true) return;
            system.scheduler.schedule(self, self, { type: 'poll.due' }, Math.max(0, dueMs - now()), 'due');
          };
          receive((event) => {
            if (event.type === 'poll.due') sendBack(event);
            else if (event.type === 'timer.rearm') arm(event.dueMs, event.etag);
          });
          arm(input.dueMs, input.etag);
          return () => system.scheduler.cancel(self, 'due');
        },
      ),
    },
    actions: {
      /** The one way the machine logs; the runtime routes it to its logger. Default: discard. */
      log: (_args, _entry: LogEntry) => undefined,
      recordUnseenChecks: stepAction((context, params: UnseenChecks) => steps.unseenChecks(context, params)),
      /** After the checks a parked dataset did not see, or `poll.rearm`: the poll timer, still running, is armed (or parked) again. */
      rearmPollTimer: sendTo(
        'pollTimer',
        ({ context }): PollTimerRearm => ({
          type: 'timer.rearm',
          dueMs: context.nextPollDueMs ?? now(),
          etag: context.etag,
        }),
      ),
      beginPoll: stepAction((context, params: { trigger: PollTrigger }) =>
        steps.beginPoll(context, params.trigger, now()),
      ),
      restored: stepAction((context, params: { snapshot: LoadedSnapshot | null }) =>
        steps.restored(context, params.snapshot),
      ),
      restoreFailed: stepAction((context, params: { error: unknown }) =>
        steps.restoreFailed(context, params.error),
      ),
      recordMetadataRead: stepAction((context, params: { output: ReadMetadataOutput }) =>
        steps.recordMetadataRead(context, params.output),
      ),
      noteMetadataUnchanged: stepAction((context) => steps.noteMetadataUnchanged(context)),
      noteNoSnapshotPublished: stepAction((context) => steps.noteNoSnapshotPublished(context)),
      noteSameSnapshot: stepAction((context) => steps.noteSameSnapshot(context)),
      warnOlderSnapshot: stepAction((context) => steps.warnOlderSnapshot(context)),
      selectCandidates: stepAction((context) => steps.selectCandidates(context)),
      recordCurrentSnapshotMissing: stepAction((context) => steps.recordCurrentSnapshotMissing(context)),
      refuseCandidate: stepAction((context) => steps.refuseCandidate(context)),
      warnEngineUnknown: stepAction((context) => steps.warnEngineUnknown(context)),
      recordAuthenticationFailure: stepAction((context, params: { error: unknown }) =>
        steps.recordAuthenticationFailure(context, params.error),
      ),
      recordFailure: stepAction((context, params: { error: unknown; stage: FailureStage }) =>
        steps.recordFailure(context, params.error, params.stage),
      ),
      downloaded: stepAction((context, params: { snapshot: DownloadedSnapshot }) =>
        steps.downloaded(context, params.snapshot),
      ),
      verified: stepAction((context, params: { snapshot: PreparedSnapshot }) =>
        steps.verified(context, params.snapshot),
      ),
      swapDone: stepAction((context) => steps.swapDone(context)),
      logFailure: stepAction((context) => steps.logFailure(context, 'keep')),
      markRetry: stepAction((context) => steps.markRetry(context)),
      attemptNextSnapshot: stepAction((context) => steps.attemptNextSnapshot(context)),
      logFallbackExhausted: stepAction((context) => steps.logFallbackExhausted(context)),
      logFallbackStopped: stepAction((context) => steps.logFallbackStopped(context)),
      endPoll: stepAction((context, params: { result?: PollResult }) =>
        steps.endPoll(context, params.result),
      ),
      scheduleNextPoll: stepAction((context) => steps.scheduleNextPoll(context, now())),
      scheduleRetry: stepAction((context) => steps.scheduleRetry(context, now(), random)),
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
      reloadRequested: ({ context }) => context.reloadRequested,
      retryPending: ({ context }) => context.backoffAttempt > 0,
      isNewAnnouncement: ({ context, event }) =>
        event.type === 'snapshot.announced' && decide.isNewAnnouncement(context, event.snapshotId),
      isRetry: ({ context }) => context.bootstrapOnFailure === 'retry',
      isFallback: ({ context }) => context.bootstrapOnFailure === 'fallback',
      /** `retry` repeats a failed metadata read, unless the error says retrying cannot fix it. */
      retryReadFailure: ({ context }, params: { error: unknown }) =>
        context.bootstrapOnFailure === 'retry' && !decide.isPermanent(params.error),
      metadataUnchanged: (_args, params: { output: ReadMetadataOutput }) =>
        params.output.kind === 'unchanged',
      noSnapshotPublished: ({ context }) => decide.noSnapshotPublished(context),
      currentIsLoaded: ({ context }) => decide.currentIsLoaded(context),
      currentIsOlder: ({ context }) => decide.currentIsOlder(context),
      currentSnapshotMissing: ({ context }) => decide.noCandidate(context),
      snapshotEngineDiffers: ({ context }) => decide.engineRefusal(context) !== undefined,
      snapshotSchemaDiffers: ({ context }) => decide.schemaRefusal(context) !== undefined,
      signaturesRequired: ({ context }) => context.signaturesRequired,
      failedOnRejection: ({ context }) => decide.failedOnRejection(context),
      failedToDownload: ({ context }) => decide.failedToDownload(context),
      refusedBeforeDownload: ({ context }) => decide.refusedBeforeDownload(context),
      hasNextCandidate: ({ context }) => decide.hasNextCandidate(context),
      restoredLocal: (_args, params: { snapshot: LoadedSnapshot | null }) => params.snapshot != null,
    },
  });
}

const announcement = ({ event }: { event: DatasetEvent }) => ({
  snapshotId: event.type === 'snapshot.announced' ? event.snapshotId : -1,
});

const beginPoll = (trigger: PollTrigger) => ({ type: 'beginPoll', params: { trigger } }) as const;
const endPoll = (result?: PollResult) =>
  ({ type: 'endPoll', params: result === undefined ? {} : { result } }) as const;
const failed = (stage: FailureStage) =>
  ({
    type: 'recordFailure',
    params: ({ event }: { event: { readonly error: unknown } }) => ({ error: event.error, stage }),
  }) as const;

/** Where a finished check leaves the dataset. */
type Rest = '#dataset.serving' | '#dataset.waiting' | 'servingOrWaiting';

/** The actions an outcome state runs before its poll ends. */
type OutcomeAction =
  | 'noteMetadataUnchanged'
  | 'noteNoSnapshotPublished'
  | 'noteSameSnapshot'
  | 'warnOlderSnapshot'
  | 'logFailure'
  | 'markRetry'
  | 'logFallbackExhausted'
  | 'logFallbackStopped';

/** Builds the chart on a clock: `now()` for due times and poll timestamps, `random()` for the backoff jitter. */
export function createDatasetMachine(clock: DatasetMachineClock) {
  const chart = datasetSetup(clock);

  /**
   * An outcome state: its action records and says what happened, then the poll ends (with `result`,
   * else failed / refused by the failure) and the dataset goes to `after`: `serving` from a poll,
   * `waiting` from a bootstrap attempt (nothing is served there), either after a swap.
   */
  const outcome = (after: Rest, action: OutcomeAction | undefined, result?: PollResult) =>
    chart.createStateConfig({
      entry: action === undefined ? [endPoll(result)] : [action, endPoll(result)],
      always:
        after === 'servingOrWaiting'
          ? [{ guard: 'isServing', target: '#dataset.serving' }, { target: '#dataset.waiting' }]
          : { target: after },
    });

  /** Events while a check or a swap runs: nothing starts a second one. */
  const busyEvents = chart.createStateConfig({
    on: {
      'snapshot.announced': [
        { guard: 'isNewAnnouncement', actions: { type: 'deferAnnouncement', params: announcement } },
        { actions: { type: 'ignoreAnnouncement', params: announcement } },
      ],
      'poll.now': { actions: { type: 'ignorePollNow', params: { reason: 'a check is already running' } } },
      'polling.pause': { guard: not('isPaused'), actions: 'pause' },
      'polling.resume': { guard: 'isPaused', actions: 'resume' },
    },
  }).on;

  /** How a failed candidate is handled, per `bootstrap_on_failure_behavior`. */
  const candidateFailed = chart.createStateConfig({
    always: [
      { guard: and(['isFallback', 'failedOnRejection', 'hasNextCandidate']), target: 'fallingBack' },
      { guard: and(['isFallback', 'failedOnRejection']), target: 'fallbackExhausted' },
      { guard: and(['isFallback', 'failedToDownload']), target: 'fallbackStopped' },
      { guard: 'refusedBeforeDownload', target: 'candidateRefused' },
      { guard: 'isRetry', target: 'retryScheduled' },
      { target: 'downloadSkipped' },
    ],
  });

  /**
   * One check of the store, shared by `bootstrapping` and `polling`: one metadata read, the id
   * comparison, validation before download, download, verification; each outcome its own state.
   */
  const checkStates = (after: '#dataset.serving' | '#dataset.waiting') => ({
    /** "Each poll reads the snapshot store's metadata conditionally" (If-None-Match: the last ETag). */
    readingMetadata: chart.createStateConfig({
      invoke: {
        id: 'readMetadata',
        src: 'readMetadata',
        input: ({ context }) => steps.readMetadataInput(context),
        onDone: [
          {
            guard: { type: 'metadataUnchanged', params: ({ event }) => ({ output: event.output }) },
            target: 'metadataUnchanged',
            actions: { type: 'recordMetadataRead', params: ({ event }) => ({ output: event.output }) },
          },
          {
            target: 'comparingSnapshotIds',
            actions: { type: 'recordMetadataRead', params: ({ event }) => ({ output: event.output }) },
          },
        ],
        onError: [
          {
            guard: { type: 'retryReadFailure', params: ({ event }) => ({ error: event.error }) },
            target: 'retryScheduled',
            actions: failed('metadata'),
          },
          { target: 'metadataReadFailed', actions: failed('metadata') },
        ],
      },
    }),
    /** "When the store reports that the metadata is unchanged, the poll ends without downloading it." */
    metadataUnchanged: outcome(after, 'noteMetadataUnchanged', 'unchanged'),
    /** The one read decides: nothing published, the same snapshot, an older one, or a newer one. */
    comparingSnapshotIds: chart.createStateConfig({
      always: [
        { guard: 'noSnapshotPublished', target: 'noSnapshotYet' },
        { guard: 'currentIsLoaded', target: 'sameSnapshot' },
        { guard: 'currentIsOlder', target: 'olderSnapshot' },
        { target: 'newerSnapshotFound', actions: 'selectCandidates' },
      ],
    }),
    /** "When no snapshot has been published yet, the dataset waits for the first one." */
    noSnapshotYet: outcome(after, 'noteNoSnapshotPublished', 'waiting'),
    /** The store's current snapshot is the loaded one: the ETag is recorded. */
    sameSnapshot: outcome(after, 'noteSameSnapshot', 'same'),
    /** "…the store's current snapshot id is older than the loaded one": warn, reload nothing, no ETag. */
    olderSnapshot: outcome(after, 'warnOlderSnapshot', 'older'),
    /** "When a newer snapshot is found…": the candidates to try come from the same read. */
    newerSnapshotFound: chart.createStateConfig({
      always: [
        {
          guard: and(['currentSnapshotMissing', 'isRetry']),
          target: 'retryScheduled',
          actions: 'recordCurrentSnapshotMissing',
        },
        {
          guard: 'currentSnapshotMissing',
          target: 'currentSnapshotMissing',
          actions: 'recordCurrentSnapshotMissing',
        },
        { target: 'validatingCandidate' },
      ],
    }),
    /** `current-snapshot-id` names no entry of `snapshots`. */
    currentSnapshotMissing: outcome(after, 'logFailure', 'failed'),
    /** "…its schema is validated against the current acceleration schema before downloading" (engine first). */
    validatingCandidate: chart.createStateConfig({
      always: [
        { guard: 'snapshotEngineDiffers', target: 'candidateFailed', actions: 'refuseCandidate' },
        { guard: 'snapshotSchemaDiffers', target: 'candidateFailed', actions: 'refuseCandidate' },
        { guard: 'signaturesRequired', target: 'authenticating' },
        { target: 'downloading' },
      ],
    }),
    /**
     * Ferry's signed snapshots (`ferry_trusted_keys`): the candidate's signature and statement are
     * checked before anything is downloaded; a missing, bad or untrusted signature, or a statement
     * that does not match the metadata entry, is refused like a schema mismatch.
     */
    authenticating: chart.createStateConfig({
      invoke: {
        id: 'authenticateSnapshot',
        src: 'authenticateSnapshot',
        input: ({ context }) => steps.authenticateSnapshotInput(context),
        onDone: { target: 'downloading' },
        onError: {
          target: 'candidateFailed',
          actions: { type: 'recordAuthenticationFailure', params: ({ event }) => ({ error: event.error }) },
        },
      },
    }),
    downloading: chart.createStateConfig({
      entry: 'warnEngineUnknown',
      invoke: {
        id: 'downloadSnapshot',
        src: 'downloadSnapshot',
        input: ({ context }) => steps.downloadSnapshotInput(context),
        onDone: {
          target: 'verifying',
          actions: { type: 'downloaded', params: ({ event }) => ({ snapshot: event.output }) },
        },
        onError: { target: 'candidateFailed', actions: failed('download') },
      },
    }),
    /** Size, checksum and the file's real schema, before the live file is touched. */
    verifying: chart.createStateConfig({
      invoke: {
        id: 'verifySnapshot',
        src: 'verifySnapshot',
        input: ({ context }) => steps.verifySnapshotInput(context),
        onDone: {
          target: '#dataset.swapping',
          actions: { type: 'verified', params: ({ event }) => ({ snapshot: event.output }) },
        },
        onError: { target: 'candidateFailed', actions: failed('verification') },
      },
    }),
    candidateFailed,
    /** A candidate refused before download (engine or schema): kept out, not retried with backoff. */
    candidateRefused: outcome(after, 'logFailure', 'refused'),
    /** "…`bootstrap_on_failure_behavior: warn` skipped a failed download": the dataset keeps what it has. */
    downloadSkipped: outcome(after, 'logFailure'),
    /** "With `bootstrap_on_failure_behavior: retry`, a failed download retries the whole poll." */
    retryScheduled: outcome(after, 'markRetry'),
    /** `fallback`: the candidate was rejected; the next one is validated, downloaded and verified. */
    fallingBack: chart.createStateConfig({
      entry: 'attemptNextSnapshot',
      always: { target: 'validatingCandidate' },
    }),
    /** `fallback`: every candidate was rejected. */
    fallbackExhausted: outcome(after, 'logFallbackExhausted', 'refused'),
    /** `fallback`: an error that is not a rejection ended the fallback. */
    fallbackStopped: outcome(after, 'logFallbackStopped', 'failed'),
    /** The metadata read failed (not retried): keep serving, check again at the next interval. */
    metadataReadFailed: outcome(after, 'logFailure', 'failed'),
  });

  /**
   * Between checks (`waiting`, `serving`): a timer (the interval, or the retry backoff) or paused;
   * `poll.now` checks at once, and `announced` says what an announcement does here.
   */
  type Announced = NonNullable<Parameters<typeof chart.createStateConfig>[0]['on']>['snapshot.announced'];
  const resting = (check: string, announced: Announced, parkable = false) =>
    chart.createStateConfig({
      initial: 'deciding',
      on: {
        'snapshot.announced': announced,
        'poll.now': { target: check, actions: beginPoll('command') },
        'polling.pause': { guard: not('isPaused'), target: '.paused', actions: 'pause' },
        'polling.resume': { guard: 'isPaused', target: '.deciding', actions: 'resume' },
      },
      states: {
        deciding: {
          always: [
            { guard: 'isPaused', target: 'paused' },
            { guard: 'reloadRequested', target: check, actions: beginPoll('notification') },
            { guard: 'retryPending', target: 'backingOff' },
            { target: 'scheduled' },
          ],
        },
        /**
         * "…polls the snapshot store at `refresh_check_interval`." While serving with an ETag, the
         * checks may be the runtime's (`park`): it wakes the dataset with `poll.due` when
         * metadata.json changed, and the checks it answered arrive as `checks.unseen`, recorded here
         * without leaving the state.
         */
        scheduled: {
          entry: 'scheduleNextPoll',
          invoke: {
            id: 'pollTimer',
            src: 'pollTimer',
            input: ({ context }): PollTimerInput =>
              parkable && context.etag !== null
                ? { dueMs: context.nextPollDueMs ?? 0, etag: context.etag }
                : { dueMs: context.nextPollDueMs ?? 0 },
          },
          on: {
            'poll.due': { target: check, actions: beginPoll('schedule') },
            'checks.unseen': {
              actions: [
                {
                  type: 'recordUnseenChecks',
                  params: ({ event }) => ({
                    count: event.count,
                    lastPollAtMs: event.lastPollAtMs,
                    lastReadAtMs: event.lastReadAtMs,
                    nextPollDueMs: event.nextPollDueMs,
                  }),
                },
                'rearmPollTimer',
              ],
            },
            'poll.rearm': { actions: 'rearmPollTimer' },
          },
        },
        /** `retry`: the whole poll again after the Fibonacci backoff. */
        backingOff: {
          entry: 'scheduleRetry',
          invoke: {
            id: 'pollTimer',
            src: 'pollTimer',
            input: ({ context }) => ({ dueMs: context.nextPollDueMs ?? 0 }),
          },
          on: { 'poll.due': { target: check, actions: beginPoll('schedule') } },
        },
        paused: {},
      },
    });

  return chart.createMachine({
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
      location: input.location,
      signaturesRequired: input.signaturesRequired ?? false,
      form: input.form ?? 'refresh_mode',
      serving: null,
      etag: null,
      paused: false,
      lastRequestedId: null,
      reloadRequested: false,
      backoffAttempt: 0,
      nextPollDueMs: null,
      lastPoll: null,
      freshAtMs: null,
      storeSnapshotId: null,
      lastError: null,
      counters: { polls: 0, swaps: 0, refusals: 0, failures: 0, notifications: 0 },
      poll: null,
    }),
    on: {
      stop: { target: '.stopped', actions: 'stopped' },
    },
    states: {
      /** Nothing is served: checks every interval (or after the backoff); an announcement checks at once. */
      waiting: resting('#dataset.bootstrapping.readingMetadata', [
        {
          guard: not('isPaused'),
          target: '#dataset.bootstrapping.readingMetadata',
          actions: [{ type: 'acceptAnnouncement', params: announcement }, beginPoll('notification')],
        },
        { actions: { type: 'deferAnnouncement', params: announcement } },
      ]),
      /** "On startup, the runtime bootstraps from the most recent snapshot"; and every check while nothing is served. */
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
                  guard: { type: 'restoredLocal', params: ({ event }) => ({ snapshot: event.output }) },
                  target: '#dataset.polling',
                  actions: [
                    { type: 'restored', params: ({ event }) => ({ snapshot: event.output }) },
                    beginPoll('startup'),
                  ],
                },
                { target: 'readingMetadata', actions: beginPoll('startup') },
              ],
              onError: {
                target: 'readingMetadata',
                actions: [
                  { type: 'restoreFailed', params: ({ event }) => ({ error: event.error }) },
                  beginPoll('startup'),
                ],
              },
            },
          },
          ...checkStates('#dataset.waiting'),
        },
      },
      /** A snapshot is served; the next poll is scheduled (or backed off, or paused). */
      serving: resting(
        '#dataset.polling',
        [
          {
            guard: and([not('isPaused'), 'isNewAnnouncement']),
            target: '#dataset.polling',
            actions: [{ type: 'acceptAnnouncement', params: announcement }, beginPoll('notification')],
          },
          { guard: 'isNewAnnouncement', actions: { type: 'deferAnnouncement', params: announcement } },
          { actions: { type: 'ignoreAnnouncement', params: announcement } },
        ],
        true,
      ),
      /** "After bootstrap, the runtime polls the snapshot store … for newer snapshots." */
      polling: {
        initial: 'readingMetadata',
        on: busyEvents,
        states: checkStates('#dataset.serving'),
      },
      /** "…queries continue to be served from the previous snapshot until the swap completes." */
      swapping: {
        initial: 'installing',
        on: busyEvents,
        states: {
          installing: {
            invoke: {
              id: 'swapSnapshot',
              src: 'swapSnapshot',
              input: ({ context }) => steps.swapSnapshotInput(context),
              onDone: { target: 'swapped', actions: 'swapDone' },
              onError: { target: 'swapFailed', actions: failed('swap') },
            },
          },
          swapped: outcome('#dataset.serving', undefined, 'newer'),
          swapFailed: {
            always: [{ guard: 'isRetry', target: 'retryScheduled' }, { target: 'swapSkipped' }],
          },
          retryScheduled: outcome('servingOrWaiting', 'markRetry'),
          swapSkipped: outcome('servingOrWaiting', 'logFailure'),
        },
      },
      stopped: {
        type: 'final',
      },
    },
  });
}

/** The dataset machine on the real clock ({@link freshnessClock}, `Math.random`): the inspector's definition. */
export const datasetMachine = createDatasetMachine({ now: freshnessClock, random: Math.random });

export type DatasetMachine = ReturnType<typeof createDatasetMachine>;
export type DatasetSnapshot = SnapshotFrom<DatasetMachine>;
