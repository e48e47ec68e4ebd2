/**
 * How a DuckDB result becomes Arrow batches inside the query worker: the schema from the result's
 * column types (with DuckDB's type names), then each data chunk's vectors appended column by column
 * (`DuckDbBatchBuilder`, duckdb-chunk-arrow.ts), a batch sent every `batchRows` rows or about
 * `batchBytes`, each handed to the sink only once it can take it (back-pressure), and reading
 * stopped at the first batch over a cap.
 */
import type { DuckDBDataChunk, DuckDBResult } from '@duckdb/node-api';
import { batchToIpc } from './arrow-results.js';
import { DuckDbBatchBuilder } from './duckdb-chunk-arrow.js';
import { uniqueColumnNames } from './encode.js';
import {
  type BatchControl,
  type BatchOutcome,
  type BatchSink,
  capExceeded,
  type DatasetRead,
} from './namespace-types.js';

const MIB = 1024 * 1024;
/** Rows of a full DuckDB data chunk (STANDARD_VECTOR_SIZE). */
const FULL_CHUNK = 2_048;

/**
 * Streams `result` to `sink`; `stop` interrupts the query in DuckDB, `emitted` says the caller got
 * something (a query that emitted is not run again), `aside` awaits the sink while it takes a batch
 * (a consumer that stops reading must not keep its connection from the other queries), `metadata`
 * is the schema's (`BatchControl.parameterTypes`).
 */
export async function sendDuckDbBatches(
  result: DuckDBResult,
  read: readonly DatasetRead[],
  sink: BatchSink,
  control: BatchControl,
  stop: () => void,
  emitted: () => void,
  aside: <T>(wait: Promise<T>) => Promise<T>,
  metadata?: ReadonlyMap<string, string>,
): Promise<BatchOutcome> {
  const batchRows = control.batchRows ?? 65_536;
  const batchBytes = control.batchBytes ?? 4 * MIB;
  // The schema goes out with the first chunk: a query that fails while DuckDB computes it
  // (out of memory, say) has handed nothing over yet, so it can still run once more. The builder
  // is made then too, its buffers sized for a batch — or, when the first chunk is not full (a
  // small answer, most likely), for that chunk: a point lookup does not zero 8,192 rows' worth
  // of every column (they grow if more rows come).
  let builder: DuckDbBatchBuilder | undefined;
  const start = (chunk: DuckDBDataChunk | null): DuckDbBatchBuilder => {
    if (builder !== undefined) return builder;
    const first = chunk?.rowCount ?? 0;
    const capacity = first < FULL_CHUNK ? Math.max(first, 1) : Math.min(batchRows, 8_192);
    const names = uniqueColumnNames(result.columnNames());
    builder = new DuckDbBatchBuilder(names, result.columnTypes(), capacity, metadata);
    sink.schema(builder.schema, read);
    emitted();
    return builder;
  };
  let rows = 0;
  let bytes = 0;
  const send = async (full: DuckDbBatchBuilder): Promise<'rows' | 'bytes' | undefined> => {
    const count = full.rows;
    const built = full.flush();
    const ipc = 'batch' in sink ? batchToIpc(full.schema, built) : undefined;
    rows += count;
    bytes += ipc?.byteLength ?? built.data.byteLength;
    const limit = capExceeded(rows, bytes, control);
    if (limit !== undefined) return limit;
    try {
      await aside('batch' in sink ? sink.batch(ipc as Uint8Array, count) : sink.built(built, count));
    } catch (error) {
      // The sink stops the query (it is cancelled, or wants no more): nothing more is computed.
      stop();
      throw error;
    }
    return undefined;
  };
  for (;;) {
    const chunk = await result.fetchChunk();
    const into = start(chunk);
    if (chunk === null || chunk.rowCount === 0) break;
    // A batch ends at batchRows rows or (checked per chunk) at about batchBytes.
    const size = chunk.rowCount;
    for (let at = 0; at < size; ) {
      const take = Math.min(size - at, batchRows - into.rows);
      into.append(chunk, at, at + take);
      at += take;
      if (into.rows < batchRows && into.bytes < batchBytes) continue;
      const limit = await send(into);
      if (limit !== undefined) {
        stop();
        return { kind: 'too-large', limit, read };
      }
    }
  }
  if (builder !== undefined && builder.rows > 0) {
    const limit = await send(builder);
    if (limit !== undefined) return { kind: 'too-large', limit, read };
  }
  return { kind: 'done', read, rows, bytes };
}
