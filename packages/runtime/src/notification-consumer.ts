/**
 * The one SQS consumer of the process (per queue and credentials), run by the coordinator. It long-
 * polls the queue, plans each batch with the pure router (`planBatch`), reads each committed
 * location's metadata.json ONCE per batch, announces the new current ids to the datasets whose id
 * moved, and only then deletes the commits (a failed read leaves them on the queue). Messages about
 * objects outside every location stay on the queue. Outages are logged once when they start, once
 * after five minutes, and on recovery; the queue URL never appears in a log line.
 */
import type { DatasetConfig, NotificationQueue, NotificationsConfig, QueueMessage } from '@ferry/core';
import {
  backoffMs,
  createOutageTracker,
  currentSnapshotIds,
  diffCurrentIds,
  locationKey,
  type NotificationLocation,
  planBatch,
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
    /** Milliseconds between outage retries are `backoffMs(attempt) × backoffScale` (tests shrink it). */
    readonly backoffScale?: number;
  };
  /** Injected for tests: the queue to consume. Default: SQS from the configuration. */
  readonly queue?: NotificationQueue;
  readonly now?: () => number;
}

function parseS3Location(location: string): NotificationLocation {
  const match = /^s3:\/\/([^/]+)\/(.*)$/.exec(location);
  return { bucket: match?.[1] ?? '', prefix: match?.[2] ?? '' };
}

export class NotificationConsumer {
  readonly #options: NotificationConsumerOptions;
  readonly #queue: NotificationQueue;
  readonly #location: NotificationLocation;
  readonly #datasets: readonly DatasetConfig[];
  readonly #now: () => number;
  readonly #tracker = createOutageTracker();
  /** Current ids seen by the previous batch read, per dataset: only a move is announced. */
  #previous = new Map<string, number>();
  #closed = false;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;

  constructor(options: NotificationConsumerOptions) {
    this.#options = options;
    const { notifications } = options;
    const credentials = notifications.s3.credentials;
    this.#queue =
      options.queue ??
      createSqsQueue({
        queueUrl: notifications.queue.url,
        region: notifications.queue.region,
        ...(notifications.queue.endpoint === undefined ? {} : { endpoint: notifications.queue.endpoint }),
        ...(credentials === undefined ? {} : { credentials }),
        ...(options.options?.visibilityTimeoutSeconds === undefined
          ? {}
          : { visibilityTimeoutSeconds: options.options.visibilityTimeoutSeconds }),
        ...(options.options?.waitTimeSeconds === undefined
          ? {}
          : { waitTimeSeconds: options.options.waitTimeSeconds }),
      });
    this.#location = parseS3Location(notifications.location);
    const names = new Set(notifications.datasets);
    this.#datasets = options.datasets.filter((dataset) => names.has(dataset.name));
    this.#now = options.now ?? Date.now;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#wake?.();
    await this.#queue.close();
    await this.#loop;
  }

  async #run(): Promise<void> {
    while (!this.#closed) {
      let messages: QueueMessage[];
      try {
        messages = await this.#queue.receive();
        this.#logPlanned(this.#tracker.success(this.#now()));
      } catch (error) {
        if (this.#closed) return;
        this.#logPlanned(
          this.#tracker.failure(this.#now(), error instanceof Error ? error.message : String(error)),
        );
        await this.#sleep(
          backoffMs(this.#tracker.consecutiveFailures) * (this.#options.options?.backoffScale ?? 1),
        );
        continue;
      }
      if (messages.length === 0 || this.#closed) continue;
      await this.#handle(messages);
    }
  }

  async #handle(messages: readonly QueueMessage[]): Promise<void> {
    const { report } = this.#options;
    report({ outcome: 'received', count: messages.length });
    const plan = planBatch(
      messages.map((message) => ({ id: message.id, body: message.body })),
      [this.#location],
    );
    for (const entry of plan.logs) this.#options.log(entry.level, entry.message, { ...entry.fields });
    const unparseable = plan.logs.filter((entry) => entry.level === 'warn').length;
    if (unparseable > 0) report({ outcome: 'unparseable', count: unparseable });

    const readSucceeded = new Set<string>();
    if (plan.commits.size > 0) {
      const key = locationKey(this.#location);
      const first = this.#datasets[0];
      if (first !== undefined) {
        try {
          const metadata = await this.#options.readerFor(first).refresh();
          readSucceeded.add(key);
          if (metadata !== undefined) this.#fanOut(metadata.datasets);
        } catch (error) {
          this.#options.log(
            'warn',
            'Could not read metadata.json for a notification; leaving it on the queue',
            {
              location: this.#options.notifications.location,
              error: error instanceof Error ? error.message : String(error),
            },
          );
        }
      } else {
        readSucceeded.add(key);
      }
    }
    const settled = settleCommits(plan.commits, readSucceeded);
    const deleteIds = new Set([...plan.toDelete, ...settled.toDelete]);
    const toDelete = messages.filter((message) => deleteIds.has(message.id));
    const left = messages.length - toDelete.length;
    if (toDelete.length > 0) {
      try {
        await this.#queue.delete(toDelete);
        report({ outcome: 'deleted', count: toDelete.length });
      } catch (error) {
        this.#options.log(
          'warn',
          'Could not delete notifications from the SQS queue; they will be delivered again',
          {
            error: error instanceof Error ? error.message : String(error),
          },
        );
      }
    }
    if (left > 0) report({ outcome: 'left', count: left });
  }

  #fanOut(datasets: Parameters<typeof diffCurrentIds>[1]): void {
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
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#wake = undefined;
        resolve();
      }, ms);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
