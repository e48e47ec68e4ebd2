/**
 * The inspector's HTTP side without a browser: the machine graph it draws, payload abridging,
 * the page's files and their headers, the overview and detail streams (a snapshot first, then
 * batched updates; a detail stream with its one machine's inspection events), the command route,
 * and auth — a key as a header, the session cookie for the event stream, no `?key=` — over real
 * HTTP against a real runtime serving a copy of the fixture store.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JsonValue } from '@ferry/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type DetailSnapshot,
  type DetailUpdate,
  datasetMachineGraph,
  eventLabel,
  type InspectorRoutes,
  inspectorRoutes,
  type OverviewSnapshot,
  type OverviewUpdate,
  type RunningServer,
  SESSION_COOKIE,
  startServer,
} from '../src/index.js';
import { abridge } from '../src/inspector/abridge.js';
import { fixtureDir, request, type Served, serve, spicepod } from './helpers.js';

interface SseEvent {
  readonly event: string;
  readonly data: unknown;
}

/** Reads the stream at `url` until `done(events)` holds, then disconnects. */
async function readEvents(
  url: string,
  done: (events: SseEvent[]) => boolean,
  headers: Record<string, string> = {},
): Promise<{ status: number; contentType: string | null; events: SseEvent[] }> {
  const controller = new AbortController();
  const response = await fetch(url, { headers, signal: controller.signal });
  const events: SseEvent[] = [];
  if (response.status !== 200 || response.body === null) {
    return { status: response.status, contentType: response.headers.get('content-type'), events };
  }
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of response.body) {
      buffer += decoder.decode(chunk as Uint8Array, { stream: true });
      let end = buffer.indexOf('\n\n');
      while (end !== -1) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const name = /^event: (.+)$/m.exec(frame)?.[1];
        const data = /^data: (.+)$/m.exec(frame)?.[1];
        if (name !== undefined && data !== undefined) events.push({ event: name, data: JSON.parse(data) });
        end = buffer.indexOf('\n\n');
      }
      if (done(events)) break;
    }
  } finally {
    controller.abort();
  }
  return { status: 200, contentType: response.headers.get('content-type'), events };
}

describe('the dataset machine graph', () => {
  const graph = datasetMachineGraph();

  it('has the top-level states in definition order, with their substates', () => {
    expect(graph.states.map((state) => state.key)).toEqual([
      'waiting',
      'bootstrapping',
      'serving',
      'polling',
      'swapping',
      'stopped',
    ]);
    // One state per step of a poll and one per outcome, in the page's words.
    expect(graph.states.find((state) => state.key === 'polling')?.substates).toEqual([
      'readingMetadata',
      'metadataUnchanged',
      'comparingSnapshotIds',
      'noSnapshotYet',
      'sameSnapshot',
      'olderSnapshot',
      'newerSnapshotFound',
      'currentSnapshotMissing',
      'validatingCandidate',
      'authenticating',
      'downloading',
      'verifying',
      'candidateFailed',
      'candidateRefused',
      'downloadSkipped',
      'retryScheduled',
      'fallingBack',
      'fallbackExhausted',
      'fallbackStopped',
      'metadataReadFailed',
    ]);
    expect(graph.states.find((state) => state.key === 'serving')?.substates).toEqual([
      'deciding',
      'scheduled',
      'backingOff',
      'paused',
    ]);
    expect(graph.states.find((state) => state.key === 'stopped')?.final).toBe(true);
  });

  it('merges transitions per pair of top-level states, including eventless and delayed ones', () => {
    const edge = (from: string, to: string) =>
      graph.edges.find((candidate) => candidate.from === from && candidate.to === to);
    expect(edge('serving', 'polling')?.triggers).toEqual(
      expect.arrayContaining([
        { event: 'poll.now', label: 'poll.now' },
        { event: 'snapshot.announced', label: 'announced' },
        { event: 'always', label: 'auto', from: 'deciding' },
        { event: 'poll.due', label: 'timer', from: 'scheduled' },
        { event: 'poll.due', label: 'timer', from: 'backingOff' },
      ]),
    );
    // A check ends through an eventless transition of each outcome state, which toJSON() omits.
    expect(edge('polling', 'serving')?.triggers.map((trigger) => trigger.from)).toEqual([
      'metadataUnchanged',
      'noSnapshotYet',
      'sameSnapshot',
      'olderSnapshot',
      'currentSnapshotMissing',
      'candidateRefused',
      'downloadSkipped',
      'retryScheduled',
      'fallbackExhausted',
      'fallbackStopped',
      'metadataReadFailed',
    ]);
    // A poll serves; a bootstrap attempt that loads nothing waits.
    expect(edge('polling', 'waiting')).toBeUndefined();
    expect(edge('bootstrapping', 'serving')).toBeUndefined();
    expect(edge('bootstrapping', 'waiting')?.triggers).toContainEqual({
      event: 'always',
      label: 'auto',
      from: 'noSnapshotYet',
    });
    expect(edge('polling', 'swapping')?.triggers).toEqual([
      { event: 'xstate.done.actor.verifySnapshot', label: 'verifySnapshot done', from: 'verifying' },
    ]);
    expect(edge('swapping', 'serving')?.triggers.map((trigger) => trigger.from)).toEqual([
      'swapped',
      'retryScheduled',
      'swapSkipped',
    ]);
    expect(graph.edges.some((candidate) => candidate.from === candidate.to)).toBe(false);
    expect(graph.global).toEqual([{ event: 'stop', to: 'stopped' }]);
  });

  it('labels events briefly', () => {
    expect(eventLabel('poll.due')).toBe('timer');
    expect(eventLabel('xstate.after.nextPoll.dataset.serving.scheduled')).toBe('timer');
    expect(eventLabel('xstate.error.actor.readMetadata')).toBe('readMetadata failed');
    expect(eventLabel('snapshot.announced')).toBe('announced');
    expect(eventLabel('poll.now')).toBe('poll.now');
  });
});

