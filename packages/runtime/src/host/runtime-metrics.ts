/**
 * The counters the host keeps for `runtime.metrics()` (and so `/metrics`): swaps, poll results,
 * snapshot failures, signature refusals and heartbeat freshness per dataset, bytes and time
 * downloaded, bootstraps, SQS message outcomes. Fed by the dataset threads' and the coordinator's
 * messages; read as a copy.
 */
import { type DatasetEmitted, type PollResult, SIGNATURE_REFUSAL_CODES } from '@ferry/core/base';
import type { BootstrapMetrics, NotificationEvent, RuntimeMetrics } from '../api.js';

/** Every poll result, in the order `/metrics` lists them. */
export const POLL_RESULTS: readonly PollResult[] = [
  'unchanged',
  'newer',
  'same',
  'older',
  'refused',
  'failed',
  'waiting',
];

/** What a dataset thread reports about one download. */
export interface DownloadReport {
  /** Bytes fetched from the store. */
  readonly bytes: number;
  /** Bytes copied from the file held before (a delta download). */
  readonly reusedBytes: number;
  readonly seconds: number;
  readonly snapshotId: number;
  readonly checksum: string;
}

export class RuntimeMetricsCounter {
  readonly #swaps: Record<string, number> = {};
  readonly #polls: Record<string, Record<PollResult, number>> = {};
  #downloadedBytes = 0;
  #reusedBytes = 0;
  #downloadSeconds = 0;
  readonly #lastDownloads: Record<string, { fetchedBytes: number; reusedBytes: number; snapshotId: number }> =
    {};
  readonly #sqsMessages = { received: 0, deleted: 0, left: 0 };
  readonly #bootstraps: Record<string, BootstrapMetrics> = {};
  readonly #failures: Record<string, number> = {};
  readonly #signatureRefusals: Record<string, Record<string, number>> = {};
  readonly #freshness: Record<string, { stale: boolean; staleTimes: number }> = {};

  /** Counts a machine event (swap, poll or error) of `dataset`. */
  countEmitted(dataset: string, event: DatasetEmitted): void {
    if (event.type === 'swap') {
      this.#swaps[dataset] = (this.#swaps[dataset] ?? 0) + 1;
    } else if (event.type === 'poll') {
      const polls =
        this.#polls[dataset] ??
        (Object.fromEntries(POLL_RESULTS.map((result) => [result, 0])) as Record<PollResult, number>);
      polls[event.result]++;
      this.#polls[dataset] = polls;
    } else {
      this.#failures[dataset] = (this.#failures[dataset] ?? 0) + 1;
      const code = event.error.code;
      if ((SIGNATURE_REFUSAL_CODES as readonly string[]).includes(code)) {
        const refusals = this.#signatureRefusals[dataset] ?? {};
        refusals[code] = (refusals[code] ?? 0) + 1;
        this.#signatureRefusals[dataset] = refusals;
      }
    }
  }

  /** Records a dataset's freshness as its heartbeat watch reported it. */
  countFreshness(dataset: string, stale: boolean): void {
    const earlier = this.#freshness[dataset];
    const turned = stale && earlier?.stale !== true;
    this.#freshness[dataset] = { stale, staleTimes: (earlier?.staleTimes ?? 0) + (turned ? 1 : 0) };
  }

  /** Counts a download; `bootstrapping` when the dataset served nothing while it ran. */
  countDownload(dataset: string, report: DownloadReport, bootstrapping: boolean): void {
    this.#downloadedBytes += report.bytes;
    this.#reusedBytes += report.reusedBytes;
    this.#downloadSeconds += report.seconds;
    this.#lastDownloads[dataset] = {
      fetchedBytes: report.bytes,
      reusedBytes: report.reusedBytes,
      snapshotId: report.snapshotId,
    };
    if (!bootstrapping) return;
    const earlier = this.#bootstraps[dataset]?.durationMs ?? 0;
    this.#bootstraps[dataset] = {
      durationMs: earlier + report.seconds * 1000,
      bytes: report.bytes + report.reusedBytes,
      checksum: report.checksum,
      snapshotId: report.snapshotId,
    };
  }

  countNotification(event: NotificationEvent): void {
    if (event.outcome !== 'unparseable') this.#sqsMessages[event.outcome] += event.count;
  }

  /** A copy: later counts do not change it. */
  snapshot(): Omit<RuntimeMetrics, 'resultsCache'> {
    return structuredClone({
      swaps: this.#swaps,
      polls: this.#polls,
      downloadedBytes: this.#downloadedBytes,
      reusedBytes: this.#reusedBytes,
      downloadSeconds: this.#downloadSeconds,
      lastDownloads: this.#lastDownloads,
      sqsMessages: this.#sqsMessages,
      bootstraps: this.#bootstraps,
      failures: this.#failures,
      signatureRefusals: this.#signatureRefusals,
      freshness: this.#freshness,
    });
  }
}
