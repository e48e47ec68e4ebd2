/**
 * One supervisor for every thread the runtime restarts: the coordinator (supervised by the host),
 * each dataset thread (by the coordinator) and each DuckDB query worker (by its pool). The delays
 * and their reset window are {@link RestartBackoff}'s; this adds the one timer, and close.
 */
import { RestartBackoff } from '@ferry/core/base';

export interface SupervisorOptions {
  /** The delay before restart k (ms), by deaths in a row; the last repeats. */
  readonly delaysMs: readonly number[];
  /** Starts the thread again once its delay passed (not called after {@link Supervisor.close}). */
  readonly restart: () => void;
  /** A thread that ran longer than this before dying counts as healthy again (default 60 s). */
  readonly resetAfterMs?: number;
  /** Whether a pending restart keeps the process alive (default true). */
  readonly ref?: boolean;
  /** The clock the reset window is judged on (default `performance.now`). */
  readonly now?: () => number;
}

/** What a death decided: reported (logged, sent to the host) before the restart is scheduled. */
export interface Restart {
  readonly delayMs: number;
  /** Deaths in a row, this one included. */
  readonly inARow: number;
}

export class Supervisor {
  readonly #backoff: RestartBackoff;
  readonly #options: SupervisorOptions;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: SupervisorOptions) {
    this.#options = options;
    this.#backoff = new RestartBackoff(options.delaysMs, options.resetAfterMs);
    this.#now = options.now ?? (() => performance.now());
  }

  /** The thread started now (its reset window starts). */
  started(): void {
    this.#backoff.started(this.#now());
  }

  /**
   * The thread died: `report` is told the delay first (say it loudly: the log, an error event), then
   * the restart runs after it, at once for 0. Nothing happens once closed.
   */
  died(report: (restart: Restart) => void): void {
    if (this.#closed) return;
    const delayMs = this.#backoff.died(this.#now());
    report({ delayMs, inARow: this.#backoff.failures });
    if (delayMs === 0) {
      this.#options.restart();
      return;
    }
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (!this.#closed) this.#options.restart();
    }, delayMs);
    if (this.#options.ref === false) this.#timer.unref();
  }

  /** Whether a restart waits for its delay. */
  get pending(): boolean {
    return this.#timer !== undefined;
  }

  /** No restart from now on (a pending one is cancelled). */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