describe('abridging payloads', () => {
  it('keeps small values whole and replaces large members with their size', () => {
    const small = { type: 'poll.now' };
    expect(abridge(small, 100)).toBe(small);
    const big: JsonValue = {
      type: 'xstate.done.actor.readMetadata',
      output: {
        kind: 'read',
        etag: '"abc"',
        dataset: { snapshots: Array.from({ length: 500 }, (_, i) => ({ i })) },
      },
    };
    const cut = abridge(big, 2_048) as {
      type: string;
      output: { kind: string; etag: string; dataset: unknown };
    };
    expect(JSON.stringify(cut).length).toBeLessThan(2_048);
    expect(cut).toEqual({
      type: 'xstate.done.actor.readMetadata',
      output: { kind: 'read', etag: '"abc"', dataset: expect.stringMatching(/^… \d+\.\d KB$/) },
    });
    expect(abridge({ type: 'x', list: Array.from({ length: 400 }, (_, i) => i) }, 300)).toEqual({
      type: 'x',
      list: expect.stringMatching(/^… \d+\.\d KB$/),
    });
  });
});

const KEY = { authorization: 'Bearer sesame' };
const JSON_BODY = { 'content-type': 'application/json' };
const UPDATE_MS = 150;

function pollNow(base: string, dataset: string, headers: Record<string, string>) {
  return request(`${base}/inspector/datasets/${dataset}/commands`, {
    method: 'POST',
    headers: { ...JSON_BODY, ...headers },
    body: JSON.stringify({ command: 'poll.now' }),
  });
}

/** The session cookie a `Set-Cookie` answer carries, as a `Cookie` header, and its attributes. */
function cookieOf(setCookie: string | null): { cookie: string; attributes: string[] } {
  expect(setCookie).not.toBeNull();
  const [pair, ...attributes] = (setCookie ?? '').split(';').map((part) => part.trim());
  return { cookie: pair ?? '', attributes };
}

