/**
 * A dataset's host in-process: the real machine, real snapshot files on a file:// store, the real
 * shared metadata reader and the real snapshot tasks (run in-process, as a pool worker runs them);
 * MessageChannels stand where the thread boundaries would be (the test holds the coordinator's and
 * the host's ends). Bootstrap, generations announced as links the engines
 * read, restart from the live file, a swap on an announcement (with and without the coordinator's read), commands, status and a clean stop.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { type DatasetConfig, loadSpicepod, throwIfFatal } from '@ferry/core';
import { openEngine } from '@ferry/engines';
import { generationDirFor } from '@ferry/snapshots';
import { createObjectStore } from '@ferry/store';
import { publishSnapshot } from '@ferry/writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogLevel, LogRecord } from '../src/common/logging.js';
import type { AnnouncedGeneration, DatasetToHost, HostToDataset } from '../src/common/protocol.js';
import { RpcClient, respond } from '../src/common/rpc.js';
import { LocationMetadataReader } from '../src/coordinator/metadata-reader.js';
import { DatasetHost } from '../src/dataset/dataset-host.js';
import { SnapshotTaskRunner } from '../src/snapshot-pool/snapshot-tasks.js';
import { podYaml, tempDir } from './support.js';

let work: string;
let location: string;

beforeAll(async () => {
  work = await tempDir('ferry-dataset-host-');
  await mkdir(join(work, 'store'));
  location = `file://${join(work, 'store')}/`;
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

function publish(dataset: string, engine: 'duckdb' | 'sqlite', version: number, at = location) {
  return publishSnapshot({
    dataset,
    engine,
    location: at,
    source: { sql: `SELECT i::BIGINT AS id, ${version}::BIGINT AS version FROM range(10) t(i)` },
    notNull: ['id'],
  });
}

function datasetConfig(
  name: string,
  engine: 'duckdb' | 'sqlite',
  interval = '1h',
  at = location,
): DatasetConfig {
  const load = loadSpicepod(podYaml(at, [{ name, engine, interval }]), { file: 'spicepod.yaml' });
  throwIfFatal(load);
  return load.datasets[0] as DatasetConfig;
}

/** A host on MessageChannels: the test plays the coordinator (metadata reads) and the host. */
class Harness {
  readonly host: DatasetHost;
  readonly toHost: MessagePort;
  readonly toCoordinator: MessagePort;
  readonly rpc: RpcClient<HostToDataset>;
  readonly stopRpc: RpcClient<{ type: 'stop' }>;
  readonly messages: DatasetToHost[] = [];
  readonly reader: LocationMetadataReader;
  /** How many metadata reads the dataset asked the coordinator for. */
  readRequests = 0;
  readonly #waiters = new Set<() => void>();
  readonly #runner = new SnapshotTaskRunner();

