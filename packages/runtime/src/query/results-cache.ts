/**
 * The SQL results cache (Spice's `runtime.caching.sql_results`, on by default: 128 MiB, 1 s). An
 * entry is keyed by what decides its rows: the statement, its parameters, the kind of answer (JSON
 * rows or Arrow batches) and the snapshot of every dataset it read — captured when the query pinned
 * its generations, so a result is stored under the snapshots it was read at, however late it is
 * stored. A lookup knows the datasets a statement reads from its route (a statement is first
 * answered by its engine) and their snapshots from the host's catalog; so a swap makes every entry
 * that read the swapped dataset unreachable at once, and `retire` drops them: a long `item_ttl`
 * never serves a stale answer. Bounded in bytes (lru-cache's `maxSize`, each entry weighed by the
 * memory its value keeps — the Arrow IPC buffers of its batches, or the size of its rows — and by
 * its key) and by `item_ttl` (expired entries swept every `item_ttl`: `purgeStale`). Only
 * statements that read at least one dataset and have no clock, random source or listing in them
 * are cached (`isCacheableStatement`). The same key, hashed (64 bits), is the
 * result's `version`: the `/v1/sql` ETag. Identical requests arriving while one runs wait for its
 * answer (`find` → `running`, `share`): a stampede on one statement runs it once.
 */
import { errorCode, type QueryParam, type ResultsCacheConfig } from '@ferry/core/base';
import { BoundedCache, isCacheableStatement, textBytes } from '@ferry/engines/sql';
import { LRUCache } from 'lru-cache';
import type { DatasetRead } from '../api.js';

/** Whether the cache answered (`hit`), ran and offered the result (`miss`), or was told not to read (`bypass`). */
export type CacheStatus = 'hit' | 'miss' | 'bypass';

/** What the host knows of a statement before it runs: the datasets it reads, and the snapshot each serves. */
export interface CacheLookup {
  readonly sql: string;
  readonly params: readonly QueryParam[];
  /** The datasets the statement reads (its route), or undefined when not known yet. */
  readonly datasets: readonly string[] | undefined;
  /** A pinned query's snapshots, by dataset name in lower case: they key it, not the ones served. */
  readonly pins?: ReadonlyMap<string, number> | undefined;
}

export interface CacheCounters {
  readonly hits: number;
  readonly misses: number;
  readonly bypasses: number;
  readonly evictions: number;
  readonly entries: number;
  readonly bytes: number;
  readonly maxBytes: number;
}

/** A run identical requests may wait for: its answer, and what of it they get. */
interface Flight {
  readonly answer: Promise<unknown>;
  readonly shared: (answer: unknown) => unknown;
}

/**
 * What a request that waited for an identical run gets when that run failed: its timeout (the
 * statement at the same snapshots would run out of time again: running it once more per waiter
 * doubled each waiter's wait and multiplied the load), else undefined, and it runs its own (the
 * run may have failed for its own caller's reasons: cancelled, its thread ended).
 */
function sharedFailure(error: unknown): undefined {
  if (errorCode(error) === 'ERR_QUERY_TIMEOUT') throw error;
  return undefined;
}

interface Entry<V> {
  readonly value: V;
  readonly bytes: number;
  /** The datasets it read, at their snapshots. */
  readonly read: readonly DatasetRead[];
}

/**
 * Whether a request's `Cache-Control` (HTTP header or Flight metadata) asks not to be answered
 * from the cache: `no-cache` (Spice's word) or `no-store`.
 */
export function asksNoCache(cacheControl: string | undefined): boolean {
  return /(^|[\s,])no-(cache|store)\s*($|[,=])/i.test(cacheControl ?? '');
}

/**
 * Spice's words for how an answer met the results cache, as HTTP headers and Flight metadata:
 * `results-cache-status` (`HIT`, `MISS`, `BYPASS`) and the older `x-cache` (`Hit from spiceai` /
 * `Miss from spiceai`; none for a bypass).
 */
export function cacheStatusFields(status: CacheStatus): Readonly<Record<string, string>> {
  if (status === 'bypass') return { 'results-cache-status': 'BYPASS' };
  return {
    'results-cache-status': status.toUpperCase(),
    'x-cache': status === 'hit' ? 'Hit from spiceai' : 'Miss from spiceai',
  };
}

