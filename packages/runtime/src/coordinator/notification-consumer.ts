/**
 * The one SQS consumer of the process (per queue and credentials), run by the coordinator. It long-
 * polls the queue, plans each batch with the pure router (`planBatch`), reads the location's
 * metadata.json ONCE per batch that commits it (through the shared reader, so the datasets' follow-up
 * reloads reuse that read), announces the new current ids to the datasets whose id moved, and only
 * then deletes the commits (a failed read leaves them on the queue). Messages about objects outside
 * the location stay on the queue. Outages are logged once when they start, once after five minutes,
 * and on recovery. Every line an operator greps for is Spice's (`NotificationMessages`); the queue
 * URL never appears in a log line.
 *
 * Ferry additions: with `ferry_sns_topic_arn` the consumer first makes this process's own queue and
 * subscribes it to the topic (retrying with backoff while that fails), refreshes its heartbeat tag,
 * makes a new one if the queue is deleted under it, and removes queue and subscription on close. And
 * it matches the commits its reads see against the commits it is notified of (`MissedCommitDetector`),
 * to warn when another process shares the queue.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type {
  DatasetConfig,
  NotificationQueue,
  NotificationsConfig,
  QueueMessage,
  TopicQueueConfig,
} from '@ferry/core/base';
import {
  announcedCommits,
  backoffDelayMs,
  createMissedCommitDetector,
  createOutageTracker,
  currentSnapshotIds,
  diffCurrentIds,
  freshnessClock,
  locationDisplay,
  locationKey,
  type MissedCommitDetector,
  type NotificationLocation,
  NotificationMessages,
  type OutageTracker,
  type ParsedMetadata,
  parseNotification,
  planBatch,
  type QueueFailure,
  requireLocation,
  SQS_OUTAGE_BACKOFF,
  settleCommits,
} from '@ferry/core/base';
import { createReaderQueue, createSqsQueue, type ReaderQueue } from '@ferry/store/queues';
import type { NotificationEvent, RuntimeOptions } from '../api.js';
import type { LogLevel, LogRecord } from '../common/logging.js';
import { untilAborted } from '../common/within.js';
import type { LocationMetadataReader } from './metadata-reader.js';

export interface NotificationConsumerOptions {
  readonly notifications: NotificationsConfig;
  readonly datasets: readonly DatasetConfig[];
  readerFor(dataset: DatasetConfig): LocationMetadataReader;
  announce(dataset: string, snapshotId: number): void;
  log(level: LogLevel, message: string, fields?: LogRecord['fields']): void;
  report(event: NotificationEvent): void;
  /** Milliseconds between outage retries are `backoffDelayMs(SQS_OUTAGE_BACKOFF, attempt) × backoffScale`. */
  readonly options?: RuntimeOptions['notifications'];
  /** The clock outages are measured on; default {@link freshnessClock} (the metadata reader's, whose reads it matches). */
  readonly now?: () => number;
}

