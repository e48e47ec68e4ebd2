/**
 * Every error class of every package is registered, rebuilds as itself from its wire form (its
 * class, code, own fields, stack and causes), and has a row in the one code → HTTP / gRPC status
 * table. The list of classes is the registry itself: a new class without a sample here fails, a
 * class a package exports without registering it fails, and a code written anywhere in the sources
 * without a row in `ERROR_STATUS` fails.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as cli from '@ferry/cli';
import * as core from '@ferry/core';
import {
  ActorNotProvidedError,
  ArrowSchemaError,
  BlockManifestError,
  ConfigError,
  CurrentSnapshotMissingError,
  deserializeError,
  ERROR_STATUS,
  FerryError,
  IncompatibleSchemaError,
  MetadataError,
  OutsideLocationError,
  registeredErrors,
  SchemaNotFoundError,
  type SerializedError,
  SnapshotRejectedError,
  serializeError,
  UnsupportedFormatVersionError,
} from '@ferry/core';
import * as engines from '@ferry/engines';
import {
  CrossEngineLimitError,
  EngineClosedError,
  EngineOpenError,
  InvalidParameterError,
  NamespaceTableError,
  QueryFailedError,
  QueryResourceError,
  SqliteBindingError,
  SqlSyntaxError,
  StatementRejectedError,
  TableNotFoundError,
  UnmappedArrowTypeError,
  UnsupportedColumnTypeError,
  WriteRejectedError,
} from '@ferry/engines';
import * as namespaces from '@ferry/engines/namespaces';
import * as engineSql from '@ferry/engines/sql';
import * as flight from '@ferry/flight';
import {
  ArrowConversionError,
  FlightCapacityError,
  FlightHandleNotFoundError,
  FlightRequestError,
  FlightUnauthenticatedError,
  FlightUnsupportedError,
} from '@ferry/flight';
import * as runtime from '@ferry/runtime';
import {
  ChannelClosedError,
  CrossDialectError,
  DatasetFailedError,
  DatasetNotReadyError,
  FreshnessHeaderError,
  PinnedSnapshotUnknownError,
  QueryCancelledError,
  QueryTimeoutError,
  ReadyTimeoutError,
  ResultTooLargeError,
  RuntimeClosedError,
  SnapshotGoneError,
  StaleBuildError,
  StaleReadError,
  StreamIdleError,
  ThreadFileMissingError,
  UnknownDatasetError,
} from '@ferry/runtime';
import * as server from '@ferry/server';
import {
  BadRequestError,
  BodyTooLargeError,
  InspectorAssetNotFoundError,
  InspectorAssetsMissingError,
  InspectorUnauthorizedError,
  InvalidCommandError,
  InvalidInspectorUrlError,
  MethodNotAllowedError,
  RouteNotFoundError,
  SnapshotNotFoundError,
  SnapshotsReadOnlyError,
  TableTooLargeError,
  UnauthorizedError,
  UnsupportedContentEncodingError,
} from '@ferry/server';
import * as snapshots from '@ferry/snapshots';
import {
  DiskFullError,
  InsufficientDiskSpaceError,
  PreparedSnapshotGoneError,
  TruncatedDownloadError,
} from '@ferry/snapshots';
import * as store from '@ferry/store';
import {
  ObjectNotFoundError,
  ObjectTooLargeError,
  PreconditionFailedError,
  ReaderQueueError,
  SigningKeyError,
  SqsDeleteError,
  SqsQueueError,
  StoreConfigError,
  StoreError,
} from '@ferry/store';
import * as writer from '@ferry/writer';
import {
  EngineMismatchError,
  IncrementalBaseError,
  IncrementalStatementError,
  MetadataConflictError,
  MetadataTooLargeError,
  NothingPublishedError,
  NotNullViolationError,
  RollbackRefusedError,
  SchemaRefusedError,
  SnapshotFileError,
  SnapshotKeyTakenError,
  SnapshotQueryError,
  SourceFileError,
  WriterOptionsError,
} from '@ferry/writer';
import { describe, expect, it } from 'vitest';

const { ArrowValueError } = namespaces;
const PACKAGES = fileURLToPath(new URL('../../packages/', import.meta.url));

const engineCause = Object.assign(new Error('Binder Error: column "nope" not found'), { errno: 7 });
const networkCause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), {
  code: 'ECONNREFUSED',
  errno: -111,
  syscall: 'connect',
});

/** One instance of every registered class, by its registered name: fields set, a cause where it takes one. */
const SAMPLES: Readonly<Record<string, () => Error>> = {
  // JavaScript's own.
  Error: () => Object.assign(new Error('ENOENT: no such file', { cause: 'a string' }), { code: 'ENOENT' }),
  TypeError: () => new TypeError('not a function'),
  RangeError: () => new RangeError('limit must be a positive integer'),
  SyntaxError: () => new SyntaxError('Unexpected token'),
  ReferenceError: () => new ReferenceError('x is not defined'),
  EvalError: () => new EvalError('eval'),
  URIError: () => new URIError('URI malformed'),
  AggregateError: () => new AggregateError([new TypeError('one'), new RangeError('two')], 'both failed'),
  DOMException: () => new DOMException('This operation was aborted', 'AbortError'),
  // core
  FerryError: () =>
    new FerryError('ERR_MACHINE_INVARIANT', 'The dataset machine has no poll.', { cause: engineCause }),
  SnapshotRejectedError: () =>
    new SnapshotRejectedError('ERR_SNAPSHOT_CHECKSUM_MISMATCH', 'Snapshot s3://b/x checksum mismatch.'),
  OutsideLocationError: () => new OutsideLocationError('s3://b/p/', 's3://other/x', 'another bucket'),
  BlockManifestError: () =>
    new BlockManifestError('s3://b/p/x.duckdb.ferry-blocks.json', "its checksum is not the snapshot's"),
  MetadataError: () =>
    new MetadataError('s3://b/p/', 'orders.snapshots[1]', 'missing', { dataset: 'orders' }),
  UnsupportedFormatVersionError: () => new UnsupportedFormatVersionError(2, 's3://b/p/'),
  SchemaNotFoundError: () => new SchemaNotFoundError('orders', 3),
  ArrowSchemaError: () => new ArrowSchemaError("dataset 'orders'", 'fields[0]', 'unknown type'),
  IncompatibleSchemaError: () => new IncompatibleSchemaError('orders', 1, 'column id dropped'),
  ActorNotProvidedError: () => new ActorNotProvidedError('download'),
  CurrentSnapshotMissingError: () => new CurrentSnapshotMissingError('orders', 9),
  ConfigError: () =>
    new ConfigError('spicepod.yaml', [
      { path: 'datasets[0].name', message: 'name is missing', fatal: false, dataset: 'orders' },
      { path: 'snapshots', message: 'location is missing', fatal: true },
    ]),
  // store
  StoreError: () =>
    new StoreError(
      { operation: 'get', uri: 's3://b/p/metadata.json', status: 503, retryable: true, reason: 'SlowDown' },
      { cause: networkCause },
    ),
  PreconditionFailedError: () => new PreconditionFailedError('s3://b/p/metadata.json', 'If-Match "e1"', 412),
  ObjectNotFoundError: () => new ObjectNotFoundError('s3://b/p/x.db'),
  ObjectTooLargeError: () => new ObjectTooLargeError('s3://b/p/metadata.json', 20, 10),
  StoreConfigError: () => new StoreConfigError('s3_region', 'Set s3_region.'),
  ReaderQueueError: () => new ReaderQueueError('ERR_READER_QUEUE_CREATE', 'Cannot make the queue.'),
  SigningKeyError: () =>
    new SigningKeyError('/keys/writer.pem', 'is not a PEM private key', { cause: networkCause }),
  SqsQueueError: () => new SqsQueueError('ERR_SQS_RECEIVE', 'Receive failed.', { cause: networkCause }),
  SqsDeleteError: () =>
    new SqsDeleteError(
      [{ messageId: 'm1', code: 'ReceiptHandleIsInvalid', message: 'gone', senderFault: true }],
      3,
    ),
  // Not exported by @ferry/store (a file store's lock, thrown as a StoreError's cause).
  LockTimeoutError: () => {
    const LockTimeoutError = registeredErrors().get('LockTimeoutError') as new (lockPath: string) => Error;
    return new LockTimeoutError('/data/orders.lock');
  },
  // engines
  WriteRejectedError: () => new WriteRejectedError('delete', 'orders'),
  StatementRejectedError: () => new StatementRejectedError('ATTACH', 'ATTACH is not allowed.'),
  SqlSyntaxError: () => new SqlSyntaxError('SELEC', 'SELECT', 'syntax error at or near "SELEC"'),
  EngineOpenError: () => new EngineOpenError('/data/x.db', 'not a database', { cause: engineCause }),
  SqliteBindingError: () => new SqliteBindingError('invalid ELF header', { cause: engineCause }),
  EngineClosedError: () => new EngineClosedError('/data/x.db'),
  QueryFailedError: () => new QueryFailedError("dataset 'orders'", 'column nope', { cause: engineCause }),
  NamespaceTableError: () => new NamespaceTableError('users', 'sqlite'),
  QueryResourceError: () =>
    new QueryResourceError('memory', "dataset 'orders'", 1 << 30, 'duckdb_memory_limit'),
  CrossEngineLimitError: () => new CrossEngineLimitError('users', 'rows', 1000),
  InvalidParameterError: () => new InvalidParameterError('Parameter 1 is an object.'),
  TableNotFoundError: () => new TableNotFoundError('/data/x.db', 'orders'),
  UnsupportedColumnTypeError: () => new UnsupportedColumnTypeError('/data/x.db', 'orders', 'geo', 'GEOMETRY'),
  UnmappedArrowTypeError: () => new UnmappedArrowTypeError('Float16'),
  ArrowValueError: () => new ArrowValueError({ toString: () => 'Int32' } as never, 'text'),
  DuckDbParseError: () => new engines.DuckDbParseError('syntax error at or near "["'),
  // snapshots
  InsufficientDiskSpaceError: () => new InsufficientDiskSpaceError('orders', '/data', 100, 10),
  DiskFullError: () => new DiskFullError('orders', '/data', { cause: networkCause }),
  TruncatedDownloadError: () => new TruncatedDownloadError('orders', 's3://b/p/x.db', 100, 40),
  PreparedSnapshotGoneError: () => new PreparedSnapshotGoneError('orders', '/data/.tmp'),
  // runtime
  UnknownDatasetError: () => new UnknownDatasetError('nope', ['orders']),
  DatasetNotReadyError: () => new DatasetNotReadyError('orders', 'bootstrapping'),
  DatasetFailedError: () => new DatasetFailedError('orders', 'its configuration was refused'),
  ReadyTimeoutError: () => new ReadyTimeoutError(['orders'], 100),
  QueryTimeoutError: () => new QueryTimeoutError(['orders'], 100),
  ResultTooLargeError: () => new ResultTooLargeError('orders', 10, 'bytes', 'maxResultBytes'),
  QueryCancelledError: () => new QueryCancelledError(new DOMException('aborted', 'AbortError')),
  StreamIdleError: () => new StreamIdleError(1000),
  StaleReadError: () => new StaleReadError('orders', 45_000, 30_000, 5),
  FreshnessHeaderError: () => new FreshnessHeaderError('X-Ferry-Max-Staleness', "'soon' is not a duration"),
  SnapshotGoneError: () => new SnapshotGoneError('orders', 3, [9, 8, 7]),
  PinnedSnapshotUnknownError: () => new PinnedSnapshotUnknownError('orders', 99, 9),
  QueryRejectedError: () => new runtime.QueryRejectedError(512, 2),
  // Not exported by @ferry/runtime (a stream producer's stop, thrown inside a query thread).
  StreamCancelledError: () => {
    const StreamCancelledError = registeredErrors().get('StreamCancelledError') as new () => Error;
    return new StreamCancelledError();
  },
  CrossDialectError: () => new CrossDialectError('orders'),
  RuntimeClosedError: () => new RuntimeClosedError(),
  ChannelClosedError: () => new ChannelClosedError('The DuckDB query worker', 'exited'),
  ThreadFileMissingError: () => new ThreadFileMissingError('/x/dataset-thread.js'),
  StaleBuildError: () => new StaleBuildError('/x/dist/dataset-host.js', '/x/src/dataset-host.ts'),
  // server
  BadRequestError: () =>
    new BadRequestError('The body is not JSON.', { cause: new SyntaxError('Unexpected') }),
  InvalidCommandError: () => new InvalidCommandError('orders', 'poll.later'),
  SnapshotNotFoundError: () => new SnapshotNotFoundError('orders', 9, [1, 2, 3]),
  SnapshotsReadOnlyError: () => new SnapshotsReadOnlyError('orders'),
  BodyTooLargeError: () => new BodyTooLargeError(1024),
  UnauthorizedError: () => new UnauthorizedError(),
  UnsupportedContentEncodingError: () => new UnsupportedContentEncodingError('gzip'),
  TableTooLargeError: () =>
    new TableTooLargeError(new ResultTooLargeError('orders', 100_000, 'rows', 'maxResultRows')),
  RouteNotFoundError: () => new RouteNotFoundError('GET', '/nope'),
  MethodNotAllowedError: () => new MethodNotAllowedError('PUT', '/v1/sql', ['POST']),
  InspectorAssetsMissingError: () => new InspectorAssetsMissingError('index.html', ['/a', '/b']),
  InspectorAssetNotFoundError: () => new InspectorAssetNotFoundError('nope.js'),
  InspectorUnauthorizedError: () => new InspectorUnauthorizedError(),
  InvalidInspectorUrlError: () => new InvalidInspectorUrlError('http://x'),
  // flight
  FlightRequestError: () => new FlightRequestError('Unknown command.'),
  FlightUnauthenticatedError: () => new FlightUnauthenticatedError(),
  FlightHandleNotFoundError: () => new FlightHandleNotFoundError('ticket', 1000),
  FlightCapacityError: () => new FlightCapacityError('tickets', 10),
  FlightUnsupportedError: () => new FlightUnsupportedError('DoPut', 'use a writer'),
  ArrowConversionError: () => new ArrowConversionError('when', 'Timestamp', 'soon'),
  // writer
  WriterOptionsError: () => new WriterOptionsError('engine', 'engine must be duckdb or sqlite.'),
  NothingPublishedError: () => new NothingPublishedError('orders', 's3://b/p/'),
  RollbackRefusedError: () => new RollbackRefusedError('orders', 's3://b/p/', 1, 2),
  SnapshotQueryError: () => new SnapshotQueryError('orders', 'syntax error', { cause: engineCause }),
  NotNullViolationError: () => new NotNullViolationError('orders', 'id'),
  SourceFileError: () => new SourceFileError('orders', '/x.db', 'it has a live WAL'),
  SnapshotFileError: () => new SnapshotFileError('/x.db', 'a side file was left'),
  EngineMismatchError: () => new EngineMismatchError('orders', 's3://b/p/', 'duckdb', 'sqlite'),
  SchemaRefusedError: () =>
    new SchemaRefusedError('orders', 's3://b/p/', 'id dropped', {
      cause: new IncompatibleSchemaError('orders', 1, 'id dropped'),
    }),
  SnapshotKeyTakenError: () => new SnapshotKeyTakenError('orders', 's3://b/p/', 'orders/1.db', 5),
  MetadataConflictError: () => new MetadataConflictError('orders', 's3://b/p/', 5),
  MetadataTooLargeError: () => new MetadataTooLargeError('orders', 's3://b/p/', 16_777_300, 16_777_216),
  IncrementalBaseError: () =>
    new IncrementalBaseError('orders', 'the location records no current snapshot of it'),
  IncrementalStatementError: () =>
    new IncrementalStatementError('orders', 'SELECT 1', 'it is a SELECT statement', { cause: engineCause }),
  // cli
  UsageError: () => new cli.UsageError('serve', "unknown option '--nope'"),
  ApiKeyEnvError: () => new cli.ApiKeyEnvError('FERRY_KEY'),
  SpicepodReadError: () => new cli.SpicepodReadError('spicepod.yaml', { cause: networkCause }),
  KeyFileError: () => new cli.KeyFileError('/keys/writer.pem', 'exists', { cause: networkCause }),
  ListenError: () => new cli.ListenError('127.0.0.1:1', 'EACCES', { flag: 'flight' }),
  ServerRequestError: () => new cli.ServerRequestError('http://x/v1/status', 'refused'),
};

