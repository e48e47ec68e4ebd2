/**
 * The log lines of the S3 event notification consumer, word for word as Spice writes them
 * (operators grep for them). Each takes the location as Spice shows it (`s3://bucket/prefix`,
 * without the trailing `/`: see `locationDisplay`) and never the queue URL, which carries an
 * account id. Pure text builders; the consumer decides when to log them.
 */
import { SNAPSHOTS_DOCS } from '../spice-docs.js';

/** What failed while the queue could not be reached: Spice's two actions, each with its fix. */
export type QueueFailure = 'connect' | 'receive';

const FAILURE_ACTION: Readonly<Record<QueueFailure, string>> = {
  connect: 'connect to the SQS queue in `s3_queue_url`',
  receive: 'receive S3 event notifications from the SQS queue in `s3_queue_url`',
};

const FAILURE_FIX: Readonly<Record<QueueFailure, string>> = {
  connect: 'Check the AWS credentials for the snapshot location.',
  receive: 'Check the queue URL and the `sqs:ReceiveMessage` permission.',
};

/** Spice's outage durations: whole minutes from one minute on (`5m`), seconds below (`42s`). */
export function formatOutageDuration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  return seconds >= 60 ? `${Math.floor(seconds / 60)}m` : `${seconds}s`;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: escaping control characters is the point.
const CONTROL = /[\u0000-\u001f\u007f]/g;

/** A cause ends its own sentence in the message: no doubled period. */
function cause(text: string): string {
  return text.trim().replace(/\.+$/, '');
}

/** Bucket and key as one log-safe line: control characters escaped (`\n` → `\u000a`). */
function oneLine(text: string): string {
  return text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export const NotificationMessages = {
  listening: (location: string): string =>
    `Snapshot location '${location}' is listening for S3 event notifications on the SQS queue in \`s3_queue_url\`, so datasets with \`refresh_mode: snapshot\` reload as soon as a new snapshot is published.`,

  /** The outage's first failure (no duration), and the one error once it has lasted five minutes. */
  outage: (failure: QueueFailure, location: string, error: string, lastedMs?: number): string =>
    `Failed to ${FAILURE_ACTION[failure]} for snapshot location '${location}'` +
    `${lastedMs === undefined ? '' : ` for ${formatOutageDuration(lastedMs)}`}, so datasets with \`refresh_mode: snapshot\` fall back to checking the location every \`refresh_check_interval\` until it recovers. ` +
    `Cause: ${cause(error)}. ${FAILURE_FIX[failure]} See: ${SNAPSHOTS_DOCS}`,

  recovered: (location: string, lastedMs: number): string =>
    `Snapshot location '${location}' is receiving S3 event notifications from the SQS queue in \`s3_queue_url\` again after ${formatOutageDuration(lastedMs)}, so datasets with \`refresh_mode: snapshot\` reload as soon as a new snapshot is published.`,

  dropped: (location: string, error: string): string =>
    `Snapshot location '${location}' dropped an SQS message that is not an S3 event notification, so it was deleted without reloading any dataset. Cause: ${cause(error)}. Point only the location's S3 event notifications at the queue in \`s3_queue_url\`. See: ${SNAPSHOTS_DOCS}`,

  outside: (location: string, bucket: string, key: string): string =>
    `Snapshot location '${location}' received an S3 event notification for 's3://${oneLine(bucket)}/${oneLine(key)}', which is outside the location, so the SQS message was left on the queue (not deleted) and will be delivered again after each visibility timeout until it expires. The queue in \`s3_queue_url\` must receive only this location's notifications: filter the bucket notification by the location's prefix, or fan out through SNS to a queue per consumer. See: ${SNAPSHOTS_DOCS}`,

  metadataReadFailed: (location: string, error: string): string =>
    `Failed to read the snapshot metadata of snapshot location '${location}' after an S3 event notification, so the notification was left on the SQS queue and datasets reload when it is delivered again or on \`refresh_check_interval\`. Cause: ${cause(error)}. See: ${SNAPSHOTS_DOCS}`,

  deleteFailed: (location: string, error: string): string =>
    `Snapshot location '${location}' handled an S3 event notification but could not delete it from the SQS queue in \`s3_queue_url\`, so it will be delivered again. Cause: ${cause(error)}. Grant \`sqs:DeleteMessage\` on the queue. See: ${SNAPSHOTS_DOCS}`,

  queueUnused: (): string =>
    `\`snapshots.params.s3_queue_url\` is set, but no dataset uses \`refresh_mode: snapshot\`, so the SQS queue is not read. Set \`refresh_mode: snapshot\` on the datasets that load snapshots, or remove \`s3_queue_url\`. See: ${SNAPSHOTS_DOCS}`,
} as const;
