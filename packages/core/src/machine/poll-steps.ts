/**
 * What each step of the dataset machine does to its context, as pure functions returning a
 * {@link Step}: the context patch, the log entries and the emitted events. The machine only wires
 * these to its states; keeping the decisions here keeps the state chart readable and lets every
 * rule (ETag bookkeeping, fallback order, backoff) live in one place.
 */
import { backoffDelayMs, SPICE_RETRY_BACKOFF } from '../backoff.js';
import { FerryError, isSnapshotRejection, serializeError } from '../errors.js';
import type { SchemaEntry, SnapshotEntry } from '../metadata/types.js';
import { CurrentSnapshotMissingError } from './errors.js';
import {
  loadCandidates,
  recordedSchemaEntry,
  refusalBeforeDownload,
  resolveEngine,
} from './snapshot-selection.js';
import type {
  DatasetContext,
  DatasetCounters,
  DatasetEmitted,
  ErrorInfo,
  LoadedSnapshot,
  LogEntry,
  LogLevel,
  PollInProgress,
  PollResult,
  PollTrigger,
  PreparedSnapshot,
  PrepareSnapshotInput,
  ReadMetadataInput,
  ReadMetadataOutput,
  SwapSnapshotInput,
} from './types.js';

/** One step's effect: a context patch, then logs, then emitted events, applied in that order. */
export interface Step {
  readonly context?: Partial<DatasetContext>;
  readonly logs?: readonly LogEntry[];
  readonly emitted?: readonly DatasetEmitted[];
}

const NO_STEP: Step = {};

type Fields = LogEntry['fields'];

function entry(context: DatasetContext, level: LogLevel, message: string, fields: Fields = {}): LogEntry {
  return { level, message, fields: { dataset: context.name, ...fields } };
}

export function errorInfo(error: unknown): ErrorInfo {
  const serialized = serializeError(error);
  return { code: serialized.code ?? 'ERR_UNEXPECTED', message: serialized.message };
}

function count(context: DatasetContext, counter: keyof DatasetCounters): DatasetCounters {
  return { ...context.counters, [counter]: context.counters[counter] + 1 };
}

function keeping(context: DatasetContext): string {
  return context.serving === null
    ? 'nothing is loaded yet'
    : `keeping snapshot ${context.serving.snapshotId}`;
}

function withPoll(context: DatasetContext, patch: Partial<PollInProgress>): Partial<DatasetContext> {
  return context.poll === null ? {} : { poll: { ...context.poll, ...patch } };
}

/** The candidate the poll is on, with the metadata read it came from. */
export function currentCandidate(
  context: DatasetContext,
): { poll: PollInProgress; entry: SnapshotEntry; recorded: SchemaEntry | undefined } | undefined {
  const poll = context.poll;
  const candidate = poll?.candidates[poll.index];
  if (poll === null || candidate === undefined || poll.dataset === undefined) return undefined;
  return { poll, entry: candidate, recorded: poll.recorded };
}

function invariant(context: DatasetContext, what: string): FerryError {
  return new FerryError(
    'ERR_MACHINE_INVARIANT',
    `The dataset machine of '${context.name}' has no ${what} to work on; this is a bug in Ferry, please report it.`,
  );
}

// ---------------------------------------------------------------------------------------------
// Actor inputs.
// ---------------------------------------------------------------------------------------------

export function readMetadataInput(context: DatasetContext): ReadMetadataInput {
  const ifNoneMatch = context.poll?.ifNoneMatch;
  const trigger = context.poll?.trigger ?? 'schedule';
  return ifNoneMatch === undefined
    ? { dataset: context.name, trigger }
    : { dataset: context.name, trigger, ifNoneMatch };
}

export function prepareSnapshotInput(context: DatasetContext): PrepareSnapshotInput {
  const candidate = currentCandidate(context);
  if (candidate?.recorded === undefined || candidate.poll.dataset === undefined) {
    throw invariant(context, 'validated candidate');
  }
  return {
    dataset: candidate.poll.dataset,
    entry: candidate.entry,
    schema: candidate.recorded.schema,
    schemaId: candidate.recorded.schemaId,
    engine: candidate.poll.engine,
  };
}

