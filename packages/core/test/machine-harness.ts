/**
 * The dataset machine's test harness, shared by the rule tests, the page-sentence tests and the
 * restore tests: an in-memory metadata store with ETags, download / verify / swap fakes that can be
 * told to fail per snapshot id or be held open, and a `start()` that runs the machine on a
 * SimulatedClock, recording its logs, emitted events and the states each microstep entered (what an
 * inspector shows). No threads, no network, no real time.
 */
import { expect } from 'vitest';
import { createActor, fromPromise, type InspectionEvent, SimulatedClock, waitFor } from 'xstate';
import { FerryError, SnapshotRejectedError, SnapshotRejectionCode } from '../src/errors.js';
import {
  type AuthenticateSnapshotInput,
  createDatasetMachine,
  type DatasetEmitted,
  type DatasetMachineInput,
  type DatasetSnapshot,
  type DownloadedSnapshot,
  type DownloadSnapshotInput,
  datasetStatus,
  type LoadedSnapshot,
  type LogEntry,
  type PreparedSnapshot,
  type ReadMetadataInput,
  type ReadMetadataOutput,
  type SwapSnapshotInput,
  type VerifySnapshotInput,
} from '../src/machine/index.js';
import type { ArrowSchema, DatasetMetadata, SchemaEntry, SnapshotEntry } from '../src/metadata/types.js';

export const INTERVAL = 10_000;
export const WAITING = "Snapshot acceleration for dataset 'orders' is waiting for its first snapshot";
export const OLDER =
  'snapshot metadata current id is older than the locally loaded snapshot; skipping reload to avoid regression';
export const LOCATION = 's3://bucket/snapshots/';

export const idSchema: ArrowSchema = {
  fields: [{ name: 'id', data_type: 'Int64', nullable: false, metadata: {} }],
  metadata: {},
};
export const textIdSchema: ArrowSchema = {
  fields: [{ name: 'id', data_type: 'Utf8', nullable: false, metadata: {} }],
  metadata: {},
};

// ---------------------------------------------------------------------------------------------
// Fakes.
// ---------------------------------------------------------------------------------------------

export interface Deferred<T = void> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

interface PublishOptions {
  readonly engine?: string;
  readonly schema?: ArrowSchema;
  /** Append the entry without making it current. */
  readonly current?: boolean;
}

/** metadata.json for one location holding the dataset `orders`, with an ETag per version. */
export class FakeStore {
  exists = true;
  hasEntry = true;
  datasetEngine: string | undefined = undefined;
  currentSnapshotId: number | undefined = undefined;
  currentSchemaId = 0;
  schemas: SchemaEntry[] = [{ schemaId: 0, schema: idSchema }];
  snapshots: SnapshotEntry[] = [];
  version = 1;
  readonly reads: ReadMetadataInput[] = [];
  readonly failures: unknown[] = [];
  gate: Deferred | undefined;
  /** Answers as a shared read would: begun this long before the check asked (`readAtMs`), on `now`. */
  sharedRead: { readonly agoMs: number; readonly now: () => number } | undefined;

  publish(snapshotId: number, options: PublishOptions = {}): void {
    if (options.schema !== undefined) {
      const schemaId = Math.max(...this.schemas.map((s) => s.schemaId)) + 1;
      this.schemas.push({ schemaId, schema: options.schema });
      this.currentSchemaId = schemaId;
    }
    this.snapshots.push({
      snapshotId,
      timestampMs: 1_764_400_000_000 + snapshotId * 1000,
      uri: `s3://bucket/snapshots/orders_${snapshotId}.duckdb`,
      checksum: `sha-${snapshotId}`,
      checksumAlgorithm: 'SHA256',
      size: 1024,
      engine: options.engine ?? 'duckdb',
    });
    if (options.current !== false) this.currentSnapshotId = snapshotId;
    this.version++;
  }

  /** Rewrite metadata.json, e.g. another dataset changed: new ETag, same content for ours. */
  touch(): void {
    this.version++;
  }

  get etag(): string {
    return `"v${this.version}"`;
  }

  dataset(): DatasetMetadata {
    return structuredClone({
      name: 'orders',
      ...(this.datasetEngine === undefined ? {} : { engine: this.datasetEngine }),
      schemas: this.schemas,
      currentSchemaId: this.currentSchemaId,
      snapshots: this.snapshots,
      ...(this.currentSnapshotId === undefined ? {} : { currentSnapshotId: this.currentSnapshotId }),
      properties: {},
    });
  }

