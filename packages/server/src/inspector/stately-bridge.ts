/**
 * The Stately inspector bridge: relays the runtime's inspection events to a WebSocket endpoint
 * that speaks `@statelyai/inspect`'s protocol (its `createInspectorServer()` relay, which shows
 * them in the Stately inspector). Messages are built by the package's own `createInspector`, so
 * they have exactly its `@xstate.actor` / `@xstate.event` / `@xstate.snapshot` shape; the machine
 * definition travels with each dataset's actor so the inspector can draw it.
 *
 * Session ids are the runtime's, `<dataset>:<sessionId>`, so the machines of different dataset
 * threads never collide. A bridge started after the machines (or a receiver that restarts) still
 * gets every dataset's actor: it is announced on the first snapshot seen, and again, with its last
 * snapshot, on every (re)connection.
 */
import type { DatasetStatus, JsonValue } from '@ferry/core/base';
import { datasetMachine } from '@ferry/core/machine';
import type { InspectionEvent, Logger, Runtime } from '@ferry/runtime';
import { createInspector } from '@statelyai/inspect';
import { abridge } from './abridge.js';
import { InvalidInspectorUrlError } from './errors.js';
import { WebSocketTransport } from './websocket-transport.js';

export interface StatelyBridgeOptions {
  /** The receiving end, e.g. `ws://127.0.0.1:8080` (`@statelyai/inspect/server`'s default port). */
  readonly url: string;
  /**
   * Relay only this dataset's machine (only its thread builds inspection events); default: every
   * machine. With hundreds of datasets, pick the one to look at.
   */
  readonly dataset?: string;
  /** Where connection problems are reported (once per outage); default: nowhere. */
  readonly logger?: Logger;
  /** Messages kept while the receiver is unreachable (oldest dropped first); default 1 000. */
  readonly maxQueuedMessages?: number;
  /**
   * Bytes a connected receiver may leave unread; default 8 MiB. One further behind is disconnected
   * (and reconnected, every machine announced again) rather than buffered for without bound.
   */
  readonly maxBufferedBytes?: number;
  /** Largest JSON size of one event payload before it is abridged; default 65 536. */
  readonly maxPayloadChars?: number;
  /** Delays before reconnect attempts; the last repeats; default 500 ms … 10 s. */
  readonly reconnectDelaysMs?: readonly number[];
}

export interface StatelyBridge {
  readonly url: string;
  /** True while the WebSocket to the receiver is open. */
  connected(): boolean;
  /** Stops relaying and closes the connection; the runtime is untouched. Harmless to call twice. */
  stop(): Promise<void>;
}

type StatelyInspector = ReturnType<typeof createInspector>;
type ActorRefLike = Exclude<Parameters<StatelyInspector['actor']>[0], string>;
type InspectedSnapshot = NonNullable<Parameters<StatelyInspector['actor']>[1]>;
type EventObject = { readonly type: string; readonly [key: string]: unknown };

interface RootActor {
  readonly sessionId: string;
  readonly ref: ActorRefLike;
  snapshot: InspectedSnapshot;
}

/** Children remembered per bridge (their ids only grow: one per poll); older ones are forgotten. */
const MAX_CHILDREN = 512;

function eventObject(value: JsonValue | undefined): EventObject {
  if (
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    typeof value.type === 'string'
  ) {
    return value as EventObject;
  }
  return { type: 'unknown' };
}

/**
 * An object with what `createInspector().actor()` reads from an actor: its id and session, and
 * either the machine definition (a dataset's machine) or its parent (an invoked actor).
 */
function actorRef(
  sessionId: string,
  id: string,
  of: { readonly machine: () => unknown } | { readonly parent: ActorRefLike },
): ActorRefLike {
  const ref = {
    sessionId,
    id,
    send: () => undefined,
    ...('machine' in of
      ? { getSnapshot: of.machine, logic: { config: datasetMachine.config } }
      : { getSnapshot: () => undefined, _parent: of.parent }),
  };
  return ref as ActorRefLike;
}

/** Turns the runtime's plain inspection events into `@statelyai/inspect` messages. */
export class StatelyRelay {
  readonly #inspector: StatelyInspector;
  readonly #maxPayloadChars: number;
  readonly #roots = new Map<string, RootActor>();
  readonly #children = new Set<string>();

  constructor(inspector: StatelyInspector, options: { readonly maxPayloadChars?: number } = {}) {
    this.#inspector = inspector;
    this.#maxPayloadChars = options.maxPayloadChars ?? 65_536;
  }

