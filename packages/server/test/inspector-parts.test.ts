/**
 * The inspector's parts on their own: the overview row a dataset's reported status makes (state,
 * health, the served snapshot against the store's current one), the header counts, the session
 * tokens (signed, expiring, renewable up to a maximum age, on an explicit clock), and the event
 * stream's bound on what it holds for a page that does not read — over a real HTTP connection
 * whose server side is corked, so bytes pile up exactly as for a stalled peer.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DatasetStatus } from '@ferry/core';
import type { DatasetInfo } from '@ferry/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { overviewCounts, overviewRow } from '../src/index.js';
import { storeSnapshotOf, storeSync } from '../src/inspector/overview.js';
import { InspectorSessions, SESSION_COOKIE } from '../src/inspector/session.js';
import { SseStream, sseFrame } from '../src/inspector/stream.js';
import { WebSocketTransport } from '../src/inspector/websocket-transport.js';

function status(fields: Partial<DatasetStatus> = {}): DatasetStatus {
  return {
    dataset: 'orders',
    state: 'serving',
    paused: false,
    snapshotsMode: 'enabled',
    servingSnapshotId: 7,
    servingTimestampMs: 1_000,
    schemaId: 0,
    etag: '"e"',
    lastPollAtMs: 2_000,
    lastPollResult: 'unchanged',
    nextPollDueMs: 3_000,
    freshAtMs: 2_000,
    storeSnapshotId: 7,
    announcedSnapshotId: null,
    lastError: null,
    counters: { polls: 4, swaps: 1, refusals: 0, failures: 0, notifications: 0 },
    ...fields,
  };
}

function info(fields: Partial<DatasetInfo> = {}, statusFields?: Partial<DatasetStatus>): DatasetInfo {
  return {
    name: 'orders',
    engine: 'duckdb',
    state: 'serving',
    status: status(statusFields),
    error: undefined,
    stalenessMs: 0,
    newerSnapshotId: null,
    maxStalenessMs: null,
    ...fields,
  };
}

describe('overview rows', () => {
  it('a serving dataset whose last check was a 304 is on the store’s current snapshot', () => {
    expect(overviewRow(info())).toEqual({
      name: 'orders',
      engine: 'duckdb',
      state: 'serving',
      ready: true,
      paused: false,
      health: 'ok',
      snapshotId: 7,
      snapshotAtMs: 1_000,
      // Lag is measured from the last check that found nothing newer, not from the snapshot's time.
      freshSinceMs: 2_000,
      newerSnapshotId: null,
      storeSnapshotId: 7,
      sync: 'current',
      lastPollAtMs: 2_000,
      lastPollResult: 'unchanged',
      nextPollDueMs: 3_000,
      polls: 4,
      swaps: 1,
      failures: 0,
      refusals: 0,
      error: null,
    });
  });

  it('a refused newer snapshot leaves it serving, behind the store, with a warning and the error', () => {
    const refused = info(
      {},
      {
        lastPollResult: 'refused',
        storeSnapshotId: 8,
        lastError: { code: 'ERR_CHECKSUM_MISMATCH', message: 'bad bytes' },
        counters: { polls: 5, swaps: 1, refusals: 1, failures: 0, notifications: 0 },
      },
    );
    expect(overviewRow(refused)).toMatchObject({
      ready: true,
      health: 'warn',
      sync: 'behind',
      storeSnapshotId: 8,
      refusals: 1,
      error: 'ERR_CHECKSUM_MISMATCH: bad bytes',
    });
    // A failed check says nothing about the store: what the last read named stays.
    expect(storeSnapshotOf(status({ lastPollResult: 'failed', storeSnapshotId: 8 }))).toBe(8);
    // Nothing read yet: unknown; a read that found no snapshot: empty.
    expect(storeSnapshotOf(status({ lastPollResult: null, storeSnapshotId: null }))).toBeUndefined();
    expect(storeSnapshotOf(status({ lastPollResult: 'waiting', storeSnapshotId: null }))).toBeNull();
  });

  it('says what the store has when nothing is served, and marks refused configs and dead threads as errors', () => {
    const waiting = info(
      { state: 'waiting' },
      { servingSnapshotId: null, storeSnapshotId: null, lastPollResult: 'waiting' },
    );
    expect(overviewRow(waiting)).toMatchObject({ ready: false, health: 'pending', sync: 'empty' });
    const failing = info(
      { state: 'waiting' },
      {
        servingSnapshotId: null,
        storeSnapshotId: null,
        lastPollResult: 'failed',
        lastError: { code: 'ERR_X', message: 'no' },
      },
    );
    expect(overviewRow(failing)).toMatchObject({
      health: 'error',
      sync: 'unknown',
      error: 'ERR_X: no',
    });
    const refused = info({ state: 'failed', status: undefined, engine: undefined, error: 'bad interval' });
    expect(overviewRow(refused)).toMatchObject({
      engine: null,
      health: 'error',
      sync: 'unknown',
      error: 'bad interval',
      polls: 0,
    });
    expect(overviewRow(info({ state: 'restarting', error: 'thread exited' })).health).toBe('error');
    expect(storeSync(7, 6)).toBe('ahead');
    expect(storeSync(null, 3)).toBe('behind');
  });

  it('counts every dataset, the serving ones, the others by state, and those that need a look', () => {
    const rows = [
      overviewRow(info()),
      overviewRow(info({ name: 'b', state: 'polling' })),
      overviewRow(info({ name: 'c', state: 'failed', status: undefined, error: 'x' })),
      overviewRow(info({ name: 'd' }, { paused: true, lastPollResult: 'failed' })),
      overviewRow(info({ name: 'e', state: 'starting', status: undefined })),
    ];
    expect(overviewCounts(rows)).toEqual({
      total: 5,
      serving: 3,
      byState: { failed: 1, starting: 1 },
      attention: 2,
      errors: 1,
      warnings: 1,
      paused: 1,
    });
  });
});

describe('inspector sessions', () => {
  const sessions = new InspectorSessions({ ttlMs: 1_000, maxAgeMs: 2_500 });
  const request = (cookie: string | undefined, tls = false) =>
    ({
      headers: cookie === undefined ? {} : { cookie },
      socket: { encrypted: tls },
    }) as unknown as IncomingMessage;

  it('a token is valid until it expires, renewable up to the maximum age, and worthless when altered', () => {
    const issued = sessions.issue(10_000);
    expect(issued?.session).toEqual({ issuedAtMs: 10_000, expiresAtMs: 11_000 });
    const cookie = `other=1; ${SESSION_COOKIE}=${issued?.token}`;
    expect(sessions.fromRequest(request(cookie), 10_999)).toEqual(issued?.session);
    expect(sessions.fromRequest(request(cookie), 11_000)).toBeUndefined();
    const renewed = sessions.issue(10_900, issued?.session);
    expect(renewed?.session).toEqual({ issuedAtMs: 10_000, expiresAtMs: 11_900 });
    // Renewals stop at the maximum age after the key was given.
    expect(sessions.issue(12_000, renewed?.session)?.session.expiresAtMs).toBe(12_500);
    expect(sessions.issue(12_500, renewed?.session)).toBeUndefined();
    const token = issued?.token ?? '';
    // The MAC's last character made another: it is one of 16 (4 bits of the 32-byte MAC), so one
    // time in sixteen an 'A' put there changed nothing.
    const altered = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
    expect(altered).not.toBe(token);
    for (const bad of [altered, token.replace(/^[0-9a-z]+/, 'zzzzzzzz'), 'nonsense', '']) {
      expect(sessions.fromRequest(request(`${SESSION_COOKIE}=${bad}`), 10_500)).toBeUndefined();
    }
    // Another server's secret signs other tokens.
    expect(new InspectorSessions().fromRequest(request(cookie), 10_500)).toBeUndefined();
  });

  it('the cookie is HttpOnly, SameSite=Strict, for /inspector, and Secure on TLS', () => {
    const issued = sessions.issue(0);
    if (issued === undefined) throw new Error('no session');
    expect(sessions.setCookie(request(undefined), issued.token, issued.session, 0)).toBe(
      `${SESSION_COOKIE}=${issued.token}; Path=/inspector; Max-Age=1; HttpOnly; SameSite=Strict`,
    );
    expect(sessions.setCookie(request(undefined, true), issued.token, issued.session, 0)).toMatch(
      /; Secure$/,
    );
    expect(sessions.clearCookie(request(undefined))).toBe(
      `${SESSION_COOKIE}=; Path=/inspector; Max-Age=0; HttpOnly; SameSite=Strict`,
    );
  });
});

describe('the event stream of a page that stops reading', () => {
  let server: Server | undefined;

  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('holds at most its bound plus a frame, drops updates, and resyncs with one snapshot when the page catches up', async () => {
    const MAX = 64 * 1024;
    const FRAME = sseFrame('update', JSON.stringify({ filler: 'x'.repeat(8 * 1024) }));
    const RESYNC = sseFrame('overview', JSON.stringify({ resync: true }));
    let resolveOpened: (opened: { res: ServerResponse; stream: SseStream }) => void = () => undefined;
    const opened = new Promise<{ res: ServerResponse; stream: SseStream }>((resolve) => {
      resolveOpened = resolve;
    });
    const http = createServer((_req, res) => {
      const stream = new SseStream(res, { maxBufferedBytes: MAX }, () => RESYNC);
      stream.sendAlways(sseFrame('overview', JSON.stringify({ first: true })));
      resolveOpened({ res, stream });
    });
    server = http;
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const port = (http.address() as AddressInfo).port;
    const response = await fetch(`http://127.0.0.1:${port}/`);
    const { res, stream } = await opened;
    // The peer stops taking bytes: everything written from now on stays in the server's buffer.
    res.socket?.cork();
    let highest = 0;
    for (let index = 0; index < 200; index++) {
      stream.send(FRAME);
      highest = Math.max(highest, stream.bufferedBytes);
    }
    expect(highest).toBeLessThanOrEqual(MAX + FRAME.length);
    expect(stream.dropped).toBeGreaterThan(150);
    expect(stream.resyncs).toBe(0);

    // The peer reads again: the buffer drains and the page gets one full snapshot.
    const drained = once(res, 'drain');
    res.socket?.uncork();
    await drained;
    expect(stream.resyncs).toBe(1);
    stream.send(sseFrame('update', JSON.stringify({ after: true })));
    const decoder = new TextDecoder();
    let text = '';
    for await (const chunk of response.body ?? []) {
      text += decoder.decode(chunk as Uint8Array, { stream: true });
      if (text.includes('"after":true')) break;
    }
    const names = [...text.matchAll(/^event: (\w+)$/gm)].map((match) => match[1]);
    const updates = names.filter((name) => name === 'update').length;
    expect(names[0]).toBe('overview');
    expect(names.filter((name) => name === 'overview')).toHaveLength(2);
    expect(updates).toBe(200 - stream.dropped + 1);
    expect(text.indexOf('"resync":true')).toBeLessThan(text.indexOf('"after":true'));
    stream.close();
  });
});

describe('the Stately bridge connection to a receiver that stops reading', () => {
  it('holds at most its bound plus a message, then drops the connection and reconnects', async () => {
    const receiver = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await once(receiver, 'listening');
    let connections = 0;
    receiver.on('connection', (_socket, request) => {
      connections++;
      // The first connection is never read from again (a receiver that hangs).
      if (connections === 1) request.socket.pause();
    });
    const bound = 256 * 1024;
    let opened = 0;
    const transport = new WebSocketTransport({
      url: `ws://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
      maxBufferedBytes: bound,
      reconnectDelaysMs: [10],
      onOpen: () => {
        opened++;
      },
    });
    try {
      transport.start();
      while (opened === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      const message = { type: '@xstate.snapshot', payload: 'x'.repeat(16 * 1024) };
      let most = 0;
      // 64 MiB offered in all, far past what the kernel's socket buffers take.
      for (let sent = 0; sent < 4_096 && opened < 2; sent++) {
        transport.send(message);
        most = Math.max(most, transport.bufferedBytes);
        if (sent % 32 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
      for (let waited = 0; opened < 2 && waited < 5_000; waited += 5) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      // Dropped and made again (the owner announces again on it) …
      expect(opened).toBe(2);
      expect(connections).toBe(2);
      // … never holding more than the bound and the message that crossed it.
      expect(most).toBeLessThanOrEqual(bound + 17 * 1024);
    } finally {
      await transport.stop();
      for (const client of receiver.clients) client.terminate();
      receiver.close();
    }
  }, 30_000);
});
