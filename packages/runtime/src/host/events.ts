/**
 * The runtime's events on Node's own `EventEmitter`, typed by {@link RuntimeEvents}: `swap`,
 * `poll`, `error`, `state` and `notification`, each with one payload. Node treats `error` specially
 * (emitting it with no listener throws), so {@link RuntimeEventEmitter.publish} skips events
 * nobody listens to.
 */
import { EventEmitter } from 'node:events';
import type { RuntimeEvents } from '../api.js';

/** Node's event map form: each event's listener arguments. */
export type RuntimeEventArgs = { [K in keyof RuntimeEvents]: [payload: RuntimeEvents[K]] };

export class RuntimeEventEmitter extends EventEmitter<RuntimeEventArgs> {
  readonly #onListeners = new Map<keyof RuntimeEvents, () => void>();

  constructor() {
    super();
    // Every waiter (`ready`, a test's `nextEvent`) is a listener: there is no leak to warn about.
    this.setMaxListeners(0);
  }

  /** Calls `changed` whenever `event` gains its first listener or loses its last one. */
  onListeners(event: keyof RuntimeEvents, changed: () => void): void {
    this.#onListeners.set(event, changed);
  }

  /** Emits `payload` to the listeners of `event`, if any (so `error` never throws). */
  publish<K extends keyof RuntimeEvents>(event: K, payload: RuntimeEvents[K]): void {
    // Node's typings resolve listener types only for a concrete event name; K is generic here.
    if (this.listenerCount(event) > 0) (this as EventEmitter).emit(event, payload);
  }

  /** Adds `listener`; the returned function removes it. */
  subscribe<K extends keyof RuntimeEvents>(
    event: K,
    listener: (payload: RuntimeEvents[K]) => void,
  ): () => void {
    const untyped = this as EventEmitter;
    untyped.on(event, listener);
    if (untyped.listenerCount(event) === 1) this.#onListeners.get(event)?.();
    return () => {
      untyped.off(event, listener);
      if (untyped.listenerCount(event) === 0) this.#onListeners.get(event)?.();
    };
  }
}
