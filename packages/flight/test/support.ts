/**
 * Shared setup of the Flight tests: a real local S3 (fauxqs), datasets published by the real
 * writer (typed DuckDB and SQLite tables), a runtime serving them, and the Flight server (plus,
 * where a test compares, the HTTP server) in front of it. Also a plain `@grpc/grpc-js` Flight
 * client loaded from the same protos, which tests use as "a Flight client nobody here wrote":
 * only grpc-js, proto-loader, protobufjs and apache-arrow do the work.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRuntime, type Runtime, type RuntimeOptions } from '@ferry/runtime';
import {
  type LocalAws,
  localStoreParams,
  startLocalAws,
  type WatchedLogger,
  watchedLogger,
} from '@ferry/test-support';
import { publishSnapshot } from '@ferry/writer';
import {
  type ChannelCredentials,
  type ClientDuplexStream,
  type ClientReadableStream,
  type ClientUnaryCall,
  credentials as grpcCredentials,
  loadPackageDefinition,
  Metadata,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { type RecordBatch, RecordBatchReader, type Schema, type Table, tableFromIPC } from 'apache-arrow';
import protobuf from 'protobufjs';
import {
  FLIGHT_PROTO,
  type FlightServerOptions,
  flightDataToIpc,
  PROTO_DIR,
  type RunningFlightServer,
  startFlightServer,
} from '../src/index.js';

export const BUCKET = 'ferry-flight';

export type DatasetSpec = {
  readonly name: string;
  readonly engine: 'duckdb' | 'sqlite';
} & (
  | {
      /** A DuckDB query producing the table. */
      readonly sql: string;
    }
  | {
      /** A database file holding the table, published as it is. */
      readonly file: string;
    }
);

/** Typed columns, as a BI tool would meet them: integers past 2^53, decimals, dates, timestamps, blobs. */
export const ORDERS_SQL = `SELECT i::BIGINT AS id,
  (i * 1.25)::DECIMAL(10,2) AS amount,
  DATE '2026-11-01' + (i % 28)::INTEGER AS placed,
  TIMESTAMP '2026-11-29 08:00:00' + to_milliseconds(i * 1500) AS placed_at,
  'customer-' || (i % 7) AS customer,
  i % 2 = 0 AS paid,
  i / 8.0 AS ratio,
  ('blob' || i)::BLOB AS payload,
  9007199254740993 + i AS big,
  CASE WHEN i % 5 = 0 THEN NULL ELSE 'note ' || i END AS note
FROM range(40) t(i)`;

export const USERS_SQL = `SELECT i::BIGINT AS id, 'user ' || i AS name, (i * 0.5)::DOUBLE AS score,
  i % 3 = 0 AS admin, DATE '2026-01-01' + i::INTEGER AS joined
FROM range(25) t(i)`;

function spicepod(
  aws: LocalAws,
  prefix: string,
  datasets: readonly Pick<DatasetSpec, 'name' | 'engine'>[],
  extra: object = {},
): object {
  const params = {
    s3_endpoint: aws.endpoint,
    allow_http: true,
    s3_region: aws.region,
    s3_auth: 'key',
    s3_key: aws.credentials.accessKeyId,
    s3_secret: aws.credentials.secretAccessKey,
  };
  return {
    version: 'v1',
    kind: 'Spicepod',
    name: 'flight-test',
    snapshots: { location: `s3://${BUCKET}/${prefix}`, params },
    datasets: datasets.map(({ name, engine }) => ({
      from: `postgres:public.${name}`,
      name,
      acceleration: {
        engine,
        mode: 'file',
        refresh_mode: 'snapshot',
        refresh_check_interval: '1h',
        snapshots: 'enabled',
      },
    })),
    ...extra,
  };
}

export interface Served {
  readonly aws: LocalAws;
  readonly runtime: Runtime;
  readonly flight: RunningFlightServer;
  readonly logger: WatchedLogger;
  close(): Promise<void>;
}

/**
 * Publishes `datasets` under `prefix`, starts a runtime on them (waiting until every one serves)
 * and a Flight server on a free port in front of it.
 */
