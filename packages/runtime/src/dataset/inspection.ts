/**
 * Turns XState inspection events into plain JSON tagged with the dataset: no actor refs, no engine
 * handles, errors reduced to `{ name, code, message }`. Session ids are prefixed with the dataset
 * name, so the machines of different threads never collide in one inspector.
 */
import type { JsonValue } from '@ferry/core/base';
import { type DatasetSnapshot, datasetStateName, datasetStatus } from '@ferry/core/machine';
import type { InspectionEvent as XStateInspectionEvent } from 'xstate';
import type { InspectionEvent } from '../common/protocol.js';

/** A JSON-safe deep copy: errors become `{ name, code, message }`, functions and handles are dropped. */
export function toPlainJson(value: unknown): JsonValue {
  const seen = new WeakSet<object>();
  const text = JSON.stringify(value, (_key, item: unknown) => {
    if (typeof item === 'bigint') return item.toString();
    if (typeof item === 'function' || typeof item === 'symbol') return undefined;
    if (item instanceof Error) {
      const code = (item as { code?: unknown }).code;
      return { name: item.name, message: item.message, ...(typeof code === 'string' ? { code } : {}) };
    }
    if (item !== null && typeof item === 'object') {
      if (seen.has(item)) return undefined;
      seen.add(item);
      // Actor refs and other live objects expose `send`: reduce them to their id.
      if (typeof (item as { send?: unknown }).send === 'function') {
        return { actor: (item as { sessionId?: string }).sessionId ?? 'actor' };
      }
    }
    return item;
  });
  return text === undefined ? null : (JSON.parse(text) as JsonValue);
}

export function sessionIdFor(dataset: string, sessionId: string): string {
  return `${dataset}:${sessionId}`;
}

/** The plain event for one XState inspection event, or undefined for the ones not worth sending. */
export function toInspectionEvent(
  dataset: string,
  event: XStateInspectionEvent,
  rootSessionId: string,
  now: number,
): InspectionEvent | undefined {
  const sessionId = sessionIdFor(dataset, event.actorRef.sessionId);
  const base = { dataset, sessionId, atMs: now };
  switch (event.type) {
    case '@xstate.event':
      return {
        ...base,
        type: event.type,
        event: toPlainJson(event.event),
        ...(event.sourceRef === undefined
          ? {}
          : { source: sessionIdFor(dataset, event.sourceRef.sessionId) }),
      };
    // A microstep is one transition of a macrostep (eventless ones included): the path a poll takes
    // through its outcome states, which the macrostep's snapshot alone does not show.
    case '@xstate.microstep':
    case '@xstate.snapshot': {
      if (event.actorRef.sessionId !== rootSessionId) return undefined;
      const snapshot = event.snapshot as DatasetSnapshot;
      return {
        ...base,
        type: event.type,
        state: datasetStateName(snapshot),
        value: toPlainJson(snapshot.value),
        status: datasetStatus(snapshot),
        event: toPlainJson(event.event),
      };
    }
    case '@xstate.action':
      return { ...base, type: event.type, action: toPlainJson(event.action) };
    case '@xstate.actor':
      return {
        ...base,
        type: event.type,
        ...(event.actorRef.sessionId === rootSessionId ? { root: true } : {}),
      };
    default:
      return undefined;
  }
}
