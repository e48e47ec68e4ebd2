/**
 * Prepared statements, as Flight SQL drivers and Spice's SDKs use them for parameters:
 * CreatePreparedStatement (a handle, the result's schema and a parameter schema of `$1…$n`,
 * typed where the engine types them), DoPut binding one Arrow row of values to the handle,
 * ClosePreparedStatement; ListActions lists the two actions. Statements are checked read-only,
 * and run until their schema is known, before a handle exists; a DoPut that would upload data is
 * refused.
 */
import { assertReadOnlySql } from '@ferry/engines/sql';
import type { ServerDuplexStream } from '@grpc/grpc-js';
import { authorized, clientStreamError, type FlightContext, report, serverStream } from './calls.js';
import { FlightRequestError, FlightUnauthenticatedError, FlightUnsupportedError } from './errors.js';
import { readFlightData, schemaBytes } from './ipc.js';
import { preparedSchemas } from './metadata.js';
import { boundStatement, placeholderCount } from './parameters.js';
import {
  decodeSqlMessage,
  encodeSql,
  type FlightData,
  packSql,
  type SqlMessage,
  unpackSql,
} from './protocol.js';
import { checkPut, field, HANDLE_KEY_BYTES, preparedStatement, statementHandle } from './requests.js';

export const ACTIONS = [
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

/**
 * A prepared statement action's body: the request packed in an Any, or the bare message (some
 * clients do not wrap it); anything else is refused, naming the message expected.
 */
function actionBody(type: 'CreatePreparedStatement' | 'ClosePreparedStatement', body: Buffer): SqlMessage {
  const name = `Action${type}Request` as const;
  const message = unpackSql(body) ?? decodeSqlMessage(name, body);
  if (message?.name !== name) {
    throw new FlightRequestError(
      `The ${type} action's body is not an ${name}; send one, packed in a google.protobuf.Any.`,
    );
  }
  return message;
}

export function doAction(context: FlightContext) {
  return serverStream<{ type: string; body: Buffer }>(context, 'DoAction', async (action, call, signal) => {
    switch (action.type) {
      case 'CreatePreparedStatement': {
        const request = actionBody(action.type, action.body);
        const sql = field<string>(request, 'query');
        assertReadOnlySql(sql);
        // Arrow's JDBC driver runs a statement whose dataset_schema has no fields as an update.
        const { dataset, parameters } = await preparedSchemas(
          context.source,
          sql,
          placeholderCount(sql),
          signal,
        );
        const key = context.statements.add({ sql, bound: { sql, params: [] } });
        call.write({
          body: packSql('ActionCreatePreparedStatementResult', {
            preparedStatementHandle: statementHandle(key, { sql, params: [] }),
            datasetSchema: schemaBytes(dataset),
            parameterSchema: schemaBytes(parameters),
          }),
        });
        break;
      }
      case 'ClosePreparedStatement': {
        const request = actionBody(action.type, action.body);
        const handle = field<Uint8Array>(request, 'preparedStatementHandle');
        context.statements.delete(handle.subarray(0, HANDLE_KEY_BYTES));
        break;
      }
      default:
        throw new FlightUnsupportedError(
          `The action '${action.type}'`,
          `the actions are ${ACTIONS.map((entry) => entry.type).join(', ')} (see ListActions); this replica is read-only and has no transactions`,
        );
    }
    call.end();
  });
}

export function listActions(context: FlightContext) {
  return serverStream(context, 'ListActions', async (_empty, call) => {
    for (const action of ACTIONS) call.write(action);
    call.end();
  });
}

/** DoPut: binds one row of parameters to a prepared statement; anything else is refused. */
export function doPut(context: FlightContext) {
  return (call: ServerDuplexStream<FlightData, unknown>): void => {
    const messages: FlightData[] = [];
    let bytes = 0;
    let failed = false;
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      messages.length = 0;
      call.emit('error', report(context, error, 'DoPut'));
    };
    call.on('error', clientStreamError(context, 'DoPut'));
    if (!authorized(context, call.metadata)) {
      fail(new FlightUnauthenticatedError());
      return;
    }
    call.on('data', (message: FlightData) => {
      if (failed) return;
      try {
        if (messages.length === 0) checkPut(message.flightDescriptor ?? undefined, context.statements);
        bytes += message.dataHeader.length + message.dataBody.length;
        if (bytes > context.maxPutBytes) {
          throw new FlightRequestError(
            `The Arrow data sent with DoPut is larger than ${context.maxPutBytes} bytes (a schema and one batch of the largest message size); bind exactly one row of parameters per execution.`,
          );
        }
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
          throw new FlightRequestError('DoPut needs a FlightDescriptor with a command on its first message.');
        }
        const handle = field<Uint8Array>(command, 'preparedStatementHandle');
        const prepared = preparedStatement(context.statements, handle);
        const bound = boundStatement(prepared.sql, readFlightData(messages));
        // Held here too, for a handle that cannot carry the values (NaN has no JSON form: key only),
        // within the bytes the open statements may hold.
        const key = Buffer.from(handle.subarray(0, HANDLE_KEY_BYTES));
        if (context.statements.has(key)) context.statements.replace(key, { sql: prepared.sql, bound });
        // The handle to run it with from now on carries the values, for a replica that did not bind them.
        call.write({
          appMetadata: encodeSql('DoPutPreparedStatementResult', {
            preparedStatementHandle: statementHandle(key, bound),
          }),
        });
        call.end();
      } catch (error) {
        fail(error);
      }
    });
  };
}
