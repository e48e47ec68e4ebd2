/**
 * The vocabulary both query namespaces share (DuckDB's and SQLite's): the catalog they serve —
 * every dataset, its engine and the generation (an immutable link to one snapshot file) it serves
 * now — what a query read, and how a query is bounded. Plain data: the catalog crosses threads.
 */
import type { ArrowSchema, FileFormat, JsonValue } from '@ferry/core/base';
import type { RecordBatch, Schema } from 'apache-arrow';
import type { DuckDbStatement } from './statement-check.js';

/** One snapshot of a dataset as a file that never changes (a hard link of the live file). */
export interface NamespaceGeneration {
  /** Unique in the process (never reused), so an attachment is never mistaken for another. */
  readonly id: number;
  readonly path: string;
  readonly snapshotId: number;
  /** The schema recorded in metadata.json, when known: types an SQLite table takes in DuckDB. */
  readonly schema?: ArrowSchema;
}

export interface NamespaceDataset {
  readonly name: string;
  /** The file format of its snapshots; `undefined` until known (taken from metadata.json). */
  readonly engine: FileFormat | undefined;
  /** What it serves now; `null` while it serves nothing (waiting, restarting). */
  readonly generation: NamespaceGeneration | null;
  /** `duckdb_memory_limit` of the dataset, in bytes: bounds every DuckDB query that reads it. */
  readonly memoryLimitBytes?: number;
  /** `duckdb_threads` of the dataset: bounds every DuckDB query that reads it. */
  readonly threads?: number;
}

/** One of the spicepod's `views`: a named SELECT over the datasets (and other views). */
export interface NamespaceView {
  readonly name: string;
  readonly sql: string;
}

/** The catalog at one version: every configured dataset, in spicepod order, and the views. */
export interface NamespaceCatalog {
  readonly version: number;
  readonly datasets: readonly NamespaceDataset[];
  /** The spicepod's views (absent: none). */
  readonly views?: readonly NamespaceView[];
  /** `false` when the task history is off: `spice.runtime.task_history` is not a table then. */
  readonly taskHistory?: boolean;
}

/** One row of `spice.runtime.task_history` (Spice's columns): one query the runtime ran. */
export interface TaskHistoryRow {
  readonly trace_id: string;
  readonly span_id: string;
  readonly parent_span_id: string | null;
  /** `sql_query`. */
  readonly task: string;
  /** The statement. */
  readonly input: string;
  readonly captured_output: string | null;
  /** Microseconds since the epoch. */
  readonly start_us: number;
  readonly end_us: number;
  readonly execution_duration_ms: number;
  readonly error_message: string | null;
  readonly labels: Readonly<Record<string, string>>;
}

/** The task history at one version (every row the runtime keeps now). */
export interface NamespaceTaskHistory {
  readonly version: number;
  readonly rows: readonly TaskHistoryRow[];
}

/** The dataset of the catalog a table name names (names are case-insensitive, as in both engines). */
export function datasetByName(catalog: NamespaceCatalog, name: string): NamespaceDataset | undefined {
  const lower = name.toLowerCase();
  return catalog.datasets.find((dataset) => dataset.name.toLowerCase() === lower);
}

/**
 * A dataset a query is pinned to read at one generation (a client's `X-Ferry-Snapshot`), the
 * current one or an earlier one still linked: the host resolved it from the snapshot id.
 */
export interface PinnedGeneration {
  readonly name: string;
  readonly generation: NamespaceGeneration;
}

/** `catalog` with each pinned dataset at its pinned generation (the others as they are). */
export function pinnedCatalog(
  catalog: NamespaceCatalog,
  pins: readonly PinnedGeneration[],
): NamespaceCatalog {
  return {
    ...catalog,
    datasets: catalog.datasets.map((dataset) => {
      const pin = pins.find((each) => each.name.toLowerCase() === dataset.name.toLowerCase());
      return pin === undefined ? dataset : { ...dataset, generation: pin.generation };
    }),
  };
}

/** The pins among `pins` of the datasets `datasets` names, in a stable order; undefined when none. */
export function pinsOf(
  pins: readonly PinnedGeneration[] | undefined,
  datasets: readonly string[],
): readonly PinnedGeneration[] | undefined {
  if (pins === undefined || pins.length === 0) return undefined;
  const names = new Set(datasets.map((name) => name.toLowerCase()));
  const read = pins.filter((pin) => names.has(pin.name.toLowerCase()));
  if (read.length === 0) return undefined;
  return read.sort((a, b) => a.name.localeCompare(b.name));
}

/** The key of a set of pins (each dataset at its generation id), for what is kept per set. */
export function pinsKey(pins: readonly PinnedGeneration[]): string {
  return pins.map((pin) => `${pin.name}@${pin.generation.id}`).join(',');
}

/** A dataset a query read, and the snapshot it read it at. */
export interface DatasetRead {
  readonly name: string;
  readonly snapshotId: number;
}

/** A result column: its name and the engine's type name. */
export interface ResultColumn {
  readonly name: string;
  readonly type: string;
}

