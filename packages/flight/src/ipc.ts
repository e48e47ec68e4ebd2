/**
 * Arrow IPC as Flight carries it: each IPC message split into `data_header` (the flatbuffer
 * Message) and `data_body`, and back. `apache-arrow` writes and reads the stream format and
 * `@ferry/engines` cuts it at message boundaries (`ipcMessages`: the one implementation, which the
 * HTTP Arrow answer uses too), so every byte on the wire is apache-arrow's own encoding.
 */
import { batchIpcMessages, type IpcMessage, ipcMessages, schemaIpcMessage } from '@ferry/engines/namespaces';
import { type RecordBatch, RecordBatchReader, type Schema } from 'apache-arrow';
import { FlightRequestError } from './errors.js';
import type { FlightData } from './protocol.js';

export type { IpcMessage };

const CONTINUATION = 0xffff_ffff;

/** The messages of an IPC stream (schema, batches) as FlightData carries them, without its end-of-stream marker. */
export const splitIpcStream = ipcMessages;

/** The schema message alone (the first FlightData of a DoGet stream). */
export const schemaMessage = schemaIpcMessage;

/** One record batch as the FlightData message(s) that follow the schema. */
export const batchMessages = batchIpcMessages;

/**
 * A schema in its "IPC form", as FlightInfo.schema, a prepared statement's dataset schema and
 * GetTables' `table_schema` carry it: continuation marker, length, flatbuffer Message.
 */
export function schemaBytes(schema: Schema): Uint8Array {
  const { dataHeader } = schemaIpcMessage(schema);
  const out = new Uint8Array(8 + dataHeader.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, CONTINUATION, true);
  view.setInt32(4, dataHeader.length, true);
  out.set(dataHeader, 8);
  return out;
}

/**
 * One FlightData message as the Arrow IPC stream bytes it stands for: continuation marker, the
 * padded length, the flatbuffer header (padded so the body starts 8-byte aligned), the body.
 * Concatenated, a stream's messages are an IPC stream apache-arrow reads.
 */
export function flightDataToIpc(message: {
  readonly dataHeader: Uint8Array;
  readonly dataBody: Uint8Array;
}): Buffer {
  const padded = Math.ceil(message.dataHeader.length / 8) * 8;
  const prefix = Buffer.alloc(8);
  prefix.writeUInt32LE(CONTINUATION, 0);
  prefix.writeInt32LE(padded, 4);
  return Buffer.concat([
    prefix,
    message.dataHeader,
    Buffer.alloc(padded - message.dataHeader.length),
    message.dataBody,
  ]);
}

/** The record batches of a received FlightData stream (DoPut): the schema message first. */
export function readFlightData(messages: readonly FlightData[]): RecordBatch[] {
  const parts = messages.filter((message) => message.dataHeader.length > 0).map(flightDataToIpc);
  if (parts.length === 0) return [];
  try {
    return RecordBatchReader.from(Buffer.concat(parts)).readAll();
  } catch (error) {
    throw new FlightRequestError(
      `The Arrow data sent with DoPut cannot be read (${(error as Error).message}); send an Arrow IPC schema message followed by record batches.`,
      { cause: error },
    );
  }
}
