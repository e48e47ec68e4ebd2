/**
 * The one SQS consumer of the process (per queue and credentials), run by the coordinator. It long-
 * polls the queue, plans each batch with the pure router (`planBatch`), reads the location's
 * metadata.json ONCE per batch that commits it (through the shared reader, so the datasets' follow-up
 * reloads reuse that read), announces the new current ids to the datasets whose id moved, and only
 * then deletes the commits (a failed read leaves them on the queue). Messages about objects outside
 * the location stay on the queue. Outages are logged once when they start, once after five minutes,
 * and on recovery. Every line an operator greps for is Spice's (`NotificationMessages`); the queue
 * URL never appears in a log line.
 */
import type { DatasetConfig, NotificationQueue, NotificationsConfig, QueueMessage } from '@ferry/core';
import {
  backoffDelayMs,
  createOutageTracker,
  currentSnapshotIds,
  diffCurrentIds,
  locationDisplay,
  locationKey,
  type NotificationLocation,
  NotificationMessages,
  type OutageTracker,
  type ParsedMetadata,
  planBatch,
  type QueueFailure,
  requireLocation,
  SQS_OUTAGE_BACKOFF,
  settleCommits,
} from '@ferry/core';
import { createSqsQueue } from '@ferry/store';
import type { LogLevel } from './logging.js';
import type { LocationMetadataReader } from './metadata-reader.js';

export interface NotificationConsumerOptions {
  readonly notifications: NotificationsConfig;
  readonly datasets: readonly DatasetConfig[];
  readerFor(dataset: DatasetConfig): LocationMetadataReader;
  announce(dataset: string, snapshotId: number): void;
  log(level: LogLevel, message: string, fields?: Record<string, unknown>): void;
  report(event: {
    readonly outcome: 'received' | 'deleted' | 'left' | 'unparseable';
    readonly count: number;
  }): void;
  readonly options?: {
    readonly visibilityTimeoutSeconds?: number;
    readonly waitTimeSeconds?: number;
    /** Milliseconds between outage retries are `backoffDelayMs(SQS_OUTAGE_BACKOFF, attempt) × backoffScale` (tests shrink it). */
    readonly backoffScale?: number;
  };
  /** Injected for tests: the queue to consume (closed by `close()`). Default: SQS from the configuration. */
  readonly queue?: NotificationQueue;
  /** The clock outages are measured on; default `Date.now`. */
  readonly now?: () => number;
}

export const NotificationLogMessage = {
  batchFailed: 'Handling a batch of SQS notifications failed; its messages will be delivered again',
} as const;

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** SDK error names that mean the credentials, not the queue, are wrong. */
const CREDENTIAL_ERRORS = new Set([
  'CredentialsProviderError',
  'ExpiredToken',
  'ExpiredTokenException',
  'InvalidClientTokenId',
  'InvalidSignatureException',
  'MissingAuthenticationToken',
  'SignatureDoesNotMatch',
  'UnrecognizedClientException',
]);

/** Spice's two outage actions: could not connect (credentials), or could not receive (the queue). */
function queueFailure(error: unknown): QueueFailure {
  const cause = (error as { cause?: { name?: unknown; Code?: unknown } } | null)?.cause;
  const names = [cause?.name, cause?.Code, (error as { name?: unknown } | null)?.name];
  return names.some((name) => typeof name === 'string' && CREDENTIAL_ERRORS.has(name))
    ? 'connect'
    : 'receive';
}