export function swapSnapshotInput(context: DatasetContext): SwapSnapshotInput {
  const candidate = currentCandidate(context);
  if (candidate?.poll.prepared === undefined) throw invariant(context, 'prepared snapshot');
  return { prepared: candidate.poll.prepared, entry: candidate.entry };
}

// ---------------------------------------------------------------------------------------------
// Startup.
// ---------------------------------------------------------------------------------------------

export function restored(context: DatasetContext, snapshot: LoadedSnapshot | null): Step {
  if (snapshot === null) return NO_STEP;
  return {
    context: { serving: snapshot },
    logs: [
      entry(
        context,
        'info',
        `Dataset '${context.name}' serves snapshot ${snapshot.snapshotId} from its local file; checking the store for a newer one`,
        { snapshotId: snapshot.snapshotId },
      ),
    ],
  };
}

export function restoreFailed(context: DatasetContext, error: unknown): Step {
  const info = errorInfo(error);
  return {
    context: { lastError: info },
    logs: [
      entry(
        context,
        'warn',
        `Restoring the local snapshot of dataset '${context.name}' failed: ${info.message}; bootstrapping from the store`,
        { code: info.code },
      ),
    ],
  };
}

// ---------------------------------------------------------------------------------------------
// A poll: begin, read, validate, prepare, swap, finish.
// ---------------------------------------------------------------------------------------------

export function beginPoll(context: DatasetContext, trigger: PollTrigger): Step {
  // A notification asks for a reload: read in full, whatever ETag we hold.
  const ifNoneMatch = trigger === 'notification' || context.etag === null ? undefined : context.etag;
  const poll: PollInProgress = {
    trigger,
    startedAtMs: context.now(),
    ifNoneMatch,
    etag: undefined,
    dataset: undefined,
    engine: undefined,
    recorded: undefined,
    candidates: [],
    index: 0,
    prepared: undefined,
    result: undefined,
    retry: false,
  };
  return {
    context: {
      poll,
      nextPollDueMs: null,
      counters: count(context, 'polls'),
      ...(trigger === 'notification' ? { reloadRequested: false } : {}),
    },
    logs: [
      entry(context, 'debug', `Checking the snapshot metadata of dataset '${context.name}'`, {
        trigger,
        conditional: ifNoneMatch !== undefined,
      }),
    ],
  };
}

export function readDone(context: DatasetContext, output: ReadMetadataOutput): Step {
  const poll = context.poll;
  if (poll === null) return NO_STEP;
  const name = context.name;
  if (output.kind === 'unchanged') {
    return {
      context: withPoll(context, { result: 'unchanged' }),
      logs: [entry(context, 'debug', `Snapshot metadata of dataset '${name}' is unchanged`)],
    };
  }
  const dataset = output.dataset;
  if (dataset?.currentSnapshotId === undefined) {
    const reason =
      output.etag === undefined && dataset === undefined
        ? 'no metadata.json'
        : dataset === undefined
          ? 'no entry for the dataset'
          : 'no current snapshot';
    const firstWait = context.serving === null && context.lastPoll?.result !== 'waiting';
    const message =
      context.serving === null
        ? `Snapshot acceleration for dataset '${name}' is waiting for its first snapshot (${reason}); ` +
          `checking again every ${context.refreshCheckIntervalMs} ms`
        : `The store has no current snapshot for dataset '${name}' (${reason}); ${keeping(context)}`;
    return {
      context: { etag: null, ...withPoll(context, { result: 'waiting' }) },
      logs: [entry(context, firstWait ? 'info' : 'debug', message, { reason })],
    };
  }
  const currentId = dataset.currentSnapshotId;
  const loadedId = context.serving?.snapshotId;
  if (loadedId !== undefined && currentId === loadedId) {
    return {
      context: { etag: output.etag ?? null, ...withPoll(context, { result: 'same' }) },
      logs: [entry(context, 'debug', `Dataset '${name}' already serves snapshot ${currentId}`)],
    };
  }
  if (loadedId !== undefined && currentId < loadedId) {
    return {
      context: { etag: null, ...withPoll(context, { result: 'older' }) },
      logs: [
        entry(context, 'warn', 'snapshot metadata current id is older than the locally loaded snapshot', {
          currentSnapshotId: currentId,
          loadedSnapshotId: loadedId,
        }),
      ],
    };
  }
  const engine = resolveEngine(context.engine, dataset);
  const candidates = loadCandidates(dataset, {
    engine,
    loadedId,
    fallback: context.bootstrapOnFailure === 'fallback',
  });
  if (candidates.length === 0) {
    return failure(context, new CurrentSnapshotMissingError(name, currentId), {
      snapshotId: currentId,
      retry: context.bootstrapOnFailure === 'retry',
      clearEtag: true,
    });
  }
  return {
    context: withPoll(context, {
      etag: output.etag,
      dataset,
      engine,
      recorded: recordedSchemaEntry(dataset),
      candidates,
      index: 0,
    }),
    logs: [
      entry(
        context,
        'info',
        loadedId === undefined
          ? `Bootstrapping dataset '${name}' from snapshot ${currentId}`
          : `Snapshot ${currentId} of dataset '${name}' is newer than the loaded snapshot ${loadedId}`,
        { currentSnapshotId: currentId, loadedSnapshotId: loadedId ?? null },
      ),
    ],
  };
}

