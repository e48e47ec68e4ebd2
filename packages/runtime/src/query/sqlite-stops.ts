/**
 * The SQLite read pool's stop buffer, shared by the host and every worker: one region per batch
 * slot, `[current, stop_1 … stop_MAX_BATCH]` (the layout better-sqlite3's `interruptOn` reads:
 * engines' sqlite-interrupt.ts). A worker writes `current` (the 1-based index of the query it runs
 * in its batch, 0 between queries); the host stops query k of a slot's batch by writing `stop_k`,
 * whether k runs now or has not started: SQLite fails it with `SQLITE_INTERRUPT` within a
 * microsecond or so, and the worker goes on with the rest of its batch. A stream has a buffer of
 * its own, of one region (its one statement is query 0, running only while the worker steps it,
 * not while it waits for its consumer).
 */
import type { InterruptRegion } from '@ferry/engines/namespaces';

/** Most queries in one batch (a region has a stop for each). */
export const MAX_BATCH = 64;
const REGION = 1 + MAX_BATCH;

/** A stop buffer for `slots` batch slots (all zero: nothing runs, nothing stopped). */
export function stopBuffer(slots: number): Int32Array {
  return new Int32Array(new SharedArrayBuffer(slots * REGION * Int32Array.BYTES_PER_ELEMENT));
}

/** The region of `slot` (a stream's buffer: slot 0). */
export function regionOf(stops: Int32Array, slot: number): InterruptRegion {
  return { buffer: stops.buffer as SharedArrayBuffer, offset: slot * REGION, stops: MAX_BATCH };
}

/** A worker: query `index` (0-based) of `slot`'s batch runs now; -1: none. */
export function markRunning(stops: Int32Array, region: InterruptRegion, index: number): void {
  Atomics.store(stops, region.offset, index + 1);
}

/** Whether a query of `slot`'s batch (a stream's: its statement) runs now. */
export function isRunning(stops: Int32Array, slot: number): boolean {
  return Atomics.load(stops, slot * REGION) !== 0;
}

/** Whether query `index` of the region's batch was stopped (a worker skips it without starting it). */
export function isStopped(stops: Int32Array, region: InterruptRegion, index: number): boolean {
  return Atomics.load(stops, region.offset + 1 + index) !== 0;
}

/** The host: stop query `index` (0-based) of `slot`'s batch. */
export function stopQuery(stops: Int32Array, slot: number, index: number): void {
  Atomics.store(stops, slot * REGION + 1 + index, 1);
}

/** The host, before a slot's next batch: nothing runs, nothing stopped. */
export function clearRegion(stops: Int32Array, slot: number): void {
  for (let index = slot * REGION; index < (slot + 1) * REGION; index++) Atomics.store(stops, index, 0);
}