/** Where a statement runs, as the engines' parsers see it. */
export type QueryRoute =
  /**
   * In DuckDB; `datasets` are the datasets it reads (those under the views it reads included), or
   * undefined when the parser could not list them; `sql` is the statement to run instead of the one
   * asked (its listings rewritten to Spice's names), when it differs. `statement` is what the check
   * learned (kept with the route inside one thread).
   */
  | {
      readonly engine: 'duckdb';
      readonly datasets: readonly string[] | undefined;
      readonly sql?: string;
      readonly statement?: DuckDbStatement;
    }
  /**
   * In SQLite: it reads only SQLite datasets, or it is SQLite's dialect. `duckdbError`: DuckDB could
   * not parse it (its message), the answer if SQLite finds it reads a DuckDB dataset.
   */
  | {
      readonly engine: 'sqlite';
      readonly datasets: readonly string[] | undefined;
      readonly duckdbError?: string;
    };

/**
 * What stops a query: an `AbortSignal`, or anything with its few members (the query workers use a
 * lighter one than an `AbortController` per query).
 */
export interface QueryCancellation {
  readonly aborted: boolean;
  readonly reason?: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { readonly once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** How one query is bounded. */
export interface NamespaceQueryControl {
  readonly signal?: QueryCancellation;
  /** Refuse (stop reading) past this many rows; 0 or absent: no cap. */
  readonly maxRows?: number;
  /** Refuse (stop reading) past this many bytes of values; 0 or absent: no cap. */
  readonly maxBytes?: number;
  /** Datasets read at a pinned generation instead of the current one (DuckDB; SQLite's catalog carries them). */
  readonly pins?: readonly PinnedGeneration[];
}

/** What a query answered with JSON-safe rows, or which cap it exceeded. */
export type RowsOutcome =
  | {
      readonly kind: 'rows';
      readonly columns: readonly ResultColumn[];
      readonly rows: readonly Record<string, JsonValue>[];
      readonly read: readonly DatasetRead[];
      /** What it read holds for every text of the statement's shape (a router may keep it by shape). */
      readonly shared?: boolean;
    }
  | {
      readonly kind: 'too-large';
      readonly limit: 'rows' | 'bytes';
      readonly read: readonly DatasetRead[];
      /** The bytes of the values read before the cap stopped it (garbage in the reader's heap). */
      readonly bytes?: number;
    };

/**
 * How a query streams Arrow batches: each is handed over as a self-contained IPC stream (`batch`),
 * or, to a sink that keeps them where they were made (`built`), as built: not encoded, and the
 * caps then count the bytes of its buffers instead of its IPC bytes.
 */
export type BatchSink = {
  /**
   * Called once, before any batch, with the result's schema and what it reads (each batch's IPC
   * stream carries the schema too: a sink encodes this one only if it needs it alone).
   */
  schema(schema: Schema, read: readonly DatasetRead[]): void;
} & (
  | {
      /** Resolves when the consumer can take another batch (back-pressure); rejects to stop the query. */
      batch(ipc: Uint8Array, rows: number): Promise<void>;
    }
  | {
      /** The batch as built; rejects to stop the query. */
      built(batch: RecordBatch, rows: number): Promise<void>;
    }
);

export interface BatchControl extends NamespaceQueryControl {
  /** Rows per batch at most (default 65 536). */
  readonly batchRows?: number;
  /** Bytes per batch at most, roughly (default 4 MiB). */
  readonly batchBytes?: number;
  /**
   * Name the statement's parameters' types in the schema's metadata under
   * {@link PARAMETER_TYPES_METADATA}: as DuckDB binds them, or as SQLite's program uses them
   * (sqlite-parameters.ts).
   */
  readonly parameterTypes?: boolean;
}

/**
 * The schema metadata key a result asked with `parameterTypes` carries: a JSON array with one
 * entry per `$n` (in order), the parameter's Arrow type in the snapshot store's JSON form
 * (`"Int64"`, `{"Decimal128":[10,2]}`), or `null` where the engine could not type it (`SELECT $1`).
 * Flight's CreatePreparedStatement answers it as the parameter schema: Arrow's JDBC driver binds a
 * value only to a typed parameter.
 */
export const PARAMETER_TYPES_METADATA = 'ferry:parameter_types';

/** What a streamed query did: the datasets it read, rows and bytes sent; or the cap it exceeded. */
export type BatchOutcome =
  | {
      readonly kind: 'done';
      readonly read: readonly DatasetRead[];
      readonly rows: number;
      readonly bytes: number;
      /** What it read holds for every text of the statement's shape. */
      readonly shared?: boolean;
    }
  | { readonly kind: 'too-large'; readonly limit: 'rows' | 'bytes'; readonly read: readonly DatasetRead[] };

/** Which cap `rows` rows of `bytes` bytes exceed, if any (0 or absent: no cap). */
export function capExceeded(
  rows: number,
  bytes: number,
  control: NamespaceQueryControl,
): 'rows' | 'bytes' | undefined {
  if (control.maxRows !== undefined && control.maxRows > 0 && rows > control.maxRows) return 'rows';
  if (control.maxBytes !== undefined && control.maxBytes > 0 && bytes > control.maxBytes) return 'bytes';
  return undefined;
}

/** Bytes a plain value takes, roughly: what the byte caps count. */
export function valueBytes(value: unknown): number {
  if (value === null || value === undefined) return 1;
  if (typeof value === 'string') return value.length;
  if (typeof value === 'number' || typeof value === 'bigint') return 8;
  if (typeof value === 'boolean') return 1;
  if (value instanceof Uint8Array) return value.byteLength;
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + valueBytes(item), 8);
  if (typeof value === 'object') {
    return Object.values(value).reduce((sum: number, item) => sum + valueBytes(item), 8);
  }
  return 8;
}
