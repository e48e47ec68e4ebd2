/**
 * Results on the wire: the FlightInfo that describes one (its schema in IPC form, the ticket of
 * its one endpoint) and the DoGet stream that carries it — the schema message, then each batch's
 * IPC message as the query worker encoded it (not encoded again), written as gRPC takes them.
 * Writes may run ahead of what gRPC has sent by `writeWindowBytes` (a few batches), so the client
 * never waits for the server to pull the next batch; beyond that the server stops pulling, so a
 * client that stops reading stops the engine and the server holds at most the window. Data headers
 * go out padded to 8 bytes, as the IPC format pads them: some clients rebuild the IPC framing from
 * the header's length and assume it (Lance's Flight SQL client misreads any other length).
 */
import { batchIpcMessages, type IpcMessage, schemaIpcMessage } from '@ferry/engines/namespaces';
import type { ServerWritableStream } from '@grpc/grpc-js';
import type { RecordBatch, Schema } from 'apache-arrow';
import type { FlightContext } from './calls.js';
import { schemaBytes } from './ipc.js';
import type { FlightDescriptor, FlightInfo } from './protocol.js';

export function flightInfo(
  descriptor: FlightDescriptor,
  schema: Schema,
  ticket: Uint8Array,
  rows: number,
): FlightInfo {
  return {
    schema: schemaBytes(schema),
    flightDescriptor: descriptor,
    endpoint: [{ ticket: { ticket }, location: [] }],
    totalRecords: rows,
    totalBytes: -1,
    ordered: false,
  };
}

/**
 * Streams `schema` and `batches` to a DoGet (or metadata) call and ends it; stops (without ending
 * the call) once `signal` aborts. Rejects with the first write's error.
 */
export async function writeResult(
  context: FlightContext,
  call: ServerWritableStream<unknown, unknown>,
  schema: Schema,
  batches: AsyncIterable<RecordBatch> | Iterable<RecordBatch>,
  signal: AbortSignal,
  dataset: string | undefined,
  stopped?: AbortSignal,
): Promise<void> {
  let unsent = 0;
  let failure: Error | undefined;
  let wake: (() => void) | undefined;
  const onAbort = (): void => wake?.();
  signal.addEventListener('abort', onAbort, { once: true });
  // The result stopped on its own (a limit: the client stopped reading for the idle limit, a time
  // limit), maybe while this call waits for the client: the call ends with that reason now.
  const onStopped = (): void => {
    const reason: unknown = stopped?.reason;
    failure ??= reason instanceof Error ? reason : new Error(String(reason));
    wake?.();
  };
  stopped?.addEventListener('abort', onStopped, { once: true });
  const write = (message: IpcMessage): void => {
    const size = message.dataHeader.byteLength + message.dataBody.byteLength;
    unsent += size;
    call.write({ dataHeader: message.dataHeader, dataBody: message.dataBody }, (error?: Error | null) => {
      unsent -= size;
      if (error) failure ??= error;
      wake?.();
    });
  };
  /** Resolves once at most `limit` bytes are unsent (or the call failed or was aborted). */
  const drained = async (limit: number): Promise<void> => {
    while (unsent > limit && failure === undefined && !signal.aborted) {
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = undefined;
    }
    if (failure !== undefined) throw failure;
  };
  try {
    write(schemaIpcMessage(schema));
    let sent = 0;
    for await (const batch of batches) {
      if (signal.aborted) return;
      for (const message of batchIpcMessages(batch)) write(message);
      sent++;
      if (unsent > context.writeWindowBytes) {
        context.logger?.debug(
          { component: 'flight', ...(dataset === undefined ? {} : { dataset }), batchesSent: sent },
          'Flight DoGet waits for the client to take what was sent (back-pressure)',
        );
      }
      await drained(context.writeWindowBytes);
    }
    await drained(0);
    if (!signal.aborted) call.end();
  } finally {
    signal.removeEventListener('abort', onAbort);
    stopped?.removeEventListener('abort', onStopped);
  }
}
