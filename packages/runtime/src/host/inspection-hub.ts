/**
 * The host's inspection hub: dataset threads post plain-JSON inspection events, the hub fans them
 * out to every `runtime.inspect()` listener. Building the events costs a thread CPU, so the hub
 * says when the first listener arrives and the last one leaves (`onActiveChange`): the threads
 * build them only while someone inspects.
 */
import { EventEmitter } from 'node:events';
import type { InspectionEvent } from '../common/protocol.js';

export class InspectionHub {
  readonly #emitter = new EventEmitter<{ event: [InspectionEvent] }>();
  readonly #onActiveChange: (active: boolean) => void;

  constructor(onActiveChange: (active: boolean) => void) {
    this.#emitter.setMaxListeners(0);
    this.#onActiveChange = onActiveChange;
  }

  /** Whether anyone inspects. */
  get active(): boolean {
    return this.#emitter.listenerCount('event') > 0;
  }

  publish(event: InspectionEvent): void {
    this.#emitter.emit('event', event);
  }

  /** Adds a listener; the returned function removes it (harmless to call twice). */
  add(listener: (event: InspectionEvent) => void): () => void {
    // A wrapper per call, so the same function added twice is two listeners removed one by one.
    const wrapper = (event: InspectionEvent): void => listener(event);
    const first = !this.active;
    this.#emitter.on('event', wrapper);
    if (first) this.#onActiveChange(true);
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      this.#emitter.off('event', wrapper);
      if (!this.active) this.#onActiveChange(false);
    };
  }
}
