/**
 * Errors of the pure core, and how every Ferry error crosses a thread. Every error Ferry raises
 * carries a stable `code` (tests and operators match on it, the README tabulates it), a
 * one-sentence message that names the dataset, key or setting and says how to fix it, and the
 * `cause` when there is one.
 *
 * A worker's error reaches another thread as the plain record {@link SerializedError} (structured
 * clone would keep only `message`, `stack` and `cause` and rebuild a plain `Error`), and is rebuilt
 * there with its own class by {@link deserializeError}: the class is looked up by name in a registry
 * that each package fills from its errors module with {@link registerErrors}. The rebuilt error is a
 * real instance of that class (`instanceof` holds), with its code, its own fields (`retryable`,
 * `uri`, `operation`, …), the original stack and its causes rebuilt the same way. Registered classes
 * also answer `instanceof` by a `Symbol.for` marker on their prototype, so an error made by a second
 * copy of a Ferry package (a test's sources beside the built `dist/`) still matches.
 */

export interface FerryErrorOptions {
  readonly cause?: unknown;
}

export class FerryError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options: FerryErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'FerryError';
    this.code = code;
  }
}

/** A value a serialised error field may hold: what both JSON and structured clone keep as it is. */
export type WireValue =
  | string
  | number
  | boolean
  | null
  | readonly WireValue[]
  | { readonly [key: string]: WireValue };

/**
 * The plain shape an error takes on a thread boundary or in a status view (JSON-safe: no class,
 * no function, no `undefined`).
 */
export interface SerializedError {
  /** The error's `name` as it was thrown (`WriteRejectedError`, `TypeError`, `AbortError`). */
  readonly name: string;
  /**
   * The registered class to rebuild it with, when that is not `name`: the nearest registered class
   * on its prototype chain (an error renamed after it was made, a subclass nobody registered).
   */
  readonly kind?: string;
  readonly message: string;
  readonly code?: string;
  readonly stack?: string;
  /** The error's own fields besides name, message, stack, code and cause, when they are wire values. */
  readonly fields?: { readonly [key: string]: WireValue };
  readonly cause?: SerializedError;
  /** An AggregateError's errors. */
  readonly errors?: readonly SerializedError[];
}

/** Anything `instanceof` can be asked about: a class whose instances are errors. */
// biome-ignore lint/suspicious/noExplicitAny: constructors of any parameter list
export type ErrorClass = abstract new (...args: any[]) => Error;

/** The classes errors are rebuilt with, by name. Filled by each package's errors module. */
const registry = new Map<string, ErrorClass>();
/** The `Symbol.for` marker of each class registered through {@link registerErrors}. */
const markers = new WeakMap<object, symbol>();
/** Registered name of each registered prototype (for `kind`). */
const kinds = new WeakMap<object, string>();

/** JavaScript's own error classes: rebuilt as themselves, never marked (their prototypes are not ours). */
const BUILT_IN: Readonly<Record<string, ErrorClass>> = {
  Error,
  TypeError,
  RangeError,
  SyntaxError,
  ReferenceError,
  EvalError,
  URIError,
  AggregateError,
  DOMException,
};
for (const [name, errorClass] of Object.entries(BUILT_IN)) {
  registry.set(name, errorClass);
  kinds.set(errorClass.prototype, name);
}

function markedInstanceOf(this: ErrorClass, value: unknown): boolean {
  if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
  const marker = markers.get(this);
  return (
    marker !== undefined &&
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    marker in value
  );
}

/**
 * Registers error classes by name (the object's keys: `registerErrors({ WriteRejectedError })`),
 * so that {@link deserializeError} rebuilds their instances with them, and marks them so
 * `instanceof` holds across copies of the package. Each package calls it in its errors module for
 * every error class it exports. Registering a name again replaces its class (a module evaluated
 * twice); two different classes of one name are a bug the error registry test reports.
 */
export function registerErrors(classes: Readonly<Record<string, ErrorClass>>): void {
  for (const [name, errorClass] of Object.entries(classes)) {
    if (name in BUILT_IN) throw new TypeError(`registerErrors: '${name}' is a built-in error class.`);
    const marker = Symbol.for(`ferry.error:${name}`);
    Object.defineProperty(errorClass.prototype, marker, { value: true });
    Object.defineProperty(errorClass, Symbol.hasInstance, { value: markedInstanceOf, configurable: true });
    markers.set(errorClass, marker);
    kinds.set(errorClass.prototype, name);
    registry.set(name, errorClass);
  }
}