export const NotificationLogMessage = {
  batchFailed: 'Handling a batch of SQS notifications failed; its messages will be delivered again',
  /** Ferry's own lines for `ferry_sns_topic_arn`: the queue is named, never its URL. */
  queueMade: (location: string, queue: string, topic: string, raw: boolean): string =>
    `Snapshot location '${location}' made its own SQS queue '${queue}' and subscribed it to the SNS topic '${topic}' (\`ferry_sns_topic_arn\`${raw ? ', raw message delivery' : ''}), so datasets with \`refresh_mode: snapshot\` reload as soon as a new snapshot is published; the queue is removed when this process stops.`,
  queueFailed: (location: string, error: string): string =>
    `${error} Snapshot location '${location}' keeps trying with backoff; until then datasets with \`refresh_mode: snapshot\` check the location every \`refresh_check_interval\`.`,
  queueRecovered: (location: string, queue: string): string =>
    `Snapshot location '${location}' made its own SQS queue '${queue}' after earlier failures; notifications reach it now.`,
  queueGone: (location: string, queue: string): string =>
    `The SQS queue '${queue}' of snapshot location '${location}' no longer exists (deleted by \`ferry fleet gc\` or by hand?), so this process makes a new one and subscribes it to the topic.`,
  queueRemoved: (location: string, queue: string): string =>
    `Snapshot location '${location}' removed its SQS queue '${queue}' and the queue's subscription to the topic.`,
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

/** The queue itself is gone (SQS `QueueDoesNotExist`), not merely unreachable. */
function queueIsGone(error: unknown): boolean {
  const cause = (error as { cause?: { name?: unknown; Code?: unknown } } | null)?.cause;
  return [cause?.name, cause?.Code].some(
    (name) => name === 'QueueDoesNotExist' || name === 'AWS.SimpleQueueService.NonExistentQueue',
  );
}

export class NotificationConsumer {
  readonly #options: NotificationConsumerOptions;
  /** Undefined in topic mode until this process's queue is made. */
  #queue: NotificationQueue | undefined;
  /** `ferry_sns_topic_arn`: the queue to make; its queue once made. */
  readonly #topic: TopicQueueConfig | undefined;
  #provisioned: ReaderQueue | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #heartbeatFailing = false;
  readonly #missed: MissedCommitDetector;
  #unobserve: (() => void) | undefined;
  /** The ETag of the last document the location's reader read. */
  #lastReadEtag: string | undefined;
  readonly #location: NotificationLocation;
  readonly #datasets: readonly DatasetConfig[];
  /**
   * The one reader of every notified dataset (each is a `refresh_mode: snapshot` dataset of the
   * pod's location with the pod's S3 settings); none without notified datasets.
   */
  readonly #reader: LocationMetadataReader | undefined;
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
    const queue = notifications.queue;
    this.#topic = queue.topic === undefined ? undefined : queue;
    this.#queue = queue.url === undefined ? undefined : this.#sqsQueue(queue.url, queue.region);
    const location = requireLocation(notifications.location);
    this.#location = location;
    this.#display = locationDisplay(location.uri);
    this.#tracker = createOutageTracker({ location: this.#display });
    const grace = options.options?.missedCommitGraceMs;
    this.#missed = createMissedCommitDetector({
      location: this.#display,
      queueKey: this.#topic === undefined ? 's3_queue_url' : 'ferry_sns_topic_arn',
      ...(grace === undefined ? {} : { graceMs: grace }),
    });
    const names = new Set(notifications.datasets);
    this.#datasets = options.datasets.filter((dataset) => names.has(dataset.name));
    const first = this.#datasets[0];
    this.#reader = first === undefined ? undefined : options.readerFor(first);
    this.#now = options.now ?? freshnessClock;
  }

  start(): void {
    if (this.#closing.signal.aborted || this.#loop !== undefined) return;
    this.#unobserve = this.#reader?.observe((observation) => {
      this.#lastReadEtag = observation.etag;
      // The read's start on this consumer's clock (the reader keeps its own).
      const now = this.#now();
      this.#missed.observed(observation.etag, now - (observation.endedAtMs - observation.startedAtMs), now);
    });
    if (this.#topic === undefined) this.#options.log('info', NotificationMessages.listening(this.#display));
    this.#loop = this.#run();
  }

  /**
   * Ends a long poll, a metadata read and the deletes of a batch at once (undeleted messages are
   * delivered again, as when Spice drops its consumer), then closes the queue; a queue this process
   * made is unsubscribed and deleted, for at most `removeTimeoutMs` (then `ferry fleet gc` removes it).
   */
  async close(removeTimeoutMs = 10_000): Promise<void> {
    this.#closing.abort();
    await this.#loop;
    this.#unobserve?.();
    await this.#queue?.close();
    await this.#removeProvisioned(false, AbortSignal.timeout(removeTimeoutMs));
  }

  #sqsQueue(url: string, region: string): NotificationQueue {
    const { notifications } = this.#options;
    const credentials = notifications.s3.credentials;
    const tuning = this.#options.options ?? {};
    return createSqsQueue({
      queueUrl: url,
      region,
      ...(notifications.queue.endpoint === undefined ? {} : { endpoint: notifications.queue.endpoint }),
      ...(credentials === undefined ? {} : { credentials }),
      ...(tuning.visibilityTimeoutSeconds === undefined
        ? {}
        : { visibilityTimeoutSeconds: tuning.visibilityTimeoutSeconds }),
      ...(tuning.waitTimeSeconds === undefined ? {} : { waitTimeSeconds: tuning.waitTimeSeconds }),
    });
  }

  async #run(): Promise<void> {
    const signal = this.#closing.signal;
    const scale = this.#options.options?.backoffScale ?? 1;
    let provisionFailures = 0;
    /** Queues found gone since the last successful receive: the second and later wait first. */
    let goneInARow = 0;
    while (!signal.aborted) {
      let queue = this.#queue;
      if (queue === undefined) {
        const made = await this.#provision(provisionFailures);
        if (signal.aborted) return;
        if (made === undefined) {
          provisionFailures++;
          await this.#sleep(backoffDelayMs(SQS_OUTAGE_BACKOFF, provisionFailures) * scale);
          continue;
        }
        provisionFailures = 0;
        queue = made;
      }
      let messages: QueueMessage[];
      try {
        messages = await queue.receive({ signal });
      } catch (error) {
        if (signal.aborted) return;
        this.#missed.interrupted();
        if (this.#topic !== undefined && queueIsGone(error)) {
          await this.#replaceGoneQueue();
          // A queue deleted under a working reader is replaced at once; one that is gone again before
          // any receive succeeded is not fixed by making another at once, so that waits.
          goneInARow++;
          if (goneInARow > 1) await this.#sleep(backoffDelayMs(SQS_OUTAGE_BACKOFF, goneInARow - 1) * scale);
          continue;
        }
        this.#logPlanned(this.#tracker.failure(this.#now(), messageOf(error), queueFailure(error)));
        await this.#sleep(backoffDelayMs(SQS_OUTAGE_BACKOFF, this.#tracker.consecutiveFailures) * scale);
        continue;
      }
      goneInARow = 0;
      this.#logPlanned(this.#tracker.success(this.#now()));
      this.#missed.listening(this.#now());
      if (messages.length > 0 && !signal.aborted) {
        try {
          await this.#handle(queue, messages);
        } catch (error) {
          this.#options.log('error', NotificationLogMessage.batchFailed, { error: messageOf(error) });
        }
      }
      for (const line of this.#missed.check(this.#now())) this.#logPlanned(line);
    }
  }

  /**
   * Topic mode: makes and subscribes this process's queue. Returns its adapter, or undefined after
   * logging the failure (an error the first time, debug while it keeps failing).
   */
  async #provision(failuresSoFar: number): Promise<NotificationQueue | undefined> {
    const topic = this.#topic;
    if (topic === undefined) return undefined;
    const { notifications } = this.#options;
    const credentials = notifications.s3.credentials;
    let made: ReaderQueue;
    try {
      made = await createReaderQueue({
        topicArn: topic.topic.arn,
        region: topic.region,
        rawMessageDelivery: topic.topic.rawMessageDelivery,
        heartbeatIntervalMs: topic.topic.heartbeatIntervalMs,
        ...(topic.endpoint === undefined ? {} : { sqsEndpoint: topic.endpoint }),
        ...(topic.topic.endpoint === undefined ? {} : { snsEndpoint: topic.topic.endpoint }),
        ...(credentials === undefined ? {} : { credentials }),
      });
    } catch (error) {
      if (!this.#closing.signal.aborted) {
        this.#options.log(
          failuresSoFar === 0 ? 'error' : 'debug',
          NotificationLogMessage.queueFailed(this.#display, messageOf(error)),
          { error: messageOf(error), code: (error as { code?: unknown }).code ?? null },
        );
      }
      return undefined;
    }
    this.#provisioned = made;
    if (this.#closing.signal.aborted) return undefined;
    this.#options.log(
      'info',
      failuresSoFar === 0
        ? NotificationLogMessage.queueMade(
            this.#display,
            made.name,
            made.topicArn,
            topic.topic.rawMessageDelivery,
          )
        : NotificationLogMessage.queueRecovered(this.#display, made.name),
      { queue: made.name, topicArn: made.topicArn },
    );
    this.#heartbeat = setInterval(() => void this.#beat(), topic.topic.heartbeatIntervalMs);
    this.#queue = this.#sqsQueue(made.url, topic.region);
    return this.#queue;
  }

  async #beat(): Promise<void> {
    const made = this.#provisioned;
    if (made === undefined) return;
    try {
      await made.heartbeat();
      this.#heartbeatFailing = false;
    } catch (error) {
      if (!this.#heartbeatFailing) this.#options.log('warn', messageOf(error), { queue: made.name });
      this.#heartbeatFailing = true;
    }
  }

  /** The queue vanished (gc, or by hand): drop it and its subscription; the loop makes a new one. */
  async #replaceGoneQueue(): Promise<void> {
    const made = this.#provisioned;
    this.#options.log('warn', NotificationLogMessage.queueGone(this.#display, made?.name ?? 'unknown'), {
      queue: made?.name ?? null,
    });
    await this.#queue?.close();
    this.#queue = undefined;
    await this.#removeProvisioned(true);
  }

  async #removeProvisioned(quiet = false, signal?: AbortSignal): Promise<void> {
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
    const made = this.#provisioned;
    this.#provisioned = undefined;
    if (made === undefined) return;
    try {
      await made.remove(signal === undefined ? {} : { signal });
      if (!quiet) {
        this.#options.log('info', NotificationLogMessage.queueRemoved(this.#display, made.name), {
          queue: made.name,
        });
      }
    } catch (error) {
      if (!quiet) this.#options.log('warn', messageOf(error), { queue: made.name });
    }
  }

  async #handle(queue: NotificationQueue, messages: readonly QueueMessage[]): Promise<void> {
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
    const unnamed = this.#announce(messages);

    const readSucceeded = new Set<string>();
    if (plan.commits.size > 0 && (await this.#readAndAnnounce())) {
      readSucceeded.add(locationKey(this.#location));
      // A commit event without an ETag vouches for the document its batch read, at most.
      if (unnamed && this.#lastReadEtag !== undefined)
        this.#missed.announced(this.#lastReadEtag, this.#now());
    }
    const settled = settleCommits(plan.commits, readSucceeded);
    const deleteIds = new Set([...plan.toDelete, ...settled.toDelete]);
    const toDelete = messages.filter((message) => deleteIds.has(message.id));
    let deleted = 0;
    if (toDelete.length > 0) {
      try {
        await queue.delete(toDelete, { signal: this.#closing.signal });
        deleted = toDelete.length;
      } catch (error) {
        const failures = (error as { failures?: readonly unknown[] }).failures;
        deleted = Array.isArray(failures) ? toDelete.length - failures.length : 0;
        // Closing abandons the deletes: the messages are delivered again, to this reader's successor.
        if (!this.#closing.signal.aborted) {
          this.#options.log('warn', NotificationMessages.deleteFailed(this.#display, messageOf(error)), {
            error: messageOf(error),
          });
        }
      }
    }
    if (deleted > 0) report({ outcome: 'deleted', count: deleted });
    if (messages.length > deleted) report({ outcome: 'left', count: messages.length - deleted });
  }

  /** Tells the missed-commit detector the ETags the batch's commits name; true when one named none. */
  #announce(messages: readonly QueueMessage[]): boolean {
    let unnamed = false;
    const now = this.#now();
    for (const message of messages) {
      const parsed = parseNotification(message.body);
      if (parsed.kind !== 'records') continue;
      const commits = announcedCommits(parsed.records, this.#location);
      if (commits === undefined) continue;
      for (const etag of commits.etags) this.#missed.announced(etag, now);
      unnamed ||= commits.unnamed;
    }
    return unnamed;
  }

  /**
   * One fresh read of the location for the whole batch, then the fan-out. The notified datasets
   * share the reader, so their own reads that follow the announcement reuse this one.
   */
  async #readAndAnnounce(): Promise<boolean> {
    if (this.#reader === undefined) return true;
    let metadata: ParsedMetadata | undefined;
    try {
      metadata = await untilAborted(this.#reader.refresh(), this.#closing.signal);
    } catch (error) {
      if (!this.#closing.signal.aborted) {
        this.#options.log('warn', NotificationMessages.metadataReadFailed(this.#display, messageOf(error)), {
          location: this.#options.notifications.location,
          error: messageOf(error),
        });
      }
      return false;
    }
    if (metadata === undefined) return true;
    const changed = new Set(diffCurrentIds(this.#previous, metadata.datasets));
    const current = currentSnapshotIds(metadata.datasets);
    for (const dataset of this.#datasets) {
      const id = current.get(dataset.name);
      if (id !== undefined && changed.has(dataset.name)) this.#options.announce(dataset.name, id);
    }
    this.#previous = current;
    return true;
  }

  #logPlanned(
    entry: { level: LogLevel; message: string; fields: Readonly<Record<string, unknown>> } | undefined,
  ): void {
    if (entry !== undefined) this.#options.log(entry.level, entry.message, entry.fields);
  }

  /** Waits `ms`, or less if the consumer closes meanwhile. */
  #sleep(ms: number): Promise<void> {
    return sleep(ms, undefined, { signal: this.#closing.signal }).catch(() => undefined);
  }
}
