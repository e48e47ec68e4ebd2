/**
 * Shared reads of one location's `metadata.json`, owned by the coordinator. Every dataset on a
 * location asks here instead of reading the store itself, so N datasets polling at the same instant
 * (their polls fall on one grid, see the machine's `pollPhaseMs`) make ONE conditional GET: a read in
 * flight is joined, and a read younger than `windowMs` is reused. Each dataset still applies its own
 * ETag: the reply is "unchanged" only when the dataset's ETag equals the document's.
 *
 * Each read's outcome is published (`publish`): a version number that moves whenever the document's
 * ETag, presence or readability changes, with when the read began. With `readAhead`, the reader
 * reads on the datasets' poll grid a little before each grid point, so when their timers fire the
 * read is there: a dataset holding the ETag of the published version answers its poll in its
 * thread, without asking (docs/threads.md).
 */
import type { ObjectStore } from '@ferry/core';
import { getDataset, maxMetadataBytes, type ParsedMetadata, parseMetadata } from '@ferry/core';
import type { MetadataReply } from '../shared/protocol.js';
import { DocumentState, type PublishedVersion } from '../shared/shared-slots.js';

const METADATA_KEY = 'metadata.json';

interface Document {
  readonly etag: string | undefined;
  readonly metadata: ParsedMetadata | undefined;
  readonly error: unknown;
  readonly atMs: number;
  /** The published version this document is (see the module comment). */
  readonly version: number;
}

export interface MetadataReaderOptions {
  readonly windowMs: number;
  readonly now?: () => number;
  /** Called after every read with the document's published version. */
  readonly publish?: (version: PublishedVersion) => void;
  /**
   * The datasets whose replies carry every snapshot entry (those that fall back to older snapshots);
   * the others get only their current entry. None by default.
   */
  readonly keepHistory?: (dataset: string) => boolean;
}