/** `promise`, or a rejection as soon as `signal` aborts (the promise is left to settle unobserved). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

export class NotificationConsumer {
  readonly #options: NotificationConsumerOptions;
  readonly #queue: NotificationQueue;
  readonly #location: NotificationLocation;
  readonly #datasets: readonly DatasetConfig[];
  readonly #now: () => number;
  readonly #display: string;
  readonly #tracker: OutageTracker;
  /** Aborted by `close()`: ends a long poll, a backoff wait or a metadata read at once. */
  readonly #closing = new AbortController();
  /** Current ids seen by the previous batch read, per dataset: only a move is announced. */
  #previous = new Map<string, number>();
  #loop: Promise<void> | undefined;

  constructor(options: NotificationConsumerOptions) {
    this.#options = options;
    const { notifications } = options;
    const credentials = notifications.s3.credentials;
    const tuning = options.options ?? {};
    this.#queue =
      options.queue ??
      createSqsQueue({
        queueUrl: notifications.queue.url,
        region: notifications.queue.region,
        ...(notifications.queue.endpoint === undefined ? {} : { endpoint: notifications.queue.endpoint }),
        ...(credentials === undefined ? {} : { credentials }),
        ...(tuning.visibilityTimeoutSeconds === undefined
          ? {}
          : { visibilityTimeoutSeconds: tuning.visibilityTimeoutSeconds }),
        ...(tuning.waitTimeSeconds === undefined ? {} : { waitTimeSeconds: tuning.waitTimeSeconds }),
      });
    const location = requireLocation(notifications.location);
    this.#location = location;
    this.#display = locationDisplay(location.uri);
    this.#tracker = createOutageTracker({ location: this.#display });
    const names = new Set(notifications.datasets);
    this.#datasets = options.datasets.filter((dataset) => names.has(dataset.name));
    this.#now = options.now ?? Date.now;
  }

  start(): void {
    if (this.#closing.signal.aborted || this.#loop !== undefined) return;
    this.#options.log('info', NotificationMessages.listening(this.#display));
    this.#loop = this.#run();
  }

  /** Ends a long poll at once, lets a batch being handled finish its deletes, then closes the queue. */
  async close(): Promise<void> {
    this.#closing.abort();
    await this.#loop;
    await this.#queue.close();
  }

  async #run(): Promise<void> {
    const signal = this.#closing.signal;
    while (!signal.aborted) {
      let messages: QueueMessage[];
      try {
        messages = await this.#queue.receive({ signal });
      } catch (error) {
        if (signal.aborted) return;
        this.#logPlanned(this.#tracker.failure(this.#now(), messageOf(error), queueFailure(error)));
        const scale = this.#options.options?.backoffScale ?? 1;
        await this.#sleep(backoffDelayMs(SQS_OUTAGE_BACKOFF, this.#tracker.consecutiveFailures) * scale);
        continue;
      }
      this.#logPlanned(this.#tracker.success(this.#now()));
      if (messages.length === 0 || signal.aborted) continue;
      try {
        await this.#handle(messages);
      } catch (error) {
        this.#options.log('error', NotificationLogMessage.batchFailed, { error: messageOf(error) });
      }
    }
  }

  async #handle(messages: readonly QueueMessage[]): Promise<void> {
    const { report } = this.#options;
    report({ outcome: 'received', count: messages.length });
    const plan = planBatch(
      messages.map((message) => ({ id: message.id, body: message.body })),
      [this.#location],
      this.#display,
    );
    const receiveCounts = new Map(messages.map((message) => [message.id, message.receiveCount]));
    for (const entry of plan.logs) {
      const id = entry.fields.messageId;
      const receiveCount = typeof id === 'string' ? receiveCounts.get(id) : undefined;
      this.#options.log(entry.level, entry.message, {
        ...entry.fields,
        ...(receiveCount === undefined ? {} : { receiveCount }),
      });
    }
    const unparseable = plan.logs.filter((entry) => entry.level === 'warn').length;
    if (unparseable > 0) report({ outcome: 'unparseable', count: unparseable });

    const readSucceeded = new Set<string>();
    if (plan.commits.size > 0 && (await this.#readAndAnnounce())) {
      readSucceeded.add(locationKey(this.#location));
    }
    const settled = settleCommits(plan.commits, readSucceeded);
    const deleteIds = new Set([...plan.toDelete, ...settled.toDelete]);
    const toDelete = messages.filter((message) => deleteIds.has(message.id));
    let deleted = 0;
    if (toDelete.length > 0) {
      try {
        await this.#queue.delete(toDelete);
        deleted = toDelete.length;
      } catch (error) {
        const failures = (error as { failures?: readonly unknown[] }).failures;
        deleted = Array.isArray(failures) ? toDelete.length - failures.length : 0;
        this.#options.log('warn', NotificationMessages.deleteFailed(this.#display, messageOf(error)), {
          error: messageOf(error),
        });
      }
    }
    if (deleted > 0) report({ outcome: 'deleted', count: deleted });
    if (messages.length > deleted) report({ outcome: 'left', count: messages.length - deleted });
  }

  /**
   * One fresh read of the location for the whole batch, then the fan-out. Every notified dataset is
   * a `refresh_mode: snapshot` dataset of the pod's location with the pod's S3 settings, so they
   * share one reader: the datasets' own reads that follow the announcement reuse this one.
   */
  async #readAndAnnounce(): Promise<boolean> {
    const first = this.#datasets[0];
    if (first === undefined) return true;
    let metadata: ParsedMetadata | undefined;
    try {
      metadata = await untilAborted(this.#options.readerFor(first).refresh(), this.#closing.signal);
    } catch (error) {
      if (!this.#closing.signal.aborted) {
        this.#options.log('warn', NotificationMessages.metadataReadFailed(this.#display, messageOf(error)), {
          location: this.#options.notifications.location,
          error: messageOf(error),
        });
      }
      return false;
    }
    if (metadata !== undefined) this.#fanOut(metadata.datasets);
    return true;
  }

  #fanOut(datasets: ParsedMetadata['datasets']): void {
    const changed = new Set(diffCurrentIds(this.#previous, datasets));
    const current = currentSnapshotIds(datasets);
    for (const dataset of this.#datasets) {
      const id = current.get(dataset.name);
      if (id !== undefined && changed.has(dataset.name)) this.#options.announce(dataset.name, id);
    }
    this.#previous = current;
  }

  #logPlanned(
    entry: { level: LogLevel; message: string; fields: Readonly<Record<string, unknown>> } | undefined,
  ): void {
    if (entry !== undefined) this.#options.log(entry.level, entry.message, { ...entry.fields });
  }

  #sleep(ms: number): Promise<void> {
    const signal = this.#closing.signal;
    return new Promise((resolve) => {
      if (signal.aborted) {
        resolve();
        return;
      }
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