export async function serveDatasets(
  datasets: readonly DatasetSpec[],
  options: {
    prefix: string;
    flight?: FlightServerOptions;
    runtime?: RuntimeOptions;
    /** Datasets configured but never published (they wait for a first snapshot). */
    unpublished?: readonly string[];
    /** More top-level spicepod keys (`views`, `runtime`). */
    spicepod?: object;
  },
): Promise<Served> {
  const aws = await startLocalAws();
  await aws.createBucket(BUCKET);
  for (const dataset of datasets) {
    await publishSnapshot({
      dataset: dataset.name,
      engine: dataset.engine,
      location: `s3://${BUCKET}/${options.prefix}`,
      storeParams: localStoreParams(aws),
      source: 'sql' in dataset ? { sql: dataset.sql } : { file: dataset.file },
    });
  }
  const dir = await mkdtemp(join(tmpdir(), 'ferry-flight-'));
  const logger = watchedLogger();
  const runtime = await createRuntime(
    {
      object: spicepod(
        aws,
        options.prefix,
        [...datasets, ...(options.unpublished ?? []).map((name) => ({ name, engine: 'duckdb' as const }))],
        options.spicepod,
      ),
      baseDir: dir,
    },
    { logger, dataDir: join(dir, 'data'), ...options.runtime },
  );
  for (const dataset of datasets) await runtime.ready(dataset.name, { timeoutMs: 60_000 });
  const flight = await startFlightServer(runtime, { port: 0, logger, ...options.flight });
  return {
    aws,
    runtime,
    flight,
    logger,
    async close() {
      await flight.close();
      await runtime.close();
      await aws.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

// --- A plain Flight client from the protos ------------------------------------------------------

export interface FlightDescriptorMessage {
  readonly type: 'CMD' | 'PATH';
  readonly cmd?: Uint8Array;
  readonly path?: readonly string[];
}

export interface FlightInfoMessage {
  readonly schema: Buffer;
  readonly endpoint: { readonly ticket: { readonly ticket: Buffer } }[];
  readonly totalRecords: number;
  readonly flightDescriptor: { readonly path: string[] };
}

export interface FlightDataMessage {
  readonly dataHeader: Buffer;
  readonly dataBody: Buffer;
  readonly appMetadata: Buffer;
}

type Callback<T> = (error: ServiceError | null, value?: T) => void;

export interface FlightStub {
  Handshake(metadata: Metadata): ClientDuplexStream<{ payload: Uint8Array }, { payload: Buffer }>;
  GetFlightInfo(
    descriptor: FlightDescriptorMessage,
    metadata: Metadata,
    callback: Callback<FlightInfoMessage>,
  ): ClientUnaryCall;
  GetSchema(
    descriptor: FlightDescriptorMessage,
    metadata: Metadata,
    callback: Callback<{ schema: Buffer }>,
  ): ClientUnaryCall;
  DoGet(ticket: { ticket: Uint8Array }, metadata: Metadata): ClientReadableStream<FlightDataMessage>;
  DoPut(
    metadata: Metadata,
  ): ClientDuplexStream<
    { flightDescriptor?: FlightDescriptorMessage; dataHeader?: Uint8Array; dataBody?: Uint8Array },
    { appMetadata: Buffer }
  >;
  DoAction(
    action: { type: string; body: Uint8Array },
    metadata: Metadata,
  ): ClientReadableStream<{ body: Buffer }>;
  ListFlights(
    criteria: { expression: Uint8Array },
    metadata: Metadata,
  ): ClientReadableStream<FlightInfoMessage>;
  close(): void;
}

/** A grpc-js stub of `FlightService` from Flight.proto (proto-loader defaults: camelCase, int64 as numbers). */
export function flightStub(
  address: string,
  channel: ChannelCredentials = grpcCredentials.createInsecure(),
): FlightStub {
  const definition = loadSync(FLIGHT_PROTO, {
    keepCase: false,
    longs: Number,
    enums: String,
    defaults: true,
  });
  const loaded = loadPackageDefinition(definition) as unknown as {
    arrow: {
      flight: {
        protocol: { FlightService: new (address: string, credentials: ChannelCredentials) => FlightStub };
      };
    };
  };
  return new loaded.arrow.flight.protocol.FlightService(address, channel);
}

/** `authorization: Bearer <key>` metadata (none without a key). */
export function bearer(key?: string): Metadata {
  const metadata = new Metadata();
  if (key !== undefined) metadata.set('authorization', `Bearer ${key}`);
  return metadata;
}

let sqlRoot: protobuf.Root | undefined;

/** Flight SQL messages from FlightSql.proto, packed in `google.protobuf.Any` as drivers send them. */
export function sqlCommand(name: string, fields: Record<string, unknown>): Buffer {
  if (sqlRoot === undefined) {
    sqlRoot = new protobuf.Root();
    sqlRoot.resolvePath = (_origin, target) =>
      target.startsWith('google/') ? target : join(PROTO_DIR, target);
    sqlRoot.loadSync(['FlightSql.proto', 'google/protobuf/any.proto']);
  }
  const type = sqlRoot.lookupType(`arrow.flight.protocol.sql.${name}`);
  const any = sqlRoot.lookupType('google.protobuf.Any');
  return Buffer.from(
    any
      .encode({
        type_url: `type.googleapis.com/arrow.flight.protocol.sql.${name}`,
        value: type.encode(type.fromObject(fields)).finish(),
      })
      .finish(),
  );
}

/** Decodes a Flight SQL message that came packed in an Any (an action result). */
export function decodeSqlAny(name: string, bytes: Uint8Array): Record<string, unknown> {
  const root = sqlRoot as protobuf.Root;
  const any = root.lookupType('google.protobuf.Any').decode(bytes) as unknown as {
    type_url: string;
    value: Uint8Array;
  };
  const type = root.lookupType(`arrow.flight.protocol.sql.${name}`);
  return type.toObject(type.decode(any.value), { bytes: Buffer, defaults: true }) as Record<string, unknown>;
}

export function call<T>(run: (callback: Callback<T>) => void): Promise<T> {
  return new Promise((resolve, reject) =>
    run((error, value) => (error ? reject(error) : resolve(value as T))),
  );
}

/** All messages of a server stream; rejects with the call's status. */
export function collect<T>(stream: ClientReadableStream<T>): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const items: T[] = [];
    stream.on('data', (item: T) => items.push(item));
    stream.on('error', reject);
    stream.on('end', () => resolve(items));
  });
}

