/**
 * Shared reads of one location's `metadata.json`, owned by the coordinator. Every dataset on a
 * location asks here instead of reading the store itself, so N datasets polling at the same instant
 * (their polls fall on one grid, see the machine's `pollPhaseMs`) make ONE conditional GET: a read in
 * flight is joined, and a read younger than `windowMs` is reused. Each dataset still applies its own
 * ETag: the reply is "unchanged" only when the dataset's ETag equals the document's.
 *
 * The coordinator's checks of parked datasets ({@link ParkedChecks}) read through it too
 * (`document`), so a parked dataset's check and a polling dataset's share one GET (docs/threads.md).
 */
import type { ObjectStore } from '@ferry/core/base';
import {
  freshnessClock,
  getDataset,
  maxMetadataBytes,
  type ParsedMetadata,
  parseMetadata,
} from '@ferry/core/base';
import type { MetadataReply } from '../common/protocol.js';

const METADATA_KEY = 'metadata.json';

interface Document {
  readonly etag: string | undefined;
  readonly metadata: ParsedMetadata | undefined;
  readonly error: unknown;
  readonly atMs: number;
}

/** What a check of a parked dataset needs of the document: its ETag, if it is one, and when its read began. */
export interface DocumentSeen {
  /** The ETag of a readable document (undefined: none, unreadable, or the read failed). */
  readonly etag: string | undefined;
  readonly readAtMs: number;
}

export interface MetadataReaderOptions {
  readonly windowMs: number;
  /**
   * The datasets whose replies carry every snapshot entry (those that fall back to older snapshots);
   * the others get only their current entry. None by default.
   */
  readonly keepHistory?: (dataset: string) => boolean;
}

/** One successful read of the document: its ETag, and when the read began and ended (`freshnessClock()`). */
export interface MetadataObservation {
  readonly etag: string | undefined;
  readonly startedAtMs: number;
  readonly endedAtMs: number;
}

/**
 * A dataset's view of a document: unchanged when it holds the document's ETag, else its entry; with
 * when its read began (the dataset is fresh from then, not from its own check's start).
 */
function replyOf(document: Document, dataset: string, ifNoneMatch: string | undefined): MetadataReply {
  if (document.error !== undefined) throw document.error;
  const readAtMs = document.atMs;
  if (document.etag !== undefined && ifNoneMatch === document.etag) return { kind: 'unchanged', readAtMs };
  const metadata = document.metadata;
  return {
    kind: 'read',
    readAtMs,
    ...(document.etag === undefined ? {} : { etag: document.etag }),
    dataset: metadata === undefined ? undefined : getDataset(metadata, dataset),
    ...(metadata === undefined ? {} : { recordedLocation: metadata.location }),
  };
}

export class LocationMetadataReader {
  readonly store: ObjectStore;
  readonly #windowMs: number;
  readonly #keepHistory: (dataset: string) => boolean;
  #document: Document | undefined;
  #inflight: Promise<Document> | undefined;
  #gets = 0;
  readonly #observers = new Set<(observation: MetadataObservation) => void>();

  constructor(store: ObjectStore, options: MetadataReaderOptions) {
    this.store = store;
    this.#windowMs = options.windowMs;
    this.#keepHistory = options.keepHistory ?? (() => false);
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
    const document = await this.#fresh();
    if (document.error !== undefined) throw document.error;
    return document.metadata;
  }

  /**
   * The document as it is now, with every snapshot entry of `dataset` (a listing's read): a GET of
   * its own, not conditional and not shared, as the shared reads keep only what polls use.
   */
  async history(dataset: string): Promise<ParsedMetadata | undefined> {
    const result = await this.store.get(METADATA_KEY, { maxBytes: maxMetadataBytes });
    if (result.status !== 'ok') return undefined;
    return parseMetadata(result.body, this.store.location, { keepHistory: (name) => name === dataset });
  }

  /**
   * The dataset's view of the document, reading it when the last read is too old; `fresh` (an
   * operator's "poll now") reads it anew as {@link refresh} does.
   */
  async readFor(dataset: string, ifNoneMatch: string | undefined, fresh = false): Promise<MetadataReply> {
    return replyOf(fresh ? await this.#fresh() : await this.#recent(), dataset, ifNoneMatch);
  }

  /**
   * The dataset's full read of the last document, when that read succeeded: what a notification's
   * fresh read (`refresh`) found, sent with the announcement so the dataset need not ask again.
   */
  lastReadFor(dataset: string): MetadataReply | undefined {
    const document = this.#document;
    return document === undefined || document.error !== undefined
      ? undefined
      : replyOf(document, dataset, undefined);
  }

  /** The document for a parked dataset's check: the last read if younger than the window, else a new one. */
  async document(): Promise<DocumentSeen> {
    const document = await this.#recent();
    return {
      etag: document.error === undefined ? document.etag : undefined,
      readAtMs: document.atMs,
    };
  }

  /** A read begun after the call: one in flight is waited out (it may predate what the caller knows), not joined. */
  async #fresh(): Promise<Document> {
    await this.#inflight;
    return this.#read();
  }

  /** The last read if younger than the reuse window, else a new read. */
  #recent(): Promise<Document> {
    const cached = this.#document;
    return cached !== undefined && freshnessClock() - cached.atMs < this.#windowMs
      ? Promise.resolve(cached)
      : this.#read();
  }

  #read(): Promise<Document> {
    this.#inflight ??= this.#get().finally(() => {
      this.#inflight = undefined;
    });
    return this.#inflight;
  }

  async #get(): Promise<Document> {
    const previous = this.#document;
    const atMs = freshnessClock();
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
        try {
          document = {
            etag: result.etag,
            // Read in place, keeping only what the datasets' checks use (the document only grows).
            metadata: parseMetadata(result.body, this.store.location, { keepHistory: this.#keepHistory }),
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
    const endedAtMs = freshnessClock();
    for (const observer of this.#observers) observer({ etag: document.etag, startedAtMs: atMs, endedAtMs });
    return document;
  }
}
