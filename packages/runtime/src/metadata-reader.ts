/**
 * Shared reads of one location's `metadata.json`, owned by the coordinator. Every dataset on a
 * location asks here instead of reading the store itself, so N datasets polling at the same instant
 * (their polls fall on one grid, see the machine's `pollPhaseMs`) make ONE conditional GET: a read in
 * flight is joined, and a read younger than `windowMs` is reused. Each dataset still applies its own
 * ETag: the reply is "unchanged" only when the dataset's ETag equals the document's.
 */
import type { ObjectStore, ReadMetadataOutput } from '@ferry/core';
import { getDataset, maxMetadataBytes, type ParsedMetadata, parseMetadata } from '@ferry/core';

const METADATA_KEY = 'metadata.json';

interface Document {
  readonly etag: string | undefined;
  readonly metadata: ParsedMetadata | undefined;
  readonly error: unknown;
  readonly atMs: number;
}

/** The reply to a dataset, plus the location recorded inside metadata.json (for key resolution). */
export type MetadataReply = ReadMetadataOutput & { readonly recordedLocation?: string };

/** One successful read of the document: its ETag, and when the read began and ended (`now()` of the reader). */
export interface MetadataObservation {
  readonly etag: string | undefined;
  readonly startedAtMs: number;
  readonly endedAtMs: number;
}

export class LocationMetadataReader {
  readonly store: ObjectStore;
  readonly #windowMs: number;
  readonly #now: () => number;
  #document: Document | undefined;
  #inflight: Promise<Document> | undefined;
  #gets = 0;
  readonly #observers = new Set<(observation: MetadataObservation) => void>();

  constructor(store: ObjectStore, options: { readonly windowMs: number; readonly now?: () => number }) {
    this.store = store;
    this.#windowMs = options.windowMs;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Calls `listener` after every successful read (changed or not), in order; the notification
   * consumer matches the documents read against the commits it was notified of. Returns the
   * unsubscribe function.
   */
  observe(listener: (observation: MetadataObservation) => void): () => void {
    this.#observers.add(listener);
    return () => this.#observers.delete(listener);
  }

  /** How many GETs of metadata.json this reader has made. */
  get gets(): number {
    return this.#gets;
  }

  /**
   * A fresh read (no reuse window), for a batch of notifications. A read already in flight began
   * before the caller asked and may predate the commit it was told about, so it is waited out, not
   * joined; a read begun after that is joined.
   */
  async refresh(): Promise<ParsedMetadata | undefined> {
    await this.#inflight;
    const document = await this.#read();
    if (document.error !== undefined) throw document.error;
    return document.metadata;
  }

  /** The dataset's view of the document, reading it when the last read is too old. */
  async readFor(dataset: string, ifNoneMatch: string | undefined, fresh = false): Promise<MetadataReply> {
    const cached = this.#document;
    const document =
      !fresh && cached !== undefined && this.#now() - cached.atMs < this.#windowMs
        ? cached
        : await this.#read();
    if (document.error !== undefined) throw document.error;
    if (document.etag !== undefined && ifNoneMatch === document.etag) return { kind: 'unchanged' };
    const metadata = document.metadata;
    return {
      kind: 'read',
      ...(document.etag === undefined ? {} : { etag: document.etag }),
      dataset: metadata === undefined ? undefined : getDataset(metadata, dataset),
      ...(metadata === undefined ? {} : { recordedLocation: metadata.location }),
    };
  }

  #read(): Promise<Document> {
    this.#inflight ??= this.#get().finally(() => {
      this.#inflight = undefined;
    });
    return this.#inflight;
  }

  async #get(): Promise<Document> {
    const previous = this.#document;
    const atMs = this.#now();
    this.#gets++;
    let document: Document;
    try {
      const result = await this.store.get(METADATA_KEY, {
        ...(previous?.etag === undefined || previous.error !== undefined
          ? {}
          : { ifNoneMatch: previous.etag }),
        maxBytes: maxMetadataBytes,
      });
      if (result.status === 'unchanged' && previous !== undefined) {
        document = { ...previous, atMs };
      } else if (result.status === 'ok') {
        const text = new TextDecoder().decode(result.body);
        try {
          document = {
            etag: result.etag,
            metadata: parseMetadata(text, this.store.location),
            error: undefined,
            atMs,
          };
        } catch (error) {
          document = { etag: result.etag, metadata: undefined, error, atMs };
        }
      } else {
        document = { etag: undefined, metadata: undefined, error: undefined, atMs };
      }
    } catch (error) {
      // A failed read is never reused: the next poll reads again.
      return { etag: undefined, metadata: undefined, error, atMs: Number.NEGATIVE_INFINITY };
    }
    this.#document = document;
    const endedAtMs = this.#now();
    for (const observer of this.#observers) observer({ etag: document.etag, startedAtMs: atMs, endedAtMs });
    return document;
  }
}
