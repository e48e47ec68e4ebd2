/**
 * The host's parts on their own: the typed event emitter (Node's, with `error` safe to emit with
 * no listener), the inspection hub's first/last-listener signal, the metrics counters, and the
 * registry's readiness (state changes resolve waiters, a timeout names who is late, close rejects).
 */

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type DatasetConfig,
  type DatasetStatus,
  freshnessClock,
  levelWanted,
  loadSpicepod,
} from '@ferry/core';
import { batchesFromIpc, batchToIpc } from '@ferry/engines/namespaces';
import { type RecordBatch, tableFromArrays } from 'apache-arrow';
import { describe, expect, it, vi } from 'vitest';
import type { StateEvent, SwapEvent } from '../src/api.js';
import { lowestLevel } from '../src/common/log-levels.js';
import { defaultLogger, memoryLogger } from '../src/common/logging.js';
import { type LiveChecks, LiveStatus } from '../src/common/shared-slots.js';
import { assertBuiltFrom, buildIdOf, checkBuildId } from '../src/common/thread-files.js';
import { DatasetRegistry } from '../src/host/dataset-registry.js';
import { RuntimeEventEmitter } from '../src/host/events.js';
import { InspectionHub } from '../src/host/inspection-hub.js';
import { redactingLogger } from '../src/host/redaction.js';
import { RuntimeMetricsCounter } from '../src/host/runtime-metrics.js';
import { sdkNoticeOnce } from '../src/host/sdk-notice.js';
import { holdToStalenessBound } from '../src/host/staleness-bound.js';
import { InlineResult, inlineRows, SchemaWithFirstBatch } from '../src/query/query-protocol.js';
import { podYaml } from './support.js';

function configs(names: readonly string[]): readonly DatasetConfig[] {
  const yaml = podYaml(
    'file:///tmp/ferry-parts/',
    names.map((name) => ({ name, engine: 'duckdb' })),
  );
  return loadSpicepod(yaml, { file: 'spicepod.yaml' }).datasets;
}

const servingStatus = { servingSnapshotId: 7, state: 'serving' } as unknown as DatasetStatus;

describe('log levels the threads post', () => {
  it('asks a pino logger, else takes the declared level, else posts every level', () => {
    expect(lowestLevel(defaultLogger('warn'), undefined)).toBe('warn');
    expect(lowestLevel(defaultLogger(), 'debug')).toBe('info');
    expect(lowestLevel(memoryLogger(), 'info')).toBe('info');
    expect(lowestLevel(memoryLogger(), undefined)).toBe('debug');
    expect(levelWanted('debug', 'info')).toBe(false);
    expect(levelWanted('warn', 'info')).toBe(true);
    expect(levelWanted('info', 'info')).toBe(true);
  });
});

describe("the AWS SDK's Node-version notice", () => {
  it('is said once in one line of its own on an older Node when AWS is used, and switched off in the threads', () => {
    const SWITCH = 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED';
    // Set by the user: nothing to say; a newer Node: nothing to say. Neither uses up the one line.
    expect(sdkNoticeOnce({ [SWITCH]: 'true' }, 'v20.20.2').line).toBeUndefined();
    expect(sdkNoticeOnce({}, 'v22.1.0')).toEqual({ env: { [SWITCH]: 'true' }, line: undefined });
    // A runtime that reaches no AWS (file:// stores only) has nothing to say, and keeps the line.
    expect(sdkNoticeOnce({}, 'v20.20.2', false)).toEqual({ env: { [SWITCH]: 'true' }, line: undefined });
    const first = sdkNoticeOnce({ PATH: '/bin' }, 'v20.20.2');
    expect(first.env).toEqual({ PATH: '/bin', [SWITCH]: 'true' });
    expect(first.line).toMatch(
      /^Node v20\.20\.2 runs this Ferry, but AWS SDK .* need Node 22 or later: .*\.$/,
    );
    expect(first.line).not.toContain('\n');
    expect(sdkNoticeOnce({}, 'v20.20.2').line).toBeUndefined();
  });
});

