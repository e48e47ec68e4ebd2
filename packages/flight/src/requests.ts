/**
 * What a descriptor (GetFlightInfo, GetSchema) or a ticket (DoGet) asks for, decoded: a statement
 * with its parameters, a waiting result, or a Flight SQL metadata command. Updates, ingestion and
 * uploads are refused here with the runtime guard's wording (Spice's text for writes), before
 * anything runs.
 */
import type { QueryParam } from '@ferry/core/base';
import { assertReadOnlySql, WriteRejectedError } from '@ferry/engines/sql';
import type { Runtime } from '@ferry/runtime';
import type { Prepared } from './calls.js';
import { FlightRequestError, FlightUnsupportedError } from './errors.js';
import type { HandleTable } from './handles.js';
import { type FlightDescriptor, type SqlMessage, unpackSql } from './protocol.js';

/** A statement and its parameters; in a ticket, also the pins it was read with. */
export interface Statement {
  readonly sql: string;
  readonly params: readonly QueryParam[];
  readonly snapshots?: Readonly<Record<string, number>>;
}

export type Request =
  | ({ readonly kind: 'statement' } & Statement)
  | {
      readonly kind: 'ticket';
      /** The key of the result waiting on the server that issued the ticket. */
      readonly handle: Uint8Array;
      /** The statement, for a server that holds no such result to run it again. */
      readonly statement?: Statement;
    }
  | { readonly kind: 'metadata'; readonly command: SqlMessage };

/** The random key that starts a statement ticket's or a prepared statement's handle (HandleTable's handles). */
export const HANDLE_KEY_BYTES = 16;

/**
 * A statement ticket's handle: the key of the result waiting here, then the statement as JSON, so
 * a server that does not hold the result (another replica behind a load balancer that spreads
 * calls, as AWS's ALB does with gRPC; or this one, once the ticket was redeemed or expired) runs
 * it again, as Spice, whose tickets carry the SQL, does. A bigint parameter is written
 * `{"n":"<digits>"}` (no parameter is an object).
 */
export function statementHandle(key: Buffer, statement: Statement): Buffer {
  const { sql, params, snapshots } = statement;
  let exact = true;
  const text = JSON.stringify(
    snapshots === undefined ? { sql, params } : { sql, params, snapshots },
    (_, value) => {
      if (typeof value === 'number' && !Number.isFinite(value)) exact = false;
      return typeof value === 'bigint' ? { n: value.toString() } : value;
    },
  );
  // JSON has no NaN or Infinity (they would run again as NULL): such a ticket is redeemed here only.
  return exact ? Buffer.concat([key, Buffer.from(text)]) : key;
}

/** The bigint a ticket's parameter `{"n":"<digits>"}` stands for ({@link statementHandle}). */
function bigintOf(param: unknown): bigint | undefined {
  if (typeof param !== 'object' || param === null || Array.isArray(param)) return undefined;
  const { n, ...rest } = param as Record<string, unknown>;
  return typeof n === 'string' && /^-?\d+$/.test(n) && Object.keys(rest).length === 0 ? BigInt(n) : undefined;
}

/** A ticket's pins: dataset names to snapshot ids (non-negative integers), as `x-ferry-snapshot` gives them. */
function isPins(value: unknown): value is Record<string, number> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every((id) => Number.isSafeInteger(id) && (id as number) >= 0)
  );
}

function ticketStatement(
  bytes: Uint8Array,
  refusal = 'The ticket is neither a ticket this server issued nor SQL text; redeem the ticket GetFlightInfo returned.',
): Statement {
  let statement: unknown;
  try {
    statement = JSON.parse(UTF8.decode(bytes));
  } catch {
    statement = undefined;
  }
  const { sql, params, snapshots } = (statement ?? {}) as Record<string, unknown>;
  if (typeof sql !== 'string' || !Array.isArray(params) || (snapshots !== undefined && !isPins(snapshots))) {
    throw new FlightRequestError(refusal);
  }
  return {
    sql,
    params: params.map((param: unknown) => bigintOf(param) ?? (param as QueryParam)),
    ...(snapshots === undefined ? {} : { snapshots }),
  };
}

/**
 * The prepared statement a handle names. A handle is the key it is held under where it was
 * created, then its statement as a ticket carries one ({@link statementHandle}; after a DoPut, with
 * the values bound): a server that does not hold it (another replica behind a load balancer that
 * spreads calls; or this one, once it was closed or idle too long) runs the statement it carries,
 * as Spice, whose handle is the SQL, does. The statement held here answers for a handle that
 * carries no values (the one a client created it with, bound here by DoPut since).
 */
export function preparedStatement(statements: HandleTable<Prepared>, handle: Uint8Array): Prepared {
  const key = handle.subarray(0, HANDLE_KEY_BYTES);
  const carried =
    handle.length > HANDLE_KEY_BYTES
      ? ticketStatement(
          handle.subarray(HANDLE_KEY_BYTES),
          'The prepared statement handle is not one this server issued; create the prepared statement again.',
        )
      : undefined;
  if (carried === undefined || (carried.params.length === 0 && statements.has(key))) {
    return statements.get(key);
  }
  return { sql: carried.sql, bound: { sql: carried.sql, params: carried.params } };
}

export const METADATA_COMMANDS: ReadonlySet<string> = new Set([
  'CommandGetCatalogs',
  'CommandGetDbSchemas',
  'CommandGetTables',
  'CommandGetTableTypes',
  'CommandGetSqlInfo',
  'CommandGetPrimaryKeys',
  'CommandGetImportedKeys',
  'CommandGetExportedKeys',
  'CommandGetCrossReference',
  'CommandGetXdbcTypeInfo',
]);

