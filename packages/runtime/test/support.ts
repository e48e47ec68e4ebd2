/**
 * Shared setup of the runtime's integration tests: a real local S3 + SQS (fauxqs), a bucket, a
 * publisher using the real writer, spicepods pointing at them, and waiting on runtime events.
 */
import { mkdtemp } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { type AddressInfo, createServer, connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type LocalAws,
  localS3Params,
  localStoreParams,
  nextEventOf,
  spicepodYaml,
} from '@ferry/test-support';
import { useLocalAws as useSuiteAws } from '@ferry/test-support/suite';
import { type PublishResult, publishSnapshot } from '@ferry/writer';
import type { Runtime, RuntimeEvents } from '../src/index.js';

export { type LoggedRecord, type WatchedLogger, watchedLogger } from '@ferry/test-support';

/** Resolves with the first event of `kind` that satisfies `predicate` (no polling, no sleeps). */
export function nextEvent<K extends keyof RuntimeEvents>(
  runtime: Runtime,
  kind: K,
  predicate?: (payload: RuntimeEvents[K]) => boolean,
  timeoutMs?: number,
): Promise<RuntimeEvents[K]> {
  return nextEventOf<RuntimeEvents, K>(runtime, kind, predicate, timeoutMs);
}

export const BUCKET = 'ferry-runtime';

/** The local S3 + SQS of this test file, with {@link BUCKET} made (see `@ferry/test-support/suite`). */
export function useLocalAws(): LocalAws {
  return useSuiteAws({ buckets: [BUCKET] }).aws;
}

export function location(prefix = 'snapshots/'): string {
  return `s3://${BUCKET}/${prefix}`;
}

/** Publishes `rows` rows of `(id, version)` all carrying `version`, so a result shows which snapshot it read. */
export function publishVersion(
  aws: LocalAws,
  dataset: string,
  engine: 'duckdb' | 'sqlite',
  version: number,
  options: { rows?: number; prefix?: string } = {},
): Promise<PublishResult> {
  const rows = options.rows ?? 100;
  return publishSnapshot({
    dataset,
    engine,
    location: location(options.prefix),
    storeParams: localStoreParams(aws),
    source: { sql: `SELECT i::BIGINT AS id, ${version}::BIGINT AS version FROM range(${rows}) t(i)` },
    notNull: ['id'],
  });
}

export interface DatasetSpec {
  readonly name: string;
  readonly engine: 'duckdb' | 'sqlite';
  readonly interval?: string;
}

/** A spicepod of `datasets` on `location` (each polling every second unless it says otherwise). */
export function podYaml(
  snapshotLocation: string,
  datasets: readonly DatasetSpec[],
  params: Readonly<Record<string, string | boolean>> = {},
): string {
  return spicepodYaml({
    name: 'runtime-test',
    location: snapshotLocation,
    params,
    datasets: datasets.map((dataset) => ({ ...dataset, interval: dataset.interval ?? '1s' })),
  });
}

export function spicepod(
  aws: LocalAws,
  datasets: readonly DatasetSpec[],
  extra: { queueUrl?: string; prefix?: string; params?: Readonly<Record<string, string>> } = {},
): string {
  return podYaml(location(extra.prefix), datasets, {
    ...localS3Params(aws),
    ...(extra.queueUrl === undefined ? {} : { s3_queue_url: extra.queueUrl }),
    ...extra.params,
  });
}

export function tempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

interface SqsModule {
  readonly SQSClient: new (
    config: ReturnType<LocalAws['sqsConfig']>,
  ) => { send(command: unknown): Promise<{ MessageId?: string }>; destroy(): void };
  readonly SendMessageCommand: new (input: { QueueUrl: string; MessageBody: string }) => unknown;
}

/**
 * The real AWS SDK SQS client. @ferry/runtime does not depend on it, so it is loaded from the
 * package that does (@ferry/test-support), the same build the notification bridge sends with.
 */
function sqsModule(): SqsModule {
  const local = createRequire(import.meta.url);
  return createRequire(local.resolve('@ferry/test-support'))('@aws-sdk/client-sqs') as SqsModule;
}

/** Sends one message with exactly this body to the queue (real SQS client, real server); returns its id. */
export async function sendMessage(aws: LocalAws, queueUrl: string, body: string): Promise<string> {
  const { SQSClient, SendMessageCommand } = sqsModule();
  const client = new SQSClient(aws.sqsConfig({ direct: true }));
  try {
    const out = await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
    return out.MessageId ?? '';
  } finally {
    client.destroy();
  }
}

/** A loopback port that nothing listens on (connections are refused). */
export async function refusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A TCP proxy to a local server whose link a test can cut (an outage) and restore. */
export interface CuttableProxy {
  readonly endpoint: string;
  /** Data chunks received from clients so far. */
  traffic(): number;
  /** Resolves once more than `seen` chunks have arrived from clients. */
  trafficAfter(seen: number): Promise<void>;
  /** Drops every open connection and every new one until {@link CuttableProxy.restore}. */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startCuttableProxy(upstreamPort: number): Promise<CuttableProxy> {
  const sockets = new Set<Socket>();
  const waiters = new Set<() => void>();
  let chunks = 0;
  let up = true;
  const server = createServer((client) => {
    if (!up) {
      client.destroy();
      return;
    }
    const upstream = netConnect(upstreamPort, '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    for (const socket of [client, upstream]) {
      socket.on('error', drop);
      socket.on('close', drop);
    }
    client.on('data', () => {
      chunks++;
      for (const waiter of [...waiters]) waiter();
    });
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const cutAll = (): void => {
    for (const socket of sockets) socket.destroy();
    sockets.clear();
  };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    traffic: () => chunks,
    trafficAfter(seen) {
      return new Promise((resolve) => {
        const check = (): void => {
          if (chunks <= seen) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      });
    },
    cut() {
      up = false;
      cutAll();
    },
    restore() {
      up = true;
    },
    async close() {
      cutAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