describe('a thread started from a stale dist/', () => {
  it('is refused: the error names the built file, its source, and pnpm run build', () => {
    const root = mkdtempSync(join(tmpdir(), 'ferry-build-'));
    try {
      mkdirSync(join(root, 'src', 'sub'), { recursive: true });
      mkdirSync(join(root, 'dist', 'sub'), { recursive: true });
      const write = (source: string, text: string, built: string) => {
        writeFileSync(join(root, 'src', source), text);
        writeFileSync(
          join(root, 'dist', `${source.replace(/\.ts$/, '.js')}.map`),
          JSON.stringify({ sourcesContent: [built] }),
        );
      };
      write('a.ts', 'export const a = 1;\n', 'export const a = 1;\n');
      // dist/sub/b.js was built from an older src/sub/b.ts.
      write('sub/b.ts', 'export const b = 3;\n', 'export const b = 2;\n');
      let error: unknown;
      try {
        assertBuiltFrom(join(root, 'src'), join(root, 'dist'));
      } catch (caught) {
        error = caught;
      }
      expect(error).toMatchObject({ code: 'ERR_STALE_BUILD', file: join(root, 'dist', 'sub', 'b.js') });
      expect((error as Error).message).toBe(
        `Thread code ${join(root, 'dist', 'sub', 'b.js')} was built from another version of ${join(root, 'src', 'sub', 'b.ts')} than the one running now; run \`pnpm run build\` and start again.`,
      );
      // Built again: accepted.
      write('sub/b.ts', 'export const b = 3;\n', 'export const b = 3;\n');
      assertBuiltFrom(join(root, 'src'), join(root, 'dist'));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("a thread started with another dist/'s build id refuses to run", () => {
    const self = 'file:///opt/ferry/dist/dataset/thread.js';
    expect(() => checkBuildId(buildIdOf(new URL(self)), self)).not.toThrow();
    expect(() => checkBuildId('dist:/elsewhere/dist', self)).toThrow(
      expect.objectContaining({ code: 'ERR_STALE_BUILD' }),
    );
  });
});

describe('LiveStatus (shared slots)', () => {
  const checks: LiveChecks = {
    incarnation: 3,
    polls: 12,
    lastPollAtMs: 1_700_000_000_000,
    nextPollDueMs: null,
    freshAtMs: 1_699_999_999_000,
    unposted: 7,
  };

  it('reads back as written, per slot, from another view of the buffer; a slot never written reads as absent', () => {
    const live = LiveStatus.create(2);
    live.write(1, checks);
    expect(new LiveStatus(live.buffer).read(1)).toEqual(checks);
    expect(live.read(0)).toBeUndefined();
  });

  it('the coordinator writes a parked slot only while it is lent under the token, and the dataset reads its writes on taking it back', () => {
    const live = LiveStatus.create(2);
    const coordinator = new LiveStatus(live.buffer);
    const count = (c: LiveChecks): LiveChecks => ({ ...c, polls: c.polls + 1, unposted: c.unposted + 1 });
    // Not lent: nothing written.
    live.write(0, checks);
    expect(coordinator.writeParked(0, 5, count)).toBe(false);
    live.park(0, 5, checks);
    expect(coordinator.writeParked(0, 4, count)).toBe(false);
    expect(coordinator.writeParked(0, 5, count)).toBe(true);
    expect(coordinator.writeParked(0, 5, count)).toBe(true);
    expect(live.takeBack(0, 5)).toEqual({ ...checks, polls: 14, unposted: 9 });
    // Taken back: the coordinator's next write is refused; the other slot was never touched.
    expect(coordinator.writeParked(0, 5, count)).toBe(false);
    expect(live.read(0)?.polls).toBe(14);
    expect(live.read(1)).toBeUndefined();
  });
});

describe('RuntimeEventEmitter', () => {
  it('delivers typed payloads until unsubscribed, and an error event with no listener does not throw', () => {
    const events = new RuntimeEventEmitter();
    expect(() =>
      events.publish('error', { dataset: 'a', code: 'X', message: 'm', snapshotId: null }),
    ).not.toThrow();
    const seen: SwapEvent[] = [];
    const off = events.subscribe('swap', (event) => seen.push(event));
    events.publish('swap', { dataset: 'a', from: 1, to: 2 });
    off();
    events.publish('swap', { dataset: 'a', from: 2, to: 3 });
    expect(seen).toEqual([{ dataset: 'a', from: 1, to: 2 }]);
  });
});

describe('InspectionHub', () => {
  it('signals the first listener and the last one leaving, and fans events out to all', () => {
    const signals: boolean[] = [];
    const hub = new InspectionHub((active) => signals.push(active));
    const a: string[] = [];
    const b: string[] = [];
    const offA = hub.add((event) => a.push(event.type));
    const offB = hub.add((event) => b.push(event.type));
    hub.publish({ dataset: 'd', type: '@xstate.event', sessionId: 's', atMs: 0 });
    offA();
    offA();
    expect(hub.active).toBe(true);
    offB();
    expect([signals, a, b, hub.active]).toEqual([[true, false], ['@xstate.event'], ['@xstate.event'], false]);
  });
});

describe('RuntimeMetricsCounter', () => {
  it('counts swaps, polls by result, failures, downloads and bootstraps, and hands out copies', () => {
    const metrics = new RuntimeMetricsCounter();
    metrics.countEmitted('a', { type: 'swap', from: null, to: 1 } as never);
    metrics.countEmitted('a', { type: 'poll', result: 'newer', currentSnapshotId: 1 } as never);
    metrics.countDownload(
      'a',
      { bytes: 10, reusedBytes: 0, seconds: 0.5, snapshotId: 1, checksum: 'c' },
      true,
    );
    metrics.countDownload(
      'a',
      { bytes: 5, reusedBytes: 0, seconds: 0.25, snapshotId: 2, checksum: 'd' },
      false,
    );
    const copy = metrics.snapshot();
    metrics.countEmitted('a', { type: 'swap', from: 1, to: 2 } as never);
    expect(copy.swaps).toEqual({ a: 1 });
    expect(copy.polls.a?.newer).toBe(1);
    expect(copy.polls.a?.unchanged).toBe(0);
    expect([copy.downloadedBytes, copy.downloadSeconds]).toEqual([15, 0.75]);
    expect(copy.bootstraps.a).toEqual({ durationMs: 500, bytes: 10, checksum: 'c', snapshotId: 1 });
    expect(metrics.snapshot().swaps).toEqual({ a: 2 });
  });
});

describe('DatasetRegistry readiness', () => {
  it('resolves when every dataset serves, emitting state changes once each', async () => {
    const states: StateEvent[] = [];
    const registry = new DatasetRegistry(configs(['a', 'b']), [], (event) => states.push(event));
    const ready = registry.ready(undefined, 10_000);
    for (const entry of registry.entries()) {
      entry.rpc = {} as never;
      registry.setState(entry, 'serving', servingStatus);
      registry.setState(entry, 'serving', servingStatus);
    }
    await ready;
    expect(states.map((event) => `${event.dataset}:${event.state}`)).toEqual(['a:serving', 'b:serving']);
  });

  it('times out naming the datasets not serving, and rejects waiters when closed', async () => {
    const registry = new DatasetRegistry(configs(['a', 'b']), [], () => undefined);
    const a = registry.get('a');
    a.rpc = {} as never;
    registry.setState(a, 'serving', servingStatus);
    await expect(registry.ready(undefined, 20)).rejects.toMatchObject({
      code: 'ERR_READY_TIMEOUT',
      message: expect.stringContaining('Dataset(s) b did not'),
    });
    const waiting = registry.ready('b', 10_000);
    registry.close();
    await expect(waiting).rejects.toMatchObject({ code: 'ERR_RUNTIME_CLOSED' });
    expect(() => registry.get('zz')).toThrow(
      "Table 'zz' is not a dataset of this runtime; the datasets are: a, b.",
    );
  });
});

describe('staleness on the freshness clock', () => {
  it('a step back of the wall clock neither freezes staleness at 0 nor lets a bound pass', () => {
    const registry = new DatasetRegistry(configs(['a']), [], () => undefined);
    const a = registry.get('a');
    a.rpc = {} as never;
    // Checked 5 s ago on the freshness clock (what a dataset thread stamps its checks with).
    const status = {
      servingSnapshotId: 7,
      state: 'serving',
      freshAtMs: freshnessClock() - 5_000,
      storeSnapshotId: 7,
      nextPollDueMs: freshnessClock() + 55_000,
    } as unknown as DatasetStatus;
    registry.setState(a, 'serving', status);
    const wall = Date.now();
    const stepped = vi.spyOn(Date, 'now').mockReturnValue(wall - 3_600_000);
    try {
      expect(registry.info(a).stalenessMs).toBeGreaterThanOrEqual(5_000);
      expect(() =>
        holdToStalenessBound([{ name: 'a', snapshotId: 7 }], 1_000, () => registry.info(a)),
      ).toThrow(expect.objectContaining({ code: 'ERR_STALE' }));
    } finally {
      stepped.mockRestore();
    }
  });
});

describe('the staleness bound judges the snapshot an answer read', () => {
  const at = (servingSnapshotId: number, freshAtMs: number) =>
    ({
      servingSnapshotId,
      state: 'serving',
      freshAtMs,
      storeSnapshotId: servingSnapshotId,
      nextPollDueMs: freshAtMs + 3_600_000,
    }) as unknown as DatasetStatus;

  it('an answer read at a snapshot replaced since is as stale as that snapshot; a pinned one as the dataset', () => {
    const registry = new DatasetRegistry(configs(['a']), [], () => undefined);
    const a = registry.get('a');
    a.rpc = {} as never;
    const now = Date.now();
    registry.setState(a, 'serving', at(7, now - 60_000));
    registry.setState(a, 'polling', at(7, now - 60_000));
    expect(registry.info(a).replaced).toBeUndefined();
    // The check that found 8 began a second ago; 7 was last known current a minute ago.
    registry.setState(a, 'serving', at(8, now - 1_000));
    expect(registry.info(a).replaced).toMatchObject({ snapshotId: 7 });
    expect(registry.info(a).replaced?.stalenessMs).toBeGreaterThanOrEqual(60_000);
    const info = () => registry.info(a);
    expect(() => holdToStalenessBound([{ name: 'a', snapshotId: 8 }], 30_000, info)).not.toThrow();
    // Refused, with a retry at once: the snapshot served now is within the bound.
    expect(() => holdToStalenessBound([{ name: 'a', snapshotId: 7 }], 30_000, info)).toThrow(
      expect.objectContaining({ code: 'ERR_STALE', dataset: 'a', retryAfterSeconds: 1 }),
    );
    // Past it at the snapshot served too: retry when the next check is due.
    expect(() => holdToStalenessBound([{ name: 'a', snapshotId: 8 }], 500, info)).toThrow(
      expect.objectContaining({ code: 'ERR_STALE', retryAfterSeconds: 3_599 }),
    );
    // Replaced twice while it ran: at least as stale as the snapshot replaced last.
    expect(() => holdToStalenessBound([{ name: 'a', snapshotId: 6 }], 30_000, info)).toThrow(
      expect.objectContaining({ code: 'ERR_STALE' }),
    );
    expect(() => holdToStalenessBound([{ name: 'a', snapshotId: 7 }], 30_000, info, { A: 7 })).not.toThrow();
    // A snapshot replaced twice while the answer read it: how stale it is, nothing recorded says
    // (staler than the one replaced last, by an unknown amount), so it is refused, with a retry at once.
    registry.setState(a, 'polling', at(8, now - 1_000));
    registry.setState(a, 'serving', at(9, now - 500));
    expect(registry.info(a).replaced).toMatchObject({ snapshotId: 8 });
    expect(() => holdToStalenessBound([{ name: 'a', snapshotId: 8 }], 30_000, info)).not.toThrow();
    expect(() => holdToStalenessBound([{ name: 'a', snapshotId: 7 }], 30_000, info)).toThrow(
      expect.objectContaining({
        code: 'ERR_STALE',
        dataset: 'a',
        retryAfterSeconds: 1,
        message: expect.stringContaining('read at snapshot 7, replaced more than once while the query ran'),
      }),
    );
    // A thread restarting (no status for a while) replaces nothing.
    registry.setState(a, 'restarting', undefined);
    registry.setState(a, 'serving', at(9, now));
    expect(registry.info(a).replaced).toMatchObject({ snapshotId: 8 });
  });
});

describe('redactingLogger', () => {
  it('puts the reference in place of every resolved secret: message, string fields, errors', () => {
    const records = memoryLogger();
    const logger = redactingLogger(records, [
      { value: 'sk-very-secret', reference: `\${secrets:API_KEY}` },
      {
        value: 'https://sqs.us-east-1.amazonaws.com/123456789012/private-queue',
        reference: `\${secrets:QUEUE}`,
      },
    ]);
    const failure = Object.assign(
      new Error('GET https://sqs.us-east-1.amazonaws.com/123456789012/private-queue failed'),
      {
        code: 'ECONNREFUSED',
      },
    );
    logger.warn(
      { component: 'x', key: 'sk-very-secret', count: 3, err: failure },
      'key sk-very-secret was refused',
    );
    const [record] = records.records;
    expect(record?.message).toBe(`key \${secrets:API_KEY} was refused`);
    expect(record?.fields).toMatchObject({ component: 'x', key: `\${secrets:API_KEY}`, count: 3 });
    const err = (record?.fields as { err: Error & { code?: string } } | undefined)?.err as Error & {
      code?: string;
    };
    expect(err.message).toBe(`GET \${secrets:QUEUE} failed`);
    expect(err.code).toBe('ECONNREFUSED');
    expect(JSON.stringify(records.records)).not.toContain('sk-very-secret');
    expect(err.stack).not.toContain('private-queue');
  });

  it('is the logger itself when no secret was resolved', () => {
    const records = memoryLogger();
    expect(redactingLogger(records, [])).toBe(records);
  });
});

describe('SchemaWithFirstBatch (a stream producer sends its schema with its first batch)', () => {
  const table = tableFromArrays({ id: Int32Array.from([1, 2, 3]) });
  const batchIpc = (): Uint8Array => batchToIpc(table.schema, table.batches[0]);
  const read = [{ name: 'users', snapshotId: 7 }];
  type Posted = { kind: 'schema' | 'batch'; rows: number | undefined; ipc: Uint8Array };
  const producer = (): { out: SchemaWithFirstBatch; posted: Posted[] } => {
    const posted: Posted[] = [];
    const out = new SchemaWithFirstBatch((ipc, first, rows) => {
      // As a worker posts: what arrives is a copy, and the buffer is transferred (detached here).
      const arrived = ipc.slice();
      structuredClone(ipc, { transfer: [ipc.buffer as ArrayBuffer] });
      if (first === undefined) posted.push({ kind: 'batch', rows, ipc: arrived });
      else {
        expect(first.read).toEqual(read);
        posted.push({ kind: 'schema', rows: first.rows, ipc: arrived });
      }
    });
    return { out, posted };
  };

  it('sends a one-batch result as one message the host decodes once into its schema and batch', () => {
    const { out, posted } = producer();
    out.schema(table.schema, read);
    expect(posted).toEqual([]);
    const first = batchIpc();
    const length = first.byteLength;
    const sent = out.batch(first, 3);
    out.flush();
    expect(posted.map(({ kind, rows }) => [kind, rows])).toEqual([['schema', 3]]);
    // What it sent, counted before the transfer detached it (the memory return counts on it).
    expect(sent).toBe(length);
    expect(sent).toBeGreaterThan(0);
    const decoded = batchesFromIpc(posted[0]?.ipc as Uint8Array);
    expect(decoded.schema.fields.map((field) => field.name)).toEqual(['id']);
    expect(decoded.batches.map((batch) => batch.numRows)).toEqual([3]);
  });

  it('sends later batches on their own, and a result with no batch as its schema alone at flush', () => {
    const many = producer();
    many.out.schema(table.schema, read);
    many.out.batch(batchIpc(), 3);
    many.out.batch(batchIpc(), 3);
    many.out.flush();
    expect(many.posted.map(({ kind, rows }) => [kind, rows])).toEqual([
      ['schema', 3],
      ['batch', 3],
    ]);
    const empty = producer();
    empty.out.schema(table.schema, read);
    empty.out.flush();
    empty.out.flush();
    expect(empty.posted.map(({ kind, rows }) => [kind, rows])).toEqual([['schema', undefined]]);
    const alone = batchesFromIpc(empty.posted[0]?.ipc as Uint8Array);
    expect(alone.schema.fields.map((field) => field.name)).toEqual(['id']);
    expect(alone.batches.reduce((rows, batch) => rows + batch.numRows, 0)).toBe(0);
  });
});

describe("InlineResult (a small result answered as its rows' JSON text)", () => {
  const table = tableFromArrays({ id: Int32Array.from([1, 2, 3]), name: ['a', 'b "quoted"', 'c'] });
  const built = table.batches[0] as RecordBatch;
  const ipc = batchToIpc(table.schema, built);
  const read = [{ name: 'users', snapshotId: 7 }];
  const done = { kind: 'done', read, rows: 3, bytes: ipc.byteLength } as const;

  it("answers one batch as its rows' JSON objects, in column order", () => {
    const result = new InlineResult(1024);
    result.schema(table.schema, read);
    result.built(built);
    expect(result.answer(done)).toEqual({
      kind: 'inline',
      read,
      json: '{"id":1,"name":"a"},{"id":2,"name":"b \\"quoted\\""},{"id":3,"name":"c"}',
      rows: 3,
      bytes: built.data.byteLength,
    });
    expect(JSON.parse(`[${(result.answer(done, true) as { json: string }).json}]`)).toEqual([
      { id: 1, name: 'a' },
      { id: 2, name: 'b "quoted"' },
      { id: 3, name: 'c' },
    ]);
    expect(result.answer(done, true)).toMatchObject({ kind: 'inline', shared: true });
  });

  it("takes the batch as its rows' text when the engine wrote it so (one batch, within its bound)", () => {
    const json = '{"id":1,"name":"a"}';
    const result = new InlineResult(1024);
    result.schema(table.schema, read);
    result.text(json, 1);
    expect(result.answer(done)).toEqual({ kind: 'inline', read, json, rows: 1, bytes: json.length });
    // A second batch, as text or built, and a text past the bound stop the query.
    expect(() => result.built(built)).toThrow();
    expect(() => result.text(json, 1)).toThrow();
    const narrow = new InlineResult(json.length - 1);
    narrow.schema(table.schema, read);
    expect(() => narrow.text(json, 1)).toThrow();
  });

  it("writes DuckDB's rows as their text, in column order by name, or says `larger`", () => {
    const columns = [
      { name: '2', type: 'INTEGER' },
      { name: '1', type: 'VARCHAR' },
    ];
    const rows = [
      { '1': 'a', '2': 1 },
      { '1': null, '2': 2 },
    ];
    const outcome = { kind: 'rows', columns, rows, read } as const;
    const json = '{"2":1,"1":"a"},{"2":2,"1":null}';
    expect(inlineRows(outcome, 1024, 0, false)).toEqual({
      kind: 'inline',
      read,
      json,
      rows: 2,
      bytes: json.length,
    });
    expect(inlineRows({ ...outcome, shared: true }, 1024, 0, false)).toMatchObject({ shared: true });
    expect(inlineRows(outcome, json.length - 1, 0, false)).toEqual({ kind: 'larger', read });
    // A byte cap cut to the bound is `larger`; the query's own cap (rows, or bytes within the bound) is its error.
    const bytes = { kind: 'too-large', limit: 'bytes', read } as const;
    expect(inlineRows(bytes, 1024, 0, false)).toEqual({ kind: 'larger', read });
    expect(inlineRows(bytes, 1024, 4096, false)).toEqual({ kind: 'larger', read });
    expect(inlineRows(bytes, 1024, 512, false)).toEqual(bytes);
    expect(inlineRows({ ...bytes, limit: 'rows' }, 1024, 0, false)).toEqual({ ...bytes, limit: 'rows' });
    // No row object holds a column named __proto__: the caller builds the batch instead.
    expect(
      inlineRows({ ...outcome, columns: [{ name: '__proto__', type: 'INTEGER' }] }, 1024, 0, false),
    ).toBe(undefined);
  });

  it('answers no row as an empty text', () => {
    const result = new InlineResult(1024);
    result.schema(table.schema, read);
    expect(result.answer({ ...done, rows: 0 })).toEqual({
      kind: 'inline',
      read,
      json: '',
      rows: 0,
      bytes: 0,
    });
  });

  it('stops at a second batch, or a batch or text past its bound: the answer is `larger`', () => {
    const two = new InlineResult(1024);
    two.schema(table.schema, read);
    two.built(built);
    let thrown: unknown;
    try {
      two.built(built);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(Error);
    // As an engine hands it back: itself, or wrapped as the cause of the engine's error.
    expect(two.answer({ error: thrown })).toEqual({ kind: 'larger', read });
    expect(two.answer({ error: new Error('query failed', { cause: thrown }) })).toEqual({
      kind: 'larger',
      read,
    });
    // Its buffers (ten bytes) within 50 bytes, its text (ten times `{"id":1}` and commas) not.
    const narrow = tableFromArrays({ id: Int8Array.from({ length: 10 }, () => 1) });
    const one = narrow.batches[0] as RecordBatch;
    const long = new InlineResult(50);
    long.schema(narrow.schema, read);
    expect(one.data.byteLength).toBeLessThanOrEqual(50);
    long.built(one);
    expect(long.answer(done)).toEqual({ kind: 'larger', read });
    const wide = new InlineResult(8);
    wide.schema(table.schema, read);
    expect(() => wide.built(built)).toThrow();
  });

  it('rethrows any other failure, and passes on a cap the engine reached', () => {
    const result = new InlineResult(1024);
    const failure = new Error('no such column');
    expect(() => result.answer({ error: failure })).toThrow(failure);
    const capped = { kind: 'too-large', limit: 'bytes', read } as const;
    expect(result.answer(capped)).toBe(capped);
  });
});
