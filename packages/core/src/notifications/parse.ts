/**
 * Parsing of SQS message bodies that carry S3 object notifications. A body comes in one of four
 * shapes (see the snapshot-store spec, "Notifications"): an S3 event (`Records[]`), the same wrapped
 * in an SNS envelope, an EventBridge S3 event, or the `s3:TestEvent` S3 sends when a notification
 * configuration is saved. Anything else is reported as unparseable with a short reason, never thrown.
 * Pure: no I/O, no `node:*` imports.
 */

/** What happened to the object, as far as Ferry cares. */
export type NotificationRecordKind = 'created' | 'removed' | 'other';

/** One object event, with the object key already decoded to the key S3 stores. */
export interface NotificationRecord {
  readonly bucket: string;
  /** The real object key (URL-decoding of S3 event keys already applied). */
  readonly key: string;
  /** As sent: `ObjectCreated:Put` for S3 events, the `detail-type` (`Object Created`) for EventBridge. */
  readonly eventName: string;
  readonly kind: NotificationRecordKind;
  /** The object's ETag as the event names it (`s3.object.eTag`, `detail.object.etag`), when it does. */
  readonly eTag?: string;
}

export type ParsedNotification =
  | { readonly kind: 'records'; readonly records: readonly NotificationRecord[] }
  | { readonly kind: 'test' }
  | { readonly kind: 'unparseable'; readonly reason: string };

type JsonObject = { readonly [key: string]: unknown };

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function unparseable(reason: string): ParsedNotification {
  return { kind: 'unparseable', reason };
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

/**
 * Decodes an S3 event key: S3 event notifications URL-encode keys the way HTML forms do
 * (`application/x-www-form-urlencoded`), so `+` is a space and a real `+` arrives as `%2B`.
 * Returns undefined for a malformed escape (`%zz`, a lone `%`, invalid UTF-8).
 */
export function decodeS3EventKey(encoded: string): string | undefined {
  try {
    return decodeURIComponent(encoded.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

/** `ObjectCreated:Put` → created; `ObjectRemoved:*` and lifecycle expirations → removed. */
function kindOfS3EventName(eventName: string): NotificationRecordKind {
  const name = eventName.startsWith('s3:') ? eventName.slice(3) : eventName;
  if (name.startsWith('ObjectCreated:')) return 'created';
  if (name.startsWith('ObjectRemoved:') || name.startsWith('LifecycleExpiration:')) return 'removed';
  return 'other';
}

function kindOfDetailType(detailType: string): NotificationRecordKind {
  if (detailType === 'Object Created') return 'created';
  if (detailType === 'Object Deleted') return 'removed';
  return 'other';
}

function parseS3Records(records: readonly unknown[]): ParsedNotification {
  if (records.length === 0) return unparseable('the Records array is empty');
  const parsed: NotificationRecord[] = [];
  for (const [index, record] of records.entries()) {
    if (!isObject(record)) return unparseable(`record ${index} is not an object`);
    if (record.eventSource !== 'aws:s3') return unparseable(`record ${index} is not an S3 event`);
    const eventName = record.eventName;
    if (typeof eventName !== 'string' || eventName === '') {
      return unparseable(`record ${index} has no eventName`);
    }
    const s3 = record.s3;
    const bucket = isObject(s3) && isObject(s3.bucket) ? s3.bucket.name : undefined;
    if (typeof bucket !== 'string' || bucket === '') {
      return unparseable(`record ${index} has no s3.bucket.name`);
    }
    const encodedKey = isObject(s3) && isObject(s3.object) ? s3.object.key : undefined;
    if (typeof encodedKey !== 'string' || encodedKey === '') {
      return unparseable(`record ${index} has no s3.object.key`);
    }
    const key = decodeS3EventKey(encodedKey);
    if (key === undefined) return unparseable(`record ${index} has a malformed URL-encoded s3.object.key`);
    const eTag = isObject(s3) && isObject(s3.object) ? s3.object.eTag : undefined;
    parsed.push({
      bucket,
      key,
      eventName,
      kind: kindOfS3EventName(eventName),
      ...(typeof eTag === 'string' && eTag !== '' ? { eTag } : {}),
    });
  }
  return { kind: 'records', records: parsed };
}

/**
 * EventBridge S3 events carry the key as S3 stores it: the EventBridge event structure in the S3
 * user guide documents no URL-encoding (unlike the S3 event structure, which does), so it is used
 * as is.
 */
function parseEventBridge(event: JsonObject): ParsedNotification {
  if (event.source !== 'aws.s3') return unparseable('the EventBridge event is not from aws.s3');
  const detailType = event['detail-type'];
  if (typeof detailType !== 'string' || detailType === '') {
    return unparseable('the EventBridge event has no detail-type');
  }
  const detail = event.detail;
  const bucket = isObject(detail) && isObject(detail.bucket) ? detail.bucket.name : undefined;
  if (typeof bucket !== 'string' || bucket === '') {
    return unparseable('the EventBridge event has no detail.bucket.name');
  }
  const key = isObject(detail) && isObject(detail.object) ? detail.object.key : undefined;
  if (typeof key !== 'string' || key === '') {
    return unparseable('the EventBridge event has no detail.object.key');
  }
  const eTag = isObject(detail) && isObject(detail.object) ? detail.object.etag : undefined;
  return {
    kind: 'records',
    records: [
      {
        bucket,
        key,
        eventName: detailType,
        kind: kindOfDetailType(detailType),
        ...(typeof eTag === 'string' && eTag !== '' ? { eTag } : {}),
      },
    ],
  };
}

/** Everything but the SNS envelope, which may wrap any of these. */
function parseEvent(value: unknown, where: string): ParsedNotification {
  if (!isObject(value)) return unparseable(`${where} is not a JSON object`);
  // As Spice's parser: S3 names it in `Event`; a top-level `eventName` of it counts too.
  if (value.Event === 's3:TestEvent' || value.eventName === 's3:TestEvent') return { kind: 'test' };
  if (Array.isArray(value.Records)) return parseS3Records(value.Records);
  if ('detail-type' in value || 'source' in value) return parseEventBridge(value);
  return unparseable(`${where} is not an S3 event, an EventBridge S3 event or an s3:TestEvent`);
}

/** Parses one SQS message body. Never throws. */
export function parseNotification(body: string): ParsedNotification {
  const outer = parseJson(body);
  if (!outer.ok) return unparseable('the body is not JSON');
  const value = outer.value;
  if (isObject(value) && value.Type === 'Notification' && 'Message' in value) {
    if (typeof value.Message !== 'string') return unparseable('the SNS Message is not a string');
    const inner = parseJson(value.Message);
    if (!inner.ok) return unparseable('the SNS Message is not JSON');
    return parseEvent(inner.value, 'the SNS Message');
  }
  return parseEvent(value, 'the body');
}
