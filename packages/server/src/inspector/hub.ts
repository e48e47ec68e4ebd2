/**
 * The inspector hub: what the page shows, kept for any number of datasets at the cost of the
 * runtime's own events.
 *
 * - The overview: one {@link OverviewRow} per dataset and the header counts. A row is rebuilt only
 *   for a dataset an event named (or a command went to), and from every dataset's status every
 *   fourth update (a status can change without an event), and only where that status is another
 *   object than the one the row was built from.
 *   Changes are sent batched, once per `updateIntervalMs` (default 500 ms) whatever the poll rate:
 *   every overview listener gets the same update (serialised once).
 * - Per dataset, always: its state history (from `state` events) and its activity (`swap` and
 *   `error` events; checks while it is followed), a few dozen entries each. The hub never listens
 *   for `poll` events: with nobody listening, a serving dataset's unchanged checks are made by the
 *   coordinator and its thread sleeps; only a followed dataset (inspected) checks for itself.
 * - For a followed dataset (a detail view is open): its machine's inspection events, from
 *   `runtime.inspect(listener, { dataset })`, so only that thread builds them. Invoked actors'
 *   own chatter is dropped and large payloads are abridged. A dataset stays followed for
 *   `followLingerMs` after its last viewer leaves, so going back to it keeps its log.
 *
 * Nothing here holds more than a bounded amount per dataset, and nothing is sent to a page but
 * through its listener: the stream decides what a slow page gets (see `stream.ts`).
 */
import { type DatasetStatus, redactSecrets } from '@ferry/core/base';
import type { DatasetInfo, InspectionEvent, Runtime } from '@ferry/runtime';
import { abridge } from './abridge.js';
import { datasetMachineGraph, type MachineGraph } from './machine-graph.js';
import { type OverviewCounts, type OverviewRow, overviewCounts, overviewRow, sameRow } from './overview.js';

/**
 * Every history, activity and inspection entry carries `seq`, increasing across the hub: a page
 * that got an entry in a snapshot skips it when an update brings it again.
 */
interface Sequenced {
  readonly seq: number;
}

/** A top-level state the dataset entered, and when (the host's clock). */
export interface HistoryEntry extends Sequenced {
  readonly state: string;
  readonly atMs: number;
}

/** A check of a followed dataset (from its status), or what the runtime's `swap` and `error` events said. */
export type ActivityEntry = Sequenced &
  (
    | {
        readonly kind: 'poll';
        readonly atMs: number;
        readonly result: string;
        /** The store's current snapshot id as known after the check (a 304 keeps the last read's). */
        readonly currentSnapshotId: number | null;
      }
    | { readonly kind: 'swap'; readonly atMs: number; readonly from: number | null; readonly to: number }
    | {
        readonly kind: 'error';
        readonly atMs: number;
        readonly code: string;
        readonly message: string;
        readonly snapshotId: number | null;
      }
  );

/** An inspection event of a followed machine, numbered. */
export type InspectorEvent = InspectionEvent & Sequenced;

/** What an overview page starts from (and resyncs to). */
export interface OverviewSnapshot {
  /** The server's clock, so a page shows "next poll in 4 s" without trusting its own. */
  readonly serverTimeMs: number;
  readonly counts: OverviewCounts;
  /** Every dataset, in spicepod order. */
  readonly rows: readonly OverviewRow[];
}

/** The rows that changed since the last update, with the counts after them. */
export interface OverviewUpdate {
  readonly serverTimeMs: number;
  readonly counts: OverviewCounts;
  readonly rows: readonly OverviewRow[];
}

/** What a detail view of one dataset starts from (and resyncs to). */
export interface DetailSnapshot {
  readonly serverTimeMs: number;
  readonly counts: OverviewCounts;
  readonly machine: MachineGraph;
  readonly row: OverviewRow;
  /** The machine's full status (ETag, schema id, mode, counters); null before its thread reports. */
  readonly status: DatasetStatus | null;
  readonly history: readonly HistoryEntry[];
  readonly activity: readonly ActivityEntry[];
  /** The machine's recent inspection events (since the dataset was followed), oldest first. */
  readonly inspection: readonly InspectorEvent[];
}