/** Every registered class by name, the built-in ones first. */
export function registeredErrors(): ReadonlyMap<string, ErrorClass> {
  return registry;
}

registerErrors({ FerryError });

/** How deep causes (and nested field values) are followed; a deeper chain ends there. */
const MAX_DEPTH = 8;
const STANDARD_KEYS = new Set(['name', 'message', 'stack', 'code', 'cause']);

/** `value` if JSON and structured clone both keep it as it is, else undefined. */
function wireValue(value: unknown, depth: number): WireValue | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'object' || depth >= MAX_DEPTH) return undefined;
  if (Array.isArray(value)) {
    const items = value.map((item) => wireValue(item, depth + 1));
    return items.every((item) => item !== undefined) ? (items as WireValue[]) : undefined;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return undefined;
  const record: Record<string, WireValue> = {};
  for (const [key, item] of Object.entries(value)) {
    const kept = wireValue(item, depth + 1);
    if (kept !== undefined) record[key] = kept;
  }
  return record;
}

/** The registered name of the nearest registered class on `error`'s prototype chain. */
function kindOf(error: Error): string {
  for (let proto = Object.getPrototypeOf(error); proto !== null; proto = Object.getPrototypeOf(proto)) {
    const kind = kinds.get(proto);
    if (kind !== undefined) return kind;
  }
  return 'Error';
}

function serializeAt(error: unknown, depth: number): SerializedError {
  if (!(error instanceof Error)) {
    // A thrown string, number or object: its text is all there is to keep.
    return { name: 'Error', message: typeof error === 'string' ? error : describeValue(error) };
  }
  const kind = kindOf(error);
  const { code } = error as { code?: unknown };
  const fields: Record<string, WireValue> = {};
  for (const key of Object.keys(error)) {
    if (STANDARD_KEYS.has(key)) continue;
    const value = wireValue((error as unknown as Record<string, unknown>)[key], 0);
    if (value !== undefined) fields[key] = value;
  }
  const { cause } = error;
  const errors = error instanceof AggregateError && depth < MAX_DEPTH ? error.errors : undefined;
  return {
    name: error.name,
    ...(kind === error.name ? {} : { kind }),
    message: error.message,
    ...(typeof code === 'string' ? { code } : {}),
    ...(error.stack === undefined ? {} : { stack: error.stack }),
    ...(Object.keys(fields).length === 0 ? {} : { fields }),
    ...(cause === undefined || depth >= MAX_DEPTH ? {} : { cause: serializeAt(cause, depth + 1) }),
    ...(errors === undefined ? {} : { errors: errors.map((item) => serializeAt(item, depth + 1)) }),
  };
}

function describeValue(value: unknown): string {
  try {
    const json = JSON.stringify(value);
    if (json !== undefined) return json;
  } catch {
    // A cyclic or BigInt-holding object: its String() form below.
  }
  return String(value);
}

/**
 * The wire form of an error (or of any thrown value): its registered class, name, message, code,
 * stack, own fields and causes, as plain data to post to another thread or put in a status view.
 */
export function serializeError(error: unknown): SerializedError {
  return serializeAt(error, 0);
}

/** An instance of `errorClass` made without running its constructor (whose arguments are gone). */
function instanceOf(errorClass: ErrorClass, serialized: SerializedError, cause: Error | undefined): Error {
  const options = cause === undefined ? undefined : { cause };
  if (errorClass === DOMException) {
    const error = new DOMException(serialized.message, serialized.name);
    if (cause !== undefined)
      Object.defineProperty(error, 'cause', { value: cause, configurable: true, writable: true });
    return error;
  }
  if (errorClass === AggregateError) {
    return new AggregateError((serialized.errors ?? []).map(deserializeError), serialized.message, options);
  }
  return Reflect.construct(Error, [serialized.message, options], errorClass) as Error;
}

/**
 * The error `serialized` describes, rebuilt with its registered class (`instanceof` holds, its
 * fields, code, stack and causes are back). A class this thread has not registered (a package it
 * does not load) gives a {@link FerryError} that keeps the original name, code (`ERR_UNEXPECTED`
 * when there was none), fields and stack.
 */