  constructor(config: DatasetConfig, livePath: string, logLevel?: LogLevel) {
    const hostChannel = new MessageChannel();
    const coordinatorChannel = new MessageChannel();
    this.toHost = hostChannel.port1;
    this.toCoordinator = coordinatorChannel.port1;
    const reader = new LocationMetadataReader(createObjectStore(config.location, {}), { windowMs: 0 });
    this.reader = reader;
    this.toCoordinator.on('message', (message: { type: string; id: number; ifNoneMatch?: string }) => {
      if (this.stopRpc.handle(message)) return;
      if (message.type === 'read-metadata') {
        this.readRequests++;
        respond(this.toCoordinator, message.id, () => reader.readFor(config.name, message.ifNoneMatch, true));
      }
    });
    this.rpc = new RpcClient<HostToDataset>(this.toHost, 'host');
    this.stopRpc = new RpcClient<{ type: 'stop' }>(this.toCoordinator, 'coordinator');
    this.toHost.on('message', (message: DatasetToHost) => {
      if (this.rpc.handle(message)) return;
      this.messages.push(message);
      for (const waiter of [...this.#waiters]) waiter();
    });
    this.host = new DatasetHost(
      {
        dataset: config,
        livePath,
        pollPhaseMs: 0,
        generationDir: generationDirFor(livePath, join(livePath, '..'), config.name),
        ...(logLevel === undefined ? {} : { logLevel }),
      },
      { coordinator: coordinatorChannel.port2, host: hostChannel.port2 },
      { run: (task) => this.#runner.run(task) },
    );
  }

  /** Resolves with the first message (seen so far or later) that `match` accepts. */
  next<T extends DatasetToHost>(match: (message: DatasetToHost) => message is T): Promise<T> {
    return new Promise((resolve) => {
      const check = (): void => {
        const found = this.messages.find(match);
        if (found === undefined) return;
        this.#waiters.delete(check);
        resolve(found);
      };
      this.#waiters.add(check);
      check();
    });
  }

  serving(snapshotId: number): Promise<DatasetToHost> {
    return this.next(
      (message): message is Extract<DatasetToHost, { type: 'status-changed' }> =>
        message.type === 'status-changed' && message.status.servingSnapshotId === snapshotId,
    );
  }

  /** Every generation announced so far. */
  generations(): (AnnouncedGeneration | null)[] {
    return this.messages.flatMap((message) => (message.type === 'generation' ? [message.current] : []));
  }

  logs(): LogRecord[] {
    return this.messages.flatMap((message) => (message.type === 'log' ? [message.record] : []));
  }

  async stop(): Promise<void> {
    await this.stopRpc.request<void>({ type: 'stop' });
    await this.#runner.close();
    this.rpc.close('stopped');
    this.toHost.close();
    this.toCoordinator.close();
  }
}

describe('DatasetHost in-process', () => {
  it('bootstraps from the store, announces each generation as a link of its own, swaps on an announcement and stops cleanly', async () => {
    const first = await publish('orders', 'duckdb', 1);
    const dir = join(work, 'duckdb');
    const harness = new Harness(datasetConfig('orders', 'duckdb'), join(dir, 'orders.duckdb'));
    harness.host.start();
    await harness.serving(first.snapshotId);
    const version = async (path: string) => {
      const engine = await openEngine('duckdb', path);
      try {
        return (await engine.query('SELECT max(version) AS v FROM orders')).rows;
      } finally {
        await engine.close();
      }
    };
    const [one] = harness.generations();
    expect(one).toMatchObject({ snapshotId: first.snapshotId, engine: 'duckdb' });
    expect(one?.path.startsWith(join(dir, '.generations', 'orders'))).toBe(true);
    expect(one?.schema.fields.map((field) => field.name)).toEqual(['id', 'version']);
    expect(await version(one?.path as string)).toEqual([{ v: 1 }]);

    const second = await publish('orders', 'duckdb', 2);
    harness.toCoordinator.postMessage({ type: 'announce', snapshotId: second.snapshotId });
    const swapped = await harness.serving(second.snapshotId);
    expect(swapped).toMatchObject({
      emitted: expect.arrayContaining([expect.objectContaining({ type: 'swap' })]),
    });
    const [, two] = harness.generations();
    expect(two).toMatchObject({ snapshotId: second.snapshotId, engine: 'duckdb' });
    // Each generation keeps its own snapshot: the first link still reads version 1.
    expect(await version(two?.path as string)).toEqual([{ v: 2 }]);
    expect(await version(one?.path as string)).toEqual([{ v: 1 }]);
    const statuses = harness.messages.flatMap((message) =>
      message.type === 'status-changed' ? [message.status] : [],
    );
    expect(statuses.at(-1)?.servingSnapshotId).toBe(second.snapshotId);

    // An announcement that carries the coordinator's fresh read is checked against it: not asked again.
    const third = await publish('orders', 'duckdb', 3);
    await harness.reader.refresh();
    const reply = harness.reader.lastReadFor('orders');
    expect(reply).toMatchObject({ kind: 'read', dataset: { currentSnapshotId: third.snapshotId } });
    const asked = harness.readRequests;
    harness.toCoordinator.postMessage({ type: 'announce', snapshotId: third.snapshotId, reply });
    await harness.serving(third.snapshotId);
    expect(harness.readRequests).toBe(asked);

    await harness.stop();
    expect((await readdir(dir)).filter((file) => file.includes('ferry-tmp'))).toEqual([]);
  });

  it('a second host on the same live file serves it from that file (logged), then consults the store', async () => {
    const dir = join(work, 'restart');
    const livePath = join(dir, 'events.duckdb');
    const published = await publish('events', 'duckdb', 1);
    const firstRun = new Harness(datasetConfig('events', 'duckdb'), livePath);
    firstRun.host.start();
    await firstRun.serving(published.snapshotId);
    await firstRun.stop();
    expect(existsSync(livePath)).toBe(true);

    const earlier = firstRun.generations()[0]?.path as string;
    const secondRun = new Harness(datasetConfig('events', 'duckdb'), livePath);
    secondRun.host.start();
    await secondRun.serving(published.snapshotId);
    expect(secondRun.logs().map((record) => record.message)).toContain(
      `Dataset 'events' serves snapshot ${published.snapshotId} from its live file while the store is consulted`,
    );
    // The earlier run's link is gone (stale); the new one names the same snapshot.
    expect(existsSync(earlier)).toBe(false);
    expect(secondRun.generations()[0]).toMatchObject({ snapshotId: published.snapshotId });
    await secondRun.stop();
  });

  it('a live file loaded from another location is not served after the dataset moves, though the new store names the same snapshot id', async () => {
    const dir = join(work, 'moved');
    const livePath = join(dir, 'moved.duckdb');
    const elsewhere = `file://${join(work, 'other-store')}/`;
    await mkdir(join(work, 'other-store'));
    const old = await publish('moved', 'duckdb', 1);
    const firstRun = new Harness(datasetConfig('moved', 'duckdb'), livePath);
    firstRun.host.start();
    await firstRun.serving(old.snapshotId);
    await firstRun.stop();

    // The new store numbers its snapshots from 1 as well: the same id, other data.
    const moved = await publish('moved', 'duckdb', 2, elsewhere);
    expect(moved.snapshotId).toBe(old.snapshotId);
    const secondRun = new Harness(datasetConfig('moved', 'duckdb', '1h', elsewhere), livePath);
    secondRun.host.start();
    await secondRun.serving(moved.snapshotId);
    const messages = secondRun.logs().map((record) => record.message);
    expect(messages).toContain(
      `The live file of dataset 'moved' (snapshot ${old.snapshotId}) was loaded from ${location}, not the dataset's location ${elsewhere}; it is not served, and the dataset bootstraps from the store`,
    );
    const served = secondRun.generations().at(-1)?.path as string;
    const engine = await openEngine('duckdb', served);
    try {
      expect((await engine.query('SELECT max(version) AS v FROM moved')).rows).toEqual([{ v: 2 }]);
    } finally {
      await engine.close();
    }
    await secondRun.stop();
  });

  it("posts only the log records its logger wants, and, per unchanged poll of its own, the check's state then its end with its poll event", async () => {
    const published = await publish('quiet', 'duckdb', 1);
    const dir = join(work, 'quiet');
    const chatty = new Harness(datasetConfig('quiet', 'duckdb'), join(dir, 'chatty.duckdb'));
    const quiet = new Harness(datasetConfig('quiet', 'duckdb', '1s'), join(dir, 'quiet.duckdb'), 'info');
    for (const harness of [chatty, quiet]) {
      harness.host.start();
      await harness.serving(published.snapshotId);
    }
    expect(chatty.logs().some((record) => record.level === 'debug')).toBe(true);
    expect(quiet.logs().some((record) => record.level === 'debug')).toBe(false);
    expect(quiet.logs().some((record) => record.level === 'info')).toBe(true);

    // A scheduled poll of its own (no live slot: it never parks) that finds metadata.json unchanged.
    const before = quiet.messages.length;
    const polled = await quiet.next(
      (message): message is Extract<DatasetToHost, { type: 'status-changed' }> =>
        quiet.messages.indexOf(message) >= before &&
        message.type === 'status-changed' &&
        message.emitted.some((event) => event.type === 'poll'),
    );
    expect(polled.status).toMatchObject({ state: 'serving', lastPollResult: 'unchanged' });
    // The check's own state reaches the host first, as it happened; nothing posted twice.
    const statuses = quiet.messages
      .slice(before, quiet.messages.indexOf(polled) + 1)
      .flatMap((message) => (message.type === 'status-changed' ? [message.status.state] : []));
    expect(statuses.slice(-2)).toEqual(['polling', 'serving']);
    expect(new Set(statuses).size).toBe(statuses.length);
    await chatty.stop();
    await quiet.stop();
  });

  it('an SQLite dataset announces its generations the same way, after each swap', async () => {
    const dir = join(work, 'sqlite');
    const livePath = join(dir, 'users.sqlite');
    const first = await publish('users', 'sqlite', 1);
    const harness = new Harness(datasetConfig('users', 'sqlite'), livePath);
    harness.host.start();
    await harness.serving(first.snapshotId);
    expect(harness.generations()).toEqual([
      expect.objectContaining({ snapshotId: first.snapshotId, engine: 'sqlite' }),
    ]);
    const second = await publish('users', 'sqlite', 2);
    await harness.rpc.request<void>({ type: 'command', id: 0, command: 'poll.now' });
    await harness.serving(second.snapshotId);
    expect(harness.generations().map((current) => current?.snapshotId)).toEqual([
      first.snapshotId,
      second.snapshotId,
    ]);
    await harness.stop();
  });
});
