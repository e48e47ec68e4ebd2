/**
 * The host's view of every configured dataset: its configuration (or why it was refused), the
 * status its thread last reported, the channel to that thread, and readiness. `ready()` waits on
 * state changes (no polling); a dataset serves once its machine has a snapshot loaded and its
 * thread is up.
 */
import { EventEmitter } from 'node:events';
import type { MessagePort } from 'node:worker_threads';
import {
  type ConfigIssue,
  type DatasetConfig,
  type DatasetStatus,
  datasetStaleness,
  freshnessClock,
} from '@ferry/core/base';
import type { DatasetInfo, StateEvent } from '../api.js';
import type { HostToDataset } from '../common/protocol.js';
import type { RpcClient } from '../common/rpc.js';
import type { LiveStatus } from '../common/shared-slots.js';
import { DatasetFailedError, ReadyTimeoutError, RuntimeClosedError, UnknownDatasetError } from '../errors.js';

export interface DatasetEntry {
  readonly name: string;
  readonly config: DatasetConfig | undefined;
  port: MessagePort | undefined;
  rpc: RpcClient<HostToDataset> | undefined;
  status: DatasetStatus | undefined;
  state: DatasetInfo['state'];
  error: string | undefined;
  /** The dataset's slot in the `LiveStatus` (its place in the spicepod's valid datasets). */
  readonly liveSlot: number | undefined;
  /** The start number of the thread that posts its status now. */
  incarnation: number;
  /** While its writer's signed heartbeat cannot vouch for what it serves: since when (`freshness`). */
  heartbeatStaleSinceMs?: number | undefined;
  /** The status of the snapshot served before this one, as it was when that one was replaced. */
  replaced?: DatasetStatus | undefined;
}

export class DatasetRegistry {
  readonly #entries = new Map<string, DatasetEntry>();
  /** `changed` after every state or status change, and when the runtime closes. */
  readonly #changes = new EventEmitter<{ changed: [] }>();
  readonly #onState: (event: StateEvent) => void;
  #closed = false;
  /** Every dataset's state, made at most once per change (see {@link DatasetRegistry.states}). */
  #states: ReadonlyMap<string, DatasetInfo['state']> | undefined;

  readonly #live: LiveStatus | undefined;

  constructor(
    datasets: readonly DatasetConfig[],
    errors: readonly ConfigIssue[],
    onState: (event: StateEvent) => void,
    live?: LiveStatus,
  ) {
    this.#changes.setMaxListeners(0);
    this.#onState = onState;
    this.#live = live;
    for (const [index, dataset] of datasets.entries()) this.#add(dataset.name, dataset, undefined, index);
    for (const issue of errors) {
      if (issue.dataset !== undefined && !this.#entries.has(issue.dataset)) {
        this.#add(issue.dataset, undefined, issue.message, undefined);
      }
    }
  }