/** Bookkeeping an entry costs beyond its value and its key (Spice's sizing charges about 500 bytes). */
const ENTRY_OVERHEAD_BYTES = 512;
/** The longest wait between two sweeps of expired entries ({@link ResultsCache}'s purge). */
const MAX_PURGE_INTERVAL_MS = 60_000;
/** Runs `run` once after `ms` without keeping the process alive; `cancel` stops it. */
export type PurgeTimer = (run: () => void, ms: number) => { cancel(): void };
const unrefTimer: PurgeTimer = (run, ms) => {
  const timer = setTimeout(run, ms);
  timer.unref();
  return { cancel: () => clearTimeout(timer) };
};
/** Statements whose cacheability is remembered: how many, and the memory their texts may take. */
const CLASSIFIED = 4_096;
const CLASSIFIED_BYTES = 4 * 1024 * 1024;

/** `name@snapshot` of each dataset read, sorted: the part of a key the snapshots make. */
function snapshotsPart(read: readonly DatasetRead[]): string {
  const [only] = read;
  if (read.length === 1 && only !== undefined) return `${only.name}@${only.snapshotId}`;
  return read
    .map((dataset) => `${dataset.name}@${dataset.snapshotId}`)
    .sort()
    .join(',');
}

/**
 * An entry's key. `kind` is which answer it holds: `query`'s rows (`rows`), `queryArrow`'s table
 * (`table`), or `queryJson`'s and `queryStream`'s, by the inline bound, batching and cap asked
 * (`json/<inline>/<batchRows>/<maxBytes>`): a hit answers exactly what running the query would.
 * A `bigint` parameter is written `{"n":"<digits>"}` (no parameter is an object): it binds as an
 * integer, the string of its digits as text.
 */
function keyOf(kind: string, sql: string, params: readonly QueryParam[], snapshots: string): string {
  return `${kind}\u0000${snapshots}\u0000${params.length === 0 ? '' : paramsKey(params)}\u0000${sql}`;
}

function paramsKey(params: readonly QueryParam[]): string {
  if (!params.some((param) => typeof param === 'bigint')) return JSON.stringify(params);
  return JSON.stringify(params, (_key, value: unknown) =>
    typeof value === 'bigint' ? { n: value.toString() } : value,
  );
}

/**
 * The `version` of a result: a 64-bit hash (two 32-bit multiply-xorshift lanes, cyrb53's
 * construction) of what decides its rows, not of its kind. Not cryptographic — an ETag only has to
 * tell two versions of one request apart — and about a tenth of a SHA-256's cost, on every answer.
 */
function versionOf(sql: string, params: readonly QueryParam[], snapshots: string): string {
  const text = keyOf('rows', sql, params, snapshots);
  let h1 = 0xdeadbeef ^ text.length;
  let h2 = 0x41c6ce57 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return `${(h2 >>> 0).toString(36).padStart(7, '0')}${(h1 >>> 0).toString(36).padStart(7, '0')}`;
}

/**
 * The version of the result of `sql` with `params` read at the snapshots `read` names (a query's
 * `datasets`): what the `/v1/sql` ETag is made of. Meaningful for a result the cache applies to
 * (its `cache` is set); {@link ResultsCache.versionNow} tells it before the query runs.
 */
export function resultVersion(
  sql: string,
  params: readonly QueryParam[],
  read: readonly DatasetRead[],
): string {
  return versionOf(sql, params, snapshotsPart(read));
}

export class ResultsCache {
  readonly #config: ResultsCacheConfig;
  /** The snapshot a dataset serves now, or undefined when it serves none (the host's catalog). */
  readonly #current: (dataset: string) => number | undefined;
  readonly #entries: LRUCache<string, Entry<unknown>> | undefined;
  /** Each dataset's entries (by key), to retire them when it swaps. */
  readonly #byDataset = new Map<string, Set<string>>();
  readonly #cacheable = new BoundedCache<string, boolean>({ entries: CLASSIFIED, bytes: CLASSIFIED_BYTES });
  /** Runs whose answers identical requests wait for, by key ({@link share}). */
  readonly #running = new Map<string, Flight>();
  readonly #timer: PurgeTimer;
  /** The next sweep of expired entries, while the cache holds any. */
  #purge: { cancel(): void } | undefined;
  #closed = false;
  #hits = 0;
  #misses = 0;
  #bypasses = 0;
  #evictions = 0;