/** What happened to the dataset since the last update (each list only what is new). */
export interface DetailUpdate {
  readonly serverTimeMs: number;
  readonly counts: OverviewCounts;
  /** Present when the row changed. */
  readonly row?: OverviewRow;
  /** Present when the machine reported a new status. */
  readonly status?: DatasetStatus | null;
  readonly history: readonly HistoryEntry[];
  readonly activity: readonly ActivityEntry[];
  readonly inspection: readonly InspectorEvent[];
}

/** An update and its JSON (made once, for every listener). */
export type UpdateListener<T> = (update: T, json: string) => void;

export interface InspectorHubOptions {
  /** Inspection events kept per followed dataset; default 200. */
  readonly recentEvents?: number;
  /** Largest JSON size of an event's `event` / `action` payload before it is abridged; default 2 048. */
  readonly maxPayloadChars?: number;
  /** State history entries kept per dataset; default 50. */
  readonly historyLength?: number;
  /** Activity entries (polls, swaps, errors) kept per dataset; default 50. */
  readonly activityLength?: number;
  /** How often changes are sent to pages; default 500 ms. */
  readonly updateIntervalMs?: number;
  /** How long a dataset stays followed after its last detail view closed; default 60 000 ms. */
  readonly followLingerMs?: number;
}

interface RowEntry {
  row: OverviewRow;
  /** What the row was built from: when none of these changed, neither did the row. */
  from: { status: unknown; state: string; error: string | undefined };
}

interface Follow {
  readonly listeners: Set<UpdateListener<DetailUpdate>>;
  readonly recent: InspectorEvent[];
  history: HistoryEntry[];
  activity: ActivityEntry[];
  inspection: InspectorEvent[];
  /** The root machine's session id, once seen (events of invoked actors are dropped). */
  root: string | undefined;
  /** Events that came before the root was known, until it is. */
  readonly unplaced: InspectionEvent[];
  /** The counts and status its listeners last got. */
  counts: OverviewCounts | undefined;
  status: DatasetStatus | null | undefined;
  unsubscribe: () => void;
  linger: NodeJS.Timeout | undefined;
  /** The last check put in its activity (`null`: none yet), from the status when followed. */
  lastPollAtMs: number | null;
}

/** Every this many updates the rows are rebuilt from every dataset's status, not only the ones events named. */
const FULL_REFRESH_TICKS = 4;

/** Events held until the followed machine's session is known (it is at its next transition). */
const UNPLACED_EVENTS = 100;

function pushBounded<T>(list: T[], item: T, max: number): void {
  list.push(item);
  if (list.length > max) list.splice(0, list.length - max);
}

export class InspectorHub {
  readonly #runtime: Runtime;
  readonly #recentEvents: number;
  readonly #maxPayloadChars: number;
  readonly #historyLength: number;
  readonly #activityLength: number;
  readonly #updateIntervalMs: number;
  readonly #followLingerMs: number;
  readonly #rows = new Map<string, RowEntry>();
  #counts: OverviewCounts = overviewCounts([]);
  readonly #history = new Map<string, HistoryEntry[]>();
  readonly #activity = new Map<string, ActivityEntry[]>();
  readonly #overviewListeners = new Set<UpdateListener<OverviewUpdate>>();
  readonly #follows = new Map<string, Follow>();
  readonly #unsubscribe: (() => void)[];
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  #seq = 0;
  /** Datasets an event said something about since the last refresh. */
  readonly #dirty = new Set<string>();
  /** Rows changed since the last update went out (a snapshot's refresh included). */
  #unsent = new Set<string>();
  #ticks = 0;
  /**
   * JSON for a page: every string with the values the spicepod's secret references resolved to
   * replaced by the references, as in every other answer and log line (an error can quote one).
   */
  readonly json: (value: unknown) => string;

