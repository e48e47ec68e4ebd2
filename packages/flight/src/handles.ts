/**
 * Server-side state behind opaque handles: results waiting for their DoGet (a GetFlightInfo runs
 * the statement, so the schema it answers with is the schema DoGet streams) and open prepared
 * statements. Each entry expires after a time without use and the number of entries is capped, so
 * a client that never redeems or closes cannot make the server hold memory without bound; where
 * an entry's size is the client's to choose (a prepared statement's SQL and bound values, each up
 * to a message's size), their bytes are capped too. At the
 * cap, a new prepared statement is refused; a new ticket drops the oldest waiting result instead
 * (a ticket carries its statement, so a DoGet of the dropped one runs it again): under a load
 * balancer that sends DoGet to another replica, results nobody redeems here would otherwise fill
 * the table and refuse every GetFlightInfo until they expired.
 */
import { randomBytes } from 'node:crypto';
import { FlightCapacityError, FlightHandleNotFoundError } from './errors.js';

interface Entry<V> {
  value: V;
  timer: NodeJS.Timeout;
  bytes: number;
}

/** The most bytes a table's values may hold together, and what one value holds. */
export interface HandleBudget<V> {
  readonly bytes: number;
  readonly sizeOf: (value: V) => number;
}

export class HandleTable<V> {
  readonly #entries = new Map<string, Entry<V>>();
  readonly #what: 'ticket' | 'prepared statement';
  readonly #ttlMs: number;
  readonly #max: number;
  readonly #onDrop: (value: V) => void;
  readonly #budget: HandleBudget<V> | undefined;
  #bytes = 0;

  constructor(
    what: 'ticket' | 'prepared statement',
    ttlMs: number,
    max: number,
    onDrop: (value: V) => void = () => {},
    budget?: HandleBudget<V>,
  ) {
    this.#what = what;
    this.#ttlMs = ttlMs;
    this.#max = max;
    this.#onDrop = onDrop;
    this.#budget = budget;
  }

  /** The bytes of `value`, refused when they would take the table past its budget (`held`: its own). */
  #charge(value: V, held = 0): number {
    const bytes = this.#budget?.sizeOf(value) ?? 0;
    if (this.#budget !== undefined && this.#bytes - held + bytes > this.#budget.bytes) {
      throw new FlightCapacityError(
        `bytes of ${this.#what}s (their SQL and bound values)`,
        this.#budget.bytes,
      );
    }
    return bytes;
  }

  #arm(key: string): NodeJS.Timeout {
    const timer = setTimeout(() => this.#drop(key), this.#ttlMs);
    timer.unref();
    return timer;
  }

  #drop(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    clearTimeout(entry.timer);
    this.#entries.delete(key);
    this.#bytes -= entry.bytes;
    this.#onDrop(entry.value);
  }

  /** Stores `value` under a new random handle. */
  add(value: V): Buffer {
    if (this.#entries.size >= this.#max && this.#what === 'ticket') {
      this.#drop(this.#entries.keys().next().value as string);
    }
    if (this.#entries.size >= this.#max) {
      this.#onDrop(value);
      throw new FlightCapacityError(
        this.#what === 'ticket' ? 'unredeemed tickets' : 'prepared statements',
        this.#max,
      );
    }
    let bytes: number;
    try {
      bytes = this.#charge(value);
    } catch (error) {
      this.#onDrop(value);
      throw error;
    }
    const handle = randomBytes(16);
    const key = handle.toString('hex');
    this.#entries.set(key, { value, timer: this.#arm(key), bytes });
    this.#bytes += bytes;
    return handle;
  }

  /** Puts `value` in place of the one under `handle`; throws when there is none, or it would not fit. */
  replace(handle: Uint8Array, value: V): void {
    const key = Buffer.from(handle).toString('hex');
    const entry = this.#entries.get(key);
    if (entry === undefined) throw new FlightHandleNotFoundError(this.#what, this.#ttlMs);
    const bytes = this.#charge(value, entry.bytes);
    this.#bytes += bytes - entry.bytes;
    entry.value = value;
    entry.bytes = bytes;
  }

  /** The value under `handle` (its idle time starts again); throws when there is none. */
  get(handle: Uint8Array): V {
    const key = Buffer.from(handle).toString('hex');
    const entry = this.#entries.get(key);
    if (entry === undefined) throw new FlightHandleNotFoundError(this.#what, this.#ttlMs);
    clearTimeout(entry.timer);
    entry.timer = this.#arm(key);
    return entry.value;
  }

  /** Whether a value is held under `handle`. */
  has(handle: Uint8Array): boolean {
    return this.#entries.has(Buffer.from(handle).toString('hex'));
  }

  /** Removes and returns the value under `handle` (a ticket is redeemed once). */
  take(handle: Uint8Array): V {
    const key = Buffer.from(handle).toString('hex');
    const entry = this.#entries.get(key);
    if (entry === undefined) throw new FlightHandleNotFoundError(this.#what, this.#ttlMs);
    clearTimeout(entry.timer);
    this.#entries.delete(key);
    this.#bytes -= entry.bytes;
    return entry.value;
  }

  /** Forgets `handle`, dropping its value; false when there was none. */
  delete(handle: Uint8Array): boolean {
    const key = Buffer.from(handle).toString('hex');
    const had = this.#entries.has(key);
    this.#drop(key);
    return had;
  }

  get size(): number {
    return this.#entries.size;
  }

  clear(): void {
    for (const key of [...this.#entries.keys()]) this.#drop(key);
  }
}