  forward(event: InspectionEvent): void {
    switch (event.type) {
      case '@xstate.actor':
        if (event.root === true) this.#registerRoot(event.dataset, event.sessionId, { status: 'active' });
        else this.#registerChild(event.dataset, event.sessionId);
        break;
      // Each microstep goes as a snapshot too, so the inspector shows the outcome states a poll
      // passes through (eventless transitions never rest in a macrostep's snapshot).
      case '@xstate.microstep':
      case '@xstate.snapshot': {
        const snapshot = this.#snapshotOf(event);
        const root = this.#roots.get(event.dataset);
        if (root === undefined || root.sessionId !== event.sessionId) {
          this.#registerRoot(event.dataset, event.sessionId, snapshot);
        } else {
          root.snapshot = snapshot;
        }
        this.#inspector.snapshot(event.sessionId, snapshot, { event: this.#payload(event.event) });
        break;
      }
      case '@xstate.event': {
        const root = this.#roots.get(event.dataset);
        if (root === undefined) {
          // Met late: an event nobody sent (a command, the machine's own start) is to the machine;
          // invoked actors always receive theirs from an actor. Until the machine is known, events
          // sent by actors cannot be placed, so they are dropped.
          if (event.source !== undefined) break;
          this.#registerRoot(event.dataset, event.sessionId, { status: 'active' });
        } else if (root.sessionId !== event.sessionId) {
          this.#registerChild(event.dataset, event.sessionId);
        }
        this.#inspector.event(
          event.sessionId,
          this.#payload(event.event),
          event.source === undefined ? undefined : { source: event.source },
        );
        break;
      }
      default:
        // `@xstate.action` has no place in the Stately protocol.
        break;
    }
  }

  /** Sends every dataset's actor again with its last snapshot (for a receiver that just connected). */
  announce(): void {
    for (const root of this.#roots.values()) this.#inspector.actor(root.ref, root.snapshot);
  }

  #registerRoot(dataset: string, sessionId: string, snapshot: InspectedSnapshot): void {
    const root: RootActor = {
      sessionId,
      snapshot,
      ref: actorRef(sessionId, dataset, { machine: () => root.snapshot }),
    };
    this.#roots.set(dataset, root);
    this.#inspector.actor(root.ref, snapshot);
  }

  /** Announces an invoked actor of a known machine (one of an unknown machine cannot be placed). */
  #registerChild(dataset: string, sessionId: string): void {
    const parent = this.#roots.get(dataset)?.ref;
    if (parent === undefined || this.#children.has(sessionId)) return;
    this.#children.add(sessionId);
    if (this.#children.size > MAX_CHILDREN) {
      const oldest = this.#children.values().next().value;
      if (oldest !== undefined) this.#children.delete(oldest);
    }
    this.#inspector.actor(actorRef(sessionId, sessionId, { parent }), { status: 'active' });
  }

  #snapshotOf(event: InspectionEvent): InspectedSnapshot {
    const status: DatasetStatus | undefined = event.status;
    return {
      status: event.state === 'stopped' ? 'done' : 'active',
      value: event.value ?? event.state ?? null,
      context: status ?? {},
    };
  }

  #payload(value: JsonValue | undefined): EventObject {
    return eventObject(value === undefined ? undefined : abridge(value, this.#maxPayloadChars));
  }
}

/**
 * Starts relaying `runtime`'s inspection events (every machine's, or `options.dataset`'s) to the
 * Stately inspector at `options.url`; throws `ERR_UNKNOWN_DATASET` for a dataset not configured.
 */
export function startStatelyBridge(runtime: Runtime, options: StatelyBridgeOptions): StatelyBridge {
  let parsed: URL;
  try {
    parsed = new URL(options.url);
  } catch (error) {
    throw new InvalidInspectorUrlError(options.url, { cause: error });
  }
  if (parsed.protocol !== 'ws:' && parsed.protocol !== 'wss:')
    throw new InvalidInspectorUrlError(options.url);
  // An unknown dataset throws here, before anything connects.
  if (options.dataset !== undefined) runtime.status(options.dataset);
  const logger = options.logger;
  // The transport needs the relay (to re-announce on connect) and the relay needs the inspector
  // built on the transport: the relay is filled in right after.
  let relay: StatelyRelay | undefined;
  let outage = false;
  const transport = new WebSocketTransport({
    url: options.url,
    ...(options.maxQueuedMessages === undefined ? {} : { maxQueued: options.maxQueuedMessages }),
    ...(options.maxBufferedBytes === undefined ? {} : { maxBufferedBytes: options.maxBufferedBytes }),
    ...(options.reconnectDelaysMs === undefined ? {} : { reconnectDelaysMs: options.reconnectDelaysMs }),
    onOpen: () => {
      outage = false;
      logger?.info(
        { component: 'inspector', url: options.url },
        `Connected to the Stately inspector at ${options.url}`,
      );
      relay?.announce();
    },
    onDisconnect: (reason, wasOpen) => {
      if (outage && !wasOpen) return;
      outage = true;
      logger?.warn(
        { component: 'inspector', url: options.url, reason },
        `The Stately inspector at ${options.url} is unreachable (${reason}); retrying in the background`,
      );
    },
  });
  const inspector = createInspector(transport, { autoStart: false, serializationDepthLimit: 64 });
  const active = new StatelyRelay(inspector, {
    ...(options.maxPayloadChars === undefined ? {} : { maxPayloadChars: options.maxPayloadChars }),
  });
  relay = active;
  const unsubscribe = runtime.inspect(
    (event) => active.forward(event),
    options.dataset === undefined ? {} : { dataset: options.dataset },
  );
  inspector.start();
  let stopping: Promise<void> | undefined;
  return {
    url: options.url,
    connected: () => transport.connected,
    stop() {
      stopping ??= (async () => {
        unsubscribe();
        await transport.stop();
      })();
      return stopping;
    },
  };
}
