/**
 * The Stately inspector bridge against a real receiving end: a `ws` WebSocketServer on loopback
 * standing in for `@statelyai/inspect`'s relay. A runtime serving two datasets (a copy of the
 * fixture store) must arrive as two machines with distinct, dataset-prefixed session ids, in the
 * package's `@xstate.actor` / `@xstate.event` / `@xstate.snapshot` shapes; a receiver that
 * restarts gets the machines announced again; a bridge started late still announces them; a
 * bridge for one chosen dataset relays that machine only.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRuntime, memoryLogger, type Runtime } from '@ferry/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { InvalidInspectorUrlError, type StatelyBridge, startStatelyBridge } from '../src/index.js';
import { fixtureDir, spicepod } from './helpers.js';

interface Message {
  readonly type: string;
  readonly sessionId: string;
  readonly _version: string;
  readonly createdAt: string;
  readonly name?: string;
  readonly definition?: string;
  readonly parentId?: string;
  readonly rootId?: string;
  readonly sourceId?: string;
  readonly event?: { readonly type: string; readonly [key: string]: unknown };
  readonly snapshot?: {
    readonly status: string;
    readonly value?: unknown;
    readonly context?: { readonly dataset?: string; readonly servingSnapshotId?: number | null };
  };
}

/** A WebSocket server on loopback that records every message and lets a test await the ones it expects. */
class Receiver {
  readonly messages: Message[] = [];
  readonly #waiters = new Set<() => void>();
  readonly #server: WebSocketServer;

