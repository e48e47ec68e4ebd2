/**
 * The requests the benchmark's AWS process answers (see `aws-process.ts`), shared by that process
 * and its client so both sides agree on one discriminated union.
 */
import type { FileFormat } from '@ferry/core';
import type { PublishResult } from '@ferry/writer';

/** The first line the AWS process prints: where everything is. */
export interface AwsInfo {
  /** Counting proxy in front of fauxqs (requests here show in `count`). */
  readonly endpoint: string;
  /** fauxqs itself (not counted). */
  readonly serverEndpoint: string;
  readonly region: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** The control port (POST a JSON {@link AwsRequest}). */
  readonly control: string;
  readonly pid: number;
}

export interface BatchItem {
  readonly dataset: string;
  readonly engine: FileFormat;
  readonly file: string;
}

export type AwsRequest =
  | { readonly op: 'create-bucket'; readonly bucket: string }
  | { readonly op: 'create-queue'; readonly name: string }
  | { readonly op: 'create-topic'; readonly name: string }
  | { readonly op: 'subscribe'; readonly topicArn: string; readonly queueUrl: string; readonly raw: boolean }
  | {
      readonly op: 'bridge';
      readonly bucket: string;
      /** Send to this queue, or publish to `topicArn` (SNS delivers to its subscribed queues). */
      readonly queueUrl?: string;
      readonly topicArn?: string;
      readonly prefix?: string;
      readonly suffix?: string;
    }
  | { readonly op: 'stop-bridge'; readonly handle: number }
  /** The bridge's notifications so far: `[fauxqs's event timestamp, send acknowledged]`, epoch ms, oldest first. */
  | { readonly op: 'bridge-sent'; readonly handle: number }
  | { readonly op: 'count'; readonly method: string; readonly target: string }
  | {
      readonly op: 'publish';
      readonly dataset: string;
      readonly location: string;
      readonly file: string;
      readonly engine?: FileFormat;
      readonly workDir?: string;
      /** Delete the dataset's older objects, keeping this many (a lifecycle rule, for long runs). */
      readonly keepLast?: number;
    }
  | { readonly op: 'publish-batch'; readonly location: string; readonly items: readonly BatchItem[] }
  | { readonly op: 'delete-prefix'; readonly bucket: string; readonly prefix: string };

export interface PublishReply extends PublishResult {
  /** fauxqs's timestamp (epoch ms) of the metadata.json upload that made this snapshot current. */
  readonly metadataWrittenAtMs: number;
}

export interface BatchReply {
  readonly metadataWrittenAtMs: number;
  readonly count: number;
}