describe('inspector routes', () => {
  /** A runtime behind a plain server (no inspector) … */
  let served: Served;
  /** … and a second server on the same runtime, with an API key and the inspector. */
  let inspected: RunningServer;
  let routes: InspectorRoutes;
  let storeDir: string;
  let base: string;

  beforeAll(async () => {
    const store = await fixtureDir();
    storeDir = store.dir;
    served = await serve(spicepod({ location: store.location, interval: '1h' }));
    routes = inspectorRoutes(served.runtime, { apiKey: 'sesame', hub: { updateIntervalMs: UPDATE_MS } });
    inspected = await startServer(served.runtime, { port: 0, apiKey: 'sesame', routes });
    base = inspected.url;
    await served.runtime.ready(undefined, { timeoutMs: 30_000 });
  });

  afterAll(async () => {
    await inspected?.close();
    await served?.close();
    await rm(storeDir, { recursive: true, force: true });
  });

  it('is not mounted unless asked for', async () => {
    expect((await request(`${served.server.url}/inspector`)).status).toBe(404);
  });

  it('serves the page (overview and detail URLs) and its files without the key, with a strict CSP and no external URL', async () => {
    const page = await request(`${base}/inspector`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    expect(page.text).toContain('<script type="module" src="/inspector/assets/inspector.js">');
    // The entry and the stylesheet, then every module they import (a Set visits what is added to it).
    const imported = new Set(['inspector.js', 'inspector.css']);
    for (const file of imported) {
      const asset = await request(`${base}/inspector/assets/${file}`);
      expect(asset.status, file).toBe(200);
      expect(asset.headers.get('content-type'), file).toMatch(/^text\/(javascript|css)/);
      expect(asset.text).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
      for (const match of asset.text.matchAll(/from '\.\/([a-z-]+\.js)'/g)) imported.add(match[1] as string);
      const again = await request(`${base}/inspector/assets/${file}`, {
        headers: { 'if-none-match': asset.headers.get('etag') ?? '' },
      });
      expect(again.status).toBe(304);
    }
    expect([...imported].sort()).toEqual([
      'chart.js',
      'connection.js',
      'detail.js',
      'format.js',
      'inspector.css',
      'inspector.js',
      'overview.js',
    ]);
    // The page preloads every module, so none waits for the one importing it.
    for (const file of imported) {
      if (file.endsWith('.js') && file !== 'inspector.js') {
        expect(page.text).toContain(`<link rel="modulepreload" href="/inspector/assets/${file}" />`);
      }
    }
    expect((await request(`${base}/inspector/`)).status).toBe(200);
    const detail = await request(`${base}/inspector/datasets/orders`);
    expect(detail.status).toBe(200);
    expect(detail.text).toBe(page.text);
    const missing = await request(`${base}/inspector/assets/nope.js`);
    expect(missing.status).toBe(404);
  });

  it('keeps the data routes behind the key: the overview and a detail as JSON', async () => {
    expect((await request(`${base}/inspector/state`)).status).toBe(401);
    const state = await request(`${base}/inspector/state`, { headers: KEY });
    expect(state.status).toBe(200);
    const overview = state.json<OverviewSnapshot>();
    expect(overview.rows.map((row) => [row.name, row.engine, row.ready, row.snapshotId])).toEqual([
      ['orders', 'duckdb', true, 1],
      ['users', 'sqlite', true, 0],
    ]);
    expect(overview.counts).toMatchObject({ total: 2, serving: 2, byState: {}, attention: 0 });
    // The first check read metadata.json: both serve the store's current snapshot.
    expect(overview.rows.map((row) => row.sync)).toEqual(['current', 'current']);
    expect(overview.serverTimeMs).toBeGreaterThan(0);

    const detail = await request(`${base}/inspector/state?dataset=orders`, { headers: KEY });
    expect(detail.status).toBe(200);
    const orders = detail.json<DetailSnapshot>();
    expect(orders.row.name).toBe('orders');
    expect(orders.machine.states).toHaveLength(6);
    expect(orders.status?.servingSnapshotId).toBe(1);
    expect(orders.history.map((entry) => entry.state)).toContain('serving');
    const unknown = await request(`${base}/inspector/state?dataset=nope`, { headers: KEY });
    expect(unknown.status).toBe(404);
    expect(unknown.json<{ code: string }>().code).toBe('ERR_UNKNOWN_DATASET');

    expect((await pollNow(base, 'orders', {})).status).toBe(401);
  });

  it('accepts no key in a URL (?key=) anywhere', async () => {
    for (const path of ['/inspector/events?key=sesame', '/inspector/state?key=sesame']) {
      const answer = await request(`${base}${path}`);
      expect(answer.status, path).toBe(401);
      expect(answer.json<{ code: string; error: string }>()).toEqual({
        code: 'ERR_UNAUTHORIZED',
        error: expect.stringContaining('(?key=) is not accepted'),
      });
    }
    const header = await readEvents(`${base}/inspector/events`, (events) => events.length >= 1, KEY);
    expect(header.status).toBe(200);
    expect(header.contentType).toBe('text/event-stream; charset=utf-8');
    expect(header.events[0]?.event).toBe('overview');
  });

  it('gives a session cookie for a key sent as a header: HttpOnly, SameSite=Strict, scoped to /inspector, short-lived', async () => {
    const probe = await request(`${base}/inspector/session`, { method: 'POST' });
    expect(probe.status).toBe(200);
    expect(probe.json()).toEqual({ required: true, authenticated: false, serverTimeMs: expect.any(Number) });
    expect(probe.headers.get('set-cookie')).toBeNull();
    const wrong = await request(`${base}/inspector/session`, {
      method: 'POST',
      headers: { authorization: 'Bearer open' },
    });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();

    const signedIn = await request(`${base}/inspector/session`, {
      method: 'POST',
      headers: { 'x-api-key': 'sesame' },
    });
    expect(signedIn.status).toBe(200);
    expect(signedIn.json()).toMatchObject({ required: true, authenticated: true, ttlMs: 600_000 });
    const { cookie, attributes } = cookieOf(signedIn.headers.get('set-cookie'));
    expect(cookie.startsWith(`${SESSION_COOKIE}=`)).toBe(true);
    expect(cookie).not.toContain('sesame');
    expect(attributes).toEqual(['Path=/inspector', 'Max-Age=600', 'HttpOnly', 'SameSite=Strict']);
    expect(signedIn.headers.get('cache-control')).toBe('no-store');

    // The page says whether it may read at once: with the cookie it opens its stream; without, it
    // asks for the key (no request needed to find out); without keys it is open.
    expect((await request(`${base}/inspector`)).text).toContain(
      '<body data-view="loading" data-auth="required">',
    );
    const withSession = await request(`${base}/inspector/datasets/orders`, { headers: { cookie } });
    expect(withSession.text).toContain('data-auth="session"');
    expect(withSession.headers.get('etag')).not.toBe(
      (await request(`${base}/inspector`)).headers.get('etag'),
    );

    // The stream, the state and commands take the cookie instead of the key.
    const stream = await readEvents(`${base}/inspector/events`, (events) => events.length >= 1, { cookie });
    expect(stream.events[0]?.event).toBe('overview');
    expect((await request(`${base}/inspector/state`, { headers: { cookie } })).status).toBe(200);
    // (The check it starts is awaited, so it ends here and not in a later test's window.)
    const polled = new Promise<void>((resolve) => {
      const off = served.runtime.on('poll', (event) => {
        if (event.dataset !== 'orders') return;
        off();
        resolve();
      });
    });
    expect((await pollNow(base, 'orders', { cookie })).status).toBe(202);
    await polled;
    // A command on the cookie alone must be JSON: a form of another site cannot send that.
    const form = await request(`${base}/inspector/datasets/orders/commands`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'text/plain' },
      body: JSON.stringify({ command: 'poll.now' }),
    });
    expect(form.status).toBe(401);
    // The cookie is the inspector's only: the API does not take it.
    expect((await request(`${base}/v1/datasets`, { headers: { cookie } })).status).toBe(401);

    // Renewed with the cookie alone; a forged one is nothing.
    const renewed = await request(`${base}/inspector/session`, { method: 'POST', headers: { cookie } });
    expect(renewed.json()).toMatchObject({ authenticated: true });
    expect(cookieOf(renewed.headers.get('set-cookie')).attributes).toContain('Max-Age=600');
    const forged = `${cookie.slice(0, -3)}abc`;
    expect((await request(`${base}/inspector/state`, { headers: { cookie: forged } })).status).toBe(401);
    expect(
      (await request(`${base}/inspector/session`, { method: 'POST', headers: { cookie: forged } })).json(),
    ).toMatchObject({ authenticated: false });

    const signedOut = await request(`${base}/inspector/session`, { method: 'DELETE', headers: { cookie } });
    expect(signedOut.status).toBe(204);
    expect(cookieOf(signedOut.headers.get('set-cookie')).cookie).toBe(`${SESSION_COOKIE}=`);
    expect(cookieOf(signedOut.headers.get('set-cookie')).attributes).toContain('Max-Age=0');
  });

  it('streams the overview, then batches of changed rows at most every update interval', async () => {
    let command: Promise<unknown> | undefined;
    const before = served.runtime.status('users').status?.counters.polls ?? 0;
    const { events } = await readEvents(
      `${base}/inspector/events`,
      (received) => {
        // First called once the overview has arrived, so the poll's changes come on this stream.
        command ??= pollNow(base, 'users', KEY);
        return received.some(
          (event) =>
            event.event === 'update' &&
            (event.data as OverviewUpdate).rows.some((row) => row.name === 'users' && row.polls > before),
        );
      },
      KEY,
    );
    await command;
    expect(events[0]?.event).toBe('overview');
    expect((events[0]?.data as OverviewSnapshot | undefined)?.rows).toHaveLength(2);
    const updates = events.slice(1).map((event) => {
      expect(event.event).toBe('update');
      return event.data as OverviewUpdate;
    });
    // Only changes: applied to what the page holds, every row an update brings differs from it.
    const held = new Map(
      ((events[0]?.data as OverviewSnapshot | undefined)?.rows ?? []).map((row) => [row.name, row]),
    );
    for (const row of updates.flatMap((update) => update.rows)) {
      expect(row).not.toEqual(held.get(row.name));
      held.set(row.name, row);
    }
    const last = updates[updates.length - 1]?.rows.find((row) => row.name === 'users');
    expect(last).toMatchObject({ lastPollResult: 'unchanged', sync: 'current', ready: true });
    for (const [index, update] of updates.entries()) {
      const previous = updates[index - 1];
      if (previous !== undefined) {
        expect(update.serverTimeMs - previous.serverTimeMs).toBeGreaterThanOrEqual(UPDATE_MS - 20);
      }
    }
  });

  it('a page connecting between two updates does not take the changes the other pages are owed', async () => {
    const updates: OverviewUpdate[] = [];
    let owed: () => void = () => undefined;
    const seen = new Promise<void>((resolve) => {
      owed = resolve;
    });
    const unsubscribe = routes.hub.subscribeOverview((update) => {
      updates.push(update);
      if (update.rows.some((row) => row.name === 'users')) owed();
    });
    const off = served.runtime.on('poll', (event) => {
      if (event.dataset !== 'users') return;
      off();
      // Right when the change is known and before the next update: another page's snapshot.
      expect(routes.hub.overview().rows.find((row) => row.name === 'users')?.polls).toBe(
        served.runtime.status('users').status?.counters.polls,
      );
    });
    try {
      await pollNow(base, 'users', KEY);
      await seen;
      expect(updates.flatMap((update) => update.rows).some((row) => row.name === 'users')).toBe(true);
    } finally {
      unsubscribe();
    }
  });

  it('streams one dataset: a detail snapshot, then its machine passing through polling, following only that thread', async () => {
    let command: Promise<unknown> | undefined;
    const inspections = (events: SseEvent[]) =>
      events
        .filter((event) => event.event === 'detail-update')
        .flatMap((event) => (event.data as DetailUpdate).inspection);
    const states = (events: SseEvent[]) =>
      inspections(events)
        .filter((event) => event.type === '@xstate.snapshot')
        .map((event) => event.state);
    const { events } = await readEvents(
      `${base}/inspector/events?dataset=users`,
      (received) => {
        command ??= pollNow(base, 'users', KEY);
        // While the view is open the hub follows this one machine.
        expect(routes.hub.followed()).toEqual(['users']);
        const seen = states(received);
        return (
          seen.includes('polling') &&
          seen.slice(seen.indexOf('polling')).includes('serving') &&
          received.some((event) =>
            ((event.data as DetailUpdate).activity ?? []).some((entry) => entry.kind === 'poll'),
          )
        );
      },
      KEY,
    );
    await command;
    expect(events[0]?.event).toBe('detail');
    const snapshot = events[0]?.data as DetailSnapshot;
    expect(snapshot.row.name).toBe('users');
    expect(snapshot.machine.states.map((state) => state.key)).toContain('polling');
    const received = inspections(events);
    expect(received.every((event) => event.dataset === 'users')).toBe(true);
    // Only the machine's own events: invoked actors' chatter is left out.
    expect(new Set(received.map((event) => event.sessionId)).size).toBe(1);
    // The dataset was parked: watched, it wakes (recording the checks the runtime made meanwhile),
    // then takes the command.
    const machineEvents = received
      .filter((event) => event.type === '@xstate.event')
      .map((event) => event.event);
    expect(machineEvents.find((event) => (event as { type: string }).type !== 'checks.unseen')).toEqual({
      type: 'poll.now',
    });
    const seen = states(events);
    expect(seen.slice(seen.indexOf('polling'))).toEqual(['polling', 'serving']);
    expect(seen.slice(0, seen.indexOf('polling')).filter((state) => state !== 'serving')).toEqual([]);
    const updates = events.slice(1).map((event) => event.data as DetailUpdate);
    expect(updates.flatMap((update) => update.history.map((entry) => entry.state))).toEqual([
      'polling',
      'serving',
    ]);
    expect(updates.flatMap((update) => update.activity)).toEqual([
      expect.objectContaining({ kind: 'poll', result: 'unchanged' }),
    ]);
    // Numbered, so a page skips what its snapshot already held.
    const seqs = received.map((event) => event.seq);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);

    const unknown = await readEvents(`${base}/inspector/events?dataset=nope`, () => true, KEY);
    expect(unknown.status).toBe(404);
  });

  it('stops following a machine a while after its last detail view closed', async () => {
    const lingering = inspectorRoutes(served.runtime, { hub: { followLingerMs: 100, updateIntervalMs: 50 } });
    const server = await startServer(served.runtime, { port: 0, apiKey: 'sesame', routes: lingering });
    try {
      await readEvents(`${server.url}/inspector/events?dataset=orders`, (events) => events.length >= 1, KEY);
      // Closed, still followed for the linger, then let go.
      await vi.waitFor(() => expect(lingering.hub.followed()).toEqual([]), { timeout: 10_000, interval: 20 });
      expect(routes.hub.followed()).not.toContain('orders');
    } finally {
      await server.close();
      lingering.hub.close();
    }
  });

  it('refuses bad commands with the API error shape', async () => {
    const bad = await request(`${base}/inspector/datasets/orders/commands`, {
      method: 'POST',
      headers: KEY,
      body: JSON.stringify({ command: 'explode' }),
    });
    expect(bad.status).toBe(400);
    expect(bad.json<{ code: string }>().code).toBe('ERR_INVALID_COMMAND');
    const notJson = await request(`${base}/inspector/datasets/orders/commands`, {
      method: 'POST',
      headers: KEY,
      body: 'poll',
    });
    expect(notJson.status).toBe(400);
    expect(notJson.json<{ code: string }>().code).toBe('ERR_BAD_REQUEST');
    const unknown = await pollNow(base, 'nope', KEY);
    expect(unknown.status).toBe(404);
    expect(unknown.json<{ code: string }>().code).toBe('ERR_UNKNOWN_DATASET');
  });

  it('fails closed when the inspector is not told the server key', async () => {
    const server = await startServer(served.runtime, {
      port: 0,
      apiKey: 'sesame',
      routes: inspectorRoutes(served.runtime),
    });
    try {
      expect((await request(`${server.url}/inspector/state`)).status).toBe(401);
      expect((await readEvents(`${server.url}/inspector/events?key=sesame`, () => true)).status).toBe(401);
      const withHeader = await readEvents(
        `${server.url}/inspector/events`,
        (events) => events.length >= 1,
        KEY,
      );
      expect(withHeader.events[0]?.event).toBe('overview');
    } finally {
      await server.close();
    }
  });

  it('is open, and says so, on a server without keys', async () => {
    const server = await startServer(served.runtime, { port: 0, routes: inspectorRoutes(served.runtime) });
    try {
      expect((await request(`${server.url}/inspector`)).text).toContain('data-auth="open"');
      const session = await request(`${server.url}/inspector/session`, { method: 'POST' });
      expect(session.json()).toEqual({ required: false, authenticated: true });
      expect(session.headers.get('set-cookie')).toBeNull();
      const stream = await readEvents(`${server.url}/inspector/events`, (events) => events.length >= 1);
      expect(stream.events[0]?.event).toBe('overview');
    } finally {
      await server.close();
    }
  });
});

