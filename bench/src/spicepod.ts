/**
 * Spicepods for the scenarios: one S3 location on the local server (through the counting proxy or
 * straight to fauxqs), optionally its SQS queue, and snapshot datasets with their check interval.
 */
import type { FileFormat } from '@ferry/core';
import { spicepodYaml } from '@ferry/test-support';
import type { AwsInfo } from './aws-protocol.js';

export const BUCKET = 'bench';

export function locationOf(prefix: string): string {
  return `s3://${BUCKET}/${prefix}`;
}

export interface SpicepodDataset {
  readonly name: string;
  readonly engine: FileFormat;
  /** `refresh_check_interval`, e.g. `1s`, `10m`. */
  readonly interval: string;
}

export interface SpicepodOptions {
  readonly aws: AwsInfo;
  /** `bucket`-relative prefix ending in `/`. */
  readonly prefix: string;
  readonly datasets: readonly SpicepodDataset[];
  /** Talk to fauxqs directly instead of through the counting proxy. */
  readonly direct?: boolean;
  readonly queueUrl?: string;
  /**
   * Keep Spice's SQL results cache on (default: off, so a scenario that repeats a statement
   * measures the engine path, not cache hits; B11 measures the cache).
   */
  readonly resultsCache?: boolean;
  /** More `snapshots.params` (Ferry's keys, such as `ferry_retain_snapshots`). */
  readonly params?: Readonly<Record<string, string>>;
}

export function spicepod(options: SpicepodOptions): string {
  const { aws } = options;
  const endpoint = options.direct === true ? aws.serverEndpoint : aws.endpoint;
  const cache =
    options.resultsCache === true ? '' : 'runtime:\n  caching:\n    sql_results:\n      enabled: false\n';
  return `${spicepodYaml({
    name: 'ferry-bench',
    location: locationOf(options.prefix),
    params: {
      s3_endpoint: endpoint,
      allow_http: true,
      s3_region: aws.region,
      s3_auth: 'key',
      s3_key: aws.accessKeyId,
      s3_secret: aws.secretAccessKey,
      ...(options.queueUrl === undefined
        ? {}
        : { s3_queue_url: options.queueUrl, s3_queue_endpoint: endpoint }),
      ...options.params,
    },
    datasets: options.datasets,
  })}${cache}`;
}
