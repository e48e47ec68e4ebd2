/**
 * Planning of one received SQS batch: which messages to delete now, which to leave on the queue, and
 * which locations' `metadata.json` to read, each ONCE however many messages of the batch commit it.
 * Commit messages are neither deleted nor kept by the plan: the coordinator reads each committed
 * location, then settles them with {@link settleCommits} (deleted when every location they commit
 * was read, kept for redelivery otherwise). Pure: the log lines are returned, not written.
 */
import type { LogLevel } from '../log-levels.js';
import type { JsonValue } from '../ports.js';
import { NotificationMessages } from './messages.js';
import { parseNotification } from './parse.js';
import { locationKey, type NotificationLocation, routeMessage } from './route.js';

export interface BatchMessage {
  readonly id: string;
  readonly body: string;
}

export interface PlannedLog {
  readonly level: LogLevel;
  readonly message: string;
  readonly fields: Readonly<Record<string, JsonValue>>;
}

export interface BatchPlan {
  /** Location key (`s3://bucket/prefix/`) → ids of the messages committing it, in batch order. */
  readonly commits: Map<string, string[]>;
  /** Delete now: unparseable bodies, test events, notifications that need no reload. */
  readonly toDelete: string[];
  /** Leave on the queue: messages naming objects outside every location. */
  readonly toKeep: string[];
  readonly logs: PlannedLog[];
}

/** The debug lines of a batch; the warning and the error are Spice's (`NotificationMessages`). */
export const BatchLogMessage = {
  test: 'Deleting an s3:TestEvent message',
  ignore: 'Deleting a notification that needs no reload',
  commit: 'Notification of a new metadata.json',
} as const;

/**
 * `display` is how the messages name the consumer's location, as Spice shows it
 * (`s3://bucket/prefix`, see `locationDisplay`).
 */
export function planBatch(
  messages: readonly BatchMessage[],
  locations: readonly NotificationLocation[],
  display: string,
): BatchPlan {
  const plan: BatchPlan = { commits: new Map(), toDelete: [], toKeep: [], logs: [] };
  for (const message of messages) {
    const decision = routeMessage(parseNotification(message.body), locations);
    const messageId = message.id;
    switch (decision.kind) {
      case 'unparseable':
        plan.toDelete.push(messageId);
        plan.logs.push({
          level: 'warn',
          message: NotificationMessages.dropped(display, decision.reason),
          fields: { messageId, reason: decision.reason },
        });
        break;
      case 'outside':
        plan.toKeep.push(messageId);
        plan.logs.push({
          level: 'error',
          message: NotificationMessages.outside(
            display,
            decision.records[0]?.bucket ?? '',
            decision.records[0]?.key ?? '',
          ),
          fields: {
            messageId,
            objects: decision.records.map((record) => `s3://${record.bucket}/${record.key}`),
          },
        });
        break;
      case 'ignore':
        plan.toDelete.push(messageId);
        plan.logs.push({
          level: 'debug',
          message: decision.reason === 'test' ? BatchLogMessage.test : BatchLogMessage.ignore,
          fields: { messageId },
        });
        break;
      case 'commit': {
        const keys = decision.locations.map(locationKey);
        for (const key of keys) {
          const ids = plan.commits.get(key);
          if (ids === undefined) plan.commits.set(key, [messageId]);
          else ids.push(messageId);
        }
        plan.logs.push({
          level: 'debug',
          message: BatchLogMessage.commit,
          fields: { messageId, locations: keys },
        });
        break;
      }
    }
  }
  return plan;
}

/**
 * After the coordinator has read the committed locations: a commit message is deleted when every
 * location it commits was read successfully, and kept (SQS delivers it again) otherwise. Each id
 * appears once, in first-seen order.
 */
export function settleCommits(
  commits: ReadonlyMap<string, readonly string[]>,
  readSucceeded: ReadonlySet<string>,
): { toDelete: string[]; toKeep: string[] } {
  const failed = new Set<string>();
  const all: string[] = [];
  const seen = new Set<string>();
  for (const [key, ids] of commits) {
    for (const id of ids) {
      if (!seen.has(id)) {
        seen.add(id);
        all.push(id);
      }
      if (!readSucceeded.has(key)) failed.add(id);
    }
  }
  return {
    toDelete: all.filter((id) => !failed.has(id)),
    toKeep: all.filter((id) => failed.has(id)),
  };
}