export function deserializeError(serialized: SerializedError): Error {
  const cause = serialized.cause === undefined ? undefined : deserializeError(serialized.cause);
  const registered = registry.get(serialized.kind ?? serialized.name);
  const error = instanceOf(registered ?? FerryError, serialized, cause);
  const own: Record<string, unknown> = { ...serialized.fields };
  if (serialized.code !== undefined) own.code = serialized.code;
  else if (registered === undefined) own.code = 'ERR_UNEXPECTED';
  // As thrown: `name` is an own field unless the prototype gives the same one (a native TypeError).
  if (error.name !== serialized.name) own.name = serialized.name;
  Object.assign(error, own);
  if (serialized.stack !== undefined) {
    Object.defineProperty(error, 'stack', { value: serialized.stack, configurable: true, writable: true });
  }
  return error;
}
/**
 * Codes of the errors a snapshot can fail validation with. The dataset machine's `fallback`
 * behaviour moves on to the next candidate for these (integrity and schema failures) and stops on
 * anything else (network, disk, permissions).
 */
export const SnapshotRejectionCode = {
  engineMismatch: 'ERR_SNAPSHOT_ENGINE_MISMATCH',
  schemaMismatch: 'ERR_SNAPSHOT_SCHEMA_MISMATCH',
  sizeMismatch: 'ERR_SNAPSHOT_SIZE_MISMATCH',
  checksumMismatch: 'ERR_SNAPSHOT_CHECKSUM_MISMATCH',
  unsupportedChecksumAlgorithm: 'ERR_SNAPSHOT_CHECKSUM_ALGORITHM',
  notADatabase: 'ERR_SNAPSHOT_NOT_A_DATABASE',
  missingTable: 'ERR_SNAPSHOT_MISSING_TABLE',
  objectMissing: 'ERR_SNAPSHOT_OBJECT_MISSING',
  unsigned: 'ERR_SNAPSHOT_UNSIGNED',
  signatureInvalid: 'ERR_SNAPSHOT_SIGNATURE_INVALID',
  signerUntrusted: 'ERR_SNAPSHOT_SIGNER_UNTRUSTED',
  statementMismatch: 'ERR_SNAPSHOT_STATEMENT_MISMATCH',
} as const;
export type SnapshotRejectionCode = (typeof SnapshotRejectionCode)[keyof typeof SnapshotRejectionCode];

const rejectionCodes: ReadonlySet<string> = new Set(Object.values(SnapshotRejectionCode));

/** The refusals of a reader with trusted keys (`ferry_trusted_keys`): each is counted by reason. */
export const SIGNATURE_REFUSAL_CODES: readonly SnapshotRejectionCode[] = [
  SnapshotRejectionCode.unsigned,
  SnapshotRejectionCode.signatureInvalid,
  SnapshotRejectionCode.signerUntrusted,
  SnapshotRejectionCode.statementMismatch,
];

/** A snapshot refused by validation (engine, schema, size, checksum, file content). */
export class SnapshotRejectedError extends FerryError {
  constructor(code: SnapshotRejectionCode, message: string, options: FerryErrorOptions = {}) {
    super(code, message, options);
    this.name = 'SnapshotRejectedError';
  }
}

/** True for integrity and schema failures: the snapshot is bad, not the path to it. */
export function isSnapshotRejection(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && rejectionCodes.has(code);
}

/**
 * A snapshot URI (recorded in metadata.json) or an object key that does not name an object under
 * the location: another bucket or scheme, outside the prefix, or an escape (`..`, `%2e%2e`, `\`).
 */
export class OutsideLocationError extends FerryError {
  readonly location: string;
  /** The URI or key refused, as given. */
  readonly uri: string;
  readonly reason: string;

  constructor(location: string, uri: string, reason: string, what: 'uri' | 'key' = 'uri') {
    super(
      'ERR_OUTSIDE_LOCATION',
      what === 'uri'
        ? `Snapshot URI '${uri}' is outside location '${location}' (${reason}); record snapshot URIs as absolute URIs under the location.`
        : `Object key '${uri}' is outside location '${location}' (${reason}); use a relative key under the location.`,
    );
    this.name = 'OutsideLocationError';
    this.location = location;
    this.uri = uri;
    this.reason = reason;
  }
}

registerErrors({ SnapshotRejectedError, OutsideLocationError });
