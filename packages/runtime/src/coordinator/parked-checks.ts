/**
 * The scheduled checks of one location's parked datasets (docs/threads.md, "What a poll costs").
 * A serving dataset holding the ETag of metadata.json parks between checks: it lends its live slot
 * to the coordinator and sleeps. At each due time this reads the document once (through the
 * location's reader, so a dataset polling for itself at that instant shares the GET), then, for
 * each dataset due, either records the check in its live slot (the document is still the one of
 * its ETag) or wakes it to check for itself (anything else: a new ETag, no document, a failed
 * read). An unchanged location wakes no dataset thread.
 */
import { freshnessClock } from '@ferry/core/base';
import type { LiveStatus } from '../common/shared-slots.js';
import type { DocumentSeen } from './metadata-reader.js';

/** A parked dataset, as its thread announced it (`park`) and the coordinator knows it. */
export interface ParkedDataset {
  readonly token: number;
  readonly etag: string;
  /** When its next check is due; then every `intervalMs`. */
  dueMs: number;
  readonly intervalMs: number;
  /** Whether an unchanged check moves its freshness. */
  readonly freshens: boolean;
  /** Its place in the `LiveStatus`. */
  readonly slot: number;
  /** Tells its thread to check for itself (with the token it parked under). */
  readonly wake: (token: number) => void;
}

export interface ParkedChecksOptions {
  /** The location's document, as a check needs it (a read younger than the reuse window, else a new one). */
  readonly read: () => Promise<DocumentSeen>;
  readonly live: LiveStatus;
  readonly now?: () => number;
}

export class ParkedChecks {
  readonly #parked = new Map<string, ParkedDataset>();
  readonly #read: () => Promise<DocumentSeen>;
  readonly #live: LiveStatus;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | undefined;
  /** The due time the timer is set for. */
  #timerDueMs = Number.POSITIVE_INFINITY;
  #checking = false;

  constructor(options: ParkedChecksOptions) {
    this.#read = options.read;
    this.#live = options.live;
    this.#now = options.now ?? freshnessClock;
  }

  /** A dataset parks (again): its checks are this location's from now on. */
  park(dataset: string, parked: ParkedDataset): void {
    this.#parked.set(dataset, parked);
    this.#schedule();
  }

  /** The dataset's thread stops or is gone: its checks are its own again (or nobody's). */
  forget(dataset: string): void {
    this.#parked.delete(dataset);
  }

  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#parked.clear();
  }

  /** Makes the checks due now; resolves when they are recorded or their datasets woken. */
  async checkDue(): Promise<void> {
    if (this.#checking) return;
    this.#checking = true;
    try {
      const nowMs = this.#now();
      if (![...this.#parked.values()].some((parked) => parked.dueMs <= nowMs)) return;
      const seen = await this.#read().catch(
        (): DocumentSeen => ({ etag: undefined, readAtMs: Number.NEGATIVE_INFINITY }),
      );
      for (const [dataset, parked] of this.#parked) {
        if (parked.dueMs > nowMs) continue;
        if (seen.etag === undefined || seen.etag !== parked.etag || !this.#record(parked, seen, nowMs)) {
          // Changed (or the dataset took its slot back already: then the wake is ignored).
          this.#parked.delete(dataset);
          parked.wake(parked.token);
        }
      }
    } finally {
      this.#checking = false;
      this.#schedule();
    }
  }

  /** Records one unchanged check in the parked dataset's live slot; false if the slot is no longer lent. */
  #record(parked: ParkedDataset, seen: DocumentSeen, nowMs: number): boolean {
    let nextDueMs = parked.dueMs;
    while (nextDueMs <= nowMs) nextDueMs += parked.intervalMs;
    const written = this.#live.writeParked(parked.slot, parked.token, (checks) => ({
      ...checks,
      polls: checks.polls + 1,
      lastPollAtMs: nowMs,
      nextPollDueMs: nextDueMs,
      unposted: checks.unposted + 1,
      freshAtMs: parked.freshens
        ? Math.max(checks.freshAtMs ?? seen.readAtMs, seen.readAtMs)
        : checks.freshAtMs,
    }));
    if (written) parked.dueMs = nextDueMs;
    return written;
  }

  /** One timer, at the earliest due time. */
  #schedule(): void {
    if (this.#checking) return;
    let dueMs = Number.POSITIVE_INFINITY;
    for (const parked of this.#parked.values()) dueMs = Math.min(dueMs, parked.dueMs);
    if (dueMs === this.#timerDueMs && this.#timer !== undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerDueMs = dueMs;
    if (dueMs === Number.POSITIVE_INFINITY) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        void this.checkDue();
      },
      Math.max(0, dueMs - this.#now()),
    );
    this.#timer.unref();
  }
}
