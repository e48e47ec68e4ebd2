/**
 * Which statement texts came before, without keeping them: a table of their 32-bit hashes, one
 * per slot (a later text whose hash lands in the same slot takes it). The caches of what a text
 * costs to prepare keep an entry from the text's second sighting on. Under a load where every
 * request is a new text (a new literal each time), they would otherwise fill with entries nobody
 * asks for again; each lives long enough to be copied by the young-generation collector and moved
 * to the old generation, which is most of what a query costs the collector (bench/RESULTS.md,
 * 2026-12-06, gc-split). A text asked for again is cached at its second run. A collision of two
 * hashes only caches a text at its first run, as before.
 */
export class SeenTexts {
  readonly #slots: Int32Array;
  readonly #mask: number;

  /** `slots` is rounded up to a power of two. */
  constructor(slots = 4_096) {
    const size = 2 ** Math.ceil(Math.log2(Math.max(2, slots)));
    this.#slots = new Int32Array(size);
    this.#mask = size - 1;
  }

  /** Records `text`; true when it (or a text with its hash) was recorded before and not displaced. */
  again(text: string): boolean {
    // FNV-1a over the UTF-16 code units; 0 marks an empty slot, so no hash is 0.
    let hash = 0x811c9dc5;
    for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
    hash |= 1;
    const slot = (hash ^ (hash >>> 16)) & this.#mask;
    if (this.#slots[slot] === hash) return true;
    this.#slots[slot] = hash;
    return false;
  }
}