  async read(input: ReadMetadataInput): Promise<ReadMetadataOutput> {
    this.reads.push(input);
    if (this.gate !== undefined) await this.gate.promise;
    if (this.failures.length > 0) throw this.failures.shift();
    const shared = this.sharedRead;
    const at = shared === undefined ? {} : { readAtMs: shared.now() - shared.agoMs };
    if (!this.exists) return { kind: 'read', dataset: undefined, ...at };
    if (input.ifNoneMatch === this.etag) return { kind: 'unchanged', ...at };
    return { kind: 'read', etag: this.etag, dataset: this.hasEntry ? this.dataset() : undefined, ...at };
  }
}

/**
 * The download, verification and swap actors: `failures` fail a snapshot id's download,
 * `verifyFailures` its verification; the gates hold a step open.
 */
export class FakeDownloads {
  readonly prepared: DownloadSnapshotInput[] = [];
  readonly verifications: VerifySnapshotInput[] = [];
  readonly swapped: SwapSnapshotInput[] = [];
  readonly failures = new Map<number, unknown>();
  readonly verifyFailures = new Map<number, unknown>();
  /** Signature checks (datasets with `signaturesRequired`), and the ones to refuse. */
  readonly authenticated: AuthenticateSnapshotInput[] = [];
  readonly authFailures = new Map<number, unknown>();
  prepareGate: Deferred | undefined;
  verifyGate: Deferred | undefined;
  swapGate: Deferred | undefined;
  lastSignal: AbortSignal | undefined;

  async authenticate(input: AuthenticateSnapshotInput): Promise<void> {
    this.authenticated.push(input);
    const failure = this.authFailures.get(input.entry.snapshotId);
    if (failure !== undefined) throw failure;
  }

  async download(input: DownloadSnapshotInput, signal: AbortSignal): Promise<DownloadedSnapshot> {
    this.prepared.push(input);
    this.lastSignal = signal;
    if (this.prepareGate !== undefined) await this.prepareGate.promise;
    const failure = this.failures.get(input.entry.snapshotId);
    if (failure !== undefined) throw failure;
    return { snapshotId: input.entry.snapshotId, token: `dl-${input.entry.snapshotId}` };
  }

  async verify(input: VerifySnapshotInput, signal: AbortSignal): Promise<PreparedSnapshot> {
    this.verifications.push(input);
    this.lastSignal = signal;
    if (this.verifyGate !== undefined) await this.verifyGate.promise;
    const failure = this.verifyFailures.get(input.entry.snapshotId);
    if (failure !== undefined) throw failure;
    return { snapshotId: input.entry.snapshotId, token: `tmp-${input.entry.snapshotId}` };
  }

  async swap(input: SwapSnapshotInput): Promise<void> {
    this.swapped.push(input);
    if (this.swapGate !== undefined) await this.swapGate.promise;
  }

  get preparedIds(): number[] {
    return this.prepared.map((input) => input.entry.snapshotId);
  }
}

export function checksumMismatch(id: number): SnapshotRejectedError {
  return new SnapshotRejectedError(
    SnapshotRejectionCode.checksumMismatch,
    `Snapshot ${id} of dataset 'orders' has a bad checksum.`,
  );
}

export function networkError(): FerryError {
  return new FerryError('ERR_NETWORK', 'The store at s3://bucket/snapshots/ is unreachable.');
}

export function localSnapshot(snapshotId: number, schema: ArrowSchema = idSchema): LoadedSnapshot {
  return { snapshotId, timestampMs: 1_764_300_000_000, checksum: `sha-${snapshotId}`, schema };
}

// ---------------------------------------------------------------------------------------------
// Harness.
// ---------------------------------------------------------------------------------------------

/** Overrides of the harness input; `undefined` removes a setting. */
type InputOverrides = { readonly [K in keyof DatasetMachineInput]?: DatasetMachineInput[K] | undefined };

export interface StartOptions {
  readonly input?: InputOverrides;
  /** The backoff jitter source; default 0.5 (no jitter). */
  readonly random?: () => number;
  /** A persisted snapshot to restore instead of starting fresh. */
  readonly snapshot?: unknown;
  readonly clock?: SimulatedClock;
  readonly restore?: LoadedSnapshot | null;
  readonly store?: FakeStore;
  readonly downloads?: FakeDownloads;
}

