/**
 * What `GET /metrics` exposes, in a prom-client registry of its own per server (so two servers in
 * one process never share series): per-dataset snapshot id, age, staleness, readiness, swaps and
 * polls by result, signature refusals and heartbeat freshness, download totals (fetched and, for
 * delta downloads, reused bytes; per dataset, its last download's) and SQS message
 * counts, read from the runtime at every scrape (each metric's `collect`); Spice's reader-side
 * snapshot metrics and each dataset's status under their Spice names (`dataset_acceleration_snapshot_*`,
 * `dataset_load_state`, label `dataset`); the SQL results cache's (`results_cache_*`);
 * and the latency histogram of
 * `POST /v1/sql`, measured around `runtime.query`.
 */
import { POLL_RESULTS, type Runtime } from '@ferry/runtime';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { isServing, type SpiceDatasetStatus, spiceStatus } from './dataset-view.js';

/** The values of Spice's `dataset_load_state` gauge (its observability docs); `Disabled` never applies. */
const LOAD_STATE: Readonly<Record<SpiceDatasetStatus, number>> = {
  Initializing: 0,
  Ready: 1,
  Error: 3,
  Refreshing: 4,
  ShuttingDown: 5,
};

/** Latency buckets of `ferry_query_duration_seconds`, in seconds. */
export const QUERY_SECONDS_BUCKETS: readonly number[] = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];

export type QueryOutcome = 'ok' | 'error';

export interface ServerMetrics {
  readonly registry: Registry;
  /** The exposition's content type (text format 0.0.4). */
  readonly contentType: string;
  observeQuery(seconds: number, outcome: QueryOutcome): void;
  /** The exposition text, every runtime-backed metric read afresh. */
  scrape(): Promise<string>;
}