  constructor(runtime: Runtime, options: InspectorHubOptions = {}) {
    this.#runtime = runtime;
    const secrets = runtime.config.secretReferences;
    this.json =
      secrets.length === 0
        ? (value) => JSON.stringify(value)
        : (value) =>
            JSON.stringify(value, (_key, item: unknown) =>
              typeof item === 'string' ? redactSecrets(item, secrets) : item,
            );
    this.#recentEvents = options.recentEvents ?? 200;
    this.#maxPayloadChars = options.maxPayloadChars ?? 2_048;
    this.#historyLength = options.historyLength ?? 50;
    this.#activityLength = options.activityLength ?? 50;
    this.#updateIntervalMs = options.updateIntervalMs ?? 500;
    this.#followLingerMs = options.followLingerMs ?? 60_000;
    const now = Date.now();
    for (const info of runtime.datasets()) {
      this.#history.set(info.name, [{ seq: ++this.#seq, state: info.state, atMs: now }]);
    }
    this.#unsubscribe = [
      runtime.on('state', (event) => {
        this.#dirty.add(event.dataset);
        this.#recordHistory(event.dataset, event.state);
        const follow = this.#follows.get(event.dataset);
        if (follow !== undefined && event.state !== 'polling')
          this.#recordCheck(follow, event.dataset, event.status);
      }),
      runtime.on('swap', (event) =>
        this.#recordActivity(event.dataset, {
          seq: ++this.#seq,
          kind: 'swap',
          atMs: Date.now(),
          from: event.from,
          to: event.to,
        }),
      ),
      runtime.on('error', (event) =>
        this.#recordActivity(event.dataset, {
          seq: ++this.#seq,
          kind: 'error',
          atMs: Date.now(),
          code: event.code,
          message: event.message,
          snapshotId: event.snapshotId,
        }),
      ),
    ];
  }

  /** Every dataset's row and the counts, as of now. */
  overview(): OverviewSnapshot {
    this.#refresh();
    this.#dropUnsentIfAlone();
    return {
      serverTimeMs: Date.now(),
      counts: this.#counts,
      rows: [...this.#rows.values()].map((entry) => entry.row),
    };
  }

  /** One dataset's view; throws `ERR_UNKNOWN_DATASET` for a name not configured. */
  detail(name: string): DetailSnapshot {
    const status = this.#runtime.status(name).status ?? null;
    this.#refresh();
    this.#dropUnsentIfAlone();
    const row = this.#rows.get(name)?.row;
    if (row === undefined) throw new Error(`The inspector has no row for dataset '${name}'.`);
    return {
      serverTimeMs: Date.now(),
      counts: this.#counts,
      machine: datasetMachineGraph(),
      row,
      status,
      history: [...(this.#history.get(name) ?? [])],
      activity: [...(this.#activity.get(name) ?? [])],
      inspection: [...(this.#follows.get(name)?.recent ?? [])],
    };
  }

  /**
   * Calls `listener` with each batch of changed rows from now on (a row may come again unchanged:
   * rows are whole, so applying one twice is harmless); returns the unsubscribe function. Take the
   * page's {@link overview} first: what changes after it comes in the next update.
   */
  subscribeOverview(listener: UpdateListener<OverviewUpdate>): () => void {
    if (this.#closed) return () => undefined;
    this.#overviewListeners.add(listener);
    this.#schedule();
    return () => {
      this.#overviewListeners.delete(listener);
      this.#schedule();
    };
  }

  /**
   * Follows `name` (its machine's inspection events from now on) and calls `listener` with what
   * happens to it, batched; throws `ERR_UNKNOWN_DATASET` for a name not configured. Call this
   * before {@link detail} so the snapshot already holds the followed events.
   */
  subscribeDetail(name: string, listener: UpdateListener<DetailUpdate>): () => void {
    this.#runtime.status(name);
    if (this.#closed) return () => undefined;
    const follow = this.#follow(name);
    clearTimeout(follow.linger);
    follow.linger = undefined;
    follow.listeners.add(listener);
    this.#schedule();
    return () => {
      if (!follow.listeners.delete(listener)) return;
      if (follow.listeners.size === 0 && !this.#closed) {
        follow.linger = setTimeout(() => {
          this.#unfollow(name, follow);
          this.#schedule();
        }, this.#followLingerMs);
        follow.linger.unref();
      }
      this.#schedule();
    };
  }

  /** Marks a dataset as changed (a command was sent to it), so the next update looks at it. */
  touch(name: string): void {
    this.#dirty.add(name);
  }

  /** The datasets whose machines are followed now (a detail view is open or lingering). */
  followed(): string[] {
    return [...this.#follows.keys()];
  }

  /** Detaches from the runtime; listeners receive nothing more. */
  close(): void {
    this.#closed = true;
    for (const off of this.#unsubscribe) off();
    for (const [name, follow] of this.#follows) this.#unfollow(name, follow);
    this.#overviewListeners.clear();
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  // ---------------------------------------------------------------------------------------------

  /**
   * A followed dataset's check, read from the status its state event carries once the check is
   * over (a followed dataset does not park, so each of its checks passes `polling`). The hub never
   * listens for `poll` events: that would keep every dataset from parking.
   */
  #recordCheck(follow: Follow, name: string, status: DatasetStatus | undefined): void {
    const atMs = status?.lastPollAtMs ?? null;
    if (status === undefined || atMs === null || status.lastPollResult === null) return;
    if (follow.lastPollAtMs !== null && atMs <= follow.lastPollAtMs) return;
    follow.lastPollAtMs = atMs;
    this.#recordActivity(name, {
      seq: ++this.#seq,
      kind: 'poll',
      atMs,
      result: status.lastPollResult,
      currentSnapshotId: status.storeSnapshotId,
    });
  }

  #recordHistory(name: string, state: string): void {
    let history = this.#history.get(name);
    if (history === undefined) {
      history = [];
      this.#history.set(name, history);
    }
    if (history[history.length - 1]?.state === state) return;
    const entry: HistoryEntry = { seq: ++this.#seq, state, atMs: Date.now() };
    pushBounded(history, entry, this.#historyLength);
    this.#follows.get(name)?.history.push(entry);
  }

  #recordActivity(name: string, entry: ActivityEntry): void {
    this.#dirty.add(name);
    let activity = this.#activity.get(name);
    if (activity === undefined) {
      activity = [];
      this.#activity.set(name, activity);
    }
    pushBounded(activity, entry, this.#activityLength);
    this.#follows.get(name)?.activity.push(entry);
  }

  #follow(name: string): Follow {
    const existing = this.#follows.get(name);
    if (existing !== undefined) return existing;
    const follow: Follow = {
      listeners: new Set(),
      recent: [],
      history: [],
      activity: [],
      inspection: [],
      root: undefined,
      unplaced: [],
      counts: undefined,
      status: undefined,
      unsubscribe: () => undefined,
      linger: undefined,
      lastPollAtMs: this.#runtime.status(name).status?.lastPollAtMs ?? null,
    };
    this.#follows.set(name, follow);
    follow.unsubscribe = this.#runtime.inspect((event) => this.#onInspection(follow, event), {
      dataset: name,
    });
    return follow;
  }

  #unfollow(name: string, follow: Follow): void {
    clearTimeout(follow.linger);
    follow.unsubscribe();
    follow.listeners.clear();
    if (this.#follows.get(name) === follow) this.#follows.delete(name);
  }

  #onInspection(follow: Follow, event: InspectionEvent): void {
    if (
      (event.type === '@xstate.actor' && event.root === true) ||
      event.type === '@xstate.snapshot' ||
      event.type === '@xstate.microstep'
    ) {
      // Only the machine itself reports snapshots and microsteps.
      if (follow.root !== event.sessionId) {
        follow.root = event.sessionId;
        for (const held of follow.unplaced.splice(0))
          if (held.sessionId === event.sessionId) this.#keep(follow, held);
      }
    } else if (follow.root === undefined) {
      // Followed while the machine runs: which session is the machine is known at its next step.
      pushBounded(follow.unplaced, event, UNPLACED_EVENTS);
      return;
    }
    if (event.sessionId !== follow.root) return;
    this.#keep(follow, event);
  }

  #keep(follow: Follow, event: InspectionEvent): void {
    const compact = this.#compact(event);
    pushBounded(follow.recent, compact, this.#recentEvents);
    // Pending events beyond what a snapshot would hold are of no use: a page that missed them resyncs.
    pushBounded(follow.inspection, compact, this.#recentEvents);
  }

  #compact(event: InspectionEvent): InspectorEvent {
    const budget = this.#maxPayloadChars;
    return {
      ...event,
      seq: ++this.#seq,
      ...(event.event === undefined ? {} : { event: abridge(event.event, budget) }),
      ...(event.action === undefined ? {} : { action: abridge(event.action, budget) }),
    };
  }

  /**
   * Brings the rows up to date — every dataset, or only those an event named since the last
   * refresh — and adds the names of those that changed to the next update.
   */
  #refresh(all = true): void {
    const changed = this.#unsent;
    let any = false;
    const infos: DatasetInfo[] = [];
    if (all || this.#rows.size === 0) {
      infos.push(...this.#runtime.datasets());
    } else {
      for (const name of this.#dirty) {
        try {
          infos.push(this.#runtime.status(name));
        } catch {
          // Not a configured dataset: nothing to show.
        }
      }
    }
    this.#dirty.clear();
    for (const info of infos) {
      const entry = this.#rows.get(info.name);
      const from = { status: info.status, state: info.state, error: info.error };
      if (
        entry !== undefined &&
        entry.from.status === from.status &&
        entry.from.state === from.state &&
        entry.from.error === from.error
      ) {
        continue;
      }
      const row = overviewRow(info);
      if (entry !== undefined && sameRow(entry.row, row)) {
        entry.from = from;
        continue;
      }
      this.#rows.set(info.name, { row, from });
      changed.add(info.name);
      any = true;
    }
    if (any) {
      const counts = overviewCounts([...this.#rows.values()].map((entry) => entry.row));
      // The same object while the numbers stay the same, so listeners can tell a change by identity.
      if (JSON.stringify(counts) !== JSON.stringify(this.#counts)) this.#counts = counts;
    }
  }

  /** With nobody listening, the changes a refresh found are owed to no one. */
  #dropUnsentIfAlone(): void {
    if (this.#overviewListeners.size === 0 && this.#follows.size === 0) this.#unsent.clear();
  }

  /** Runs the update timer while anyone listens. */
  #schedule(): void {
    const listening = this.#overviewListeners.size > 0 || this.#follows.size > 0;
    if (listening && this.#timer === undefined && !this.#closed) {
      this.#timer = setInterval(() => this.#tick(), this.#updateIntervalMs);
      this.#timer.unref();
    } else if (!listening && this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  #tick(): void {
    // What the events named, and every dataset now and then: a status can change without an event
    // (a pause from the API, the next check's time).
    this.#ticks++;
    this.#refresh(this.#ticks % FULL_REFRESH_TICKS === 0);
    const changed = this.#unsent;
    this.#unsent = new Set();
    const serverTimeMs = Date.now();
    if (changed.size > 0 && this.#overviewListeners.size > 0) {
      const update: OverviewUpdate = {
        serverTimeMs,
        counts: this.#counts,
        rows: [...changed].map((name) => this.#rows.get(name)?.row as OverviewRow),
      };
      const json = this.json(update);
      for (const listener of [...this.#overviewListeners]) listener(update, json);
    }
    for (const [name, follow] of this.#follows) {
      const rowChanged = changed.has(name);
      const { history, activity, inspection } = follow;
      follow.history = [];
      follow.activity = [];
      follow.inspection = [];
      if (follow.listeners.size === 0) continue;
      const countsChanged = follow.counts !== this.#counts;
      const status = this.#runtime.status(name).status ?? null;
      const statusChanged = status !== follow.status;
      if (
        !rowChanged &&
        !countsChanged &&
        !statusChanged &&
        history.length + activity.length + inspection.length === 0
      ) {
        continue;
      }
      follow.counts = this.#counts;
      follow.status = status;
      const row = this.#rows.get(name)?.row;
      const update: DetailUpdate = {
        serverTimeMs,
        counts: this.#counts,
        ...(rowChanged && row !== undefined ? { row } : {}),
        ...(statusChanged ? { status } : {}),
        history,
        activity,
        inspection,
      };
      const json = this.json(update);
      for (const listener of [...follow.listeners]) listener(update, json);
    }
  }
}
