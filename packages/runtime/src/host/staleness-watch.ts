/**
 * `ferry_max_staleness`: watches the datasets that have a bound and writes one warn line each time
 * one goes past it (it is then not ready: `GET /v1/ready` names it) and one when it comes back.
 * Staleness grows with the clock, not with events, so besides every status change the watch looks
 * again when the first fresh dataset would cross, and every second while any is past its bound
 * (a check answered inside a dataset thread changes no posted status). The judgement is core's
 * `staleCrossings`; this module only schedules it and logs.
 */
import { nextStaleCrossingMs, staleCrossingMessage, staleCrossings } from '@ferry/core/base';
import type { DatasetInfo } from '../api.js';
import type { Logger } from '../common/logging.js';

const STALE_RECHECK_MS = 1_000;

export interface StalenessSource {
  /** Every dataset's info now (its `stalenessMs` and `maxStalenessMs`). */
  datasets(): readonly DatasetInfo[];
  /** Calls `listener` after every state or status change; returns the unsubscribe. */
  onChange(listener: () => void): () => void;
}

export class StalenessWatch {
  readonly #source: StalenessSource;
  readonly #logger: Logger;
  readonly #off: () => void;
  #stale: ReadonlySet<string> = new Set();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(source: StalenessSource, logger: Logger) {
    this.#source = source;
    this.#logger = logger;
    this.#off = source.onChange(() => this.#check());
    this.#check();
  }

  #check(): void {
    if (this.#closed) return;
    const bounded = this.#source
      .datasets()
      .filter((info): info is DatasetInfo & { maxStalenessMs: number } => info.maxStalenessMs !== null)
      .map((info) => ({
        dataset: info.name,
        stalenessMs: info.stalenessMs,
        maxStalenessMs: info.maxStalenessMs,
      }));
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (bounded.length === 0) return;
    const { stale, crossings } = staleCrossings(this.#stale, bounded);
    this.#stale = stale;
    for (const crossing of crossings) {
      this.#logger.warn(
        {
          component: 'freshness',
          dataset: crossing.dataset,
          stalenessMs: Math.round(crossing.stalenessMs),
          maxStalenessMs: crossing.maxStalenessMs,
          ready: crossing.direction === 'fresh',
        },
        staleCrossingMessage(crossing),
      );
    }
    const next = nextStaleCrossingMs(bounded) ?? Number.POSITIVE_INFINITY;
    const soonest = Math.min(next, stale.size > 0 ? STALE_RECHECK_MS : Number.POSITIVE_INFINITY);
    if (Number.isFinite(soonest)) this.#timer = setTimeout(() => this.#check(), soonest).unref();
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#off();
  }
}
