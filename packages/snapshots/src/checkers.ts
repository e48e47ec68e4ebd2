/**
 * Warm file checkers, kept per (file format, directory) by the thread that checks files (a worker
 * of the runtime's snapshot pool). Making a DuckDB checker costs ~25 ms (an instance, its lock-down
 * and its first catalog query); one kept warm checks a file in ~3 ms. A checker is made ahead
 * (`warm`, while a download runs) and closed after `idleMs` without use, so an idle thread holds no
 * DuckDB instance (and can end without one), and `close()` releases them all.
 */
import type { EngineName } from '@ferry/core/base';
import { createSnapshotChecker, type SnapshotChecker } from '@ferry/engines';

interface Kept {
  readonly made: Promise<SnapshotChecker>;
  /** Checks running with it: it is never closed under one. */
  users: number;
  timer: NodeJS.Timeout | undefined;
}

export interface SnapshotCheckersOptions {
  /** A checker unused this long is closed. Default 10 s. */
  readonly idleMs?: number;
}

export class SnapshotCheckers {
  readonly #kept = new Map<string, Kept>();
  readonly #idleMs: number;
  #closed = false;

  constructor(options: SnapshotCheckersOptions = {}) {
    this.#idleMs = options.idleMs ?? 10_000;
  }

  /** How many checkers are open (or being made). */
  get size(): number {
    return this.#kept.size;
  }

  /** Starts making the checker for files of `kind` under `directory`, if none is kept. */
  warm(kind: EngineName, directory: string): void {
    if (kind !== 'duckdb' || this.#closed) return;
    const kept = this.#keep(kind, directory);
    if (kept.users === 0) this.#arm(this.#key(kind, directory), kept);
  }

  /** Runs `work` with the checker for files of `kind` under `directory` (made if none is kept). */
  async use<T>(
    kind: EngineName,
    directory: string,
    work: (checker: SnapshotChecker) => Promise<T>,
  ): Promise<T> {
    if (this.#closed) throw new Error('The snapshot checkers are closed.');
    const key = this.#key(kind, directory);
    const kept = this.#keep(kind, directory);
    kept.users++;
    clearTimeout(kept.timer);
    kept.timer = undefined;
    try {
      return await work(await kept.made);
    } finally {
      kept.users--;
      if (kept.users === 0 && this.#kept.get(key) === kept) this.#arm(key, kept);
    }
  }

  /** Closes every checker (each after the check it runs); later `use` calls fail. */
  async close(): Promise<void> {
    this.#closed = true;
    const all = [...this.#kept.values()];
    this.#kept.clear();
    await Promise.all(all.map((kept) => this.#release(kept)));
  }

  #key(kind: EngineName, directory: string): string {
    return `${kind === 'duckdb' ? 'duckdb' : 'sqlite'}\u0000${directory}`;
  }

  #keep(kind: EngineName, directory: string): Kept {
    const key = this.#key(kind, directory);
    let kept = this.#kept.get(key);
    if (kept === undefined) {
      const made = createSnapshotChecker(kind, directory);
      kept = { made, users: 0, timer: undefined };
      this.#kept.set(key, kept);
      const mine = kept;
      // A checker that cannot be made is forgotten (its users see the failure), so the next try makes one again.
      made.catch(() => {
        if (this.#kept.get(key) === mine) this.#kept.delete(key);
      });
    }
    return kept;
  }

  #arm(key: string, kept: Kept): void {
    clearTimeout(kept.timer);
    kept.timer = setTimeout(() => {
      if (this.#kept.get(key) !== kept || kept.users > 0) return;
      this.#kept.delete(key);
      void this.#release(kept);
    }, this.#idleMs);
    kept.timer.unref();
  }

  async #release(kept: Kept): Promise<void> {
    clearTimeout(kept.timer);
    await kept.made.then(
      (checker) => checker.close(),
      // Never made: nothing to close (the failure reached the check that wanted it).
      () => undefined,
    );
  }
}
