/**
 * What `GET /metrics` exposes: per-dataset snapshot id, staleness, readiness, swaps and polls by
 * result, download totals and SQS message counts from `runtime.metrics()`, and the query latency
 * histogram the server measures around `runtime.query`. Built fresh on every scrape.
 */
import type { Runtime } from '@ferry/runtime';
import { isServing } from './dataset-view.js';
import type { Histogram, MetricFamily, Sample } from './prometheus.js';

const POLL_RESULTS = ['unchanged', 'newer', 'same', 'older', 'refused', 'failed', 'waiting'] as const;

/** The families of one scrape; `nowMs` is the wall clock staleness is measured against. */
export function collectMetrics(runtime: Runtime, queryLatency: Histogram, nowMs: number): MetricFamily[] {
  const datasets = runtime.datasets();
  const counters = runtime.metrics();
  const snapshotIds: Sample[] = [];
  const staleness: Sample[] = [];
  const ready: Sample[] = [];
  const swaps: Sample[] = [];
  const polls: Sample[] = [];
  for (const info of datasets) {
    const labels = { dataset: info.name };
    const status = info.status;
    if (status?.servingSnapshotId != null) {
      snapshotIds.push({ labels, value: status.servingSnapshotId });
    }
    if (status?.servingTimestampMs != null) {
      staleness.push({ labels, value: Math.max(0, (nowMs - status.servingTimestampMs) / 1000) });
    }
    ready.push({ labels, value: isServing(info) ? 1 : 0 });
    swaps.push({ labels, value: counters.swaps[info.name] ?? 0 });
    const byResult = counters.polls[info.name];
    for (const result of POLL_RESULTS) {
      polls.push({ labels: { dataset: info.name, result }, value: byResult?.[result] ?? 0 });
    }
  }
  const sqs = counters.sqsMessages;
  return [
    {
      name: 'ferry_dataset_snapshot_id',
      help: 'The snapshot id the dataset serves (absent before its first snapshot is loaded).',
      type: 'gauge',
      samples: snapshotIds,
    },
    {
      name: 'ferry_dataset_snapshot_staleness_seconds',
      help: 'Seconds between now and the timestamp of the snapshot the dataset serves.',
      type: 'gauge',
      samples: staleness,
    },
    {
      name: 'ferry_dataset_ready',
      help: '1 when the dataset answers queries from a loaded snapshot, else 0.',
      type: 'gauge',
      samples: ready,
    },
    {
      name: 'ferry_dataset_swaps_total',
      help: 'Snapshots swapped in by the dataset since the runtime started.',
      type: 'counter',
      samples: swaps,
    },
    {
      name: 'ferry_dataset_polls_total',
      help: 'Checks of the snapshot store by the dataset, by result.',
      type: 'counter',
      samples: polls,
    },
    {
      name: 'ferry_snapshot_downloaded_bytes_total',
      help: 'Bytes of snapshot files downloaded.',
      type: 'counter',
      samples: [{ value: counters.downloadedBytes }],
    },
    {
      name: 'ferry_snapshot_download_seconds_total',
      help: 'Seconds spent downloading snapshot files.',
      type: 'counter',
      samples: [{ value: counters.downloadSeconds }],
    },
    {
      name: 'ferry_sqs_messages_total',
      help: 'SQS notification messages, by outcome (received, deleted, left on the queue).',
      type: 'counter',
      samples: [
        { labels: { outcome: 'received' }, value: sqs.received },
        { labels: { outcome: 'deleted' }, value: sqs.deleted },
        { labels: { outcome: 'left' }, value: sqs.left },
      ],
    },
    {
      name: 'ferry_query_duration_seconds',
      help: 'Time of POST /v1/sql queries in the runtime, by outcome (ok or error).',
      type: 'histogram',
      samples: queryLatency.samples(),
    },
  ];
}
