/**
 * Shared setup of the reliability tests: real local S3/SQS (fauxqs) behind the fault proxy,
 * snapshot files built once per version with the real writer, a publisher that uploads a file and
 * appends its entry to metadata.json (and lets a test corrupt that entry on the way), spicepods
 * pointing a runtime at the proxy, and event-driven waits on the runtime and its log.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appendSnapshot } from '@ferry/core';
import { createRuntime, type Runtime, type RuntimeEvents, type RuntimeOptions } from '@ferry/runtime';
import {
  type LocalAws,
  localS3Params,
  nextEventOf,
  spicepodYaml,
  type WatchedLogger,
  watchedLogger,
} from '@ferry/test-support';
import { type BuiltSnapshot, buildSnapshotFile } from '@ferry/writer';
import { afterAll } from 'vitest';

export type { LoggedRecord } from '@ferry/test-support';
export { type WatchedLogger, watchedLogger };

/** Resolves with the first event of `kind` that satisfies `predicate` (no polling, no sleeps). */
export function nextEvent<K extends keyof RuntimeEvents>(
  runtime: Runtime,
  kind: K,
  predicate?: (payload: RuntimeEvents[K]) => boolean,
  timeoutMs?: number,
): Promise<RuntimeEvents[K]> {
  return nextEventOf<RuntimeEvents, K>(runtime, kind, predicate, timeoutMs);
}

export const BUCKET = 'ferry-reliability';
export const DATASET = 'orders';

export type Behaviour = 'warn' | 'retry' | 'fallback';
export type EngineName = 'duckdb' | 'sqlite';

export function location(prefix: string): string {
  return `s3://${BUCKET}/${prefix}`;
}

export function tempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

/** A snapshot file and the bytes in it, built once and published as often as a test likes. */
export interface SnapshotFile extends BuiltSnapshot {
  readonly bytes: Uint8Array;
  readonly checksum: string;
  readonly version: number;
}

const built = new Map<string, Promise<SnapshotFile>>();
let buildDir: Promise<string> | undefined;

/** Data directories made by {@link startRuntime}. */
const dataDirs: string[] = [];