const IDLE = [
  { serving: 'scheduled' },
  { serving: 'backingOff' },
  { serving: 'paused' },
  'waiting',
  'stopped',
] as const;

function isIdle(snapshot: DatasetSnapshot): boolean {
  return IDLE.some((state) => snapshot.matches(state));
}

export function start(options: StartOptions = {}) {
  const clock = options.clock ?? new SimulatedClock();
  const store = options.store ?? new FakeStore();
  const downloads = options.downloads ?? new FakeDownloads();
  const logs: LogEntry[] = [];
  const emitted: DatasetEmitted[] = [];
  const restore = options.restore ?? null;
  const random = options.random ?? (() => 0.5);
  const machine = createDatasetMachine({ now: () => clock.now(), random }).provide({
    actors: {
      restoreLocal: fromPromise(() => Promise.resolve(restore)),
      readMetadata: fromPromise(({ input }: { input: ReadMetadataInput }) => store.read(input)),
      authenticateSnapshot: fromPromise(({ input }: { input: AuthenticateSnapshotInput }) =>
        downloads.authenticate(input),
      ),
      downloadSnapshot: fromPromise(
        ({ input, signal }: { input: DownloadSnapshotInput; signal: AbortSignal }) =>
          downloads.download(input, signal),
      ),
      verifySnapshot: fromPromise(({ input, signal }: { input: VerifySnapshotInput; signal: AbortSignal }) =>
        downloads.verify(input, signal),
      ),
      swapSnapshot: fromPromise(({ input }: { input: SwapSnapshotInput }) => downloads.swap(input)),
    },
    actions: {
      log: (_args, entry) => {
        logs.push(entry);
      },
    },
  });
  const settings = {
    name: 'orders',
    engine: 'duckdb',
    refreshCheckIntervalMs: INTERVAL,
    location: LOCATION,
    ...options.input,
  };
  const input = Object.fromEntries(
    Object.entries(settings).filter(([, value]) => value !== undefined),
  ) as unknown as DatasetMachineInput;
  const actor =
    options.snapshot === undefined
      ? createActor(machine, { clock, input })
      : createActor(machine, { clock, input, snapshot: options.snapshot as DatasetSnapshot });
  actor.on('*', (event) => {
    emitted.push(event);
  });
  actor.start();
  // Each microstep's state of the machine itself, as `polling.readingMetadata`: the path an
  // inspector shows (eventless steps included).
  const steps: string[] = [];
  actor.system.inspect((event: InspectionEvent) => {
    if (event.type !== '@xstate.microstep' || event.actorRef !== actor) return;
    steps.push(...leaves((event.snapshot as DatasetSnapshot).value));
  });

  const settle = () => waitFor(actor, isIdle, { timeout: 1000 });
  return {
    actor,
    clock,
    store,
    downloads,
    logs,
    emitted,
    settle,
    until: (predicate: (snapshot: DatasetSnapshot) => boolean) =>
      waitFor(actor, predicate, { timeout: 1000 }),
    /** Move the clock on and let the machine come to rest. */
    advance: async (ms: number) => {
      clock.increment(ms);
      return settle();
    },
    context: () => actor.getSnapshot().context,
    status: () => datasetStatus(actor.getSnapshot()),
    messages: (level?: LogEntry['level']) =>
      logs.filter((entry) => level === undefined || entry.level === level).map((entry) => entry.message),
    polls: () => emitted.filter((event) => event.type === 'poll').map((event) => event.result),
    /** The states entered since the `mark`-th step (`steps.length` before an action). */
    steps,
    pathSince: (mark: number) => steps.slice(mark),
  };
}

/** `{ polling: 'readingMetadata' }` → `['polling.readingMetadata']`. */
function leaves(value: unknown, prefix = ''): string[] {
  if (typeof value === 'string') return [`${prefix}${value}`];
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, inner]) => leaves(inner, `${prefix}${key}.`));
}

/** A store with snapshot 1 current, and a dataset that has bootstrapped from it. */
export async function serving(options: StartOptions = {}) {
  const store = options.store ?? new FakeStore();
  if (store.snapshots.length === 0) store.publish(1);
  const harness = start({ ...options, store });
  await harness.settle();
  expect(harness.context().serving?.snapshotId).toBe(store.currentSnapshotId);
  return harness;
}
