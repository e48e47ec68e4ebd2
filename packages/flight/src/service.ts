/**
 * The FlightService implementation: each RPC wired to the module that does its job — requests
 * (`requests.ts`), results (`results.ts`), metadata commands (`metadata.ts`), prepared statements
 * (`prepared.ts`), the handshake (`handshake.ts`) — through the key-checking wrappers of
 * `calls.ts`. Statements run where GetFlightInfo is asked, so its answer carries the real schema;
 * the result then waits (a ticket) for its DoGet. The ticket also carries the statement: a DoGet
 * on a server that does not hold the result (another replica, or a ticket redeemed or expired)
 * runs it again, as Spice's tickets do.
 */
import {
  asksNoCache,
  cacheStatusFields,
  holdToStalenessBound,
  MAX_STALENESS_HEADER,
  maxStalenessOption,
  SNAPSHOT_HEADER,
  snapshotHeaderValue,
  snapshotPinsOption,
} from '@ferry/runtime';
import { Metadata, type ServerDuplexStream, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { type FlightContext, type Pending, report, serverStream, unary } from './calls.js';
import { SCHEMA_NAME } from './catalog.js';
import { FlightRequestError, FlightUnsupportedError } from './errors.js';
import { handshake } from './handshake.js';
import { schemaBytes } from './ipc.js';
import { datasetNames, metadataResult, runningSchema, tableSchema } from './metadata.js';
import { doAction, doPut, listActions } from './prepared.js';
import { type FlightDescriptor, type FlightInfo, packSql } from './protocol.js';
import {
  datasetSql,
  requestOf,
  type Statement,
  statementHandle as ticketHandle,
  ticketRequest,
} from './requests.js';
import type { ArrowResult, ResultOptions } from './result-source.js';
import { flightInfo, writeResult } from './results.js';

export function flightService(context: FlightContext): UntypedServiceImplementation {
  const { runtime, source, pending, statements } = context;
  return {
    Handshake: handshake(context),

    ListFlights: serverStream(context, 'ListFlights', async (_criteria, call) => {
      for (const name of datasetNames(runtime)) {
        const descriptor: FlightDescriptor = { type: 'PATH', cmd: Buffer.alloc(0), path: [name] };
        const ticket = packSql('CommandStatementQuery', { query: datasetSql(name) });
        call.write(
          flightInfo(descriptor, await tableSchema(source, { schema: SCHEMA_NAME, name }), ticket, -1),
        );
      }
      call.end();
    }),

    GetFlightInfo: unary<FlightDescriptor, FlightInfo>(context, 'GetFlightInfo', async (descriptor, call) => {
      const request = requestOf(descriptor, runtime, statements);
      if (request.kind === 'metadata') {
        const { schema } = await metadataResult(runtime, source, request.command);
        return flightInfo(descriptor, schema, descriptor.cmd, -1);
      }
      if (request.kind !== 'statement') throw new FlightRequestError('A ticket is not a descriptor.');
      const options = resultOptions(call.metadata);
      const controller = new AbortController();
      // A client that cancels while the statement runs stops it there, not once it has its schema.
      const cancel = (): void => controller.abort();
      call.once('cancelled', cancel);
      let result: ArrowResult;
      try {
        result = await source.stream(request.sql, request.params, controller.signal, options);
      } finally {
        call.off('cancelled', cancel);
      }
      if (call.cancelled) {
        controller.abort();
        throw new FlightRequestError('The client cancelled GetFlightInfo.');
      }
      const handle = pending.add({
        result,
        controller,
        ...(options.snapshots === undefined ? {} : { pins: options.snapshots }),
      });
      const statementHandle = ticketHandle(handle, { ...request, ...pinsOf(options) });
      const ticket = packSql('TicketStatementQuery', { statementHandle });
      return flightInfo(descriptor, result.schema, ticket, result.totalRows);
    }),

    PollFlightInfo: unary(context, 'PollFlightInfo', async () => {
      throw new FlightUnsupportedError(
        'PollFlightInfo',
        'call GetFlightInfo, which answers once the query has run',
      );
    }),

    GetSchema: unary<FlightDescriptor, { schema: Uint8Array }>(
      context,
      'GetSchema',
      async (descriptor, call) => {
        const request = requestOf(descriptor, runtime, statements);
        if (request.kind === 'metadata') {
          return { schema: schemaBytes((await metadataResult(runtime, source, request.command)).schema) };
        }
        if (request.kind !== 'statement') throw new FlightRequestError('A ticket is not a descriptor.');
        const controller = new AbortController();
        const cancel = (): void => controller.abort();
        call.once('cancelled', cancel);
        try {
          return {
            schema: schemaBytes(await runningSchema(source, request.sql, request.params, controller.signal)),
          };
        } finally {
          call.off('cancelled', cancel);
        }
      },
    ),

    DoGet: serverStream<{ ticket: Buffer }>(context, 'DoGet', async ({ ticket }, call, signal) => {
      const request = ticketRequest(ticket);
      if (request.kind === 'metadata') {
        const { schema, batch } = await metadataResult(runtime, source, request.command);
        await writeResult(context, call, schema, [batch], signal, undefined);
        return;
      }
      let result: ArrowResult;
      let controller: AbortController;
      if (request.kind === 'ticket' && (request.statement === undefined || pending.has(request.handle))) {
        let pins: Pending['pins'];
        ({ result, controller, pins } = pending.take(request.handle));
        // GetFlightInfo judged the bound it was sent; DoGet's own holds too, now, when the rows go out
        // (a dataset pinned where the result was read is judged as the dataset, as there).
        try {
          const { maxStalenessMs } = resultOptions(call.metadata);
          holdToStalenessBound(result.datasets ?? [], maxStalenessMs, (name) => runtime.status(name), pins);
        } catch (error) {
          controller.abort();
          throw error;
        }
      } else {
        // SQL text, or a ticket whose result is not here (issued by another server, redeemed, or
        // expired): its statement runs now, read at the pins it was issued with unless DoGet pins its own.
        const statement = request.kind === 'ticket' ? (request.statement as Statement) : request;
        const options = resultOptions(call.metadata);
        controller = new AbortController();
        result = await source.stream(statement.sql, statement.params, controller.signal, {
          ...pinsOf(statement),
          ...options,
        });
      }
      // Spice's results cache metadata (x-cache, results-cache-status), and x-ferry-snapshot.
      call.sendMetadata(resultMetadata(result));
      const stop = () => controller.abort();
      signal.addEventListener('abort', stop, { once: true });
      try {
        await writeResult(
          context,
          call,
          result.schema,
          result.batches,
          controller.signal,
          result.dataset,
          result.stopped,
        );
      } finally {
        signal.removeEventListener('abort', stop);
        controller.abort();
      }
    }),

    DoPut: doPut(context),

    DoExchange: (call: ServerDuplexStream<unknown, unknown>) => {
      call.emit(
        'error',
        report(
          context,
          new FlightUnsupportedError('DoExchange', 'read results with GetFlightInfo and DoGet'),
          'DoExchange',
        ),
      );
    },

    DoAction: doAction(context),

    ListActions: listActions(context),
  };
}

/** The pins of `options` (x-ferry-snapshot), as an object to spread. */
function pinsOf(options: {
  readonly snapshots?: Readonly<Record<string, number>>;
}): Pick<Statement, 'snapshots'> {
  return options.snapshots === undefined ? {} : { snapshots: options.snapshots };
}

/** A call metadata key's values as text, joined with ', ' as HTTP joins a repeated header; undefined when absent. */
function metadataText(metadata: Metadata, key: string): string | undefined {
  const values = metadata.get(key);
  if (values.length === 0) return undefined;
  return values.map((value) => (typeof value === 'string' ? value : value.toString('utf8'))).join(', ');
}

/**
 * A call's `cache-control: no-cache` (Spice's bypass of the results cache) and
 * `x-ferry-max-staleness` (the client's staleness bound) and `x-ferry-snapshot` (its pins).
 */
function resultOptions(metadata: Metadata): ResultOptions {
  return {
    ...(asksNoCache(metadataText(metadata, 'cache-control')) ? { noCache: true } : {}),
    ...maxStalenessOption(metadataText(metadata, MAX_STALENESS_HEADER)),
    ...snapshotPinsOption(metadataText(metadata, SNAPSHOT_HEADER)),
  };
}

/**
 * The answer's metadata: the results cache's status as Spice's (none when the cache does not
 * apply), and `x-ferry-snapshot` naming the snapshot of each dataset read (none when it read none).
 */
function resultMetadata(result: ArrowResult): Metadata {
  const metadata = new Metadata();
  if (result.cache !== undefined) {
    for (const [key, value] of Object.entries(cacheStatusFields(result.cache))) metadata.set(key, value);
  }
  if (result.datasets !== undefined && result.datasets.length > 0) {
    metadata.set(SNAPSHOT_HEADER, snapshotHeaderValue(result.datasets));
  }
  return metadata;
}
