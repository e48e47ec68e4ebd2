/**
 * The wire protocol, loaded from the Arrow project's own `Flight.proto` and `FlightSql.proto`
 * (never transcribed): the gRPC service definition for `@grpc/grpc-js` through
 * `@grpc/proto-loader`, and the Flight SQL messages (which travel inside `google.protobuf.Any`)
 * through protobufjs. The files are carried in this package's `proto/` folder, byte for byte Apache
 * Arrow 20.0.0's `format/Flight.proto` and `format/FlightSql.proto` (Apache License 2.0, headers
 * intact; see `NOTICE` and the README).
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { FlightRequestError } from './errors.js';

/** The folder holding `Flight.proto` and `FlightSql.proto` (next to `src/` and `dist/`). */
export const PROTO_DIR = fileURLToPath(new URL('../proto/', import.meta.url));
export const FLIGHT_PROTO = join(PROTO_DIR, 'Flight.proto');
export const FLIGHT_SQL_PROTO = join(PROTO_DIR, 'FlightSql.proto');

/** How messages look on both sides of this package: camelCase fields, int64 as numbers, bytes as Buffers. */
export const PROTO_LOADER_OPTIONS = {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
} as const;

/** `FlightService` as `@grpc/grpc-js` wants it for `server.addService`. */
export function flightServiceDefinition(): ServiceDefinition {
  const definition = loadSync(FLIGHT_PROTO, PROTO_LOADER_OPTIONS);
  return definition['arrow.flight.protocol.FlightService'] as ServiceDefinition;
}

// --- Flight messages as the service definition hands them over --------------------------------

export interface FlightDescriptor {
  readonly type: 'UNKNOWN' | 'PATH' | 'CMD';
  readonly cmd: Buffer;
  readonly path: readonly string[];
}

export interface FlightData {
  readonly flightDescriptor?: FlightDescriptor | null;
  readonly dataHeader: Uint8Array;
  readonly appMetadata?: Uint8Array;
  readonly dataBody: Uint8Array;
}

export interface FlightEndpoint {
  readonly ticket: { readonly ticket: Uint8Array };
  readonly location: readonly { readonly uri: string }[];
}

export interface FlightInfo {
  readonly schema: Uint8Array;
  readonly flightDescriptor: FlightDescriptor;
  readonly endpoint: readonly FlightEndpoint[];
  readonly totalRecords: number;
  readonly totalBytes: number;
  readonly ordered: boolean;
}

// --- Flight SQL messages, packed in google.protobuf.Any ----------------------------------------

const TYPE_URL_PREFIX = 'type.googleapis.com/';
const SQL_PACKAGE = 'arrow.flight.protocol.sql.';

let sqlRoot: protobuf.Root | undefined;

function root(): protobuf.Root {
  if (sqlRoot === undefined) {
    const loaded = new protobuf.Root();
    // The Arrow files import Google's well-known types, which protobufjs carries itself.
    loaded.resolvePath = (_origin, target) =>
      target.startsWith('google/protobuf/') ? target : join(PROTO_DIR, target);
    loaded.loadSync(['Flight.proto', 'FlightSql.proto', 'google/protobuf/any.proto'], { keepCase: false });
    sqlRoot = loaded;
  }
  return sqlRoot;
}

/** A Flight SQL message name without its package: `CommandStatementQuery`. */
export type SqlMessageName =
  | 'CommandStatementQuery'
  | 'CommandStatementUpdate'
  | 'CommandStatementIngest'
  | 'CommandStatementSubstraitPlan'
  | 'CommandPreparedStatementQuery'
  | 'CommandPreparedStatementUpdate'
  | 'CommandGetCatalogs'
  | 'CommandGetDbSchemas'
  | 'CommandGetTables'
  | 'CommandGetTableTypes'
  | 'CommandGetSqlInfo'
  | 'CommandGetPrimaryKeys'
  | 'CommandGetExportedKeys'
  | 'CommandGetImportedKeys'
  | 'CommandGetCrossReference'
  | 'CommandGetXdbcTypeInfo'
  | 'TicketStatementQuery'
  | 'ActionCreatePreparedStatementRequest'
  | 'ActionCreatePreparedStatementResult'
  | 'ActionClosePreparedStatementRequest'
  | 'DoPutUpdateResult'
  | 'DoPutPreparedStatementResult';

