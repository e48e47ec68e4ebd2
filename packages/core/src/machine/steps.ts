/**
 * What each named action of the dataset machine does, as pure functions returning a {@link Step}:
 * the context patch, the log entries and the emitted events. They never decide where the machine
 * goes next (the chart's guards do, from `decisions.ts`); they record what happened and say it.
 * Time and randomness arrive as arguments, so every step is a plain function of its inputs.
 */
import { backoffDelayMs, SPICE_RETRY_BACKOFF } from '../backoff.js';
import { FerryError, isSnapshotRejection, serializeError } from '../errors.js';
import { currentSnapshot, findRecordedSchema } from '../metadata/queries.js';
import type { SnapshotEntry } from '../metadata/types.js';
import {
  currentCandidate,
  isPermanent,
  pollCandidates,
  refusalBeforeDownload,
  resolveEngine,
} from './decisions.js';
import { CurrentSnapshotMissingError } from './errors.js';
import {
  allSnapshotsFailed,
  attemptingNextSnapshot,
  bootstrapContinuing,
  bootstrapRetrying,
  DOWNLOADING_WITHOUT_ENGINE,
  fallbackBootstrapFailed,
  fallbackDownloadFailed,
  loadsPublishedSnapshots,
  noSnapshotToLoadYet,
  OLDER_THAN_LOADED,
  snapshotListInvalid,
  snapshotListUnreadable,
  waitingForFirstSnapshot,
} from './log-lines.js';
import { storeVouchesFor } from './staleness.js';
import type {
  AuthenticateSnapshotInput,
  DatasetContext,
  DatasetCounters,
  DatasetEmitted,
  DownloadedSnapshot,
  DownloadSnapshotInput,
  ErrorInfo,
  FailureStage,
  LoadedSnapshot,
  LogEntry,
  LogLevel,
  PollFailure,
  PollInProgress,
  PollResult,
  PollTrigger,
  PreparedSnapshot,
  ReadMetadataInput,
  ReadMetadataOutput,
  SnapshotTransferInfo,
  SwapSnapshotInput,
  UnseenChecks,
  VerifySnapshotInput,
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

export function authenticateSnapshotInput(context: DatasetContext): AuthenticateSnapshotInput {
  const candidate = currentCandidate(context);
  if (candidate === undefined) throw invariant(context, 'validated candidate');
  return { dataset: candidate.dataset, entry: candidate.entry };
}

/**
 * A candidate whose signature could not be accepted: refused like an engine or schema mismatch
 * (stage `validation`) when the signature or statement is wrong; a store error reading it is a
 * failure to download (retried as the dataset's failure behaviour says).
 */
export function recordAuthenticationFailure(context: DatasetContext, error: unknown): Step {
  return recordFailure(context, error, isSnapshotRejection(error) ? 'validation' : 'download');
}

export function downloadSnapshotInput(context: DatasetContext): DownloadSnapshotInput {
  const candidate = currentCandidate(context);
  if (candidate === undefined) throw invariant(context, 'validated candidate');
  return {
    dataset: candidate.dataset,
    entry: candidate.entry,
    engine: candidate.poll.engine,
    recorded: candidate.poll.recorded,
  };
}

export function verifySnapshotInput(context: DatasetContext): VerifySnapshotInput {
  const candidate = currentCandidate(context);
  const { downloaded, recorded } = candidate?.poll ?? {};
  if (candidate === undefined || downloaded === undefined || recorded === undefined) {
    throw invariant(context, 'downloaded snapshot');
  }
  return {
    downloaded,
    entry: candidate.entry,
    schema: recorded.schema,
    schemaId: recorded.schemaId,
    engine: candidate.poll.engine,
  };
}

export function swapSnapshotInput(context: DatasetContext): SwapSnapshotInput {
  const candidate = currentCandidate(context);
  if (candidate?.poll.prepared === undefined) throw invariant(context, 'verified snapshot');
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
// A check: begin, read, compare, validate, download, verify, swap, end.
// ---------------------------------------------------------------------------------------------

export function beginPoll(context: DatasetContext, trigger: PollTrigger, nowMs: number): Step {
  // A notification asks for a reload: read in full, whatever ETag we hold.
  const ifNoneMatch = trigger === 'notification' || context.etag === null ? undefined : context.etag;
  const poll: PollInProgress = {
    trigger,
    startedAtMs: nowMs,
    readAtMs: undefined,
    ifNoneMatch,
    etag: undefined,
    dataset: undefined,
    engine: undefined,
    recorded: undefined,
    candidates: [],
    index: 0,
    downloaded: undefined,
    prepared: undefined,
    failure: undefined,
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

/**
 * Keep the read's ETag and dataset entry (the rest of the poll uses this one read), and when the
 * read began if that was before the check (a shared read): freshness is measured from it.
 */
export function recordMetadataRead(context: DatasetContext, output: ReadMetadataOutput): Step {
  const startedAtMs = context.poll?.startedAtMs;
  const readAtMs =
    output.readAtMs !== undefined && startedAtMs !== undefined && output.readAtMs < startedAtMs
      ? output.readAtMs
      : undefined;
  if (output.kind !== 'read')
    return readAtMs === undefined ? NO_STEP : { context: withPoll(context, { readAtMs }) };
  return { context: withPoll(context, { etag: output.etag, dataset: output.dataset, readAtMs }) };
}

export function noteMetadataUnchanged(context: DatasetContext): Step {
  return { logs: [entry(context, 'debug', `Snapshot metadata of dataset '${context.name}' is unchanged`)] };
}

/** Why nothing is published: the waiting line's `reason` field. */
function unpublishedReason(poll: PollInProgress | null): string {
  if (poll?.dataset !== undefined) return 'no current snapshot';
  return poll?.etag === undefined ? 'no metadata.json' : 'no entry for the dataset';
}

/** What is missing, as the snapshot data connector's line says it. */
function unpublishedWhy(context: DatasetContext): string {
  const poll = context.poll;
  if (poll?.dataset !== undefined)
    return `dataset '${context.name}' has no current snapshot in metadata.json`;
  if (poll?.etag !== undefined) return `metadata.json has no entry for dataset '${context.name}'`;
  const location = context.location.endsWith('/') ? context.location : `${context.location}/`;
  return `'${location}metadata.json' does not exist`;
}

export function noteNoSnapshotPublished(context: DatasetContext): Step {
  const reason = unpublishedReason(context.poll);
  const name = context.name;
  const log =
    context.serving === null
      ? entry(
          context,
          context.lastPoll?.result === 'waiting' ? 'debug' : 'info',
          context.form === 'file_format'
            ? noSnapshotToLoadYet(name, unpublishedWhy(context))
            : waitingForFirstSnapshot(name, context.location),
          { reason, location: context.location, intervalMs: context.refreshCheckIntervalMs },
        )
      : entry(
          context,
          // Said once (warn) when the store stops naming one, not at every check while it stays so.
          context.lastPoll?.result === 'waiting' ? 'debug' : 'warn',
          `The store has no current snapshot for dataset '${name}' (${reason}); ${keeping(context)}`,
          { reason },
        );
  return { context: { etag: null }, logs: [log] };
}

export function noteSameSnapshot(context: DatasetContext): Step {
  const id = context.serving?.snapshotId;
  const served = context.serving?.checksum.toLowerCase();
  const listed = context.poll?.dataset === undefined ? undefined : currentSnapshot(context.poll.dataset);
  const recorded = listed?.checksum.toLowerCase();
  // The same id with other bytes (an id reused after its entry was dropped, a store made anew):
  // loading it would put two contents under one id (pins, cached answers and ETags name ids).
  const reused =
    recorded !== undefined && served !== undefined && recorded !== served
      ? [
          entry(
            context,
            'warn',
            `Snapshot ${id} of dataset '${context.name}' in metadata.json has SHA-256 ${recorded}, not that of the snapshot ${id} this reader serves (${served}): the writer published other content under the same id, which a reader does not load; publish it as a new snapshot (a new id)`,
            { snapshotId: id ?? null, recorded, served },
          ),
        ]
      : [];
  return {
    context: { etag: context.poll?.etag ?? null },
    logs: [entry(context, 'debug', `Dataset '${context.name}' already serves snapshot ${id}`), ...reused],
  };
}

export function warnOlderSnapshot(context: DatasetContext): Step {
  return {
    context: { etag: null },
    logs: [
      entry(context, 'warn', OLDER_THAN_LOADED, {
        currentSnapshotId: context.poll?.dataset?.currentSnapshotId ?? null,
        loadedSnapshotId: context.serving?.snapshotId ?? null,
      }),
    ],
  };
}

/** A newer snapshot is current: decide the candidates (one, or fallback's list) from the same read. */
export function selectCandidates(context: DatasetContext): Step {
  const dataset = context.poll?.dataset;
  if (dataset?.currentSnapshotId === undefined) return NO_STEP;
  const currentId = dataset.currentSnapshotId;
  const loadedId = context.serving?.snapshotId;
  const engine = resolveEngine(context.engine, dataset);
  const candidates = pollCandidates(dataset, engine, loadedId, context.bootstrapOnFailure === 'fallback');
  return {
    context: withPoll(context, { engine, recorded: findRecordedSchema(dataset), candidates, index: 0 }),
    logs: [
      entry(
        context,
        'info',
        loadedId === undefined
          ? `Bootstrapping dataset '${context.name}' from snapshot ${currentId}`
          : `Snapshot ${currentId} of dataset '${context.name}' is newer than the loaded snapshot ${loadedId}`,
        { currentSnapshotId: currentId, loadedSnapshotId: loadedId ?? null },
      ),
    ],
  };
}

/**
 * Record the failure the chart is about to route: `lastError`, a counter, the `error` event. A
 * failure after the metadata read drops the ETag (the current snapshot was not loaded, so the next
 * poll must read in full); a failed read keeps it.
 */
export function recordFailure(
  context: DatasetContext,
  error: unknown,
  stage: FailureStage,
  snapshotId: number | null = currentCandidate(context)?.entry.snapshotId ?? null,
): Step {
  const info = errorInfo(error);
  const rejection = isSnapshotRejection(error);
  const failure: PollFailure = { error: info, rejection, permanent: isPermanent(error), stage, snapshotId };
  return {
    context: {
      lastError: info,
      counters: count(context, rejection ? 'refusals' : 'failures'),
      ...(stage === 'metadata' ? {} : { etag: null }),
      ...withPoll(context, { failure }),
    },
    emitted: [{ type: 'error', dataset: context.name, error: info, snapshotId }],
  };
}

/** Spice's warning as a download starts of a snapshot whose entry names no engine (nothing to check it against). */
export function warnEngineUnknown(context: DatasetContext): Step {
  const candidate = currentCandidate(context);
  if (candidate === undefined || candidate.entry.engine !== undefined) return NO_STEP;
  const { snapshotId, uri } = candidate.entry;
  return { logs: [entry(context, 'warn', DOWNLOADING_WITHOUT_ENGINE, { snapshotId, snapshot: uri })] };
}

export function refuseCandidate(context: DatasetContext): Step {
  const refusal = refusalBeforeDownload(context);
  return refusal === undefined ? NO_STEP : recordFailure(context, refusal, 'validation');
}

export function recordCurrentSnapshotMissing(context: DatasetContext): Step {
  const dataset = context.poll?.dataset;
  const id = dataset?.currentSnapshotId;
  if (dataset === undefined || id === undefined || currentSnapshot(dataset) !== undefined) return NO_STEP;
  return recordFailure(context, new CurrentSnapshotMissingError(context.name, id), 'selection', id);
}

function failureMessage(context: DatasetContext, failure: PollFailure): string {
  const name = context.name;
  if (failure.stage === 'metadata')
    return `Reading the snapshot metadata of dataset '${name}' failed: ${failure.error.message}`;
  if (failure.stage === 'swap') {
    return `Swapping in snapshot ${failure.snapshotId} of dataset '${name}' failed: ${failure.error.message}`;
  }
  return failure.error.message;
}

function failureFields(failure: PollFailure): Fields {
  return { code: failure.error.code, snapshotId: failure.snapshotId };
}

/**
 * Say what failed and what happens next: the poll is given up until the next check (`keep`), or
 * repeated after the backoff (`retry`). While nothing is served these are Spice's bootstrap lines;
 * while serving, Ferry's line naming the snapshot kept.
 */
export function logFailure(context: DatasetContext, next: 'keep' | 'retry'): Step {
  const failure = context.poll?.failure;
  if (failure === undefined) return NO_STEP;
  const fields = failureFields(failure);
  if (context.serving === null) {
    const { name, location } = context;
    const error = failure.error.message;
    const message =
      context.form === 'file_format'
        ? failure.stage === 'metadata' && failure.error.code !== 'ERR_METADATA_INVALID'
          ? snapshotListUnreadable(name, error)
          : snapshotListInvalid(name, error)
        : next === 'retry'
          ? bootstrapRetrying(name, location, error)
          : bootstrapContinuing(name, location, error);
    const level = next === 'retry' || failure.permanent ? 'error' : 'warn';
    return { logs: [entry(context, level, message, fields)] };
  }
  const level = failure.permanent || failure.stage === 'swap' ? 'error' : 'warn';
  const then = next === 'retry' ? 'retrying with backoff' : keeping(context);
  return { logs: [entry(context, level, `${failureMessage(context, failure)} (${then})`, fields)] };
}

/** `retry`: the whole poll is repeated after the backoff (counted when the poll ends). */
export function markRetry(context: DatasetContext): Step {
  return { ...logFailure(context, 'retry'), context: withPoll(context, { retry: true }) };
}

/** `fallback`: the candidate was rejected; move on to the next one. */
export function attemptNextSnapshot(context: DatasetContext): Step {
  const candidate = currentCandidate(context);
  const failure = context.poll?.failure;
  if (candidate === undefined || failure === undefined) return NO_STEP;
  const { poll, entry: rejected } = candidate;
  const next = poll.candidates[poll.index + 1]?.snapshotId ?? null;
  const fields = { ...failureFields(failure), nextSnapshotId: next, error: failure.error.message };
  const message =
    context.serving === null
      ? attemptingNextSnapshot(failure.error.code, context.name, rejected.uri, rejected.checksum)
      : `${failure.error.message} (falling back to snapshot ${next})`;
  return {
    context: withPoll(context, { index: poll.index + 1, failure: undefined }),
    logs: [entry(context, 'warn', message, fields)],
  };
}

/**
 * `fallback` ended without loading the candidate: while nothing is served, Spice's lines
 * (`bootstrapLines`); else Ferry's line naming the snapshot kept, and an error summary.
 */
function fallbackEnded(
  context: DatasetContext,
  bootstrapLines: (failure: PollFailure, failed: SnapshotEntry) => readonly LogEntry[],
  summary: (failed: SnapshotEntry, candidates: number) => string,
): Step {
  const candidate = currentCandidate(context);
  const failure = context.poll?.failure;
  if (candidate === undefined || failure === undefined) return NO_STEP;
  const { entry: failed, poll } = candidate;
  if (context.serving === null) return { logs: bootstrapLines(failure, failed) };
  const candidates = poll.candidates.length;
  return {
    logs: [
      ...(logFailure(context, 'keep').logs ?? []),
      entry(context, 'error', `${summary(failed, candidates)}; ${keeping(context)}`, {
        snapshotId: failed.snapshotId,
        candidates,
      }),
    ],
  };
}

/** `fallback`: every candidate was rejected. */
export function logFallbackExhausted(context: DatasetContext): Step {
  const name = context.name;
  return fallbackEnded(
    context,
    (failure, rejected) => [
      entry(
        context,
        'warn',
        attemptingNextSnapshot(failure.error.code, name, rejected.uri, rejected.checksum),
        {
          ...failureFields(failure),
          error: failure.error.message,
        },
      ),
      entry(context, 'error', allSnapshotsFailed(name), { candidates: context.poll?.candidates.length ?? 0 }),
    ],
    (_failed, candidates) =>
      `Snapshot fallback for dataset '${name}' found no loadable snapshot among ${candidates} candidate(s)`,
  );
}

/** `fallback`: a candidate failed on an error that is not a rejection, which ends the fallback. */
export function logFallbackStopped(context: DatasetContext): Step {
  const name = context.name;
  return fallbackEnded(
    context,
    (failure, failed) => [
      entry(
        context,
        'warn',
        fallbackDownloadFailed(name, failed.uri, failed.checksum, failure.error.message),
        failureFields(failure),
      ),
      entry(
        context,
        'error',
        fallbackBootstrapFailed(name, context.location, failure.error.message),
        failureFields(failure),
      ),
    ],
    (failed) =>
      `Snapshot fallback for dataset '${name}' stopped at snapshot ${failed.snapshotId} on an error that is not a snapshot rejection`,
  );
}

/** A temporary file the candidate now has (downloaded, then verified), kept for the next step. */
function holding(
  context: DatasetContext,
  patch: Partial<PollInProgress>,
  snapshotId: number,
  what: string,
): Step {
  return {
    context: withPoll(context, patch),
    logs: [
      entry(context, 'debug', `Snapshot ${snapshotId} of dataset '${context.name}' ${what}`, { snapshotId }),
    ],
  };
}

export function downloaded(context: DatasetContext, snapshot: DownloadedSnapshot): Step {
  return holding(context, { downloaded: snapshot }, snapshot.snapshotId, 'is downloaded; verifying it');
}

export function verified(context: DatasetContext, snapshot: PreparedSnapshot): Step {
  return holding(context, { prepared: snapshot }, snapshot.snapshotId, 'is downloaded and valid');
}

function mebibytes(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`;
}

/** What the swap line says about the bytes: how much of a delta download was reused. */
function transferNote(transfer: SnapshotTransferInfo | undefined, from: number | null): string {
  if (transfer === undefined || transfer.mode !== 'delta') return '';
  const total = transfer.fetchedBytes + transfer.reusedBytes;
  const share = total === 0 ? 100 : (100 * transfer.reusedBytes) / total;
  return ` (${share.toFixed(1)} % of ${mebibytes(total)} reused from snapshot ${from ?? 'held'}'s file, ${mebibytes(transfer.fetchedBytes)} fetched)`;
}

/** The swap actor resolved: only now does the dataset serve the new snapshot. */
export function swapDone(context: DatasetContext): Step {
  const candidate = currentCandidate(context);
  const recorded = candidate?.poll.recorded;
  if (candidate === undefined || recorded === undefined) return NO_STEP;
  const { poll, entry: snapshot } = candidate;
  const from = context.serving?.snapshotId ?? null;
  const currentId = poll.dataset?.currentSnapshotId;
  const isCurrent = snapshot.snapshotId === currentId;
  const transfer = poll.prepared?.transfer;
  const serving: LoadedSnapshot = {
    snapshotId: snapshot.snapshotId,
    timestampMs: snapshot.timestampMs,
    checksum: snapshot.checksum,
    schema: recorded.schema,
    schemaId: recorded.schemaId,
    ...(transfer === undefined ? {} : { transfer }),
  };
  const logs = [
    entry(
      context,
      'info',
      `Dataset '${context.name}' now serves snapshot ${snapshot.snapshotId}${transferNote(transfer, from)}`,
      {
        from,
        to: snapshot.snapshotId,
        ...(transfer === undefined
          ? {}
          : { fetchedBytes: transfer.fetchedBytes, reusedBytes: transfer.reusedBytes }),
      },
    ),
  ];
  if (from === null && context.form === 'file_format') {
    const engine = snapshot.engine ?? context.engine ?? 'duckdb';
    logs.push(entry(context, 'info', loadsPublishedSnapshots(context.name, engine, context.location)));
  }
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
    },
    logs,
    emitted: [{ type: 'swap', dataset: context.name, from, to: snapshot.snapshotId }],
  };
}

/** Results of a check that read the store (a failed one may have read it too: see `dataset`). */
const READ_RESULTS: ReadonlySet<PollResult> = new Set([
  'unchanged',
  'same',
  'older',
  'newer',
  'waiting',
  'refused',
]);

/**
 * What a finished check teaches about freshness: the store's current id as read (kept when the read
 * was a 304, or did not happen), and `freshAtMs` moved to the check's start when it read the store
 * and the dataset now serves that id or a newer one ("a successful check that found nothing newer,
 * or the load of the current one"). A check that failed, refused a newer snapshot, or fell back to
 * an older one leaves `freshAtMs` where it was, so staleness keeps growing; so does one whose store
 * names no current snapshot (no metadata.json, no entry, no current id): it vouches for nothing.
 */
function checkedFreshness(
  context: DatasetContext,
  result: PollResult,
  dataset: PollInProgress['dataset'],
  atMs: number,
): Pick<DatasetContext, 'freshAtMs' | 'storeSnapshotId'> {
  const read = READ_RESULTS.has(result) || dataset !== undefined;
  const previous = context.storeSnapshotId ?? null;
  const storeSnapshotId = result === 'unchanged' || !read ? previous : (dataset?.currentSnapshotId ?? null);
  const servingId = context.serving?.snapshotId;
  const fresh = read && storeVouchesFor(servingId, storeSnapshotId);
  const before = context.freshAtMs ?? null;
  return {
    storeSnapshotId,
    freshAtMs: fresh ? Math.max(before ?? atMs, atMs) : before,
  };
}

/** The check is over: remember how it ended, count a retry, emit `poll`. */
export function endPoll(context: DatasetContext, outcome: PollResult | undefined): Step {
  const poll = context.poll;
  if (poll === null) return NO_STEP;
  const result: PollResult = outcome ?? (poll.failure?.rejection === true ? 'refused' : 'failed');
  const currentSnapshotId = poll.dataset?.currentSnapshotId ?? null;
  return {
    context: {
      poll: null,
      lastPoll: { atMs: poll.startedAtMs, result },
      backoffAttempt: poll.retry ? context.backoffAttempt + 1 : 0,
      ...checkedFreshness(context, result, poll.dataset, poll.readAtMs ?? poll.startedAtMs),
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

/**
 * A parked dataset wakes: the scheduled checks the runtime answered for it meanwhile, each finding
 * metadata.json unchanged, are recorded as such polls (counters, last poll, freshness) in one step.
 * Their `poll` events are not emitted: the runtime counted them when it made them.
 */
export function unseenChecks(context: DatasetContext, checks: UnseenChecks): Step {
  if (checks.count <= 0) return { context: { nextPollDueMs: checks.nextPollDueMs } };
  return {
    context: {
      counters: { ...context.counters, polls: context.counters.polls + checks.count },
      lastPoll: { atMs: checks.lastPollAtMs, result: 'unchanged' },
      backoffAttempt: 0,
      ...checkedFreshness(context, 'unchanged', undefined, checks.lastReadAtMs),
      nextPollDueMs: checks.nextPollDueMs,
    },
    logs: [
      entry(
        context,
        'debug',
        `Snapshot metadata of dataset '${context.name}' was unchanged at ${checks.count} check(s) the runtime made while the dataset was parked`,
        { checks: checks.count },
      ),
    ],
  };
}

// ---------------------------------------------------------------------------------------------
// Scheduling, notifications, commands.
// ---------------------------------------------------------------------------------------------

/** The regular delay to the next poll: one interval, or the time to the next grid point. */
function intervalDelay(context: DatasetContext, nowMs: number): number {
  const interval = context.refreshCheckIntervalMs;
  if (context.pollPhaseMs === null) return interval;
  const sincePhase = (((nowMs - context.pollPhaseMs) % interval) + interval) % interval;
  return interval - sincePhase;
}

/** Entering `scheduled`: the next check is one interval away (or at the next grid point). */
export function scheduleNextPoll(context: DatasetContext, nowMs: number): Step {
  return { context: { nextPollDueMs: nowMs + intervalDelay(context, nowMs) } };
}

/** Entering `backingOff`: the next check is the Fibonacci backoff of the consecutive failures away. */
export function scheduleRetry(context: DatasetContext, nowMs: number, random: () => number): Step {
  const attempt = Math.max(1, context.backoffAttempt);
  const delay = backoffDelayMs({ ...SPICE_RETRY_BACKOFF, maxMs: context.maxBackoffMs }, attempt, random);
  return {
    context: { nextPollDueMs: nowMs + delay },
    logs: [
      entry(context, 'info', `Retrying the snapshot check of dataset '${context.name}' in ${delay} ms`, {
        attempt,
        delayMs: delay,
      }),
    ],
  };
}

/**
 * Record an announcement. `accept` polls now (the chart transitions), `defer` asks for one
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