  private constructor(server: WebSocketServer) {
    this.#server = server;
    const notify = (): void => {
      for (const waiter of [...this.#waiters]) waiter();
    };
    server.on('connection', (socket) => {
      socket.on('message', (data) => {
        this.messages.push(JSON.parse(String(data)) as Message);
        notify();
      });
      socket.on('close', notify);
      notify();
    });
  }

  static start(port = 0): Promise<Receiver> {
    return new Promise((resolve, reject) => {
      const server = new WebSocketServer({ host: '127.0.0.1', port });
      server.once('listening', () => resolve(new Receiver(server)));
      server.once('error', reject);
    });
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  get clients(): number {
    return this.#server.clients.size;
  }

  /** Resolves once `predicate` holds (checked on every message, connection and disconnection). */
  until(predicate: (messages: Message[]) => boolean, timeoutMs = 20_000): Promise<Message[]> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!predicate(this.messages)) return;
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve(this.messages);
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Error(`the receiver did not get the expected messages within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#waiters.add(check);
      check();
    });
  }

  close(): Promise<void> {
    for (const client of this.#server.clients) client.terminate();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

const servingSnapshot = (dataset: string) => (message: Message) =>
  message.type === '@xstate.snapshot' &&
  message.sessionId.startsWith(`${dataset}:`) &&
  (message.snapshot?.value as { serving?: string } | undefined)?.serving !== undefined;

const rootActors = (messages: Message[]) =>
  messages.filter((message) => message.type === '@xstate.actor' && message.definition !== undefined);

describe('Stately inspector bridge', () => {
  let storeDir: string;
  let dataDir: string;
  let runtime: Runtime;
  let receiver: Receiver;
  let bridge: StatelyBridge;

  beforeAll(async () => {
    const store = await fixtureDir();
    storeDir = store.dir;
    dataDir = await mkdtemp(join(tmpdir(), 'ferry-bridge-'));
    receiver = await Receiver.start();
    runtime = await createRuntime(
      { yaml: spicepod({ location: store.location, interval: '1h' }), baseDir: dataDir },
      { logger: memoryLogger(), dataDir: join(dataDir, 'data'), metadataWindowMs: 0 },
    );
    // Before anything is awaited: the bridge sees each machine being created.
    bridge = startStatelyBridge(runtime, {
      url: `ws://127.0.0.1:${receiver.port}`,
      reconnectDelaysMs: [50, 100],
    });
    await runtime.ready(undefined, { timeoutMs: 30_000 });
  });

  afterAll(async () => {
    await bridge?.stop();
    await runtime?.close();
    await receiver?.close();
    await rm(storeDir, { recursive: true, force: true });
    await rm(dataDir, { recursive: true, force: true });
  });

  it('delivers both machines under distinct, dataset-prefixed session ids', async () => {
    const messages = await receiver.until(
      (received) => received.some(servingSnapshot('orders')) && received.some(servingSnapshot('users')),
    );
    expect(bridge.connected()).toBe(true);
    // Plain JSON: no serialized actor refs.
    expect(JSON.stringify(messages)).not.toContain('xstate$$type');
    for (const message of messages) {
      expect(['@xstate.actor', '@xstate.event', '@xstate.snapshot']).toContain(message.type);
      expect(message.sessionId).toMatch(/^(orders|users):/);
      expect(message._version).toBe('0.7.2');
      expect(typeof message.createdAt).toBe('string');
    }

    const roots = rootActors(messages);
    expect(roots.map((root) => root.sessionId.split(':')[0]).sort()).toEqual(['orders', 'users']);
    const [orders, users] = ['orders', 'users'].map(
      (name) => roots.find((root) => root.sessionId.startsWith(`${name}:`)) as Message,
    ) as [Message, Message];
    expect(orders.sessionId).not.toBe(users.sessionId);
    // The definition is the dataset machine's config, for the inspector to draw.
    const definition = JSON.parse(orders.definition as string) as {
      id: string;
      states: Record<string, unknown>;
    };
    expect(definition.id).toBe('dataset');
    expect(Object.keys(definition.states).sort()).toEqual([
      'bootstrapping',
      'polling',
      'serving',
      'stopped',
      'swapping',
      'waiting',
    ]);

    // Invoked actors hang under their dataset's machine.
    const children = messages.filter(
      (message) => message.type === '@xstate.actor' && message.definition === undefined,
    );
    expect(children.length).toBeGreaterThan(0);
    for (const child of children) {
      const root = child.sessionId.startsWith('orders:') ? orders : users;
      expect(child.parentId).toBe(root.sessionId);
      expect(child.rootId).toBe(root.sessionId);
    }

    // Snapshots carry the state value and the status as context; events keep their source.
    const snapshot = messages.find(servingSnapshot('users')) as Message;
    expect(snapshot.sessionId).toBe(users.sessionId);
    expect(snapshot.snapshot?.status).toBe('active');
    expect(snapshot.snapshot?.context?.dataset).toBe('users');
    expect(snapshot.snapshot?.context?.servingSnapshotId).toBe(
      runtime.status('users').status?.servingSnapshotId,
    );
    const done = messages.find(
      (message) =>
        message.type === '@xstate.event' &&
        message.sessionId === orders.sessionId &&
        message.event?.type === 'xstate.done.actor.readMetadata',
    );
    expect(done?.sourceId).toMatch(/^orders:/);
    expect(done?.sourceId).not.toBe(orders.sessionId);
  });

  it('relays a command and its transitions to the right machine', async () => {
    const from = receiver.messages.length;
    await runtime.send('orders', 'poll.now');
    const messages = await receiver.until((received) => {
      const states = received
        .slice(from)
        .filter((message) => message.type === '@xstate.snapshot')
        .map((message) => Object.keys((message.snapshot?.value ?? {}) as object)[0]);
      return states.includes('polling') && states.slice(states.indexOf('polling')).includes('serving');
    });
    const fresh = messages.slice(from);
    // No other machine got the command or polled (late messages of its earlier steps may still
    // arrive in this window on a busy machine; they are not what this is about).
    const elsewhere = fresh.filter(
      (message) =>
        !message.sessionId.startsWith('orders:') &&
        (message.event?.type === 'poll.now' ||
          Object.keys((message.snapshot?.value ?? {}) as object)[0] === 'polling'),
    );
    expect(elsewhere).toEqual([]);
    const command = fresh.find(
      (message) => message.type === '@xstate.event' && message.event?.type === 'poll.now',
    );
    expect(command?.sessionId).toBe(
      rootActors(messages).find((root) => root.sessionId.startsWith('orders:'))?.sessionId,
    );
    // Each microstep arrives as a snapshot: the inspector shows the outcome state the poll took.
    const path = fresh
      .filter((message) => message.type === '@xstate.snapshot')
      .map((message) => JSON.stringify(message.snapshot?.value));
    expect(path).toContain(JSON.stringify({ polling: 'metadataUnchanged' }));
  });

  it('announces the machines again to a receiver that restarts', async () => {
    const port = receiver.port;
    await receiver.close();
    receiver = await Receiver.start(port);
    const messages = await receiver.until((received) => rootActors(received).length >= 2);
    const roots = rootActors(messages);
    expect(roots.map((root) => root.sessionId.split(':')[0]).sort()).toEqual(['orders', 'users']);
    // Announced with their last snapshot, so the inspector shows the current state at once.
    for (const root of roots) {
      expect(root.snapshot?.value).toEqual({ serving: expect.any(String) });
    }
    const from = receiver.messages.length;
    await runtime.send('users', 'poll.now');
    await receiver.until((received) =>
      received
        .slice(from)
        .some((message) => message.type === '@xstate.event' && message.event?.type === 'poll.now'),
    );
  });

  it('announces a machine it meets late, then stops cleanly', async () => {
    const late = await Receiver.start();
    const lateBridge = startStatelyBridge(runtime, { url: `ws://127.0.0.1:${late.port}` });
    try {
      await late.until(() => late.clients === 1);
      await runtime.send('users', 'poll.now');
      const messages = await late.until((received) => received.some(servingSnapshot('users')));
      const firstForUsers = messages.find((message) => message.sessionId.startsWith('users:'));
      expect(firstForUsers?.type).toBe('@xstate.actor');
      expect(firstForUsers?.definition).toBeDefined();
    } finally {
      await lateBridge.stop();
    }
    expect(lateBridge.connected()).toBe(false);
    await late.until(() => late.clients === 0);
    await late.close();
  });

  it('relays one chosen machine only, with { dataset }', async () => {
    const one = await Receiver.start();
    expect(() => startStatelyBridge(runtime, { url: `ws://127.0.0.1:${one.port}`, dataset: 'nope' })).toThrow(
      expect.objectContaining({ code: 'ERR_UNKNOWN_DATASET' }),
    );
    const chosen = startStatelyBridge(runtime, { url: `ws://127.0.0.1:${one.port}`, dataset: 'users' });
    try {
      await one.until(() => one.clients === 1);
      const ordersPolled = new Promise<void>((resolve) => {
        const off = runtime.on('poll', (event) => {
          if (event.dataset !== 'orders') return;
          off();
          resolve();
        });
      });
      await runtime.send('orders', 'poll.now');
      await runtime.send('users', 'poll.now');
      await ordersPolled;
      const messages = await one.until((received) => received.some(servingSnapshot('users')));
      // (Announced once more if the connection opened after the machine was met: a re-announce.)
      expect(new Set(rootActors(messages).map((root) => root.sessionId.split(':')[0]))).toEqual(
        new Set(['users']),
      );
      expect(messages.filter((message) => !message.sessionId.startsWith('users:'))).toEqual([]);
    } finally {
      await chosen.stop();
      await one.close();
    }
  });

  it('refuses a URL that is not ws:// or wss://', () => {
    expect(() => startStatelyBridge(runtime, { url: 'http://127.0.0.1:8080' })).toThrow(
      InvalidInspectorUrlError,
    );
    expect(() => startStatelyBridge(runtime, { url: 'not a url' })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_INSPECTOR_URL' }),
    );
  });
});
