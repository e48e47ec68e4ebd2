/**
 * Where Flight results come from: {@link ResultSource}, the one interface between the Flight
 * server and the runtime. `stream(sql, params, signal)` answers with the result's Arrow schema and
 * an async iterator of record batches, which the server pulls one batch at a time as the client
 * reads (gRPC back-pressure).
 *
 * {@link runtimeResultSource} is the implementation on `runtime.queryStream()`: the query pools
 * produce Arrow record batches (each field carrying its engine's type name, which JDBC and ADBC read
 * from `ARROW:FLIGHT:SQL:TYPE_NAME`), and only as the consumer takes them, so a result larger than
 * memory streams; this file only keeps each batch under gRPC's message limit.
 */
import type { QueryParam } from '@ferry/core/base';
import type { CacheStatus, DatasetRead, Runtime } from '@ferry/runtime';
import type { Data, RecordBatch, Schema } from 'apache-arrow';

export interface ArrowResult {
  readonly schema: Schema;
  /** The one dataset the statement read; absent when it read none or several. */
  readonly dataset: string | undefined;
  /** Rows in the result when known before streaming; -1 when not. */
  readonly totalRows: number;
  /** The record batches, pulled one at a time; stops early when the signal aborts. */
  readonly batches: AsyncIterable<RecordBatch>;
  /** The results cache's part (`x-cache` / `results-cache-status` metadata); absent when it does not apply. */
  readonly cache?: CacheStatus;
  /** Aborted with the reason when the result stops on its own (a limit), even while nobody reads it. */
  readonly stopped?: AbortSignal;
  /** Every dataset read and its snapshot (`x-ferry-snapshot` metadata); absent for a metadata command. */
  readonly datasets?: readonly DatasetRead[];
}

export interface ResultOptions {
  /** Do not answer from the results cache (the call's `cache-control: no-cache`). */
  readonly noCache?: boolean;
  /** The call's `x-ferry-max-staleness`, in ms: the query fails with `ERR_STALE` past it. */
  readonly maxStalenessMs?: number;
  /** The call's `x-ferry-snapshot`: datasets read at these snapshots (dataset → snapshot id). */
  readonly snapshots?: Readonly<Record<string, number>>;
  /** The schema names the statement's parameters' types (the runtime's `StreamOptions.parameterTypes`). */
  readonly parameterTypes?: boolean;
  /** A schema lookup: what the task history records of it (the runtime's `StreamOptions.taskHistory`). */
  readonly taskHistory?: 'failure' | 'none';
}

export interface ResultSource {
  /** Runs one read-only statement; rejects with the runtime's errors (codes and messages). */
  stream(
    sql: string,
    params: readonly QueryParam[],
    signal: AbortSignal,
    options?: ResultOptions,
  ): Promise<ArrowResult>;
}

export interface RuntimeResultSourceOptions {
  /** Rows per record batch at most; default 8 192 (DataFusion's batch size, as Spice sends). */
  readonly maxBatchRows?: number;
  /**
   * Bytes of Arrow buffers per batch at most (a batch of wide rows is sent in slices); default
   * 2 MiB, well under gRPC's default 4 MiB receive limit of every client.
   */
  readonly maxBatchBytes?: number;
}

/** Bytes of a column's buffers (values, offsets, validity, union type ids), its children's included. */
function bufferBytes(data: Data): number {
  const own = [data.values, data.valueOffsets, data.nullBitmap, data.typeIds] as (
    | ArrayBufferView
    | undefined
  )[];
  let bytes = own.reduce((sum, buffer) => sum + (buffer?.byteLength ?? 0), 0);
  for (const child of data.children) bytes += bufferBytes(child);
  return bytes;
}

/** `batch` in slices of at most about `maxBytes` of Arrow buffers (a slice shares the batch's memory). */
export function* slicesOf(batch: RecordBatch, maxBytes: number): Generator<RecordBatch> {
  const bytes = bufferBytes(batch.data);
  if (bytes <= maxBytes || batch.numRows <= 1) {
    yield batch;
    return;
  }
  const rows = Math.max(1, Math.floor((batch.numRows * maxBytes) / bytes));
  for (let at = 0; at < batch.numRows; at += rows) yield batch.slice(at, Math.min(at + rows, batch.numRows));
}

async function* bounded(batches: AsyncIterable<RecordBatch>, maxBytes: number): AsyncGenerator<RecordBatch> {
  for await (const batch of batches) yield* slicesOf(batch, maxBytes);
}

/** A {@link ResultSource} over `runtime.queryStream()`. */
export function runtimeResultSource(
  runtime: Runtime,
  options: RuntimeResultSourceOptions = {},
): ResultSource {
  const batchRows = options.maxBatchRows ?? 8_192;
  const maxBytes = options.maxBatchBytes ?? 2 * 1024 * 1024;
  return {
    async stream(sql, params, signal, options = {}) {
      const result = await runtime.queryStream(sql, params, {
        signal,
        batchRows,
        protocol: 'flight',
        ...(options.noCache === true ? { noCache: true } : {}),
        ...(options.maxStalenessMs === undefined ? {} : { maxStalenessMs: options.maxStalenessMs }),
        ...(options.snapshots === undefined ? {} : { snapshots: options.snapshots }),
        ...(options.parameterTypes === true ? { parameterTypes: true } : {}),
        ...(options.taskHistory === undefined ? {} : { taskHistory: options.taskHistory }),
      });
      return {
        schema: result.schema,
        dataset: result.dataset ?? undefined,
        totalRows: -1,
        batches: bounded(result.batches, maxBytes),
        stopped: result.stopped,
        ...(result.cache === undefined ? {} : { cache: result.cache }),
        datasets: result.datasets,
      };
    },
  };
}