/** A metadata read failed: keep serving, record it, try again at the next check. */
export function readFailed(context: DatasetContext, error: unknown): Step {
  const permanent = (error as { permanent?: unknown } | null)?.permanent === true;
  return failure(context, error, {
    snapshotId: null,
    retry: !permanent && context.bootstrapOnFailure === 'retry',
    clearEtag: false,
    level: permanent ? 'error' : 'warn',
    prefix: `Reading the snapshot metadata of dataset '${context.name}' failed`,
  });
}

interface FailureOptions {
  readonly snapshotId: number | null;
  readonly retry: boolean;
  readonly clearEtag: boolean;
  readonly level?: LogLevel;
  readonly prefix?: string;
}

function failure(context: DatasetContext, error: unknown, options: FailureOptions): Step {
  const info = errorInfo(error);
  const rejection = isSnapshotRejection(error);
  const next = options.retry ? 'retrying with backoff' : keeping(context);
  const message =
    options.prefix === undefined
      ? `${info.message} (${next})`
      : `${options.prefix}: ${info.message} (${next})`;
  return {
    context: {
      lastError: info,
      counters: count(context, rejection ? 'refusals' : 'failures'),
      ...(options.clearEtag ? { etag: null } : {}),
      ...withPoll(context, { result: rejection ? 'refused' : 'failed', retry: options.retry }),
    },
    logs: [
      entry(context, options.level ?? 'warn', message, { code: info.code, snapshotId: options.snapshotId }),
    ],
    emitted: [{ type: 'error', dataset: context.name, error: info, snapshotId: options.snapshotId }],
  };
}

/** The refusal of the poll's candidate before download, if any (engine, then schema). */
export function candidateRefusal(context: DatasetContext): Error | undefined {
  const candidate = currentCandidate(context);
  if (candidate === undefined || candidate.poll.dataset === undefined) return undefined;
  return refusalBeforeDownload({
    name: context.name,
    engine: candidate.poll.engine,
    entry: candidate.entry,
    recorded: candidate.recorded,
    currentSchemaId: candidate.poll.dataset.currentSchemaId,
    served: context.serving?.schema,
  });
}

export function refuseCandidate(context: DatasetContext): Step {
  const refusal = candidateRefusal(context);
  return refusal === undefined ? NO_STEP : candidateFailed(context, refusal, 'validation');
}

/**
 * The candidate was refused (before download) or its download/validation failed. Fallback moves
 * on to the next candidate on a rejection and stops on anything else; warn skips; retry schedules
 * the whole poll again with backoff (download failures only). The ETag is dropped either way: the
 * current snapshot was not loaded, so the next poll must read the metadata in full.
 */