/** The poll grid to read ahead of: `phaseMs + k × interval` for each interval of the location's datasets. */
export interface ReadAheadGrid {
  readonly phaseMs: number;
  readonly intervalsMs: readonly number[];
}

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
  readonly #publish: ((version: PublishedVersion) => void) | undefined;
  readonly #keepHistory: (dataset: string) => boolean;
  #document: Document | undefined;
  #inflight: Promise<Document> | undefined;
  #gets = 0;
  /** The last published (state, ETag) and its version. */
  #published: { state: number; etag: string | undefined; version: number } = {
    state: 0,
    etag: undefined,
    version: 0,
  };
  /** How long the last GET took (read-ahead starts at least three times that before a grid point). */
  #lastGetMs = 0;
  #aheadTimer: NodeJS.Timeout | undefined;
  readonly #observers = new Set<(observation: MetadataObservation) => void>();

  constructor(store: ObjectStore, options: MetadataReaderOptions) {
    this.store = store;
    this.#windowMs = options.windowMs;
    this.#now = options.now ?? Date.now;
    this.#publish = options.publish;
    this.#keepHistory = options.keepHistory ?? (() => false);
  }

  /** How long a read is reused by polls (a dataset answering its poll in its thread keeps to it too). */
  get windowMs(): number {
    return this.#windowMs;
  }

  /**
   * Reads ahead of every point of `grid`: at `lead` before it (at least 25 ms, three times the last
   * GET, at most half the reuse window), so the datasets polling at that point find the read done
   * and younger than the window. Nothing when the window is 0 (every poll reads for itself).
   */
  readAhead(grid: ReadAheadGrid): void {
    this.stopReadAhead();
    if (!(this.#windowMs > 0) || grid.intervalsMs.length === 0) return;
    // The grid point the last read was for: each point is read for once, whatever the lead does.
    let lastPoint = Number.NEGATIVE_INFINITY;
    const schedule = (): void => {
      const lead = Math.min(this.#windowMs / 2, Math.max(25, 3 * this.#lastGetMs));
      const now = this.#now();
      const from = Math.max(now + lead, lastPoint) + 1;
      const point = Math.min(
        ...grid.intervalsMs.map((interval) => {
          const since = (((from - grid.phaseMs) % interval) + interval) % interval;
          return from + (since === 0 ? 0 : interval - since);
        }),
      );
      this.#aheadTimer = setTimeout(
        () => {
          lastPoint = point;
          const cached = this.#document;
          // A read younger than the lead (a poll's, a notification's) is as good as this one.
          if (cached === undefined || this.#now() - cached.atMs >= lead) void this.#read();
          schedule();
        },
        Math.max(0, point - lead - now),
      );
      this.#aheadTimer.unref();
    };
    schedule();
  }

  stopReadAhead(): void {
    clearTimeout(this.#aheadTimer);
    this.#aheadTimer = undefined;
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

  /**
   * The document as it is now, with every snapshot entry of `dataset` (a listing's read): a GET of
   * its own, not conditional and not shared, as the shared reads keep only what polls use.
   */
  async history(dataset: string): Promise<ParsedMetadata | undefined> {
    const result = await this.store.get(METADATA_KEY, { maxBytes: maxMetadataBytes });
    if (result.status !== 'ok') return undefined;
    return parseMetadata(result.body, this.store.location, { keepHistory: (name) => name === dataset });
  }

  /** The dataset's view of the document, reading it when the last read is too old. */
  async readFor(dataset: string, ifNoneMatch: string | undefined, fresh = false): Promise<MetadataReply> {
    const cached = this.#document;
    const document =
      !fresh && cached !== undefined && this.#now() - cached.atMs < this.#windowMs
        ? cached
        : await this.#read();
    if (document.error !== undefined) throw document.error;
    if (document.etag !== undefined && ifNoneMatch === document.etag) {
      return { kind: 'unchanged', version: document.version };
    }
    const metadata = document.metadata;
    return {
      kind: 'read',
      version: document.version,
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
      this.#lastGetMs = this.#now() - atMs;
      if (result.status === 'unchanged' && previous !== undefined) {
        document = { ...previous, atMs };
      } else if (result.status === 'ok') {
        try {
          document = this.#versioned({
            etag: result.etag,
            // Read in place, keeping only what the datasets' checks use (the document only grows).
            metadata: parseMetadata(result.body, this.store.location, { keepHistory: this.#keepHistory }),
            error: undefined,
            atMs,
          });
        } catch (error) {
          document = this.#versioned({ etag: result.etag, metadata: undefined, error, atMs });
        }
      } else {
        document = this.#versioned({ etag: undefined, metadata: undefined, error: undefined, atMs });
      }
    } catch (error) {
      // A failed read is never reused: the next poll reads again.
      this.#lastGetMs = this.#now() - atMs;
      const failed = this.#versioned({
        etag: undefined,
        metadata: undefined,
        error,
        atMs: Number.NEGATIVE_INFINITY,
      });
      this.#publishRead(failed, atMs);
      return failed;
    }
    this.#document = document;
    this.#publishRead(document, atMs);
    const endedAtMs = this.#now();
    for (const observer of this.#observers) observer({ etag: document.etag, startedAtMs: atMs, endedAtMs });
    return document;
  }

  /** The document with its version: the last one, unless its state or ETag differs from the last published. */
  #versioned(document: Omit<Document, 'version'>): Document {
    const state =
      document.error === undefined && document.etag !== undefined
        ? DocumentState.current
        : DocumentState.other;
    const last = this.#published;
    if (last.state !== state || last.etag !== document.etag || state === DocumentState.other) {
      this.#published = { state, etag: document.etag, version: last.version + 1 };
    }
    return { ...document, version: this.#published.version };
  }

  #publishRead(document: Document, startedAtMs: number): void {
    this.#publish?.({
      version: document.version,
      state: this.#published.state,
      readStartedAtMs: startedAtMs,
    });
  }
}