describe('a command to a dataset whose configuration was refused', () => {
  it('says why it cannot run (ERR_DATASET_FAILED with the reason), not that it has no snapshot yet and to retry', async () => {
    const store = await fixtureDir();
    const yaml = `${spicepod({ location: store.location, interval: '1h', datasets: ['users'] })}${[
      '  - from: postgres:public.broken',
      '    name: broken',
      '    acceleration:',
      '      engine: sqlite',
      '      mode: file',
      '      refresh_mode: snapshot',
      '      snapshots: enabled',
      '      refresh_check_interval: soon',
      '',
    ].join('\n')}`;
    const plain = await serve(yaml);
    const server = await startServer(plain.runtime, { port: 0, routes: inspectorRoutes(plain.runtime) });
    try {
      expect(plain.runtime.status('broken').state).toBe('failed');
      for (const url of [
        `${server.url}/inspector/datasets/broken/commands`,
        `${plain.server.url}/v1/datasets/broken/commands`,
      ]) {
        const answer = await request(url, {
          method: 'POST',
          headers: JSON_BODY,
          body: JSON.stringify({ command: 'poll.now' }),
        });
        expect(answer.status).toBe(503);
        const body = answer.json<{ code: string; error: string }>();
        expect(body.code).toBe('ERR_DATASET_FAILED');
        expect(body.error).toContain("refresh_check_interval: 'soon' is not a duration");
      }
    } finally {
      await server.close();
      await plain.close();
      await rm(store.dir, { recursive: true, force: true });
    }
  });
});

