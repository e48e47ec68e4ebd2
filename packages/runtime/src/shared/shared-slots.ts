/**
 * Two tables in shared memory, read without a message (docs/threads.md, "What a poll costs"):
 *
 * - {@link PublishedVersions}, written by the coordinator's metadata readers, one slot per location:
 *   the version of the location's metadata.json (moved whenever its ETag, presence or readability
 *   changes), its state and when the read began. A dataset thread answers an unchanged poll from it.
 * - {@link LiveStatus}, written by each dataset thread, one slot per dataset: what its checks
 *   answered in the thread changed in its status (polls, the last poll, the next due time), so the
 *   host's `status()` and `metrics()` show them although no message was posted.
 *
 * Each slot is a seqlock: the writer makes its sequence number odd, writes, makes it even; a reader
 * retries while the number is odd or moved. One writer per slot. No imports: a dataset thread
 * loads this module.
 */

/** A slot's fields, as float64s after a sequence number (an int32, padded to 8 bytes). */
class SeqlockTable {
  readonly #seq: Int32Array;
  readonly #values: Float64Array;
  readonly #fields: number;

  constructor(buffer: SharedArrayBuffer, fields: number) {
    this.#fields = fields;
    const slots = buffer.byteLength / SeqlockTable.bytesPerSlot(fields);
    this.#seq = new Int32Array(buffer, 0, slots * 2);
    this.#values = new Float64Array(buffer, slots * 8, slots * fields);
  }

  static bytesPerSlot(fields: number): number {
    return 8 + fields * 8;
  }

  write(slot: number, values: readonly number[]): void {
    const at = slot * 2;
    Atomics.add(this.#seq, at, 1);
    this.#values.set(values, slot * this.#fields);
    Atomics.add(this.#seq, at, 1);
  }

  /** The slot's fields, or undefined when it was never written. */
  read(slot: number): Float64Array | undefined {
    const at = slot * 2;
    for (;;) {
      const before = Atomics.load(this.#seq, at);
      if (before === 0) return undefined;
      if ((before & 1) === 0) {
        const values = this.#values.slice(slot * this.#fields, (slot + 1) * this.#fields);
        if (Atomics.load(this.#seq, at) === before) return values;
      }
    }
  }
}

/** What a location's last read found. */
export const DocumentState = {
  /** A document with an ETag: a dataset holding that ETag (at this version) may answer a poll itself. */
  current: 1,
  /** No metadata.json, no ETag, an unreadable document, or a failed read: every poll reads for itself. */
  other: 2,
} as const;

export interface PublishedVersion {
  readonly version: number;
  readonly state: number;
  /** When the read that found it began (`Date.now()`). */
  readonly readStartedAtMs: number;
}

const VERSION_FIELDS = 3;

export class PublishedVersions {
  readonly buffer: SharedArrayBuffer;
  readonly #table: SeqlockTable;

  constructor(buffer: SharedArrayBuffer) {
    this.buffer = buffer;
    this.#table = new SeqlockTable(buffer, VERSION_FIELDS);
  }

  static create(locations: number): PublishedVersions {
    return new PublishedVersions(
      new SharedArrayBuffer(Math.max(1, locations) * SeqlockTable.bytesPerSlot(VERSION_FIELDS)),
    );
  }

  publish(slot: number, version: PublishedVersion): void {
    this.#table.write(slot, [version.version, version.state, version.readStartedAtMs]);
  }

  read(slot: number): PublishedVersion | undefined {
    const values = this.#table.read(slot);
    if (values === undefined) return undefined;
    return { version: values[0] as number, state: values[1] as number, readStartedAtMs: values[2] as number };
  }
}

/** A dataset's checks answered in its thread, as its status shows them. */
export interface LiveChecks {
  /** The dataset thread's incarnation (its start number), so a restarted thread's slot is not mixed with the last one's. */
  readonly incarnation: number;
  /** The machine's `counters.polls` after the check. */
  readonly polls: number;
  readonly lastPollAtMs: number;
  readonly nextPollDueMs: number | null;
  /** The machine's `freshAtMs` after the check (what staleness is measured from). */
  readonly freshAtMs: number | null;
  /** Checks answered in the thread whose `poll` event was not posted (counted for `metrics()`), over every incarnation. */
  readonly unposted: number;
}

const LIVE_FIELDS = 6;

export class LiveStatus {
  readonly buffer: SharedArrayBuffer;
  readonly #table: SeqlockTable;

  constructor(buffer: SharedArrayBuffer) {
    this.buffer = buffer;
    this.#table = new SeqlockTable(buffer, LIVE_FIELDS);
  }

  static create(datasets: number): LiveStatus {
    return new LiveStatus(
      new SharedArrayBuffer(Math.max(1, datasets) * SeqlockTable.bytesPerSlot(LIVE_FIELDS)),
    );
  }

  write(slot: number, checks: LiveChecks): void {
    this.#table.write(slot, [
      checks.incarnation,
      checks.polls,
      checks.lastPollAtMs,
      checks.nextPollDueMs ?? Number.NaN,
      checks.unposted,
      checks.freshAtMs ?? Number.NaN,
    ]);
  }

  read(slot: number): LiveChecks | undefined {
    const values = this.#table.read(slot);
    if (values === undefined) return undefined;
    const due = values[3] as number;
    const fresh = values[5] as number;
    return {
      incarnation: values[0] as number,
      polls: values[1] as number,
      lastPollAtMs: values[2] as number,
      nextPollDueMs: Number.isNaN(due) ? null : due,
      unposted: values[4] as number,
      freshAtMs: Number.isNaN(fresh) ? null : fresh,
    };
  }
}
