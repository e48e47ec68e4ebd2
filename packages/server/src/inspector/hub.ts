/**
 * The inspector hub: one subscription to the runtime's inspection stream and state changes, fanned
 * out to every open inspector page. It keeps what a page needs on (re)connect — each dataset's
 * status and its most recent events — drops the chatter of invoked actors (a promise actor's own
 * `xstate.init` / `xstate.promise.resolve`; their results reach the machine as
 * `xstate.done.actor.*`), and caps payload sizes so a full metadata read is not streamed whole.
 */
import type { DatasetStatus } from '@ferry/core';
import type { DatasetInfo, InspectionEvent, Runtime } from '@ferry/runtime';
import { isServing } from '../dataset-view.js';
import { abridge } from './abridge.js';
import { datasetMachineGraph, type MachineGraph } from './machine-graph.js';

/** One dataset as the page shows it. */
export interface InspectorDataset {
  readonly name: string;
  readonly engine: string | null;
  /** The machine state (`serving`, …), or `starting` / `restarting` / `failed` from the runtime. */
  readonly state: string;
  /** True when queries are answered from a loaded snapshot. */
  readonly ready: boolean;
  /** Why the dataset cannot run (refused config) or why its thread died. */
  readonly error: string | null;
  /** The machine's status (snapshot, ETag, polls, counters); null before its thread reports. */
  readonly status: DatasetStatus | null;
}

/** What a page receives first, and again on every reconnect. */
export interface InspectorSnapshot {
  /** The server's clock, so the page can show "next poll in 4 s" without trusting its own. */
  readonly serverTimeMs: number;
  readonly machine: MachineGraph;
  readonly datasets: readonly InspectorDataset[];
  /** Each dataset's most recent inspection events, oldest first. */
  readonly recent: Readonly<Record<string, readonly InspectionEvent[]>>;
}

export type HubMessage =
  | { readonly kind: 'inspection'; readonly event: InspectionEvent }
  | { readonly kind: 'dataset'; readonly dataset: InspectorDataset };

export interface InspectorHubOptions {
  /** Events kept per dataset for a page that connects later; default 100. */
  readonly recentEvents?: number;
  /** Largest JSON size of an event's `event` / `action` payload before it is abridged; default 2 048. */
  readonly maxPayloadChars?: number;
}

export function inspectorDataset(info: DatasetInfo): InspectorDataset {
  return {
    name: info.name,
    engine: info.engine ?? null,
    state: info.state,
    ready: isServing(info),
    error: info.error ?? null,
    status: info.status ?? null,
  };
}

export class InspectorHub {
  readonly #runtime: Runtime;
  readonly #recentEvents: number;
  readonly #maxPayloadChars: number;
  readonly #roots = new Map<string, string>();
  readonly #recent = new Map<string, InspectionEvent[]>();
  readonly #listeners = new Set<(message: HubMessage) => void>();
  readonly #unsubscribe: (() => void)[];

  constructor(runtime: Runtime, options: InspectorHubOptions = {}) {
    this.#runtime = runtime;
    this.#recentEvents = options.recentEvents ?? 100;
    this.#maxPayloadChars = options.maxPayloadChars ?? 2_048;
    this.#unsubscribe = [
      runtime.inspect((event) => this.#onInspection(event)),
      runtime.on('state', (event) => {
        let info: DatasetInfo;
        try {
          info = runtime.status(event.dataset);
        } catch {
          return;
        }
        this.#publish({ kind: 'dataset', dataset: inspectorDataset(info) });
      }),
    ];
  }

  snapshot(): InspectorSnapshot {
    return {
      serverTimeMs: Date.now(),
      machine: datasetMachineGraph(),
      datasets: this.#runtime.datasets().map(inspectorDataset),
      recent: Object.fromEntries([...this.#recent].map(([name, events]) => [name, [...events]])),
    };
  }

  /** Calls `listener` with every message from now on; returns the unsubscribe function. */
  subscribe(listener: (message: HubMessage) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Detaches from the runtime; open subscriptions receive nothing more. */
  close(): void {
    for (const off of this.#unsubscribe) off();
    this.#listeners.clear();
  }

  #onInspection(event: InspectionEvent): void {
    if ((event.type === '@xstate.actor' && event.root === true) || event.type === '@xstate.snapshot') {
      this.#roots.set(event.dataset, event.sessionId);
    }
    const root = this.#roots.get(event.dataset);
    // Until the root is known (a hub created after the machine started) everything passes.
    if (root !== undefined && event.sessionId !== root) return;
    const compact = this.#compact(event);
    let recent = this.#recent.get(event.dataset);
    if (recent === undefined) {
      recent = [];
      this.#recent.set(event.dataset, recent);
    }
    recent.push(compact);
    if (recent.length > this.#recentEvents) recent.splice(0, recent.length - this.#recentEvents);
    this.#publish({ kind: 'inspection', event: compact });
  }

  #compact(event: InspectionEvent): InspectionEvent {
    const budget = this.#maxPayloadChars;
    return {
      ...event,
      ...(event.event === undefined ? {} : { event: abridge(event.event, budget) }),
      ...(event.action === undefined ? {} : { action: abridge(event.action, budget) }),
    };
  }

  #publish(message: HubMessage): void {
    for (const listener of [...this.#listeners]) listener(message);
  }
}