const quoted = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/** The statement a dataset's path descriptor (or ListFlights' ticket) stands for. */
export const datasetSql = (name: string): string => `SELECT * FROM ${quoted(name)}`;

export function text(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('utf8');
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });
/** Control characters no SQL text holds (tab, newline and carriage return aside): binary data's. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const NOT_SQL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/**
 * A ticket's or command's bytes that are no Flight SQL message, as the SQL text Spice's clients
 * send; bytes that are not text (garbage, another Flight server's ticket) are refused as such.
 */
export function sqlText(bytes: Uint8Array, what: 'ticket' | 'command'): string {
  let sql: string | undefined;
  try {
    sql = UTF8.decode(bytes);
  } catch {
    // Not UTF-8: refused below.
  }
  if (sql === undefined || NOT_SQL.test(sql)) {
    throw new FlightRequestError(
      what === 'ticket'
        ? 'The ticket is neither a ticket this server issued nor SQL text; redeem the ticket GetFlightInfo returned, on the server that returned it.'
        : 'The command is neither a Flight SQL command nor SQL text; send SQL text or a Flight SQL command packed in a google.protobuf.Any.',
    );
  }
  return sql;
}

export function field<T>(message: SqlMessage, name: string): T {
  return message.fields[name] as T;
}

/** A descriptor (GetFlightInfo, GetSchema) as a request; refuses updates with the runtime guard's wording. */
export function requestOf(
  descriptor: FlightDescriptor,
  runtime: Runtime,
  statements: HandleTable<Prepared>,
): Request {
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
    const sql = sqlText(descriptor.cmd, 'command');
    if (sql.trim() === '') {
      throw new FlightRequestError('The descriptor holds no command; send SQL or a Flight SQL command.');
    }
    return { kind: 'statement', sql, params: [] };
  }
  switch (command.name) {
    case 'CommandStatementQuery':
      return { kind: 'statement', sql: field(command, 'query'), params: [] };
    case 'CommandPreparedStatementQuery': {
      const { bound } = preparedStatement(statements, field(command, 'preparedStatementHandle'));
      return { kind: 'statement', sql: bound.sql, params: bound.params };
    }
    case 'CommandStatementUpdate':
    case 'CommandPreparedStatementUpdate':
    case 'CommandStatementIngest':
      return refuseUpdate(command, statements);
    default:
      if (METADATA_COMMANDS.has(command.name)) return { kind: 'metadata', command };
      throw new FlightUnsupportedError(command.name, 'send SQL as CommandStatementQuery');
  }
}

/** Updates and ingestion: the runtime's guard words the refusal (Spice's text for writes). */
export function refuseUpdate(command: SqlMessage, statements: HandleTable<Prepared>): never {
  if (command.name === 'CommandStatementIngest') {
    const target = field<{ table?: string } | undefined>(command, 'tableDefinitionOptions');
    throw new WriteRejectedError('insert', field<string>(command, 'table') || String(target?.table ?? ''));
  }
  const sql =
    command.name === 'CommandStatementUpdate'
      ? field<string>(command, 'query')
      : preparedStatement(statements, field(command, 'preparedStatementHandle')).sql;
  assertReadOnlySql(sql);
  throw new FlightRequestError(
    `${command.name} is for statements that change data, and this statement only reads; send it as CommandStatementQuery (or CommandPreparedStatementQuery).`,
  );
}

/** A ticket (DoGet) as a request: a waiting result, a metadata command, or SQL to run now. */
export function ticketRequest(ticket: Uint8Array): Request {
  const command = unpackSql(ticket);
  if (command === undefined) return { kind: 'statement', sql: sqlText(ticket, 'ticket'), params: [] };
  if (command.name === 'TicketStatementQuery') {
    const handle = field<Uint8Array>(command, 'statementHandle');
    if (handle.length <= HANDLE_KEY_BYTES) return { kind: 'ticket', handle };
    return {
      kind: 'ticket',
      handle: handle.subarray(0, HANDLE_KEY_BYTES),
      statement: ticketStatement(handle.subarray(HANDLE_KEY_BYTES)),
    };
  }
  if (command.name === 'CommandStatementQuery')
    return { kind: 'statement', sql: field(command, 'query'), params: [] };
  if (METADATA_COMMANDS.has(command.name)) return { kind: 'metadata', command };
  throw new FlightRequestError(
    `A ${command.name} is not a ticket; redeem the ticket GetFlightInfo returned.`,
  );
}

/** The first DoPut message's descriptor: only parameter binding is accepted; writes get the guard's refusal. */
export function checkPut(descriptor: FlightDescriptor | undefined, statements: HandleTable<Prepared>): void {
  if (descriptor === undefined) {
    throw new FlightRequestError('DoPut needs a FlightDescriptor on its first message.');
  }
  if (descriptor.type === 'PATH') throw new WriteRejectedError('insert', descriptor.path.join('.'));
  const command = unpackSql(descriptor.cmd);
  if (command === undefined) {
    assertReadOnlySql(sqlText(descriptor.cmd, 'command'));
    throw new FlightRequestError('DoPut does not run queries; send SQL with GetFlightInfo.');
  }
  if (command.name === 'CommandPreparedStatementQuery') return;
  if (command.name.startsWith('CommandStatement') || command.name === 'CommandPreparedStatementUpdate') {
    refuseUpdate(command, statements);
  }
  throw new FlightUnsupportedError(
    `DoPut with ${command.name}`,
    'bind parameters with CommandPreparedStatementQuery',
  );
}