describe('secrets in what the inspector shows', () => {
  it('no answer shows a value a secret reference resolved to, as /v1/datasets shows none', async () => {
    const store = await fixtureDir();
    // A live file given by a secret that names a directory: the error quotes the path.
    const secret = await mkdtemp(join(tmpdir(), 'ferry-secret-live-'));
    process.env.FERRY_TEST_INSPECTOR_LIVE = secret;
    const reference = `\${secrets:FERRY_TEST_INSPECTOR_LIVE}`;
    const yaml = spicepod({ location: store.location, interval: '1h', datasets: ['users'] }).replace(
      '      mode: file\n',
      `      mode: file\n      params:\n        sqlite_file: ${reference}\n`,
    );
    const plain = await serve(yaml);
    const routes = inspectorRoutes(plain.runtime);
    const server = await startServer(plain.runtime, { port: 0, routes });
    try {
      await new Promise<void>((resolve) => {
        const off = plain.runtime.on('error', (event) => {
          if (event.dataset !== 'users') return;
          off();
          resolve();
        });
      });
      const datasets = await request(`${server.url}/v1/datasets?status=true`);
      expect(datasets.text).toContain(reference);
      expect(datasets.text).not.toContain(secret);
      const overview = await request(`${server.url}/inspector/state`);
      const detail = await request(`${server.url}/inspector/state?dataset=users`);
      const stream = await readEvents(
        `${server.url}/inspector/events?dataset=users`,
        (events) => events.length >= 1,
      );
      for (const text of [overview.text, detail.text, JSON.stringify(stream.events)]) {
        expect(text).toContain(reference);
        expect(text).not.toContain(secret);
      }
    } finally {
      delete process.env.FERRY_TEST_INSPECTOR_LIVE;
      await server.close();
      await plain.close();
      await rm(secret, { recursive: true, force: true });
      await rm(store.dir, { recursive: true, force: true });
    }
  });
});