/** A registry over `runtime`; `now` is the wall clock staleness is measured against. */
export function createServerMetrics(runtime: Runtime, now: () => number = Date.now): ServerMetrics {
  const registry = new Registry();
  const registers = [registry];
  const datasets = () => runtime.datasets();
  const counters = () => runtime.metrics();

  new Gauge({
    name: 'ferry_dataset_snapshot_id',
    help: 'The snapshot id the dataset serves (absent before its first snapshot is loaded).',
    labelNames: ['dataset'],
    registers,
    collect() {
      this.reset();
      for (const info of datasets()) {
        const id = info.status?.servingSnapshotId;
        if (id != null) this.set({ dataset: info.name }, id);
      }
    },
  });
  new Gauge({
    name: 'ferry_dataset_snapshot_staleness_seconds',
    help: 'Seconds between now and the timestamp of the snapshot the dataset serves (its age; see ferry_dataset_staleness_seconds for how far behind the store the reader may be).',
    labelNames: ['dataset'],
    registers,
    collect() {
      this.reset();
      const at = now();
      for (const info of datasets()) {
        const timestamp = info.status?.servingTimestampMs;
        if (timestamp != null) this.set({ dataset: info.name }, Math.max(0, (at - timestamp) / 1000));
      }
    },
  });
  new Gauge({
    name: 'ferry_dataset_staleness_seconds',
    help: "Seconds since this reader last knew it served the store's current snapshot (a check that found nothing newer, or the load of the current one); absent while it serves nothing.",
    labelNames: ['dataset'],
    registers,
    collect() {
      this.reset();
      for (const info of datasets()) {
        if (info.stalenessMs !== null) this.set({ dataset: info.name }, info.stalenessMs / 1000);
      }
    },
  });
  new Gauge({
    name: 'ferry_dataset_ready',
    help: '1 when the dataset answers queries from a loaded snapshot, else 0.',
    labelNames: ['dataset'],
    registers,
    collect() {
      this.reset();
      for (const info of datasets()) this.set({ dataset: info.name }, isServing(info) ? 1 : 0);
    },
  });
  new Gauge({
    name: 'dataset_load_state',
    help: 'Status of the dataset. 0=Initializing, 1=Ready, 2=Disabled, 3=Error, 4=Refreshing, 5=ShuttingDown.',
    labelNames: ['dataset'],
    registers,
    collect() {
      this.reset();
      for (const info of datasets()) this.set({ dataset: info.name }, LOAD_STATE[spiceStatus(info)]);
    },
  });
  new Counter({
    name: 'ferry_dataset_swaps_total',
    help: 'Snapshots swapped in by the dataset since the runtime started.',
    labelNames: ['dataset'],
    registers,
    collect() {
      this.reset();
      const swaps = counters().swaps;
      for (const info of datasets()) this.inc({ dataset: info.name }, swaps[info.name] ?? 0);
    },
  });
  new Counter({
    name: 'ferry_dataset_polls_total',
    help: 'Checks of the snapshot store by the dataset, by result.',
    labelNames: ['dataset', 'result'],
    registers,
    collect() {
      this.reset();
      const polls = counters().polls;
      for (const info of datasets()) {
        for (const result of POLL_RESULTS) {
          this.inc({ dataset: info.name, result }, polls[info.name]?.[result] ?? 0);
        }
      }
    },
  });
  new Counter({
    name: 'ferry_snapshot_downloaded_bytes_total',
    help: 'Bytes of snapshot files downloaded.',
    registers,
    collect() {
      this.reset();
      this.inc(counters().downloadedBytes);
    },
  });
  new Counter({
    name: 'ferry_snapshot_reused_bytes_total',
    help: 'Bytes of downloaded snapshot files copied from the file held before instead of fetched (delta downloads).',
    registers,
    collect() {
      this.reset();
      this.inc(counters().reusedBytes);
    },
  });
  new Gauge({
    name: 'ferry_dataset_last_download_bytes',
    help: "Bytes of the dataset's last snapshot download, by source: fetched from the store, or reused from the file held before (a delta download).",
    labelNames: ['dataset', 'source'],
    registers,
    collect() {
      this.reset();
      for (const [dataset, last] of Object.entries(counters().lastDownloads)) {
        this.set({ dataset, source: 'fetched' }, last.fetchedBytes);
        this.set({ dataset, source: 'reused' }, last.reusedBytes);
      }
    },
  });
  new Counter({
    name: 'ferry_snapshot_download_seconds_total',
    help: 'Seconds spent downloading snapshot files.',
    registers,
    collect() {
      this.reset();
      this.inc(counters().downloadSeconds);
    },
  });
  new Counter({
    name: 'ferry_sqs_messages_total',
    help: 'SQS notification messages, by outcome (received, deleted, left on the queue).',
    labelNames: ['outcome'],
    registers,
    collect() {
      this.reset();
      const sqs = counters().sqsMessages;
      this.inc({ outcome: 'received' }, sqs.received);
      this.inc({ outcome: 'deleted' }, sqs.deleted);
      this.inc({ outcome: 'left' }, sqs.left);
    },
  });
  new Counter({
    name: 'ferry_snapshot_signature_refusals_total',
    help: 'Snapshots refused by a dataset with ferry_trusted_keys before download, by reason (the error code).',
    labelNames: ['dataset', 'reason'],
    registers,
    collect() {
      this.reset();
      for (const [dataset, reasons] of Object.entries(counters().signatureRefusals)) {
        for (const [reason, count] of Object.entries(reasons)) this.inc({ dataset, reason }, count);
      }
    },
  });
  new Gauge({
    name: 'ferry_dataset_heartbeat_stale',
    help: '1 while a dataset with ferry_trusted_keys has no valid, unexpired heartbeat statement from its writer, else 0.',
    labelNames: ['dataset'],
    registers,
    collect() {
      this.reset();
      for (const [dataset, freshness] of Object.entries(counters().freshness)) {
        this.set({ dataset }, freshness.stale ? 1 : 0);
      }
    },
  });
  const latency = new Histogram({
    name: 'ferry_query_duration_seconds',
    help: 'Time of POST /v1/sql queries in the runtime, by outcome (ok or error).',
    labelNames: ['outcome'],
    buckets: [...QUERY_SECONDS_BUCKETS],
    registers,
  });

  // Spice's reader-side snapshot metrics (meter `dataset_acceleration_snapshot_metrics`).
  new Counter({
    name: 'dataset_acceleration_snapshot_bootstrap_duration_ms',
    help: 'Milliseconds the dataset spent downloading and validating the snapshot it bootstrapped from.',
    labelNames: ['dataset'],
    registers,
    collect() {
      this.reset();
      for (const [dataset, bootstrap] of Object.entries(counters().bootstraps)) {
        this.inc({ dataset }, Math.round(bootstrap.durationMs));
      }
    },
  });
  new Gauge({
    name: 'dataset_acceleration_snapshot_bootstrap_bytes',
    help: 'Size in bytes of the snapshot the dataset bootstrapped from.',
    labelNames: ['dataset'],
    registers,
    collect() {
      this.reset();
      for (const [dataset, bootstrap] of Object.entries(counters().bootstraps)) {
        this.set({ dataset }, bootstrap.bytes);
      }
    },
  });
  new Gauge({
    name: 'dataset_acceleration_snapshot_bootstrap_checksum',
    help: 'Always 1; the checksum label is the SHA-256 of the snapshot the dataset bootstrapped from.',
    labelNames: ['dataset', 'checksum'],
    registers,
    collect() {
      this.reset();
      for (const [dataset, bootstrap] of Object.entries(counters().bootstraps)) {
        this.set({ dataset, checksum: bootstrap.checksum }, 1);
      }
    },
  });
  new Counter({
    name: 'dataset_acceleration_snapshot_failure_count',
    help: 'Snapshot failures of the dataset: metadata reads, refused candidates, downloads and swaps that failed.',
    labelNames: ['dataset'],
    registers,
    collect() {
      this.reset();
      const failures = counters().failures;
      for (const info of datasets()) this.inc({ dataset: info.name }, failures[info.name] ?? 0);
    },
  });

  // The SQL results cache under Spice's names (spiceai/spiceai's EXPECTED_RESULTS_CACHE_METRICS and
  // its observability docs), and Ferry's bypasses.
  const cache = () => counters().resultsCache;
  const cacheMetric = (
    kind: typeof Counter | typeof Gauge,
    name: string,
    help: string,
    value: (counts: ReturnType<typeof cache>) => number,
  ): void => {
    new kind({
      name,
      help,
      registers,
      collect(this: Counter | Gauge) {
        this.reset();
        this.inc(value(cache()));
      },
    });
  };
  cacheMetric(
    Counter,
    'results_cache_requests',
    'Lookups of the SQL results cache.',
    (c) => c.hits + c.misses,
  );
  cacheMetric(Counter, 'results_cache_hits', 'Lookups answered from the SQL results cache.', (c) => c.hits);
  cacheMetric(
    Counter,
    'results_cache_misses',
    'Lookups the SQL results cache could not answer.',
    (c) => c.misses,
  );
  cacheMetric(
    Counter,
    'results_cache_evictions',
    'Results evicted to keep the cache within its max_size.',
    (c) => c.evictions,
  );
  cacheMetric(
    Counter,
    'ferry_results_cache_bypasses_total',
    'Queries that asked not to be answered from the cache (Cache-Control: no-cache).',
    (c) => c.bypasses,
  );
  cacheMetric(Gauge, 'results_cache_items_count', 'Results held by the SQL results cache.', (c) => c.entries);
  cacheMetric(Gauge, 'results_cache_size_bytes', 'Bytes held by the SQL results cache.', (c) => c.bytes);
  cacheMetric(
    Gauge,
    'results_cache_max_size_bytes',
    'The largest size of the SQL results cache, in bytes (max_size).',
    (c) => c.maxBytes,
  );

  return {
    registry,
    contentType: registry.contentType,
    observeQuery(seconds, outcome) {
      latency.observe({ outcome }, seconds);
    },
    scrape: () => registry.metrics(),
  };
}
