/**
 * A catalog version as SQLite workers read it (UTF-8 JSON in shared memory: {@link shareCatalog}),
 * here and not beside the host's catalog, whose imports a worker need not load.
 *
 * The catalog board of the SQLite read pool: one SharedArrayBuffer, given to every worker when it
 * starts, on which the host writes each catalog version (the JSON {@link shareCatalog} makes) before
 * it sends a batch that needs it. A batch then carries no catalog at all: posting a message with a
 * SharedArrayBuffer in it costs the host about as much as the rest of the message (measured), and
 * every batch carried one. A catalog too large for the board travels with each task as before.
 *
 * The host is the only writer, under a sequence number (odd while it writes). A worker reads only
 * when the board holds another version than its own, copies the bytes out, and keeps the copy only
 * if the sequence number did not move meanwhile and the JSON parses to the version the header
 * says; otherwise it reads again. A worker always reads the newest version, never an older one
 * than the batch it runs was sent with (the host writes before it sends).
 */
import type { NamespaceCatalog } from '@ferry/engines';

const SEQ = 0;
const VERSION = 1;
const LENGTH = 2;
const HEADER_BYTES = 16;

/** Bytes the board holds; larger catalogs go with each task. */
export const BOARD_BYTES = 8 * 1024 * 1024;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A catalog version as SQLite tasks carry it. */
export interface SharedCatalog {
  readonly version: number;
  /** UTF-8 JSON of the {@link NamespaceCatalog}; never written after it is made. */
  readonly buffer: SharedArrayBuffer;
}

/** Encodes a catalog for SQLite tasks. */
export function shareCatalog(catalog: NamespaceCatalog): SharedCatalog {
  const bytes = encoder.encode(JSON.stringify(catalog));
  const buffer = new SharedArrayBuffer(bytes.byteLength);
  new Uint8Array(buffer).set(bytes);
  return { version: catalog.version, buffer };
}

/** Decodes what {@link shareCatalog} encoded. */
export function readSharedCatalog(shared: SharedCatalog): NamespaceCatalog {
  // TextDecoder does not read shared memory: copy it out first.
  return JSON.parse(decoder.decode(new Uint8Array(shared.buffer).slice())) as NamespaceCatalog;
}

export class CatalogBoard {
  readonly buffer: SharedArrayBuffer;
  readonly #header: Int32Array;
  readonly #data: Uint8Array;
  #published = -1;
  #fits = false;

  constructor(bytes = BOARD_BYTES) {
    this.buffer = new SharedArrayBuffer(HEADER_BYTES + bytes);
    this.#header = new Int32Array(this.buffer, 0, HEADER_BYTES / 4);
    this.#data = new Uint8Array(this.buffer, HEADER_BYTES);
    Atomics.store(this.#header, VERSION, -1);
  }

  /**
   * Writes `catalog` unless it is written already; returns whether it is on the board (false: too
   * large, the task must carry it).
   */
  publish(catalog: SharedCatalog): boolean {
    if (catalog.version === this.#published) return this.#fits;
    const bytes = new Uint8Array(catalog.buffer);
    this.#fits = bytes.byteLength <= this.#data.byteLength;
    Atomics.add(this.#header, SEQ, 1);
    if (this.#fits) this.#data.set(bytes);
    Atomics.store(this.#header, LENGTH, this.#fits ? bytes.byteLength : -1);
    Atomics.store(this.#header, VERSION, catalog.version);
    Atomics.add(this.#header, SEQ, 1);
    this.#published = catalog.version;
    return this.#fits;
  }
}

/**
 * The catalog on the board when it is another version than `known`; undefined when it is the same
 * (or nothing was written yet, or the newest was too large for it: its tasks carry it).
 */
export function readCatalogBoard(buffer: SharedArrayBuffer, known: number): NamespaceCatalog | undefined {
  const header = new Int32Array(buffer, 0, HEADER_BYTES / 4);
  const data = new Uint8Array(buffer, HEADER_BYTES);
  for (;;) {
    const seq = Atomics.load(header, SEQ);
    if ((seq & 1) === 1) continue; // the host is writing: its copy takes a moment
    const version = Atomics.load(header, VERSION);
    const length = Atomics.load(header, LENGTH);
    if (version === known || version < 0 || length < 0) return undefined;
    // TextDecoder does not read shared memory: copy it out first.
    const copy = data.slice(0, length);
    if (Atomics.load(header, SEQ) !== seq) continue;
    let catalog: NamespaceCatalog | undefined;
    try {
      catalog = JSON.parse(decoder.decode(copy)) as NamespaceCatalog;
    } catch {
      // A copy torn by a write that began after the sequence check: read the board again.
      continue;
    }
    if (catalog.version === version) return catalog;
  }
}