describe('the inspector and parked datasets', () => {
  it('mounted, with an overview open, it lets serving datasets park (no check of their own); a detail view wakes only its dataset, lists its checks, and it parks again once let go', async () => {
    const store = await fixtureDir();
    const served = await serve(spicepod({ location: store.location, interval: '1s' }));
    const routes = inspectorRoutes(served.runtime, {
      hub: { updateIntervalMs: UPDATE_MS, followLingerMs: 100 },
    });
    const server = await startServer(served.runtime, { port: 0, routes });
    const states: string[] = [];
    served.runtime.on('state', (event) => states.push(`${event.dataset} ${event.state}`));
    /** The states the datasets passed through in the next `ms` (a check of a dataset's own passes `polling`). */
    const statesOver = async (ms: number) => {
      const from = states.length;
      await new Promise((resolve) => setTimeout(resolve, ms));
      return states.slice(from);
    };
    const rows: OverviewUpdate[] = [];
    const closeOverview = routes.hub.subscribeOverview((update) => rows.push(update));
    try {
      await served.runtime.ready(undefined, { timeoutMs: 30_000 });
      // Parked once the coordinator has made a check for each (each dataset's own first check parks it).
      await vi.waitFor(
        () => {
          for (const name of ['orders', 'users']) {
            expect(served.runtime.metrics().polls[name]?.unchanged ?? 0).toBeGreaterThan(0);
            expect(served.runtime.status(name).status?.state).toBe('serving');
          }
        },
        { timeout: 15_000, interval: 50 },
      );
      const polls = served.runtime.status('users').status?.counters.polls ?? 0;
      const updates = rows.length;
      const parked = states.length;
      const usersRows = () =>
        rows
          .slice(updates)
          .flatMap((update) => update.rows)
          .filter((row) => row.name === 'users');
      // The checks go on, made by the coordinator, and the open overview is told of them: two ticks
      // of the 1 s schedule (the wait above ends just after one, so the second falls ~2 s in; a fixed
      // 2.5 s window left a loaded machine ~0.5 s to record it).
      await vi.waitFor(
        () => {
          expect(served.runtime.status('users').status?.counters.polls ?? 0).toBeGreaterThanOrEqual(
            polls + 2,
          );
          expect(usersRows().at(-1)?.polls).toBeGreaterThanOrEqual(polls + 2);
        },
        { timeout: 10_000, interval: 50 },
      );
      // Meanwhile no dataset left `serving` (no check of its own): they stayed parked.
      expect(states.slice(parked)).toEqual([]);
      expect(usersRows().at(-1)).toMatchObject({
        lastPollResult: 'unchanged',
        sync: 'current',
        health: 'ok',
      });
      // On the dataset's 1 s schedule, not a slower one: the next check is due within the interval.
      const status = served.runtime.status('users').status;
      const nextInMs = (status?.nextPollDueMs ?? 0) - (status?.lastPollAtMs ?? 0);
      expect(nextInMs).toBeGreaterThan(0);
      expect(nextInMs).toBeLessThanOrEqual(1_000);

      // A detail view of `users` opens: that one machine is inspected, wakes and checks for itself,
      // and its checks fill the view's activity; `orders` stays parked.
      const activity: string[] = [];
      const from = states.length;
      const closeDetail = routes.hub.subscribeDetail('users', (update) => {
        for (const entry of update.activity) if (entry.kind === 'poll') activity.push(entry.result);
      });
      try {
        await vi.waitFor(() => expect(activity.length).toBeGreaterThanOrEqual(2), {
          timeout: 5_000,
          interval: 50,
        });
        expect(activity.every((result) => result === 'unchanged')).toBe(true);
        expect(states.slice(from)).toContain('users polling');
        expect(states.slice(from).filter((state) => state.startsWith('orders '))).toEqual([]);
      } finally {
        closeDetail();
      }
      // Let go (after its linger): after the check under way it parks again.
      await vi.waitFor(() => expect(routes.hub.followed()).toEqual([]), { timeout: 5_000, interval: 20 });
      await vi.waitFor(() => expect(states.at(-1)).toBe('users serving'), { timeout: 5_000, interval: 50 });
      const after = await statesOver(2_500);
      expect(after.filter((state) => state.endsWith(' polling'))).toEqual([]);
    } finally {
      closeOverview();
      routes.hub.close();
      await server.close();
      await served.close();
      await rm(store.dir, { recursive: true, force: true });
    }
  });
});