  constructor(
    config: ResultsCacheConfig,
    current: (dataset: string) => number | undefined,
    now?: () => number,
    timer: PurgeTimer = unrefTimer,
  ) {
    this.#config = config;
    this.#current = current;
    this.#timer = timer;
    if (!config.enabled) return;
    this.#entries = new LRUCache<string, Entry<unknown>>({
      max: 100_000,
      maxSize: config.maxSizeBytes,
      sizeCalculation: (entry) => entry.bytes,
      ttl: config.itemTtlMs,
      ttlAutopurge: false,
      // Every lookup reads the clock (not a copy cached for a millisecond by a timer).
      ttlResolution: 0,
      updateAgeOnGet: false,
      ...(now === undefined ? {} : { perf: { now } }),
      dispose: (entry, key, reason) => {
        if (reason === 'evict') this.#evictions++;
        for (const { name } of entry.read) {
          const keys = this.#byDataset.get(name);
          keys?.delete(key);
          if (keys?.size === 0) this.#byDataset.delete(name);
        }
      },
    });
  }

  get enabled(): boolean {
    return this.#entries !== undefined;
  }

  /** Whether a statement may be cached at all (remembered per text). */
  cacheable(sql: string): boolean {
    let known = this.#cacheable.get(sql);
    if (known === undefined) {
      known = isCacheableStatement(sql);
      this.#cacheable.set(sql, known, textBytes(sql));
    }
    return known;
  }

  /**
   * The snapshots part of the statement's key when every dataset it reads is known and serves;
   * undefined otherwise (the statement runs, uncached).
   */
  #snapshots(lookup: CacheLookup): string | undefined {
    const { datasets } = lookup;
    if (datasets === undefined || datasets.length === 0) return undefined;
    const read: DatasetRead[] = [];
    for (const name of datasets) {
      const snapshotId = lookup.pins?.get(name.toLowerCase()) ?? this.#current(name);
      if (snapshotId === undefined) return undefined;
      read.push({ name, snapshotId });
    }
    return snapshotsPart(read);
  }

  /** The version the statement's result has now (the ETag), when it can be told without running it. */
  versionNow(lookup: CacheLookup): string | undefined {
    const snapshots = this.cacheable(lookup.sql) ? this.#snapshots(lookup) : undefined;
    return snapshots === undefined ? undefined : versionOf(lookup.sql, lookup.params, snapshots);
  }

  /**
   * What the cache has for a request: its answer (`value`, a hit); else the run of an identical
   * request still in flight (`running`: resolves with the answer it shares, undefined when it has
   * none to share), not counted until {@link countJoined}; else a miss, counted. `key` is what a run
   * of this request shares its answer under ({@link share}); undefined when the statement's
   * datasets or their snapshots are not known, or it is not cacheable.
   */
  find<V>(
    kind: string,
    lookup: CacheLookup,
  ): { readonly value?: V; readonly running?: Promise<V | undefined>; readonly key?: string } | undefined {
    const entries = this.#entries;
    if (entries === undefined || !this.cacheable(lookup.sql) || lookup.datasets?.length === 0)
      return undefined;
    const snapshots = this.#snapshots(lookup);
    if (snapshots === undefined) {
      this.#misses++;
      return {};
    }
    const key = keyOf(kind, lookup.sql, lookup.params, snapshots);
    const entry = entries.get(key);
    if (entry !== undefined) {
      this.#hits++;
      return { value: entry.value as V, key };
    }
    const flight = this.#running.get(key);
    if (flight !== undefined) {
      const running = flight.answer.then(flight.shared, sharedFailure) as Promise<V | undefined>;
      return { running, key };
    }
    this.#misses++;
    return { key };
  }

  /**
   * Identical requests that come while `answer` runs wait for it instead of running too (64
   * clients asking a dashboard's statement at once run it once), and get `shared(answer)`: undefined
   * (or a failure but its timeout, which they share: {@link sharedFailure}) sends them to run their own. Under the key {@link find} gave; returns what ends
   * it, called once `answer` settles (nothing is chained to `answer` until a request waits for it:
   * a miss nobody shares costs a map entry).
   */
  share<A>(key: string, answer: Promise<A>, shared: (answer: A) => unknown): () => void {
    const flight: Flight = { answer, shared: shared as Flight['shared'] };
    this.#running.set(key, flight);
    return () => {
      if (this.#running.get(key) === flight) this.#running.delete(key);
    };
  }

  /** A request that waited for an identical one's run: a hit when it got its answer, else a miss. */
  countJoined(answered: boolean): void {
    if (answered) this.#hits++;
    else this.#misses++;
  }

  /** A request that asked not to be answered from the cache (`Cache-Control: no-cache`). */
  countBypass(): void {
    if (this.#entries !== undefined) this.#bypasses++;
  }

  /**
   * Offers a result read at the snapshots `read` names. It is kept unless it is larger than the
   * cache, the statement is not cacheable, or a dataset it read has swapped since.
   */
  set(
    kind: string,
    sql: string,
    params: readonly QueryParam[],
    read: readonly DatasetRead[],
    value: unknown,
    bytes: number,
  ): boolean {
    const entries = this.#entries;
    if (entries === undefined || read.length === 0 || !this.cacheable(sql)) return false;
    if (read.some((dataset) => this.#current(dataset.name) !== dataset.snapshotId)) return false;
    const key = keyOf(kind, sql, params, snapshotsPart(read));
    // The key holds the statement and its parameters: a 250 KB statement with a one-row answer
    // weighs 500 KB, not 600 bytes (V8 strings, UTF-16 at most).
    const size = Math.ceil(bytes) + ENTRY_OVERHEAD_BYTES + 2 * key.length;
    if (size > this.#config.maxSizeBytes) return false;
    entries.set(key, { value, bytes: size, read });
    if (!entries.has(key)) return false;
    this.#schedulePurge();
    for (const dataset of new Set(read.map((each) => each.name))) {
      const keys = this.#byDataset.get(dataset) ?? new Set<string>();
      this.#byDataset.set(dataset, keys);
      keys.add(key);
    }
    return true;
  }

  /**
   * `dataset` now serves `snapshotId` (null: nothing): every entry that read it at another snapshot
   * goes (it could never be looked up again).
   */
  retire(dataset: string, snapshotId: number | null): void {
    const keys = this.#byDataset.get(dataset);
    if (keys === undefined) return;
    for (const key of [...keys]) {
      const entry = this.#entries?.peek(key, { allowStale: true });
      const read = entry?.read.find((each) => each.name === dataset);
      if (entry === undefined || read?.snapshotId !== snapshotId) this.#entries?.delete(key);
    }
  }

  /**
   * Drops every entry past its `item_ttl`. lru-cache drops an expired entry only when it is looked
   * up or evicted; under a load of new statements nothing looks them up, so without this sweep the
   * cache fills with dead entries up to its bounds (`max_size`, or 100,000 entries: 64 MiB of heap
   * for small answers), which the garbage collector marks again and again. Runs every `item_ttl`
   * (at most every minute) while the cache holds anything.
   */
  purgeStale(): void {
    this.#purge = undefined;
    this.#entries?.purgeStale();
    this.#schedulePurge();
  }

  #schedulePurge(): void {
    const entries = this.#entries;
    const ttl = this.#config.itemTtlMs;
    if (
      this.#closed ||
      this.#purge !== undefined ||
      entries === undefined ||
      entries.size === 0 ||
      !(ttl > 0)
    )
      return;
    this.#purge = this.#timer(() => this.purgeStale(), Math.min(ttl, MAX_PURGE_INTERVAL_MS));
  }

  /** Stops the sweep (the runtime closes); the entries stay readable. */
  close(): void {
    this.#closed = true;
    this.#purge?.cancel();
    this.#purge = undefined;
  }

  counters(): CacheCounters {
    return {
      hits: this.#hits,
      misses: this.#misses,
      bypasses: this.#bypasses,
      evictions: this.#evictions,
      entries: this.#entries?.size ?? 0,
      bytes: this.#entries?.calculatedSize ?? 0,
      maxBytes: this.#entries === undefined ? 0 : this.#config.maxSizeBytes,
    };
  }
}
