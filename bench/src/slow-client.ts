/**
 * A client that reads one large result slowly, in a child process of B6 (so its own buffers are
 * not counted in the runtime's memory): over Flight (a grpc-js stub of Flight.proto, DoGet) or
 * `POST /v1/sql` in one of the HTTP formats, pausing `pauseMs` after every `pauseEveryBytes`
 * received, and after every `holdEveryBytes` holding still for `holdMs` — telling its parent
 * first (`{ held: true }`), which measures what the server holds while its client does not read.
 * It counts the rows it got (Arrow: the record batches' lengths; text: the rows' lines or objects)
 * and reports them, the bytes and the time to its parent, then exits.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { FLIGHT_PROTO, flightDataToIpc, PROTO_LOADER_OPTIONS } from '@ferry/flight';
import {
  type ChannelCredentials,
  type ClientReadableStream,
  credentials,
  loadPackageDefinition,
  Metadata,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { RecordBatchReader } from 'apache-arrow';

export type SlowProtocol = 'flight' | 'json' | 'jsonl' | 'csv' | 'sql-v1' | 'arrow';

export interface SlowClientRequest {
  readonly protocol: SlowProtocol;
  readonly sql: string;
  /** `host:port` of the Flight server. */
  readonly flight: string;
  /** `http://host:port` of the HTTP server. */
  readonly http: string;
  readonly expectedRows: number;
  readonly pauseEveryBytes: number;
  readonly pauseMs: number;
  readonly holdEveryBytes: number;
  readonly holdMs: number;
}

/** Sent to the parent when the client stops reading for `holdMs`. */
export interface SlowClientHold {
  readonly held: true;
}

export interface SlowClientReport {
  readonly rows: number;
  readonly bytes: number;
  readonly ms: number;
}

const ACCEPT: Readonly<Record<Exclude<SlowProtocol, 'flight'>, string>> = {
  json: 'application/json',
  jsonl: 'application/x-ndjson',
  csv: 'text/csv',
  'sql-v1': 'application/vnd.spiceai.sql.v1+json',
  arrow: 'application/vnd.apache.arrow.stream',
};

interface FlightStub {
  GetFlightInfo(
    descriptor: { type: 'CMD'; cmd: Buffer },
    metadata: Metadata,
    done: (error: ServiceError | null, info?: { endpoint: { ticket: { ticket: Buffer } }[] }) => void,
  ): void;
  DoGet(ticket: { ticket: Buffer }, metadata: Metadata): ClientReadableStream<FlightData>;
  close(): void;
}

interface FlightData {
  readonly dataHeader: Buffer;
  readonly dataBody: Buffer;
}

/** Yields `chunks`, pausing after every `everyBytes`; counts the bytes. */
async function* paced<T extends Uint8Array>(
  chunks: AsyncIterable<T>,
  request: SlowClientRequest,
  counter: { bytes: number },
): AsyncGenerator<T> {
  let sincePause = 0;
  let sinceHold = 0;
  for await (const chunk of chunks) {
    counter.bytes += chunk.byteLength;
    sincePause += chunk.byteLength;
    sinceHold += chunk.byteLength;
    yield chunk;
    if (sinceHold >= request.holdEveryBytes) {
      sinceHold = 0;
      sincePause = 0;
      const hold: SlowClientHold = { held: true };
      process.send?.(hold);
      await sleep(request.holdMs);
    } else if (sincePause >= request.pauseEveryBytes) {
      sincePause = 0;
      await sleep(request.pauseMs);
    }
  }
}

async function arrowRows(bytes: AsyncIterable<Uint8Array>): Promise<number> {
  let rows = 0;
  for await (const batch of await RecordBatchReader.from(bytes)) rows += batch.numRows;
  return rows;
}

async function overFlight(request: SlowClientRequest, counter: { bytes: number }): Promise<number> {
  const loaded = loadPackageDefinition(loadSync(FLIGHT_PROTO, PROTO_LOADER_OPTIONS)) as unknown as {
    arrow: {
      flight: { protocol: { FlightService: new (address: string, creds: ChannelCredentials) => FlightStub } };
    };
  };
  const stub = new loaded.arrow.flight.protocol.FlightService(request.flight, credentials.createInsecure());
  try {
    const info = await new Promise<{ endpoint: { ticket: { ticket: Buffer } }[] }>((resolve, reject) =>
      stub.GetFlightInfo({ type: 'CMD', cmd: Buffer.from(request.sql) }, new Metadata(), (error, value) =>
        error || value === undefined ? reject(error) : resolve(value),
      ),
    );
    const stream = stub.DoGet({ ticket: info.endpoint[0]?.ticket.ticket as Buffer }, new Metadata());
    async function* ipc() {
      for await (const message of stream as AsyncIterable<FlightData>) yield flightDataToIpc(message);
    }
    return await arrowRows(paced(ipc(), request, counter));
  } finally {
    stub.close();
  }
}

/** Occurrences of `needle` in a byte stream (across chunk boundaries). */
async function count(chunks: AsyncIterable<Uint8Array>, needle: Buffer): Promise<number> {
  let found = 0;
  let carry = Buffer.alloc(0);
  for await (const chunk of chunks) {
    const text = carry.length === 0 ? Buffer.from(chunk) : Buffer.concat([carry, chunk]);
    let at = text.indexOf(needle);
    while (at >= 0) {
      found++;
      at = text.indexOf(needle, at + needle.length);
    }
    carry = text.subarray(Math.max(0, text.length - needle.length + 1));
  }
  return found;
}

async function overHttp(request: SlowClientRequest, counter: { bytes: number }): Promise<number> {
  const protocol = request.protocol as Exclude<SlowProtocol, 'flight'>;
  const response = await fetch(`${request.http}/v1/sql`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', accept: ACCEPT[protocol] },
    body: request.sql,
  });
  if (response.status !== 200 || response.body === null) {
    throw new Error(
      `POST /v1/sql (${ACCEPT[protocol]}) answered ${response.status}: ${await response.text()}`,
    );
  }
  const body = paced(response.body as unknown as AsyncIterable<Uint8Array>, request, counter);
  switch (protocol) {
    case 'arrow':
      return arrowRows(body);
    case 'jsonl':
      return count(body, Buffer.from('\n'));
    case 'csv':
      return (await count(body, Buffer.from('\n'))) - 1;
    default:
      return count(body, Buffer.from('{"id":'));
  }
}

async function main(): Promise<void> {
  const request = JSON.parse(process.argv[2] ?? '{}') as SlowClientRequest;
  const began = performance.now();
  const counter = { bytes: 0 };
  const rows =
    request.protocol === 'flight' ? await overFlight(request, counter) : await overHttp(request, counter);
  if (rows !== request.expectedRows) {
    throw new Error(`the slow ${request.protocol} client got ${rows} rows; expected ${request.expectedRows}`);
  }
  const report: SlowClientReport = { rows, bytes: counter.bytes, ms: performance.now() - began };
  process.send?.(report);
}

await main();
