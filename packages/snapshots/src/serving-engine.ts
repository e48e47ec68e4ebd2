/**
 * The engine a dataset serves queries from, across swaps. Each open of the live file is a
 * generation; a query leases the current generation for its duration (a reference count), so a
 * swap can make a new generation current at once while queries already running finish on the old
 * one, which is closed when its last lease is released. Until then the old file, renamed over,
 * lives on as an unlinked inode; closing it releases its space.
 *
 * SQL is checked by the read-only guard before any generation is leased, so a refusal never
 * reaches an engine.
 */
import { type ArrowSchema, fileFormatOf, type JsonValue, type QueryResult } from '@ferry/core';
import {
  assertReadOnlySql,
  EngineClosedError,
  openEngine,
  type QueryControl,
  type SnapshotEngine,
  type SqlDialect,
} from '@ferry/engines';
import type { LiveFileOptions } from './snapshot-files.js';

export interface ServingEngineOptions extends LiveFileOptions {
  /** How long `close()` waits for leases to be released before closing the engines. Default 30 s. */
  readonly drainTimeoutMs?: number;
}

/** The current generation, held until `release()`: several queries on one snapshot. */
export interface ServingLease {
  /** 1 for the file open at start, +1 per swap. */
  readonly generation: number;
  query(sql: string, params?: readonly JsonValue[]): Promise<QueryResult>;
  /** Idempotent. Resolves once a retired generation this lease kept open is closed. */
  release(): Promise<void>;
}

interface Generation {
  readonly number: number;
  readonly engine: SnapshotEngine;
  leases: number;
  retired: boolean;
  closing: Promise<void> | undefined;
}

const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;

export class ServingEngine {
  readonly dataset: string;
  readonly table: string;
  readonly livePath: string;
  readonly #options: ServingEngineOptions;
  readonly #dialect: SqlDialect;
  /** Open generations: the current one and retired ones still leased. */
  readonly #open = new Set<Generation>();
  #current: Generation;
  #swapping: Promise<unknown> = Promise.resolve();
  #closing: Promise<void> | undefined;
  #cancelled = false;
  #onDrained: (() => void) | undefined;

  private constructor(options: ServingEngineOptions, engine: SnapshotEngine) {
    this.dataset = options.dataset;
    this.table = options.table;
    this.livePath = options.livePath;
    this.#options = options;
    this.#dialect = fileFormatOf(options.engine);
    this.#current = { number: 1, engine, leases: 0, retired: false, closing: undefined };
    this.#open.add(this.#current);
  }

  /** Open the live file (it must hold a validated snapshot, e.g. after `restoreLocal` or a commit). */
  static async open(options: ServingEngineOptions): Promise<ServingEngine> {
    const engine = await openEngine(options.engine, options.livePath, { table: options.table });
    return new ServingEngine(options, engine);
  }

  /** The current generation's number. */
  get generation(): number {
    return this.#current.number;
  }

  /** Engines open now: 1, plus retired generations that queries still hold. */
  get openGenerations(): number {
    return this.#open.size;
  }

  /** Lease the current generation; release it when done. */
  acquire(): ServingLease {
    const generation = this.#enter();
    let released: Promise<void> | undefined;
    return {
      generation: generation.number,
      query: (sql, params = []) => {
        try {
          assertReadOnlySql(sql, this.#dialect);
        } catch (error) {
          return Promise.reject(error);
        }
        if (released !== undefined) return Promise.reject(new EngineClosedError(this.livePath));
        return generation.engine.query(sql, params);
      },
      release: () => {
        released ??= this.#release(generation);
        return released;
      },
    };
  }

  /** Run one read-only query on the current generation (`control`: see {@link QueryControl}). */
  async query(
    sql: string,
    params: readonly JsonValue[] = [],
    control: QueryControl = {},
  ): Promise<QueryResult> {
    assertReadOnlySql(sql, this.#dialect);
    const generation = this.#enter();
    try {
      return await generation.engine.query(sql, params, control);
    } finally {
      void this.#release(generation).catch(() => undefined);
    }
  }

  /** The real schema of the dataset's table in the current generation. */
  async schema(): Promise<ArrowSchema> {
    const generation = this.#enter();
    try {
      return await generation.engine.schema(this.table);
    } finally {
      void this.#release(generation).catch(() => undefined);
    }
  }

  #enter(): Generation {
    if (this.#closing !== undefined || this.#cancelled) throw new EngineClosedError(this.livePath);
    this.#current.leases++;
    return this.#current;
  }

  /**
   * After `commitSnapshot`: open the live path again and make it the current generation; the
   * previous one closes when its last lease is released. Swaps run one at a time. If the open
   * fails, the previous generation stays current. Resolves to the new generation's number.
   */
  swap(): Promise<number> {
    const run = this.#swapping.then(() => this.#swapNow());
    this.#swapping = run.catch(() => undefined);
    return run;
  }

  async #swapNow(): Promise<number> {
    if (this.#closing !== undefined) throw new EngineClosedError(this.livePath);
    const engine = await openEngine(this.#options.engine, this.livePath, { table: this.table });
    if (this.#closing !== undefined) {
      await engine.close();
      throw new EngineClosedError(this.livePath);
    }
    const previous = this.#current;
    this.#current = { number: previous.number + 1, engine, leases: 0, retired: false, closing: undefined };
    this.#open.add(this.#current);
    previous.retired = true;
    if (previous.leases === 0) void this.#closeGeneration(previous).catch(() => undefined);
    return this.#current.number;
  }

  #release(generation: Generation): Promise<void> {
    generation.leases--;
    if (this.#onDrained !== undefined && this.#leases() === 0) this.#onDrained();
    if (generation.retired && generation.leases === 0) return this.#closeGeneration(generation);
    return Promise.resolve();
  }

  #leases(): number {
    let total = 0;
    for (const generation of this.#open) total += generation.leases;
    return total;
  }

  #closeGeneration(generation: Generation): Promise<void> {
    generation.closing ??= generation.engine.close().finally(() => this.#open.delete(generation));
    return generation.closing;
  }

  /**
   * Cancel every query on every open generation for good (DuckDB; SQLite reads are synchronous) and
   * resolve when none runs: the step before ending a thread abruptly.
   */
  async cancelAll(): Promise<void> {
    this.#cancelled = true;
    await Promise.all([...this.#open].map((generation) => generation.engine.cancelAll?.()));
  }

  /**
   * Refuse new queries, wait up to `drainTimeoutMs` for leases to be released, interrupt the
   * queries still executing, then close every engine. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await this.#swapping;
      await this.#drain(this.#cancelled ? 0 : (this.#options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS));
      // Whatever still executes after the drain is cancelled, so closing never waits on it.
      await this.cancelAll();
      await Promise.all([...this.#open].map((generation) => this.#closeGeneration(generation)));
    })();
    return this.#closing;
  }

  #drain(timeoutMs: number): Promise<void> {
    if (this.#leases() === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#onDrained = undefined;
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.#onDrained = done;
    });
  }
}