/** What must come back: the class, name, message, code, own fields, stack and causes. */
function expectSame(rebuilt: unknown, original: unknown, depth = 0): void {
  if (!(original instanceof Error)) {
    // A thrown non-error (here: a string cause) comes back as an Error with its text.
    expect(rebuilt).toBeInstanceOf(Error);
    expect((rebuilt as Error).message).toBe(String(original));
    return;
  }
  expect(rebuilt).toBeInstanceOf(Error);
  const error = rebuilt as Error;
  expect(Object.getPrototypeOf(error)).toBe(Object.getPrototypeOf(original));
  expect(error.name).toBe(original.name);
  expect(error.message).toBe(original.message);
  expect(error.stack).toBe(original.stack);
  expect((error as { code?: unknown }).code).toEqual((original as { code?: unknown }).code);
  expect({ ...error }).toEqual({ ...original });
  if (original instanceof AggregateError) {
    expect((error as AggregateError).errors).toHaveLength(original.errors.length);
    original.errors.forEach((item, index) => {
      expectSame((error as AggregateError).errors[index], item, depth + 1);
    });
  }
  if (original.cause === undefined) expect(error.cause).toBeUndefined();
  else expectSame(error.cause, original.cause, depth + 1);
}

describe('the error registry', () => {
  const registry = registeredErrors();

  it('has a sample here for every registered class, and no sample of a class nobody registered', () => {
    expect([...registry.keys()].sort()).toEqual(Object.keys(SAMPLES).sort());
  });

  it('holds every error class a package exports, under its name', () => {
    const entries = { core, store, engines, namespaces, snapshots, runtime, server, flight, writer, cli };
    for (const [entry, exports] of Object.entries(entries)) {
      for (const [name, value] of Object.entries(exports)) {
        if (typeof value !== 'function' || !(value.prototype instanceof Error)) continue;
        expect(registry.get(name), `${entry} exports ${name}`).toBe(value);
      }
    }
  });

  it("lets an embedder catch every engine error from @ferry/runtime (its errors.ts re-exports @ferry/engines/sql's)", () => {
    // createRuntime throws SqliteBindingError, queries the rest: runtime/README.md's Errors section.
    for (const [name, value] of Object.entries(engineSql)) {
      if (typeof value !== 'function' || !(value.prototype instanceof Error)) continue;
      expect((runtime as Record<string, unknown>)[name], `@ferry/runtime exports ${name}`).toBe(value);
    }
  });

  /** Error classes exported from their module only to a sibling that turns them into a registered error. */
  const MODULE_INTERNAL: Readonly<Record<string, string>> = {
    Invalid:
      'core metadata/read-json.ts: a failed field check, rethrown as a MetadataError or ArrowSchemaError',
    JsonSyntaxError:
      'core metadata/json-bytes.ts: where a metadata.json body stops being JSON, rethrown as a MetadataError',
  };

  it('holds every error class the sources define and export from their module', () => {
    const defined: string[] = [];
    for (const dir of readdirSync(PACKAGES)) {
      for (const file of readdirSync(join(PACKAGES, dir, 'src'), { recursive: true, encoding: 'utf8' })) {
        if (!file.endsWith('.ts')) continue;
        const text = readFileSync(join(PACKAGES, dir, 'src', file), 'utf8');
        for (const match of text.matchAll(/^export class (\w+) extends (\w+)/gm)) {
          if (/Error$/.test(match[2] as string)) defined.push(match[1] as string);
        }
      }
    }
    expect(defined.length).toBeGreaterThan(50);
    for (const name of defined.filter((name) => !(name in MODULE_INTERNAL))) {
      expect(registry.has(name), name).toBe(true);
    }
  });

  describe.each(Object.keys(SAMPLES))('%s', (name) => {
    it('rebuilds as itself after structured clone (a thread hop) and after JSON (a status view)', () => {
      const original = (SAMPLES[name] as () => Error)();
      const errorClass = registry.get(name);
      expect(errorClass).toBeDefined();
      expect(original).toBeInstanceOf(errorClass as NonNullable<typeof errorClass>);
      const wire = serializeError(original);
      for (const copy of [structuredClone(wire), JSON.parse(JSON.stringify(wire)) as SerializedError]) {
        const rebuilt = deserializeError(copy);
        expect(rebuilt).toBeInstanceOf(errorClass as NonNullable<typeof errorClass>);
        expectSame(rebuilt, original);
      }
    });

    it('has a row in ERROR_STATUS for its code', () => {
      const { code } = (SAMPLES[name] as () => Error)() as { code?: unknown };
      if (typeof code === 'string' && code.startsWith('ERR_')) expect(ERROR_STATUS[code], code).toBeDefined();
    });
  });
});

