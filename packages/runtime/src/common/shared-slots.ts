/**
 * {@link LiveStatus}: one slot per dataset in shared memory, read by the host without a message
 * (docs/threads.md, "What a poll costs"). While a dataset is parked, the coordinator makes its
 * scheduled checks and writes what they change in its status here (polls, the last poll, the next
 * due time, freshness), so the host's `status()` and `metrics()` show them although the dataset
 * thread never woke; when it wakes, the dataset thread takes its slot back and records them.
 *
 * Each slot is a seqlock: the writer makes its sequence number odd, writes, makes it even; a reader
 * retries while the number is odd or moved. One writer at a time, by the slot's owner word: 0 is
 * the dataset thread; a park token (> 0) lends the slot to the coordinator, which marks it
 * {@link WRITING} for the length of a write. No imports: a dataset thread loads this module.
 */

/** A dataset's scheduled checks, as its status shows them, with those made while it was parked. */
export interface LiveChecks {
  /** The dataset thread's incarnation (its start number), so a restarted thread's slot is not mixed with the last one's. */
  readonly incarnation: number;
  /** The machine's `counters.polls`, with the checks made while parked. */
  readonly polls: number;
  readonly lastPollAtMs: number;
  readonly nextPollDueMs: number | null;
  /** The machine's `freshAtMs` after the last check (what staleness is measured from). */
  readonly freshAtMs: number | null;
  /** Checks made while parked, whose `poll` event was never posted (counted for `metrics()`), over every incarnation. */
  readonly unposted: number;
}

const LIVE_FIELDS = 6;
/** Bytes per slot: its sequence number (an int32, padded to 8 bytes), its fields as float64s, its owner word (kept 8-byte aligned). */
const LIVE_SLOT_BYTES = 8 + LIVE_FIELDS * 8 + 8;
/** The owner word of a slot the coordinator is writing. */
const WRITING = -1;
/**
 * How long a reader waits for a write to end (it takes microseconds) before it takes the writer
 * for dead: a thread ended between the two increments of a write leaves the number odd for good.
 */
const DEAD_WRITER_MS = 50;

export class LiveStatus {
  readonly buffer: SharedArrayBuffer;
  /** The buffer holds every slot's sequence number, then every slot's fields, then every owner word. */
  readonly #seq: Int32Array;
  readonly #values: Float64Array;
  readonly #owners: Int32Array;
  /** Per slot, the odd sequence number of a write this reader waited out in vain (0: none): read as absent while it stays. */
  readonly #deadWrites: Int32Array;

  constructor(buffer: SharedArrayBuffer) {
    this.buffer = buffer;
    const slots = Math.floor(buffer.byteLength / LIVE_SLOT_BYTES);
    this.#seq = new Int32Array(buffer, 0, slots * 2);
    this.#values = new Float64Array(buffer, slots * 8, slots * LIVE_FIELDS);
    this.#owners = new Int32Array(buffer, slots * (8 + LIVE_FIELDS * 8), slots);
    this.#deadWrites = new Int32Array(slots);
  }

  static create(datasets: number): LiveStatus {
    return new LiveStatus(new SharedArrayBuffer(Math.max(1, datasets) * LIVE_SLOT_BYTES));
  }

  /** The dataset thread writes its slot (it owns it: a new thread takes it from any park left by the last). */
  write(slot: number, checks: LiveChecks): void {
    Atomics.store(this.#owners, slot, 0);
    // Its only writer now: a write left half done by a thread that ended is closed first.
    if ((Atomics.load(this.#seq, slot * 2) & 1) === 1) Atomics.add(this.#seq, slot * 2, 1);
    this.#write(slot, checks);
  }

  /** The dataset thread lends its slot to the coordinator under `token` (> 0), after writing it. */
  park(slot: number, token: number, checks: LiveChecks): void {
    this.write(slot, checks);
    Atomics.store(this.#owners, slot, token);
  }

  /**
   * The dataset thread takes back the slot it lent under `token` (waiting out a write in progress,
   * a few microseconds at most) and reads what the coordinator wrote.
   */
  takeBack(slot: number, token: number): LiveChecks | undefined {
    while (Atomics.compareExchange(this.#owners, slot, token, 0) === WRITING) {
      // The coordinator is between the two stores of one write.
    }
    return this.read(slot);
  }

  /**
   * The coordinator writes a parked slot: `update` gets what the slot holds and returns its new
   * fields. False (nothing written) when the slot is no longer lent under `token`.
   */
  writeParked(slot: number, token: number, update: (checks: LiveChecks) => LiveChecks): boolean {
    if (Atomics.compareExchange(this.#owners, slot, token, WRITING) !== token) return false;
    try {
      const checks = this.read(slot);
      if (checks !== undefined) this.#write(slot, update(checks));
    } finally {
      Atomics.store(this.#owners, slot, token);
    }
    return true;
  }

  #write(slot: number, checks: LiveChecks): void {
    Atomics.add(this.#seq, slot * 2, 1);
    this.#values.set(
      [
        checks.incarnation,
        checks.polls,
        checks.lastPollAtMs,
        checks.nextPollDueMs ?? Number.NaN,
        checks.unposted,
        checks.freshAtMs ?? Number.NaN,
      ],
      slot * LIVE_FIELDS,
    );
    Atomics.add(this.#seq, slot * 2, 1);
  }

  /**
   * The slot's checks, or undefined when it was never written, or while a write left half done by a
   * thread that ended (its writer's next owner writes it again: {@link LiveStatus.write}).
   */
  read(slot: number): LiveChecks | undefined {
    let values: Float64Array;
    let oddSinceMs: number | undefined;
    for (;;) {
      const before = Atomics.load(this.#seq, slot * 2);
      if (before === 0) return undefined;
      if ((before & 1) === 0) {
        values = this.#values.slice(slot * LIVE_FIELDS, (slot + 1) * LIVE_FIELDS);
        if (Atomics.load(this.#seq, slot * 2) === before) break;
      } else if (before === this.#deadWrites[slot]) {
        return undefined;
      } else {
        const nowMs = performance.now();
        oddSinceMs ??= nowMs;
        if (nowMs - oddSinceMs > DEAD_WRITER_MS) {
          this.#deadWrites[slot] = before;
          return undefined;
        }
      }
    }
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