  #add(
    name: string,
    config: DatasetConfig | undefined,
    error: string | undefined,
    liveSlot: number | undefined,
  ): void {
    this.#entries.set(name, {
      name,
      config,
      port: undefined,
      rpc: undefined,
      status: undefined,
      state: config === undefined ? 'failed' : 'starting',
      error,
      liveSlot,
      incarnation: 0,
    });
  }

  /**
   * The status the thread posted, with the checks the coordinator made since while it was parked
   * (written in its live slot, not posted): their poll count, last poll and next due time; and, while its writer's
   * heartbeat cannot vouch for what it serves, since when (`staleSinceMs`, read by staleness).
   */
  status(entry: DatasetEntry): DatasetStatus | undefined {
    const posted = entry.status;
    const status =
      posted === undefined || entry.heartbeatStaleSinceMs === undefined
        ? posted
        : { ...posted, staleSinceMs: entry.heartbeatStaleSinceMs };
    if (status === undefined || entry.liveSlot === undefined || this.#live === undefined) return status;
    const live = this.#live.read(entry.liveSlot);
    if (live === undefined || live.incarnation !== entry.incarnation || live.polls <= status.counters.polls) {
      return status;
    }
    return {
      ...status,
      lastPollAtMs: live.lastPollAtMs,
      lastPollResult: 'unchanged',
      nextPollDueMs: live.nextPollDueMs,
      freshAtMs: live.freshAtMs ?? status.freshAtMs,
      counters: { ...status.counters, polls: live.polls },
    };
  }

  /** Every dataset, in spicepod order. */
  entries(): IterableIterator<DatasetEntry> {
    return this.#entries.values();
  }

  names(): string[] {
    return [...this.#entries.keys()];
  }

  find(name: string): DatasetEntry | undefined {
    return this.#entries.get(name);
  }

  /** The entry; throws `ERR_UNKNOWN_DATASET` for a name not configured. */
  get(name: string): DatasetEntry {
    const entry = this.#entries.get(name);
    if (entry === undefined) throw new UnknownDatasetError(name, this.names());
    return entry;
  }

  /** The error a failed dataset answers with (its reason, or its refused configuration). */
  failure(entry: DatasetEntry): DatasetFailedError {
    return new DatasetFailedError(entry.name, entry.error ?? 'its configuration was refused');
  }

  info(entry: DatasetEntry): DatasetInfo {
    const status = this.status(entry);
    const nowMs = freshnessClock();
    const staleness =
      status === undefined || !this.serving(entry) ? undefined : datasetStaleness(status, nowMs);
    const replaced = entry.replaced;
    const replacedId = replaced?.servingSnapshotId;
    return {
      name: entry.name,
      engine: entry.config?.engine,
      state: entry.state,
      status,
      error: entry.error,
      ...(entry.config === undefined ? {} : { from: entry.config.from }),
      stalenessMs: staleness?.stalenessMs ?? null,
      newerSnapshotId: staleness?.newerSnapshotId ?? null,
      maxStalenessMs: entry.config?.maxStalenessMs ?? null,
      ...(replaced === undefined || replacedId == null
        ? {}
        : {
            replaced: {
              snapshotId: replacedId,
              stalenessMs: datasetStaleness(replaced, nowMs).stalenessMs ?? 0,
            },
          }),
    };
  }

  /** Calls `listener` after every state or status change (and at close); returns the unsubscribe. */
  onChange(listener: () => void): () => void {
    this.#changes.on('changed', listener);
    return () => this.#changes.off('changed', listener);
  }

  /** Whether queries of the dataset can be answered now. */
  serving(entry: DatasetEntry): boolean {
    return entry.status?.servingSnapshotId != null && entry.state !== 'restarting' && entry.rpc !== undefined;
  }

  /** Records a state (and the status behind it); emits `state` when the state moved. */
  setState(entry: DatasetEntry, state: DatasetInfo['state'], status: DatasetStatus | undefined): void {
    const moved = entry.state !== state;
    if (moved) this.#states = undefined;
    // A swap: what the replaced snapshot was last known as (with the checks made while parked).
    const before = entry.status === undefined ? undefined : this.status(entry);
    const served = before?.servingSnapshotId;
    if (served != null && status?.servingSnapshotId != null && status.servingSnapshotId !== served) {
      entry.replaced = before;
    }
    entry.state = state;
    entry.status = status;
    if (moved) this.#onState({ dataset: entry.name, state, status });
    this.#changes.emit('changed');
  }

  /**
   * Every dataset's state now, as a map that stays the same until a state changes (so taking it
   * per query costs nothing): what a query that later fails as not ready reports, the state it met.
   */
  states(): ReadonlyMap<string, DatasetInfo['state']> {
    this.#states ??= new Map([...this.#entries.values()].map((entry) => [entry.name, entry.state]));
    return this.#states;
  }

  /** Wakes every `ready()` waiter, which then rejects with `ERR_RUNTIME_CLOSED`. */
  close(): void {
    this.#closed = true;
    this.#changes.emit('changed');
  }

  /** Resolves when the dataset (or every dataset) serves; rejects after `timeoutMs`. */
  ready(name: string | undefined, timeoutMs: number): Promise<void> {
    if (this.#closed) return Promise.reject(new RuntimeClosedError());
    let entries: DatasetEntry[];
    try {
      entries = name === undefined ? [...this.#entries.values()] : [this.get(name)];
    } catch (error) {
      return Promise.reject(error);
    }
    const failed = entries.find((entry) => entry.state === 'failed');
    if (failed !== undefined) return Promise.reject(this.failure(failed));
    return new Promise<void>((resolve, reject) => {
      const finish = (): void => {
        clearTimeout(timer);
        this.#changes.off('changed', check);
      };
      const check = (): void => {
        if (this.#closed) {
          finish();
          reject(new RuntimeClosedError());
        } else if (entries.every((entry) => this.serving(entry))) {
          finish();
          resolve();
        }
      };
      const timer = setTimeout(() => {
        finish();
        const pending = entries.filter((entry) => !this.serving(entry)).map((entry) => entry.name);
        reject(new ReadyTimeoutError(pending, timeoutMs));
      }, timeoutMs);
      this.#changes.on('changed', check);
      check();
    });
  }
}