describe('the code → status table', () => {
  /** Codes of other libraries the sources compare with (Node's parseArgs, Worker), not Ferry's own. */
  const FOREIGN = new Set([
    'ERR_PARSE_ARGS_UNKNOWN_OPTION',
    'ERR_PARSE_ARGS_INVALID_OPTION_VALUE',
    'ERR_WORKER_INVALID_EXEC_ARGV',
    'ERR_DLOPEN_FAILED',
  ]);

  function sourceCodes(): Set<string> {
    const codes = new Set<string>();
    for (const dir of readdirSync(PACKAGES)) {
      for (const file of readdirSync(join(PACKAGES, dir, 'src'), { recursive: true, encoding: 'utf8' })) {
        if (!file.endsWith('.ts') || file.endsWith('error-status.ts')) continue;
        const text = readFileSync(join(PACKAGES, dir, 'src', file), 'utf8');
        for (const match of text.matchAll(/'(ERR_[A-Z0-9_]+)'/g)) codes.add(match[1] as string);
      }
    }
    return codes;
  }

  it('has a row for every code the sources raise', () => {
    const missing = [...sourceCodes()].filter(
      (code) => !FOREIGN.has(code) && ERROR_STATUS[code] === undefined,
    );
    expect(missing).toEqual([]);
  });

  it('has no row for a code nothing raises', () => {
    const codes = sourceCodes();
    expect(Object.keys(ERROR_STATUS).filter((code) => !codes.has(code))).toEqual([]);
  });

  it('is what both front ends answer with', () => {
    for (const [code, row] of Object.entries(ERROR_STATUS)) {
      const error = new FerryError(code, `a ${code} error`);
      expect(server.httpStatusFor(error), code).toBe(row.http);
      const grpc = flight.grpcErrorOf(error);
      expect(grpc.internal, code).toBe(row.grpc === 'INTERNAL');
      expect(grpc.metadata.get('ferry-error-code'), code).toEqual([code]);
    }
    expect(server.httpStatusFor(new Error('no code'))).toBe(500);
    expect(flight.grpcErrorOf(new Error('no code')).internal).toBe(true);
  });
});
