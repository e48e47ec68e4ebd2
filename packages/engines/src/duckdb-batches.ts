/**
 * How a DuckDB result becomes Arrow batches inside the query worker: the schema from the result's
 * column types (with DuckDB's type names), then rows appended to a batch builder chunk by chunk, a
 * batch sent every `batchRows` rows or about `batchBytes`, each handed to the sink only once it
 * can take it (back-pressure), and reading stopped at the first batch over a cap.
 */
import type { DuckDBResult, DuckDBType } from '@duckdb/node-api';
import { type ArrowValue, arrowSchemaOf, batchToIpc, RecordBatchBuilder } from './arrow-results.js';
import { duckDbArrowValue } from './duckdb-arrow.js';
import { duckDbTypeToArrow } from './duckdb-types.js';
import { uniqueColumnNames } from './encode.js';
import {
  type BatchControl,
  type BatchOutcome,
  type BatchSink,
  capExceeded,
  type DatasetRead,
} from './namespace-types.js';

const MIB = 1024 * 1024;

/**
 * Streams `result` to `sink`; `stop` interrupts the query in DuckDB, `emitted` says the caller got
 * something (a query that emitted is not run again).
 */
export async function sendDuckDbBatches(
  result: DuckDBResult,
  read: readonly DatasetRead[],
  sink: BatchSink,
  control: BatchControl,
  stop: () => void,
  emitted: () => void,
): Promise<BatchOutcome> {
  const names = uniqueColumnNames(result.columnNames());
  const types = result.columnTypes();
  const schema = arrowSchemaOf(
    types.map((type: DuckDBType, index) => ({
      name: names[index] as string,
      type: duckDbTypeToArrow(type) ?? 'Utf8',
      typeName: type.toString(),
    })),
  );
  const fieldTypes = schema.fields.map((field) => field.type);
  sink.schema(batchToIpc(schema), read);
  emitted();
  const builder = new RecordBatchBuilder(schema);
  const batchRows = control.batchRows ?? 65_536;
  const batchBytes = control.batchBytes ?? 4 * MIB;
  let rows = 0;
  let bytes = 0;
  const send = async (): Promise<'rows' | 'bytes' | undefined> => {
    const count = builder.rows;
    const ipc = batchToIpc(schema, builder.flush());
    rows += count;
    bytes += ipc.byteLength;
    const limit = capExceeded(rows, bytes, control);
    if (limit !== undefined) return limit;
    await sink.batch(ipc, count);
    return undefined;
  };
  for (;;) {
    const chunk = await result.fetchChunk();
    if (chunk === null || chunk.rowCount === 0) break;
    for (const values of chunk.getRows()) {
      builder.appendRow(
        values.map((value, index): ArrowValue => duckDbArrowValue(value, fieldTypes[index] as never)),
      );
      // A batch ends at batchRows rows, or (checked every 256 rows) at about batchBytes.
      const full = builder.rows >= batchRows || (builder.rows % 256 === 0 && builder.bytes >= batchBytes);
      if (!full) continue;
      const limit = await send();
      if (limit !== undefined) {
        stop();
        return { kind: 'too-large', limit, read };
      }
    }
  }
  if (builder.rows > 0) {
    const limit = await send();
    if (limit !== undefined) return { kind: 'too-large', limit, read };
  }
  return { kind: 'done', read, rows, bytes };
}