// A file-level hook of every test file using this module (run after the file's own hooks have
// closed its runtimes): the files built and the data directories made for it go with it.
afterAll(async () => {
  const dirs = [...dataDirs, ...(buildDir === undefined ? [] : [await buildDir])];
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/**
 * `rows` rows of `(id BIGINT NOT NULL, version BIGINT)`, all carrying `version`, so a query shows
 * which snapshot answered it. `wide` adds a column (another schema).
 */
export function snapshotFile(
  engine: EngineName,
  version: number,
  options: { readonly rows?: number; readonly wide?: boolean; readonly dataset?: string } = {},
): Promise<SnapshotFile> {
  const rows = options.rows ?? 20;
  const dataset = options.dataset ?? DATASET;
  const id = `${dataset}-${engine}-${version}-${rows}-${options.wide === true}`;
  let file = built.get(id);
  if (file === undefined) {
    file = (async () => {
      buildDir ??= tempDir('ferry-reliability-build-');
      const output = join(await buildDir, `${id}.${engine}`);
      const extra = options.wide === true ? ", 'x' AS extra" : '';
      const result = await buildSnapshotFile({
        dataset,
        engine,
        output,
        notNull: ['id'],
        source: {
          sql: `SELECT i::BIGINT AS id, ${version}::BIGINT AS version${extra} FROM range(${rows}) t(i)`,
        },
      });
      const bytes = new Uint8Array(await readFile(output));
      const checksum = createHash('sha256').update(bytes).digest('hex');
      return { ...result, bytes, checksum, version };
    })();
    built.set(id, file);
  }
  return file;
}

export interface Published {
  readonly snapshotId: number;
  readonly key: string;
  readonly uri: string;
  readonly target: string;
  readonly file: SnapshotFile;
}

export interface PublishOptions {
  /** Change the new entry (and the document) before metadata.json is written: a corrupt publish. */
  readonly mutate?: (entry: Record<string, unknown>, document: Record<string, unknown>) => void;
  /** Upload these bytes instead of the file's (the entry still describes the file unless mutated). */
  readonly body?: Uint8Array;
  /** Do not upload anything (the entry names an object that does not exist). */
  readonly skipUpload?: boolean;
  readonly dataset?: string;
}

let objectCounter = 0;

/**
 * Uploads `file` under a fresh key of `prefix` and appends its entry to metadata.json (through
 * core's `appendSnapshot`, as the writer does), straight to the server: the proxy never sees it.
 */
export async function publish(
  aws: LocalAws,
  prefix: string,
  file: SnapshotFile,
  options: PublishOptions = {},
): Promise<Published> {
  const dataset = options.dataset ?? DATASET;
  const key = `${prefix}month=2026-01/day=2026-01-01/dataset=${dataset}/${dataset}_${Date.now()}_${++objectCounter}.${file.engine}`;
  const uri = `s3://${BUCKET}/${key}`;
  if (options.skipUpload !== true) await aws.putObject(BUCKET, key, options.body ?? file.bytes);
  const existing = await aws.getObject(BUCKET, `${prefix}metadata.json`);
  const document = appendSnapshot(existing === undefined ? undefined : new TextDecoder().decode(existing), {
    location: location(prefix),
    dataset,
    engine: file.engine,
    schema: file.schema,
    uri,
    checksum: file.checksum,
    size: file.size,
    rowCount: file.rowCount,
    timestampMs: Date.now(),
  });
  const entry = datasetEntry(document, dataset);
  const snapshots = entry.snapshots as Record<string, unknown>[];
  const added = snapshots[snapshots.length - 1] as Record<string, unknown>;
  options.mutate?.(added, document);
  await writeMetadata(aws, prefix, document);
  return { snapshotId: added['snapshot-id'] as number, key, uri, target: `${BUCKET}/${key}`, file };
}

export function datasetEntry(document: Record<string, unknown>, dataset = DATASET): Record<string, unknown> {
  return document[dataset] as Record<string, unknown>;
}

export async function readMetadata(aws: LocalAws, prefix: string): Promise<Record<string, unknown>> {
  const bytes = await aws.getObject(BUCKET, `${prefix}metadata.json`);
  if (bytes === undefined) throw new Error(`no metadata.json under ${prefix}`);
  return JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
}

export async function writeMetadata(aws: LocalAws, prefix: string, document: unknown): Promise<void> {
  const text = typeof document === 'string' ? document : JSON.stringify(document);
  await aws.putObject(BUCKET, `${prefix}metadata.json`, text, { contentType: 'application/json' });
}

/** Sets the dataset's `current-snapshot-id` (a rollback, or a return to the newest). */
export async function setCurrentId(aws: LocalAws, prefix: string, id: number): Promise<void> {
  const document = await readMetadata(aws, prefix);
  datasetEntry(document)['current-snapshot-id'] = id;
  document['last-updated-ms'] = Date.now();
  await writeMetadata(aws, prefix, document);
}

export interface PodOptions {
  readonly prefix: string;
  /** The S3 endpoint the runtime uses (the fault proxy). */
  readonly endpoint: string;
  readonly behaviour?: Behaviour;
  readonly interval?: string;
  readonly clientTimeout?: string;
  readonly queueUrl?: string;
  readonly queueEndpoint?: string;
  /** `ferry_sns_topic_arn`: the runtime makes its own queue and subscribes it to this topic. */
  readonly topicArn?: string;
  readonly datasets?: readonly { readonly name: string; readonly engine: EngineName }[];
}

export function spicepod(aws: LocalAws, options: PodOptions): string {
  return spicepodYaml({
    name: 'reliability',
    location: location(options.prefix),
    bootstrapOnFailure: options.behaviour ?? 'warn',
    params: {
      ...localS3Params(aws, options.endpoint),
      ...(options.clientTimeout === undefined ? {} : { client_timeout: options.clientTimeout }),
      ...(options.queueUrl === undefined ? {} : { s3_queue_url: options.queueUrl }),
      ...(options.queueEndpoint === undefined ? {} : { s3_queue_endpoint: options.queueEndpoint }),
      ...(options.topicArn === undefined ? {} : { ferry_sns_topic_arn: options.topicArn }),
    },
    datasets: (options.datasets ?? [{ name: DATASET, engine: 'duckdb' }]).map((dataset) => ({
      ...dataset,
      interval: options.interval ?? '300ms',
    })),
  });
}

/** Collects every event of `kind` from now on. */
export function collect<K extends keyof RuntimeEvents>(runtime: Runtime, kind: K): RuntimeEvents[K][] {
  const seen: RuntimeEvents[K][] = [];
  runtime.on(kind, (payload) => seen.push(payload));
  return seen;
}

export interface Started {
  readonly runtime: Runtime;
  readonly logger: WatchedLogger;
  readonly dataDir: string;
}

export async function startRuntime(
  yaml: string,
  options: Partial<RuntimeOptions> & { readonly dataDir?: string } = {},
): Promise<Started> {
  let dataDir = options.dataDir;
  if (dataDir === undefined) {
    dataDir = await tempDir('ferry-reliability-data-');
    dataDirs.push(dataDir);
  }
  const logger = watchedLogger();
  const runtime = await createRuntime(
    { yaml, baseDir: dataDir },
    { logger, ...options, dataDir, env: { ...process.env, ...options.env } },
  );
  return { runtime, logger, dataDir };
}

/** The `version` every row of the dataset carries, and the snapshot the answer came from. */
export async function servedVersion(
  runtime: Runtime,
  dataset = DATASET,
): Promise<{ version: number; snapshotId: number | null }> {
  const result = await runtime.query(`SELECT min(version) AS lo, max(version) AS hi FROM ${dataset}`);
  const row = result.rows[0] as { lo: number; hi: number };
  if (row.lo !== row.hi) throw new Error(`a result mixed versions ${row.lo} and ${row.hi}`);
  return { version: row.lo, snapshotId: result.snapshotId };
}

/** Temporary download files left beside live files (there must never be any once a poll ends). */
export async function temporaries(dataDir: string): Promise<string[]> {
  const names = await readdir(dataDir, { recursive: true });
  return names.filter((name) => name.includes('.ferry-tmp-'));
}

/**
 * The dataset's status once a check has ended and it is back to `serving` or `waiting` with a
 * status that satisfies `predicate` (every check ends with such a state change).
 */
export async function settledStatus(
  runtime: Runtime,
  predicate: (status: NonNullable<RuntimeEvents['state']['status']>) => boolean,
  dataset = DATASET,
  timeoutMs = 30_000,
): Promise<NonNullable<RuntimeEvents['state']['status']>> {
  const event = await nextEvent(
    runtime,
    'state',
    (e) =>
      e.dataset === dataset &&
      (e.state === 'serving' || e.state === 'waiting') &&
      e.status !== undefined &&
      predicate(e.status),
    timeoutMs,
  );
  return event.status as NonNullable<RuntimeEvents['state']['status']>;
}

/**
 * Runs `work` with the dataset's polling paused and no check running, then has the store checked
 * as `work` left it and resumes polling.
 *
 * The check is an operator's "poll now": a scheduled check may answer from the coordinator's
 * shared read of metadata.json, which can be a few milliseconds older than the end of `work` (it
 * reads ahead of the poll grid for every dataset of the location), so it could see half of what
 * `work` published.
 */
export async function whilePaused(
  runtime: Runtime,
  work: () => Promise<void>,
  dataset = DATASET,
): Promise<void> {
  // The status a command leaves behind reaches the host before the command's reply.
  await runtime.send(dataset, 'polling.pause');
  const state = runtime.status(dataset).state;
  if (state !== 'serving' && state !== 'waiting')
    await settledStatus(runtime, (status) => status.paused, dataset);
  await work();
  await runtime.send(dataset, 'poll.now');
  await runtime.send(dataset, 'polling.resume');
}

export function sha256Hex(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}