/** A decoded Flight SQL message: its name and its fields as plain values. */
export interface SqlMessage {
  readonly name: SqlMessageName;
  readonly fields: Readonly<Record<string, unknown>>;
}

const TO_OBJECT = { longs: Number, enums: String, bytes: Buffer, defaults: true, arrays: true } as const;

function sqlType(name: SqlMessageName): protobuf.Type {
  return root().lookupType(`${SQL_PACKAGE}${name}`);
}

/** A Flight SQL enum's number by name (`SqlInfo`, `FLIGHT_SQL_SERVER_NAME` → 0), from the proto. */
export function sqlEnumValue(enumName: string, valueName: string): number {
  const value = root().lookupEnum(`${SQL_PACKAGE}${enumName}`).values[valueName];
  if (value === undefined) throw new TypeError(`${enumName}.${valueName} is not in FlightSql.proto`);
  return value;
}

/** `name`'s fields encoded and packed in an Any, as Flight SQL sends commands, tickets and results. */
export function packSql(name: SqlMessageName, fields: Record<string, unknown>): Buffer {
  const type = sqlType(name);
  const any = root().lookupType('google.protobuf.Any');
  const value = type.encode(type.fromObject(fields)).finish();
  // protobufjs carries Any itself, with the proto's own field names (`type_url`).
  return Buffer.from(any.encode({ type_url: `${TYPE_URL_PREFIX}${SQL_PACKAGE}${name}`, value }).finish());
}

/** `name`'s fields encoded on their own (not in an Any), as a DoPut result's app_metadata carries them. */
export function encodeSql(name: SqlMessageName, fields: Record<string, unknown>): Buffer {
  const type = sqlType(name);
  return Buffer.from(type.encode(type.fromObject(fields)).finish());
}

/** `bytes` decoded as the bare Flight SQL message `name`, or `undefined` when they are not one. */
export function decodeSqlMessage(name: SqlMessageName, bytes: Uint8Array): SqlMessage | undefined {
  const type = sqlType(name);
  try {
    return { name, fields: type.toObject(type.decode(bytes), TO_OBJECT) };
  } catch {
    // Not that message: the caller says what it expected.
    return undefined;
  }
}

/** A Flight `BasicAuth` message (the payload older Flight clients log in with), or `undefined`. */
export function decodeBasicAuth(bytes: Uint8Array): { username: string; password: string } | undefined {
  const type = root().lookupType('arrow.flight.protocol.BasicAuth');
  try {
    const decoded = type.toObject(type.decode(bytes), TO_OBJECT) as { username: string; password: string };
    return decoded.password === '' ? undefined : decoded;
  } catch {
    // Not a BasicAuth: the payload is then the token itself.
    return undefined;
  }
}

/**
 * The Flight SQL message packed in `bytes`, or `undefined` when the bytes are not an Any holding
 * one (Spice's SDKs send a plain SQL string as the command; the caller treats that as SQL text).
 */
export function unpackSql(bytes: Uint8Array): SqlMessage | undefined {
  if (bytes.length === 0) return undefined;
  let typeUrl: string;
  let value: Uint8Array;
  try {
    const any = root().lookupType('google.protobuf.Any').decode(bytes) as unknown as {
      type_url: string;
      value: Uint8Array;
    };
    typeUrl = any.type_url;
    value = any.value;
  } catch {
    // Not an Any: plain SQL text, as Spice's SDKs send it.
    return undefined;
  }
  if (typeof typeUrl !== 'string') return undefined;
  const slash = typeUrl.lastIndexOf('/');
  const fullName = typeUrl.slice(slash + 1);
  if (!fullName.startsWith(SQL_PACKAGE)) return undefined;
  const name = fullName.slice(SQL_PACKAGE.length) as SqlMessageName;
  let type: protobuf.Type;
  try {
    type = sqlType(name);
  } catch (error) {
    throw new FlightRequestError(
      `'${fullName}' is not a Flight SQL message this server knows; send a command of arrow.flight.protocol.sql.`,
      { cause: error },
    );
  }
  try {
    return { name, fields: type.toObject(type.decode(value), TO_OBJECT) };
  } catch (error) {
    throw new FlightRequestError(`The ${name} message cannot be decoded (${(error as Error).message}).`, {
      cause: error,
    });
  }
}