export function candidateFailed(
  context: DatasetContext,
  error: unknown,
  stage: 'validation' | 'download',
): Step {
  const candidate = currentCandidate(context);
  if (candidate === undefined) return NO_STEP;
  const { poll, entry: snapshot } = candidate;
  const name = context.name;
  const snapshotId = snapshot.snapshotId;
  const rejection = isSnapshotRejection(error);
  if (context.bootstrapOnFailure !== 'fallback') {
    const retry = context.bootstrapOnFailure === 'retry' && stage === 'download';
    return failure(context, error, { snapshotId, retry, clearEtag: true });
  }
  if (rejection && poll.index + 1 < poll.candidates.length) {
    const info = errorInfo(error);
    const next = poll.candidates[poll.index + 1]?.snapshotId ?? null;
    return {
      context: {
        lastError: info,
        etag: null,
        counters: count(context, 'refusals'),
        ...withPoll(context, { index: poll.index + 1 }),
      },
      logs: [
        entry(context, 'warn', `${info.message} (falling back to snapshot ${next})`, {
          code: info.code,
          snapshotId,
        }),
      ],
      emitted: [{ type: 'error', dataset: name, error: info, snapshotId }],
    };
  }
  const base = failure(context, error, { snapshotId, retry: false, clearEtag: true });
  const what = context.serving === null ? 'continuing without bootstrapping' : keeping(context);
  const summary = rejection
    ? `Snapshot fallback for dataset '${name}' found no loadable snapshot among ${poll.candidates.length} candidate(s); ${what}`
    : `Snapshot fallback for dataset '${name}' stopped at snapshot ${snapshotId} on an error that is not a snapshot rejection; ${what}`;
  return { ...base, logs: [...(base.logs ?? []), entry(context, 'error', summary, { snapshotId })] };
}

export function prepared(context: DatasetContext, snapshot: PreparedSnapshot): Step {
  return {
    context: withPoll(context, { prepared: snapshot }),
    logs: [
      entry(
        context,
        'debug',
        `Snapshot ${snapshot.snapshotId} of dataset '${context.name}' is downloaded and valid`,
        {
          snapshotId: snapshot.snapshotId,
        },
      ),
    ],
  };
}

export function swapDone(context: DatasetContext): Step {
  const candidate = currentCandidate(context);
  if (candidate?.recorded === undefined || candidate.poll.dataset === undefined) return NO_STEP;
  const { poll, entry: snapshot, recorded } = candidate;
  const from = context.serving?.snapshotId ?? null;
  const currentId = poll.dataset?.currentSnapshotId;
  const isCurrent = snapshot.snapshotId === currentId;
  const serving: LoadedSnapshot = {
    snapshotId: snapshot.snapshotId,
    timestampMs: snapshot.timestampMs,
    checksum: snapshot.checksum,
    schema: recorded.schema,
    schemaId: recorded.schemaId,
  };
  const logs = [
    entry(context, 'info', `Dataset '${context.name}' now serves snapshot ${snapshot.snapshotId}`, {
      from,
      to: snapshot.snapshotId,
    }),
  ];
  if (!isCurrent) {
    logs.push(
      entry(
        context,
        'warn',
        `Dataset '${context.name}' fell back to snapshot ${snapshot.snapshotId} because the current snapshot ${currentId} could not be loaded`,
        { snapshotId: snapshot.snapshotId, currentSnapshotId: currentId ?? null },
      ),
    );
  }
  return {
    context: {
      serving,
      // Only loading the current snapshot makes the read's ETag worth keeping.
      etag: isCurrent ? (poll.etag ?? null) : null,
      counters: count(context, 'swaps'),
      ...withPoll(context, { result: 'newer' }),
    },
    logs,
    emitted: [{ type: 'swap', dataset: context.name, from, to: snapshot.snapshotId }],
  };
}

export function swapFailed(context: DatasetContext, error: unknown): Step {
  const snapshotId = currentCandidate(context)?.entry.snapshotId ?? null;
  return failure(context, error, {
    snapshotId,
    retry: context.bootstrapOnFailure === 'retry',
    clearEtag: true,
    level: 'error',
    prefix: `Swapping in snapshot ${snapshotId} of dataset '${context.name}' failed`,
  });
}