/** A schema in its IPC form (FlightInfo.schema, GetTables' table_schema) read back with apache-arrow. */
export function readSchema(bytes: Uint8Array): Schema {
  const eos = Buffer.alloc(8);
  eos.writeUInt32LE(0xffff_ffff, 0);
  const reader = RecordBatchReader.from(Buffer.concat([bytes, eos]));
  reader.open();
  return reader.schema;
}

/** A DoGet answer as an Arrow table (apache-arrow reads the IPC stream). */
export function tableOf(messages: readonly FlightDataMessage[]): Table {
  return tableFromIPC(Buffer.concat(messages.map(flightDataToIpc)));
}

/** The record batches of a DoGet, read as they arrive. */
export async function* batchesOf(
  stream: ClientReadableStream<FlightDataMessage>,
): AsyncGenerator<RecordBatch> {
  async function* bytes() {
    for await (const message of stream) yield flightDataToIpc(message as FlightDataMessage);
  }
  const reader = await RecordBatchReader.from(bytes());
  for await (const batch of reader) yield batch;
}

/** GetFlightInfo then DoGet of its one ticket: the whole result as a table. */
export async function fetchTable(
  stub: FlightStub,
  descriptor: FlightDescriptorMessage,
  metadata = bearer(),
): Promise<Table> {
  const info = await call<FlightInfoMessage>((done) => stub.GetFlightInfo(descriptor, metadata, done));
  const ticket = info.endpoint[0]?.ticket.ticket as Buffer;
  return tableOf(await collect(stub.DoGet({ ticket }, metadata)));
}

export { watchedLogger };

/**
 * A statement over Flight SQL as a driver sends it — GetFlightInfo, then DoGet of its ticket — each
 * call with `metadata` (DoGet with `doGetMetadata` when given): the table read and the
 * `x-ferry-snapshot` DoGet's response metadata named.
 */
export async function statementWithMetadata(
  stub: FlightStub,
  sql: string,
  metadata: Metadata,
  doGetMetadata: Metadata = metadata,
): Promise<{ readonly table: Table; readonly snapshot: string | Buffer | undefined }> {
  const info = await call<FlightInfoMessage>((done) =>
    stub.GetFlightInfo(
      { type: 'CMD', cmd: sqlCommand('CommandStatementQuery', { query: sql }) },
      metadata,
      done,
    ),
  );
  const doGet = stub.DoGet({ ticket: info.endpoint[0]?.ticket.ticket as Buffer }, doGetMetadata);
  const headers = new Promise<Metadata>((resolve) => doGet.on('metadata', resolve));
  const table = tableOf(await collect(doGet));
  return { table, snapshot: (await headers).get('x-ferry-snapshot')[0] };
}
