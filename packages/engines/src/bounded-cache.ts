/**
 * The one cache the query path uses (statements checked, routes, prepared statements, result
 * columns): least recently used first out, bounded by entries AND by bytes. Each entry is charged
 * what its caller says it holds (a statement's text costs its length: a 1 MiB statement cannot make
 * a cache of a thousand entries hold a GiB), and an entry larger than a sixteenth of the byte bound
 * is not kept at all, so one huge text never evicts everything else.
 */
import { LRUCache } from 'lru-cache';

export interface BoundedCacheOptions<K, V> {
  readonly entries: number;
  readonly bytes: number;
  /** Called when an entry leaves (evicted, replaced, deleted, cleared). */
  readonly dispose?: (value: V, key: K) => void;
}

/** Bytes a string key or value costs (UTF-16 in V8), plus a fixed overhead per entry. */
export function textBytes(text: string): number {
  return 2 * text.length + 64;
}

export class BoundedCache<K extends {}, V extends {}> {
  readonly #cache: LRUCache<K, V>;
  readonly #maxEntry: number;
  readonly #dispose: ((value: V, key: K) => void) | undefined;

  constructor(options: BoundedCacheOptions<K, V>) {
    this.#maxEntry = Math.max(1, Math.floor(options.bytes / 16));
    this.#dispose = options.dispose;
    this.#cache = new LRUCache<K, V>({
      max: options.entries,
      maxSize: options.bytes,
      maxEntrySize: this.#maxEntry,
      ...(options.dispose === undefined ? {} : { dispose: options.dispose }),
    });
  }

  get(key: K): V | undefined {
    return this.#cache.get(key);
  }

  /**
   * Keeps `value` charged `bytes` (at least 1); returns false when it is too large to be kept (it
   * is then disposed of at once, and any earlier entry of the key is gone).
   */
  set(key: K, value: V, bytes: number): boolean {
    const size = Math.max(1, Math.ceil(bytes));
    this.#cache.set(key, value, { size });
    if (size <= this.#maxEntry) return true;
    // lru-cache drops an oversized value without disposing of it.
    this.#dispose?.(value, key);
    return false;
  }

  delete(key: K): boolean {
    return this.#cache.delete(key);
  }

  clear(): void {
    this.#cache.clear();
  }

  get size(): number {
    return this.#cache.size;
  }

  /** The bytes charged for what is kept now. */
  get bytes(): number {
    return this.#cache.calculatedSize;
  }
}
