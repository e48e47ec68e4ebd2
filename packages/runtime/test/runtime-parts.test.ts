/**
 * The host's parts on their own: the typed event emitter (Node's, with `error` safe to emit with
 * no listener), the inspection hub's first/last-listener signal, the metrics counters, and the
 * registry's readiness (state changes resolve waiters, a timeout names who is late, close rejects).
 */
import { type DatasetConfig, type DatasetStatus, loadSpicepod } from '@ferry/core';
import { describe, expect, it } from 'vitest';
import type { StateEvent, SwapEvent } from '../src/api.js';
import { DatasetRegistry } from '../src/dataset-registry.js';
import { RuntimeEventEmitter } from '../src/events.js';
import { InspectionHub } from '../src/inspection-hub.js';
import { levelWanted, lowestLevel } from '../src/log-levels.js';
import { defaultLogger, memoryLogger } from '../src/logging.js';
import { redactingLogger } from '../src/redaction.js';
import { RuntimeMetricsCounter } from '../src/runtime-metrics.js';
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
    metrics.countDownload('a', { bytes: 10, seconds: 0.5, snapshotId: 1, checksum: 'c' }, true);
    metrics.countDownload('a', { bytes: 5, seconds: 0.25, snapshotId: 2, checksum: 'd' }, false);
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
