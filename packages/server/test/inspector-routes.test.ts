/**
 * The inspector's HTTP side without a browser: the machine graph it draws, payload abridging,
 * the page's files and their headers, the event stream (a snapshot first, then live inspection
 * events) and the command route, with and without an API key — over real HTTP against a real
 * runtime serving a copy of the fixture store.
 */
import { rm } from 'node:fs/promises';
import type { JsonValue } from '@ferry/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  datasetMachineGraph,
  eventLabel,
  type InspectorSnapshot,
  inspectorRoutes,
  type RunningServer,
  startServer,
} from '../src/index.js';
import { abridge } from '../src/inspector/abridge.js';
import { type Answer, fixtureDir, request, type Served, serve, spicepod } from './helpers.js';

interface Inspection {
  readonly dataset: string;
  readonly type: string;
  readonly sessionId: string;
  readonly state?: string;
  readonly event?: unknown;
}

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

describe('inspector routes', () => {
  /** A runtime behind a plain server (no inspector) … */
  let served: Served;
  /** … and a second server on the same runtime, with an API key and the inspector. */
  let inspected: RunningServer;
  let storeDir: string;
  let base: string;

  beforeAll(async () => {
    const store = await fixtureDir();
    storeDir = store.dir;
    served = await serve(spicepod({ location: store.location, interval: '1h' }));
    inspected = await startServer(served.runtime, {
      port: 0,
      apiKey: 'sesame',
      routes: inspectorRoutes(served.runtime, { apiKey: 'sesame' }),
    });
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

  it('serves the page and its files without the key, with a strict CSP and no external URL', async () => {
    const page = await request(`${base}/inspector`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    expect(page.text).toContain('<script type="module" src="/inspector/assets/inspector.js">');
    for (const path of ['/inspector/assets/inspector.js', '/inspector/assets/inspector.css']) {
      const asset = await request(`${base}${path}`);
      expect(asset.status).toBe(200);
      expect(asset.text).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
      const again = await request(`${base}${path}`, {
        headers: { 'if-none-match': asset.headers.get('etag') ?? '' },
      });
      expect(again.status).toBe(304);
    }
    expect((await request(`${base}/inspector/`)).status).toBe(200);
  });

  it('keeps the data routes behind the key', async () => {
    expect((await request(`${base}/inspector/state`)).status).toBe(401);
    const state = await request(`${base}/inspector/state`, { headers: { authorization: 'Bearer sesame' } });
    expect(state.status).toBe(200);
    const snapshot = state.json<InspectorSnapshot>();
    expect(snapshot.datasets.map((dataset) => [dataset.name, dataset.state, dataset.ready])).toEqual([
      ['orders', 'serving', true],
      ['users', 'serving', true],
    ]);
    expect(snapshot.datasets[0]?.status?.servingSnapshotId).toBe(1);
    expect(snapshot.machine.states).toHaveLength(6);
    expect(snapshot.serverTimeMs).toBeGreaterThan(0);

    const command = await request(`${base}/inspector/datasets/orders/commands`, {
      method: 'POST',
      body: JSON.stringify({ command: 'poll.now' }),
    });
    expect(command.status).toBe(401);
  });

  it('accepts the key as ?key= on the event stream only, and refuses a wrong one', async () => {
    const wrong = await readEvents(`${base}/inspector/events?key=open`, () => true);
    expect(wrong.status).toBe(401);
    const none = await readEvents(`${base}/inspector/events`, () => true);
    expect(none.status).toBe(401);
    expect((await request(`${base}/inspector/state?key=sesame`)).status).toBe(401);

    const stream = await readEvents(`${base}/inspector/events?key=sesame`, (events) => events.length >= 1);
    expect(stream.status).toBe(200);
    expect(stream.contentType).toBe('text/event-stream; charset=utf-8');
    expect(stream.events[0]?.event).toBe('snapshot');
    const header = await readEvents(`${base}/inspector/events`, (events) => events.length >= 1, {
      authorization: 'Bearer sesame',
    });
    expect(header.events[0]?.event).toBe('snapshot');
  });

  it('streams a snapshot, then the machine passing through polling after a command', async () => {
    const inspections = (events: SseEvent[]) =>
      events.filter((event) => event.event === 'inspection').map((event) => event.data as Inspection);
    const states = (events: SseEvent[]) =>
      inspections(events)
        .filter((event) => event.type === '@xstate.snapshot')
        .map((event) => event.state);
    let command: Promise<Answer> | undefined;
    const { events } = await readEvents(`${base}/inspector/events?key=sesame`, (received) => {
      // First called once the snapshot has arrived, so the command's events are on this stream.
      command ??= request(`${base}/inspector/datasets/users/commands`, {
        method: 'POST',
        headers: { authorization: 'Bearer sesame', 'content-type': 'application/json' },
        body: JSON.stringify({ command: 'poll.now' }),
      });
      const seen = states(received);
      return seen.includes('polling') && seen.slice(seen.indexOf('polling')).includes('serving');
    });
    const accepted = await command;
    expect(accepted?.status).toBe(202);
    expect(accepted?.json()).toEqual({ dataset: 'users', command: 'poll.now', accepted: true });

    expect(events[0]?.event).toBe('snapshot');
    const received = inspections(events);
    expect(received.every((event) => event.dataset === 'users')).toBe(true);
    expect(received.every((event) => event.sessionId.startsWith('users:'))).toBe(true);
    // Only the machine's own events: invoked actors' chatter is left out.
    expect(new Set(received.map((event) => event.sessionId)).size).toBe(1);
    expect(received.find((event) => event.type === '@xstate.event')?.event).toEqual({ type: 'poll.now' });
    expect(states(events)).toEqual(['polling', 'serving']);
  });

  it('refuses bad commands with the API error shape', async () => {
    const auth = { authorization: 'Bearer sesame' };
    const bad = await request(`${base}/inspector/datasets/orders/commands`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ command: 'explode' }),
    });
    expect(bad.status).toBe(400);
    expect(bad.json<{ code: string }>().code).toBe('ERR_INVALID_COMMAND');
    const notJson = await request(`${base}/inspector/datasets/orders/commands`, {
      method: 'POST',
      headers: auth,
      body: 'poll',
    });
    expect(notJson.status).toBe(400);
    expect(notJson.json<{ code: string }>().code).toBe('ERR_BAD_REQUEST');
    const unknown = await request(`${base}/inspector/datasets/nope/commands`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ command: 'poll.now' }),
    });
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
      expect((await readEvents(`${server.url}/inspector/events?key=sesame`, () => true)).status).toBe(401);
      const withHeader = await readEvents(`${server.url}/inspector/events`, (events) => events.length >= 1, {
        authorization: 'Bearer sesame',
      });
      expect(withHeader.events[0]?.event).toBe('snapshot');
    } finally {
      await server.close();
    }
  });
});
