/**
 * Routing of one parsed notification against the configured S3 locations. A writer makes a snapshot
 * current by rewriting `<location>metadata.json`, so only an `ObjectCreated:*` event for exactly that
 * key asks for a reload; everything else under a location is noise to delete, and anything outside
 * every location is a misconfiguration to surface (the message stays on the queue). Pure.
 */
import type { NotificationRecord, ParsedNotification } from './parse.js';

/** An S3 location as the router sees it: a bucket and a key prefix (`''` or ending in `/`). */
export interface NotificationLocation {
  readonly bucket: string;
  readonly prefix: string;
}

const METADATA_FILE = 'metadata.json';

/**
 * The decision for one message. Precedence, strongest first:
 * 1. `unparseable`: the body is not a notification (the runtime warns and deletes it);
 * 2. `ignore` with reason `test`: an `s3:TestEvent` (deleted);
 * 3. `outside`: at least one record names an object outside every location: the whole message
 *    stays on the queue, even if other records commit (the runtime logs an error; SQS delivers it
 *    again after each visibility timeout until someone fixes the configuration or the queue);
 * 4. `commit`: at least one record is an `ObjectCreated:*` of a location's own `metadata.json`:
 *    the distinct locations committed, in the order of the `locations` argument;
 * 5. `ignore` with reason `no-commit`: every record is inside a location but none commits
 *    (snapshot files, leases, removals, a nested `metadata.json`, other event types).
 */
export type RouteDecision =
  | { readonly kind: 'unparseable'; readonly reason: string }
  | { readonly kind: 'outside'; readonly records: readonly NotificationRecord[] }
  | { readonly kind: 'commit'; readonly locations: readonly NotificationLocation[] }
  | { readonly kind: 'ignore'; readonly reason: 'test' | 'no-commit' };

/** `snapshots` → `snapshots/`, `/a/b/` → `a/b/`, `''` and `/` → `''`. */
function normalizePrefix(prefix: string): string {
  const trimmed = prefix.replace(/^\/+/, '');
  return trimmed === '' || trimmed.endsWith('/') ? trimmed : `${trimmed}/`;
}

/** The stable key of a location, `s3://bucket/prefix/`, used to group commits in a batch. */
export function locationKey(location: NotificationLocation): string {
  return `s3://${location.bucket}/${normalizePrefix(location.prefix)}`;
}

function contains(location: NotificationLocation, record: NotificationRecord): boolean {
  return record.bucket === location.bucket && record.key.startsWith(normalizePrefix(location.prefix));
}

/** Whether `record` is an `ObjectCreated:*` of exactly the location's own `metadata.json`. */
export function commitsLocation(location: NotificationLocation, record: NotificationRecord): boolean {
  return (
    record.kind === 'created' &&
    record.bucket === location.bucket &&
    record.key === `${normalizePrefix(location.prefix)}${METADATA_FILE}`
  );
}

export function routeMessage(
  parsed: ParsedNotification,
  locations: readonly NotificationLocation[],
): RouteDecision {
  if (parsed.kind === 'unparseable') return parsed;
  if (parsed.kind === 'test') return { kind: 'ignore', reason: 'test' };
  const outside = parsed.records.filter((record) => !locations.some((l) => contains(l, record)));
  if (outside.length > 0) return { kind: 'outside', records: outside };
  const committed = locations.filter((location, index) => {
    const key = locationKey(location);
    const firstWithKey = locations.findIndex((other) => locationKey(other) === key);
    return firstWithKey === index && parsed.records.some((record) => commitsLocation(location, record));
  });
  if (committed.length > 0) return { kind: 'commit', locations: committed };
  return { kind: 'ignore', reason: 'no-commit' };
}