export function finishPoll(context: DatasetContext): Step {
  const poll = context.poll;
  if (poll === null) return NO_STEP;
  const result: PollResult = poll.result ?? 'failed';
  const currentSnapshotId = poll.dataset?.currentSnapshotId ?? null;
  return {
    context: {
      poll: null,
      lastPoll: { atMs: poll.startedAtMs, result },
      backoffAttempt: poll.retry ? context.backoffAttempt + 1 : 0,
    },
    logs: [
      entry(context, 'debug', `Snapshot check of dataset '${context.name}' ended: ${result}`, {
        result,
        currentSnapshotId,
      }),
    ],
    emitted: [{ type: 'poll', dataset: context.name, result, currentSnapshotId }],
  };
}

// ---------------------------------------------------------------------------------------------
// Scheduling, notifications, commands.
// ---------------------------------------------------------------------------------------------

/** The regular delay to the next poll: one interval, or the time to the next grid point. */
function intervalDelay(context: DatasetContext): number {
  const interval = context.refreshCheckIntervalMs;
  if (context.pollPhaseMs === null) return interval;
  const sincePhase = (((context.now() - context.pollPhaseMs) % interval) + interval) % interval;
  return interval - sincePhase;
}

/** Entering an idle state that polls: the interval, or the backoff after a retry-mode failure. */
export function scheduleNextPoll(context: DatasetContext): Step {
  const attempt = context.backoffAttempt;
  const delay =
    attempt > 0
      ? backoffDelayMs({ ...SPICE_RETRY_BACKOFF, maxMs: context.maxBackoffMs }, attempt, context.random)
      : intervalDelay(context);
  return {
    context: { nextPollDelayMs: delay, nextPollDueMs: context.now() + delay },
    logs:
      attempt > 0
        ? [
            entry(
              context,
              'info',
              `Retrying the snapshot check of dataset '${context.name}' in ${delay} ms`,
              {
                attempt,
                delayMs: delay,
              },
            ),
          ]
        : [],
  };
}

export function isNewAnnouncement(context: DatasetContext, snapshotId: number): boolean {
  const loaded = context.serving?.snapshotId ?? -1;
  const requested = context.lastRequestedId ?? -1;
  return snapshotId > loaded && snapshotId > requested;
}

/**
 * Record an announcement. `accept` polls now (the caller transitions), `defer` asks for one
 * follow-up poll once the current one ends (announcements coalesce), `ignore` only counts it.
 */
export function announced(
  context: DatasetContext,
  snapshotId: number,
  disposition: 'accept' | 'defer' | 'ignore',
): Step {
  const lastRequestedId =
    disposition === 'ignore' ? context.lastRequestedId : Math.max(snapshotId, context.lastRequestedId ?? -1);
  const verb =
    disposition === 'accept'
      ? 'reloading now'
      : disposition === 'defer'
        ? 'reloading after the current check'
        : 'ignored';
  return {
    context: {
      counters: count(context, 'notifications'),
      lastRequestedId,
      ...(disposition === 'defer' ? { reloadRequested: true } : {}),
    },
    logs: [
      entry(context, 'debug', `Snapshot ${snapshotId} of dataset '${context.name}' was announced; ${verb}`, {
        snapshotId,
      }),
    ],
  };
}

export function pollIgnored(context: DatasetContext, reason: string): Step {
  return { logs: [entry(context, 'info', `Poll of dataset '${context.name}' ignored: ${reason}`)] };
}

export function paused(context: DatasetContext): Step {
  return {
    context: { paused: true, nextPollDueMs: null },
    logs: [entry(context, 'info', `Polling of dataset '${context.name}' paused`)],
  };
}

export function resumed(context: DatasetContext): Step {
  return {
    context: { paused: false },
    logs: [entry(context, 'info', `Polling of dataset '${context.name}' resumed`)],
  };
}

export function stopped(context: DatasetContext): Step {
  return {
    context: { poll: null, nextPollDueMs: null },
    logs: [entry(context, 'info', `Dataset '${context.name}' stopped`)],
  };
}
