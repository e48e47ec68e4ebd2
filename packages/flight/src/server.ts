/**
 * The Arrow Flight / Flight SQL server: `startFlightServer(runtime, options)` binds a
 * `@grpc/grpc-js` server (127.0.0.1:50051 by default, as Spice) that answers Spice's SDKs (a plain
 * SQL command to GetFlightInfo, parameters through prepared statements) and Flight SQL drivers
 * (Any-packed commands, Basic auth handshake, metadata commands for browsing). Results come from
 * a {@link ResultSource} and stream one record batch at a time, each written only once the client
 * has taken the one before. The runtime is never closed here: its owner does that, after `close()`.
 */
import { type JsonValue, redactSecrets } from '@ferry/core';
import { assertReadOnlySql, RUNTIME_SCHEMA, WriteRejectedError } from '@ferry/engines';
import { apiKeyCheck, asksNoCache, type Logger, type Runtime } from '@ferry/runtime';
import {
  Metadata,
  Server,
  ServerCredentials,
  type ServerDuplexStream,
  type ServerUnaryCall,
  type ServerWritableStream,
  type sendUnaryData,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { Field, Null, type RecordBatch, Schema } from 'apache-arrow';
import { keyCheck } from './auth.js';
import * as catalog from './catalog.js';
import {
  FlightRequestError,
  FlightUnauthenticatedError,
  FlightUnsupportedError,
  grpcErrorOf,
} from './errors.js';
import { HandleTable } from './handles.js';
import { batchMessages, type IpcMessage, readFlightData, schemaBytes, schemaMessage } from './ipc.js';
import { parametersOf, placeholderCount } from './parameters.js';
import {
  decodeBasicAuth,
  decodeSqlMessage,
  encodeSql,
  type FlightData,
  type FlightDescriptor,
  type FlightInfo,
  flightServiceDefinition,
  packSql,
  type SqlMessage,
  unpackSql,
} from './protocol.js';
import {
  type ArrowResult,
  type ResultOptions,
  type ResultSource,
  runtimeResultSource,
} from './result-source.js';

export const DEFAULT_FLIGHT_HOST = '127.0.0.1';
export const DEFAULT_FLIGHT_PORT = 50051;

export interface FlightTlsOptions {
  /** The PEM certificate chain itself (read the file first: `readFileSync(path)`). */
  readonly cert: string | Buffer;
  /** The PEM private key, likewise. */
  readonly key: string | Buffer;
}

export interface FlightServerOptions {
  /** Interface to bind; default `127.0.0.1` (use `0.0.0.0` to accept remote clients, with `apiKey` and `tls`). */
  readonly host?: string;
  /** Port; default 50051; 0 picks a free one (read it from `port` / `address`). */
  readonly port?: number;
  /**
   * A key accepted beside the spicepod's `runtime.auth.api-key` keys (which always apply): with any
   * key, every call needs one (bearer token, `x-api-key`, or the password of a Basic auth Handshake).
   */
  readonly apiKey?: string;
  /** Serve TLS (`grpc+tls://`) with this certificate and key; default: the spicepod's `runtime.tls`, else plaintext. */
  readonly tls?: FlightTlsOptions;
  /** Where results come from; default {@link runtimeResultSource} over `runtime.query()`. */
  readonly source?: ResultSource;
  /** Where unexpected errors (debug: back-pressure waits) are logged; default nowhere. */
  readonly logger?: Logger;
  /** How long a GetFlightInfo result waits for its DoGet; default 60 000 ms. */
  readonly ticketTtlMs?: number;
  /** Results waiting for their DoGet at most; default 64 (more: RESOURCE_EXHAUSTED). */
  readonly maxTickets?: number;
  /** How long an unused prepared statement stays open; default 600 000 ms. */
  readonly statementTtlMs?: number;
  /** Open prepared statements at most; default 1 024. */
  readonly maxStatements?: number;
  /** How long `close()` lets running calls finish before cutting them; default 5 000 ms. */
  readonly closeGraceMs?: number;
}

export interface RunningFlightServer {
  /** `host:port` as bound (the real port when 0 was asked): what a Flight client connects to. */
  readonly address: string;
  readonly host: string;
  readonly port: number;
  /** `grpc://host:port`, or `grpc+tls://host:port` with TLS. */
  readonly url: string;
  /** Stops the server (running streams are cut after the grace period); the runtime stays open. */
  close(): Promise<void>;
}

interface Pending {
  readonly result: ArrowResult;
  readonly controller: AbortController;
}

interface Prepared {
  readonly sql: string;
  params: JsonValue[];
}

/** What a descriptor or ticket asks for, once decoded. */
type Request =
  | { readonly kind: 'statement'; readonly sql: string; readonly params: readonly JsonValue[] }
  | { readonly kind: 'ticket'; readonly handle: Uint8Array }
  | { readonly kind: 'metadata'; readonly command: SqlMessage };

const METADATA_COMMANDS: ReadonlySet<string> = new Set([
  'CommandGetCatalogs',
  'CommandGetDbSchemas',
  'CommandGetTables',
  'CommandGetTableTypes',
  'CommandGetSqlInfo',
  'CommandGetPrimaryKeys',
  'CommandGetImportedKeys',
  'CommandGetExportedKeys',
  'CommandGetCrossReference',
]);

const ACTIONS = [
  {
    type: 'CreatePreparedStatement',
    description:
      'Prepare a read-only SQL statement (ActionCreatePreparedStatementRequest); bind parameters with DoPut.',
  },
  {
    type: 'ClosePreparedStatement',
    description: 'Close a prepared statement (ActionClosePreparedStatementRequest).',
  },
];

function pem(value: string | Buffer): Buffer {
  return Buffer.isBuffer(value) ? value : Buffer.from(value);
}

const quoted = (name: string): string => `"${name.replaceAll('"', '""')}"`;
const datasetSql = (name: string): string => `SELECT * FROM ${quoted(name)}`;

function text(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('utf8');
}

function field<T>(message: SqlMessage, name: string): T {
  return message.fields[name] as T;
}

/** Starts the Flight server; resolves once it listens. */
export async function startFlightServer(
  runtime: Runtime,
  options: FlightServerOptions = {},
): Promise<RunningFlightServer> {
  const keys = apiKeyCheck(runtime.config, [options.apiKey]);
  // The spicepod's runtime.flight.max_message_size: the largest message a client may send, and
  // the bound of the result messages sent to it (each batch is cut to under half of it).
  const maxMessage = runtime.config.flightMaxMessageBytes;
  const source =
    options.source ??
    runtimeResultSource(
      runtime,
      maxMessage === undefined
        ? {}
        : { maxBatchBytes: Math.min(2 * 1024 * 1024, Math.floor(maxMessage / 2)) },
    );
  const logger = options.logger;
  const admitted = keyCheck(keys);
  const authorized = (metadata: Metadata): boolean => admitted(metadata) !== undefined;
  const ticketTtlMs = options.ticketTtlMs ?? 60_000;
  const pending = new HandleTable<Pending>('ticket', ticketTtlMs, options.maxTickets ?? 64, (entry) =>
    entry.controller.abort(),
  );
  const statements = new HandleTable<Prepared>(
    'prepared statement',
    options.statementTtlMs ?? 600_000,
    options.maxStatements ?? 1_024,
  );
  const liveCalls = new Set<AbortController>();

  const report = (error: unknown, rpc: string) => {
    const grpc = grpcErrorOf(error);
    if (grpc.internal) {
      logger?.error(
        { component: 'flight', rpc, err: error },
        `Flight ${rpc} failed: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    // A resolved secret never reaches a client, whatever message carried it.
    return { ...grpc, details: redactSecrets(grpc.details, runtime.config.secretReferences) };
  };

  const datasetNames = (): string[] =>
    runtime
      .datasets()
      .filter((info) => info.state !== 'failed')
      .map((info) => info.name);

  /** Every table GetTables lists: the datasets, the spicepod's views, the runtime's own tables. */
  const listedTables = (): catalog.ListedTable[] => [
    ...datasetNames().map((name) => ({ schema: catalog.SCHEMA_NAME, name, type: catalog.TABLE_TYPE })),
    ...runtime.config.views.map((view) => ({
      schema: catalog.SCHEMA_NAME,
      name: view.name,
      type: catalog.VIEW_TYPE,
    })),
    ...(runtime.config.taskHistory.enabled
      ? [{ schema: RUNTIME_SCHEMA, name: 'task_history', type: catalog.TABLE_TYPE }]
      : []),
  ];

  /** The schema a table would stream, or an empty one while its dataset has no snapshot. */
  const tableSchema = async (table: Pick<catalog.ListedTable, 'schema' | 'name'>): Promise<Schema> => {
    const controller = new AbortController();
    try {
      const result = await source.stream(
        `SELECT * FROM ${catalog.qualifiedName(table)} LIMIT 0`,
        [],
        controller.signal,
      );
      return result.schema;
    } catch {
      return new Schema([]);
    } finally {
      controller.abort();
    }
  };

  const metadataResult = async (command: SqlMessage): Promise<catalog.MetadataResult> => {
    switch (command.name) {
      case 'CommandGetCatalogs':
        return catalog.catalogs();
      case 'CommandGetDbSchemas':
        return catalog.dbSchemas(field(command, 'catalog'), field(command, 'dbSchemaFilterPattern'), [
          ...new Set([catalog.SCHEMA_NAME, ...listedTables().map((table) => table.schema)]),
        ]);
      case 'CommandGetTables': {
        const request: catalog.TablesRequest = {
          catalog: field(command, 'catalog'),
          dbSchemaFilterPattern: field(command, 'dbSchemaFilterPattern'),
          tableNameFilterPattern: field(command, 'tableNameFilterPattern'),
          tableTypes: field<string[]>(command, 'tableTypes') ?? [],
          includeSchema: field<boolean>(command, 'includeSchema') === true,
        };
        const selected = catalog.selectTables(request, listedTables());
        const schemas = new Map<string, Schema>();
        if (request.includeSchema) {
          for (const table of selected) schemas.set(catalog.qualifiedName(table), await tableSchema(table));
        }
        return catalog.tables(request, selected, schemas);
      }
      case 'CommandGetTableTypes':
        return catalog.tableTypes();
      case 'CommandGetSqlInfo':
        return catalog.sqlInfo(field<number[]>(command, 'info') ?? []);
      case 'CommandGetPrimaryKeys':
        return catalog.primaryKeys();
      default:
        return catalog.foreignKeys();
    }
  };

  /** A descriptor (GetFlightInfo, GetSchema) as a request; refuses updates with the runtime guard's wording. */
  const requestOf = (descriptor: FlightDescriptor): Request => {
    if (descriptor.type === 'PATH') {
      const [name, ...rest] = descriptor.path;
      if (name === undefined || rest.length > 0) {
        throw new FlightRequestError(
          `A path descriptor names one dataset (['orders']); got ${JSON.stringify(descriptor.path)}.`,
        );
      }
      runtime.status(name);
      return { kind: 'statement', sql: datasetSql(name), params: [] };
    }
    const command = unpackSql(descriptor.cmd);
    if (command === undefined) {
      const sql = text(descriptor.cmd);
      if (sql.trim() === '') {
        throw new FlightRequestError('The descriptor holds no command; send SQL or a Flight SQL command.');
      }
      return { kind: 'statement', sql, params: [] };
    }
    switch (command.name) {
      case 'CommandStatementQuery':
        return { kind: 'statement', sql: field(command, 'query'), params: [] };
      case 'CommandPreparedStatementQuery': {
        const prepared = statements.get(field(command, 'preparedStatementHandle'));
        return { kind: 'statement', sql: prepared.sql, params: prepared.params };
      }
      case 'CommandStatementUpdate':
      case 'CommandPreparedStatementUpdate':
      case 'CommandStatementIngest':
        return refuseUpdate(command);
      default:
        if (METADATA_COMMANDS.has(command.name)) return { kind: 'metadata', command };
        throw new FlightUnsupportedError(command.name, 'send SQL as CommandStatementQuery');
    }
  };

  /** Updates and ingestion: the runtime's guard words the refusal (Spice's text for writes). */
  const refuseUpdate = (command: SqlMessage): never => {
    if (command.name === 'CommandStatementIngest') {
      const target = field<{ table?: string } | undefined>(command, 'tableDefinitionOptions');
      throw new WriteRejectedError('insert', field<string>(command, 'table') || String(target?.table ?? ''));
    }
    const sql =
      command.name === 'CommandStatementUpdate'
        ? field<string>(command, 'query')
        : statements.get(field(command, 'preparedStatementHandle')).sql;
    assertReadOnlySql(sql);
    throw new FlightRequestError(
      `${command.name} is for statements that change data, and this statement only reads; send it as CommandStatementQuery (or CommandPreparedStatementQuery).`,
    );
  };

  /** A ticket (DoGet) as a request: a waiting result, a metadata command, or SQL to run now. */
  const ticketRequest = (ticket: Uint8Array): Request => {
    const command = unpackSql(ticket);
    if (command === undefined) return { kind: 'statement', sql: text(ticket), params: [] };
    if (command.name === 'TicketStatementQuery')
      return { kind: 'ticket', handle: field(command, 'statementHandle') };
    if (command.name === 'CommandStatementQuery')
      return { kind: 'statement', sql: field(command, 'query'), params: [] };
    if (METADATA_COMMANDS.has(command.name)) return { kind: 'metadata', command };
    throw new FlightRequestError(
      `A ${command.name} is not a ticket; redeem the ticket GetFlightInfo returned.`,
    );
  };

  const flightInfo = (
    descriptor: FlightDescriptor,
    schema: Schema,
    ticket: Uint8Array,
    rows: number,
  ): FlightInfo => ({
    schema: schemaBytes(schema),
    flightDescriptor: descriptor,
    endpoint: [{ ticket: { ticket }, location: [] }],
    totalRecords: rows,
    totalBytes: -1,
    ordered: false,
  });

  /** Streams a result: the schema, then each batch once the previous one has been taken by the client. */
  const stream = async (
    call: ServerWritableStream<unknown, unknown>,
    schema: Schema,
    batches: AsyncIterable<RecordBatch> | Iterable<RecordBatch>,
    signal: AbortSignal,
    dataset: string | undefined,
  ): Promise<void> => {
    const write = (message: IpcMessage): Promise<void> =>
      new Promise((resolve, reject) => {
        call.write(message, (error: Error | null | undefined) => (error ? reject(error) : resolve()));
      });
    const aborted = new Promise<void>((resolve) =>
      signal.addEventListener('abort', () => resolve(), { once: true }),
    );
    let inFlight = write(schemaMessage(schema));
    let settled = false;
    void inFlight.then(
      () => (settled = true),
      () => (settled = true),
    );
    let sent = 0;
    for await (const batch of batches) {
      if (signal.aborted) break;
      const messages = batchMessages(batch);
      if (!settled && sent > 0) {
        logger?.debug(
          { component: 'flight', ...(dataset === undefined ? {} : { dataset }), batchesSent: sent },
          'Flight DoGet waits for the client to take the previous batch (back-pressure)',
        );
      }
      await Promise.race([inFlight, aborted]);
      if (signal.aborted) break;
      settled = false;
      inFlight = messages.reduce(
        (previous, message) => previous.then(() => write(message)),
        Promise.resolve(),
      );
      void inFlight.then(
        () => (settled = true),
        () => (settled = true),
      );
      sent++;
    }
    await Promise.race([inFlight, aborted]);
    if (!signal.aborted) call.end();
  };

  const unary =
    <Req, Res>(rpc: string, handle: (request: Req, call: ServerUnaryCall<Req, Res>) => Promise<Res>) =>
    (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>): void => {
      if (!authorized(call.metadata)) {
        callback(report(new FlightUnauthenticatedError(), rpc));
        return;
      }
      handle(call.request, call).then(
        (response) => callback(null, response),
        (error: unknown) => callback(report(error, rpc)),
      );
    };

  const serverStream =
    <Req>(
      rpc: string,
      handle: (request: Req, call: ServerWritableStream<Req, unknown>, signal: AbortSignal) => Promise<void>,
    ) =>
    (call: ServerWritableStream<Req, unknown>): void => {
      if (!authorized(call.metadata)) {
        call.emit('error', report(new FlightUnauthenticatedError(), rpc));
        return;
      }
      const controller = new AbortController();
      liveCalls.add(controller);
      call.on('cancelled', () => controller.abort());
      handle(call.request, call, controller.signal)
        .catch((error: unknown) => {
          if (!controller.signal.aborted) call.emit('error', report(error, rpc));
        })
        .finally(() => liveCalls.delete(controller));
    };

  const implementation: UntypedServiceImplementation = {
    Handshake: (call: ServerDuplexStream<{ payload: Buffer }, unknown>) => {
      let answered = false;
      const answer = (payload: Buffer | undefined) => {
        if (answered) return;
        answered = true;
        const token = admitted(
          call.metadata,
          payload === undefined ? undefined : (decodeBasicAuth(payload)?.password ?? text(payload)),
        );
        if (token === undefined) {
          call.emit('error', report(new FlightUnauthenticatedError(), 'Handshake'));
          return;
        }
        const headers = new Metadata();
        headers.set('authorization', `Bearer ${token}`);
        call.sendMetadata(headers);
        call.write({ protocolVersion: 0, payload: Buffer.from(token) });
        call.end();
      };
      call.on('data', (request: { payload: Buffer }) =>
        answer(request.payload.length === 0 ? undefined : request.payload),
      );
      call.on('end', () => answer(undefined));
      call.on('error', () => undefined);
    },

    ListFlights: serverStream('ListFlights', async (_criteria, call) => {
      for (const name of datasetNames()) {
        const descriptor: FlightDescriptor = { type: 'PATH', cmd: Buffer.alloc(0), path: [name] };
        const ticket = packSql('CommandStatementQuery', { query: datasetSql(name) });
        call.write(
          flightInfo(descriptor, await tableSchema({ schema: catalog.SCHEMA_NAME, name }), ticket, -1),
        );
      }
      call.end();
    }),

    GetFlightInfo: unary<FlightDescriptor, FlightInfo>('GetFlightInfo', async (descriptor, call) => {
      const request = requestOf(descriptor);
      if (request.kind === 'metadata') {
        const { schema } = await metadataResult(request.command);
        return flightInfo(descriptor, schema, descriptor.cmd, -1);
      }
      if (request.kind !== 'statement') throw new FlightRequestError('A ticket is not a descriptor.');
      const controller = new AbortController();
      const result = await source.stream(
        request.sql,
        request.params,
        controller.signal,
        resultOptions(call.metadata),
      );
      if (call.cancelled) {
        controller.abort();
        throw new FlightRequestError('The client cancelled GetFlightInfo.');
      }
      const handle = pending.add({ result, controller });
      const ticket = packSql('TicketStatementQuery', { statementHandle: handle });
      return flightInfo(descriptor, result.schema, ticket, result.totalRows);
    }),

    PollFlightInfo: unary('PollFlightInfo', async () => {
      throw new FlightUnsupportedError(
        'PollFlightInfo',
        'call GetFlightInfo, which answers once the query has run',
      );
    }),

    GetSchema: unary<FlightDescriptor, { schema: Uint8Array }>('GetSchema', async (descriptor) => {
      const request = requestOf(descriptor);
      if (request.kind === 'metadata')
        return { schema: schemaBytes((await metadataResult(request.command)).schema) };
      if (request.kind !== 'statement') throw new FlightRequestError('A ticket is not a descriptor.');
      const controller = new AbortController();
      try {
        return {
          schema: schemaBytes((await source.stream(request.sql, request.params, controller.signal)).schema),
        };
      } finally {
        controller.abort();
      }
    }),

    DoGet: serverStream<{ ticket: Buffer }>('DoGet', async ({ ticket }, call, signal) => {
      const request = ticketRequest(ticket);
      if (request.kind === 'metadata') {
        const { schema, batch } = await metadataResult(request.command);
        await stream(call, schema, [batch], signal, undefined);
        return;
      }
      let result: ArrowResult;
      let controller: AbortController;
      if (request.kind === 'ticket') {
        ({ result, controller } = pending.take(request.handle));
      } else {
        controller = new AbortController();
        result = await source.stream(
          request.sql,
          request.params,
          controller.signal,
          resultOptions(call.metadata),
        );
      }
      // Spice's results cache metadata: x-cache (the older name) and results-cache-status.
      call.sendMetadata(cacheMetadata(result.cache));
      const stop = () => controller.abort();
      signal.addEventListener('abort', stop, { once: true });
      try {
        await stream(call, result.schema, result.batches, controller.signal, result.dataset);
      } finally {
        signal.removeEventListener('abort', stop);
        controller.abort();
      }
    }),

    DoPut: (call: ServerDuplexStream<FlightData, unknown>) => {
      const messages: FlightData[] = [];
      let failed = false;
      const fail = (error: unknown) => {
        if (failed) return;
        failed = true;
        call.emit('error', report(error, 'DoPut'));
      };
      if (!authorized(call.metadata)) {
        fail(new FlightUnauthenticatedError());
        return;
      }
      call.on('data', (message: FlightData) => {
        if (failed) return;
        try {
          if (messages.length === 0) checkPut(message.flightDescriptor ?? undefined);
          messages.push(message);
        } catch (error) {
          fail(error);
        }
      });
      call.on('end', () => {
        if (failed) return;
        try {
          const command = unpackSql(
            (messages[0]?.flightDescriptor?.cmd as Buffer | undefined) ?? Buffer.alloc(0),
          );
          if (command?.name !== 'CommandPreparedStatementQuery') {
            throw new FlightRequestError(
              'DoPut needs a FlightDescriptor with a command on its first message.',
            );
          }
          const handle = field<Uint8Array>(command, 'preparedStatementHandle');
          const prepared = statements.get(handle);
          prepared.params = parametersOf(readFlightData(messages));
          call.write({
            appMetadata: encodeSql('DoPutPreparedStatementResult', { preparedStatementHandle: handle }),
          });
          call.end();
        } catch (error) {
          fail(error);
        }
      });
      call.on('error', () => undefined);
    },

    DoExchange: (call: ServerDuplexStream<unknown, unknown>) => {
      call.emit(
        'error',
        report(
          new FlightUnsupportedError('DoExchange', 'read results with GetFlightInfo and DoGet'),
          'DoExchange',
        ),
      );
    },

    DoAction: serverStream<{ type: string; body: Buffer }>('DoAction', async (action, call) => {
      switch (action.type) {
        case 'CreatePreparedStatement': {
          const request = unpackSql(action.body) ?? decodeSqlBody(action.body);
          const sql = field<string>(request, 'query');
          assertReadOnlySql(sql);
          const handle = statements.add({ sql, params: [] });
          const parameters = new Schema(
            Array.from(
              { length: placeholderCount(sql) },
              (_, index) => new Field(`$${index + 1}`, new Null(), true),
            ),
          );
          call.write({
            body: packSql('ActionCreatePreparedStatementResult', {
              preparedStatementHandle: handle,
              datasetSchema: Buffer.alloc(0),
              parameterSchema: schemaBytes(parameters),
            }),
          });
          break;
        }
        case 'ClosePreparedStatement': {
          const request =
            unpackSql(action.body) ?? decodeSqlBody(action.body, 'ActionClosePreparedStatementRequest');
          statements.delete(field(request, 'preparedStatementHandle'));
          break;
        }
        default:
          throw new FlightUnsupportedError(
            `The action '${action.type}'`,
            `the actions are ${ACTIONS.map((entry) => entry.type).join(', ')} (see ListActions); this replica is read-only and has no transactions`,
          );
      }
      call.end();
    }),

    ListActions: serverStream('ListActions', async (_empty, call) => {
      for (const action of ACTIONS) call.write(action);
      call.end();
    }),
  };

  /** The first DoPut message's descriptor: only parameter binding is accepted; writes get the guard's refusal. */
  const checkPut = (descriptor: FlightDescriptor | undefined): void => {
    if (descriptor === undefined) {
      throw new FlightRequestError('DoPut needs a FlightDescriptor on its first message.');
    }
    if (descriptor.type === 'PATH') throw new WriteRejectedError('insert', descriptor.path.join('.'));
    const command = unpackSql(descriptor.cmd);
    if (command === undefined) {
      assertReadOnlySql(text(descriptor.cmd));
      throw new FlightRequestError('DoPut does not run queries; send SQL with GetFlightInfo.');
    }
    if (command.name === 'CommandPreparedStatementQuery') return;
    if (command.name.startsWith('CommandStatement') || command.name === 'CommandPreparedStatementUpdate') {
      refuseUpdate(command);
    }
    throw new FlightUnsupportedError(
      `DoPut with ${command.name}`,
      'bind parameters with CommandPreparedStatementQuery',
    );
  };

  const server = new Server({ 'grpc.max_receive_message_length': maxMessage ?? 16 * 1024 * 1024 });
  server.addService(flightServiceDefinition(), implementation);
  // The spicepod's runtime.tls unless the caller gives its own: a pod that asks for TLS never
  // serves plaintext.
  const tls = options.tls ?? runtime.tls;
  const credentials =
    tls === undefined
      ? ServerCredentials.createInsecure()
      : ServerCredentials.createSsl(null, [{ cert_chain: pem(tls.cert), private_key: pem(tls.key) }], false);
  const host = options.host ?? DEFAULT_FLIGHT_HOST;
  const bindHost = host.includes(':') ? `[${host}]` : host;
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${bindHost}:${options.port ?? DEFAULT_FLIGHT_PORT}`, credentials, (error, bound) =>
      error ? reject(error) : resolve(bound),
    );
  });
  const address = `${bindHost}:${port}`;
  const grace = options.closeGraceMs ?? 5_000;
  let closing: Promise<void> | undefined;
  return {
    address,
    host,
    port,
    url: `${tls === undefined ? 'grpc' : 'grpc+tls'}://${address}`,
    close() {
      closing ??= new Promise<void>((resolve) => {
        pending.clear();
        statements.clear();
        for (const controller of liveCalls) controller.abort();
        const timer = setTimeout(() => server.forceShutdown(), grace);
        timer.unref();
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      return closing;
    },
  };
}

/** A call's `cache-control: no-cache` (Spice's bypass of the results cache). */
function resultOptions(metadata: Metadata): ResultOptions {
  const [value] = metadata.get('cache-control');
  return asksNoCache(typeof value === 'string' ? value : value?.toString('utf8')) ? { noCache: true } : {};
}

/** The results cache's status as Spice's Flight metadata (none when the cache does not apply). */
function cacheMetadata(status: ArrowResult['cache']): Metadata {
  const metadata = new Metadata();
  if (status === undefined) return metadata;
  metadata.set('results-cache-status', status.toUpperCase());
  if (status !== 'bypass')
    metadata.set('x-cache', status === 'hit' ? 'Hit from spiceai' : 'Miss from spiceai');
  return metadata;
}

/** A prepared statement action body sent as the bare message (some clients do not wrap it in an Any). */
function decodeSqlBody(
  body: Buffer,
  name:
    | 'ActionCreatePreparedStatementRequest'
    | 'ActionClosePreparedStatementRequest' = 'ActionCreatePreparedStatementRequest',
): SqlMessage {
  const message = decodeSqlMessage(name, body);
  if (message === undefined) throw new FlightRequestError(`The action body is not an ${name}.`);
  return message;
}
