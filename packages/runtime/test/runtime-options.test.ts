/**
 * createRuntime's options, as an embedder writes them: an option of the wrong type, out of its
 * range, or a key that is no option (a typo) is refused by createRuntime with a ConfigError
 * (ERR_CONFIG) naming the option, before any thread starts — not taken silently (`queryTimeoutMs:
 * '30s'` served with the default, `maxResultRows: -1`), and not found out later in a thread
 * (`snapshotIdleTimeoutMs: -1` left every dataset `starting` for good).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { copyFixtureStore, spicepodYaml } from '@ferry/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConfigError,
  createRuntime,
  type DatasetCommand,
  memoryLogger,
  type Runtime,
  type RuntimeOptions,
  type RuntimeQueryStream,
  type SpicepodSource,
} from '../src/index.js';

describe('createRuntime options', () => {
  let dir: string;
  let yaml: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ferry-options-'));
    const { location } = await copyFixtureStore({ kind: 'dir', dir: join(dir, 'store') });
    yaml = spicepodYaml({ location, datasets: [{ name: 'orders', engine: 'duckdb' }] });
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each<[string, Record<string, unknown>, string]>([
    [
      'a typo of an option',
      { queryTimout: 5_000 },
      "queryTimout: unknown key; did you mean 'queryTimeoutMs'?",
    ],
    ['a key that is no option', { port: 8080 }, 'port: unknown key; remove it'],
    ['a duration as text', { queryTimeoutMs: '30s' }, 'queryTimeoutMs: must be a number of milliseconds'],
    ['a negative timeout', { queryTimeoutMs: -5 }, 'queryTimeoutMs: must be a number of milliseconds'],
    ['a timeout past what a timer holds', { streamIdleTimeoutMs: 2 ** 31 }, 'streamIdleTimeoutMs:'],
    ['a negative cap', { maxResultRows: -1 }, 'maxResultRows: must be a whole number, 0 or more'],
    [
      'a fractional admission bound',
      { maxQueriesInFlight: 1.5 },
      'maxQueriesInFlight: must be a whole number',
    ],
    ['no query threads', { duckdbQueryThreads: 0 }, 'duckdbQueryThreads: must be a whole number, 1 or more'],
    ['a negative idle timeout', { snapshotIdleTimeoutMs: -1 }, 'snapshotIdleTimeoutMs:'],
    [
      'a niceness as a word',
      { queryThreadNiceness: 'high' },
      'queryThreadNiceness: must be a whole number from 0 to 19',
    ],
    ['no restart delays', { restartBackoffMs: [] }, 'restartBackoffMs: must be a list of'],
    ['a level pino does not have', { logLevel: 'verbose' }, "logLevel: 'verbose' is not a level"],
    ['a data directory that is no path', { dataDir: 5 }, 'dataDir: must be a path'],
    ['a size that is none', { queryMemoryLimit: '4XB' }, 'queryMemoryLimit: "4XB" is not a size'],
    ['a logger without its methods', { logger: console.log }, 'logger: must be'],
    [
      'an SQS long poll past 20 s',
      { notifications: { waitTimeSeconds: 99 } },
      'notifications.waitTimeSeconds: must be a whole number from 0 to 20',
    ],
    [
      'a typo inside notifications',
      { notifications: { waitTimeSecond: 1 } },
      "notifications.waitTimeSecond: unknown key; did you mean 'waitTimeSeconds'?",
    ],
    [
      'a typo inside resource limits',
      { datasetResourceLimits: { maxOldGenerationSizeMB: 64 } },
      'datasetResourceLimits.maxOldGenerationSizeMB: unknown key',
    ],
  ])('refuses %s before anything starts', async (_case, options, expected) => {
    const logger = memoryLogger();
    const started = createRuntime({ yaml }, {
      dataDir: join(dir, 'data'),
      logger,
      ...options,
    } as RuntimeOptions);
    const error = await started.then(
      async (runtime) => {
        await runtime.close();
        return undefined;
      },
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({ code: 'ERR_CONFIG' });
    expect((error as Error).message).toContain(`createRuntime options: ${expected}`);
    // Refused before the spicepod was served: not one record of a starting runtime.
    expect(logger.records).toEqual([]);
  });

  it('names every bad option at once', async () => {
    const error = await createRuntime({ yaml }, {
      queryTimeoutMs: -1,
      maxResultRows: 'many',
    } as unknown as RuntimeOptions).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues.map((issue) => issue.path)).toEqual([
      'queryTimeoutMs',
      'maxResultRows',
    ]);
  });

  it('takes good options, and undefined for an option left out', async () => {
    const runtime = await createRuntime({ yaml }, {
      dataDir: join(dir, 'data'),
      logger: memoryLogger(),
      queryTimeoutMs: 0,
      maxResultRows: 10,
      maxQueriesInFlight: undefined,
      queryMemoryLimit: '512MiB',
      restartBackoffMs: [0, 100],
      notifications: { waitTimeSeconds: 1, backoffScale: 0.05 },
      datasetResourceLimits: { maxOldGenerationSizeMb: 64 },
    } as unknown as RuntimeOptions);
    try {
      await runtime.ready(undefined, { timeoutMs: 30_000 });
      const { rows } = await runtime.query('SELECT 1 AS x');
      expect(rows).toEqual([{ x: 1 }]);
    } finally {
      await runtime.close();
    }
  });
});

describe('the spicepod source', () => {
  it.each<[string, unknown, string]>([
    ['neither yaml nor object', {}, 'createRuntime: give the spicepod as a path, { yaml } or { object }'],
    ['both yaml and object', { yaml: 'version: v1', object: {} }, 'not both'],
    ['yaml that is no text', { yaml: Buffer.from('version: v1') }, 'yaml must be the spicepod as text'],
    ['a number', 123, 'createRuntime: give the spicepod as a path, { yaml } or { object }'],
    ['null', null, 'createRuntime: give the spicepod as a path, { yaml } or { object }'],
  ])(
    'refuses %s, saying what to give (not that the spicepod lacks version, kind and name)',
    async (_case, source, expected) => {
      const error = await createRuntime(source as SpicepodSource, { logger: memoryLogger() }).catch(
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toContain(expected);
    },
  );
});

describe('query options', () => {
  let dir: string;
  let runtime: Runtime;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ferry-query-options-'));
    const { location } = await copyFixtureStore({ kind: 'dir', dir: join(dir, 'store') });
    const yaml = spicepodYaml({ location, datasets: [{ name: 'orders', engine: 'duckdb' }] });
    runtime = await createRuntime({ yaml }, { dataDir: join(dir, 'data'), logger: memoryLogger() });
    await runtime.ready(undefined, { timeoutMs: 30_000 });
  });

  afterAll(async () => {
    await runtime?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it.each<[string, 'query' | 'queryArrow' | 'queryStream' | 'queryJson', Record<string, unknown>, string]>([
    // Streamed empty batches for ever: the process ran out of memory.
    [
      'no rows per batch',
      'queryStream',
      { batchRows: 0 },
      'batchRows: must be a whole number, 1 or more (got 0)',
    ],
    ['a fractional batch', 'queryJson', { batchRows: 1.5 }, 'batchRows: must be a whole number, 1 or more'],
    [
      'a typo of an option',
      'query',
      { waitforReady: true },
      "waitforReady: unknown key; did you mean 'waitForReady'?",
    ],
    [
      'a ready timeout as text',
      'query',
      { waitForReady: true, readyTimeoutMs: '5s' },
      'readyTimeoutMs: must be a number of milliseconds',
    ],
    ['a signal that is none', 'queryArrow', { signal: 'stop' }, 'signal: must be an AbortSignal'],
    [
      'a pin that is no snapshot id',
      'query',
      { snapshots: { orders: 'x' } },
      'snapshots.orders: must be a whole number, 0 or more',
    ],
    [
      'a negative idle timeout',
      'queryStream',
      { idleTimeoutMs: -1 },
      'idleTimeoutMs: must be a number of milliseconds',
    ],
    [
      'a negative inline size',
      'queryJson',
      { inlineBytes: -1 },
      'inlineBytes: must be a whole number, 0 or more',
    ],
    ['noCache as text', 'query', { noCache: 'yes' }, "noCache: must be true or false (got 'yes')"],
  ])('refuses %s before the query runs', async (_case, method, options, expected) => {
    const answer = await (runtime[method] as (sql: string, params: [], options: unknown) => Promise<unknown>)(
      'SELECT * FROM orders',
      [],
      options,
    ).then(
      (answered) => {
        // Not refused: end a stream it answered before failing the test.
        if (typeof answered === 'object' && answered !== null && 'cancel' in answered) {
          (answered as RuntimeQueryStream).cancel();
        }
        return answered;
      },
      (thrown: unknown) => thrown,
    );
    expect(answer).toBeInstanceOf(RangeError);
    expect((answer as Error).message).toContain(`${method} options: ${expected}`);
  });

  it('ready() refuses a timeout that is no number of milliseconds, which timed out at once', async () => {
    for (const timeoutMs of ['5s', -1]) {
      const refused = await runtime.ready('orders', { timeoutMs } as never).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(RangeError);
      expect((refused as Error).message).toMatch(
        /^ready options: timeoutMs: must be a number of milliseconds from 0 to/,
      );
    }
    await expect(runtime.ready('orders', { timeoutMs: 1_000 })).resolves.toBeUndefined();
  });

  it('takes one signal for many queries at once without a listener warning', async () => {
    // QueryOptions.signal: 'One signal may serve many queries (an application's shutdown signal)'.
    // Each query added its own listener to it: past 10 at once Node warned of a possible leak
    // (MaxListenersExceededWarning) on the application's stderr.
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => {
      warnings.push(`${warning.name}: ${warning.message}`);
    };
    process.on('warning', onWarning);
    try {
      const shutdown = new AbortController();
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, index) =>
          index % 2 === 0
            ? runtime.query('SELECT count(*) AS n FROM orders', [], {
                signal: shutdown.signal,
                noCache: true,
              })
            : runtime
                .queryStream('SELECT * FROM orders', [], { signal: shutdown.signal })
                .then(async (stream) => {
                  let rows = 0;
                  for await (const batch of stream.batches) rows += batch.numRows;
                  return rows;
                }),
        ),
      );
      expect(answers).toHaveLength(40);
      // A warning is emitted on the next tick after the listener that crossed the limit.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).toEqual([]);
      // And the signal still cancels: a query asked after it is aborted.
      shutdown.abort();
      await expect(runtime.query('SELECT 1', [], { signal: shutdown.signal })).rejects.toMatchObject({
        code: 'ERR_QUERY_CANCELLED',
      });
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('refuses SQL that is no text and a command that is none, by name', async () => {
    // query(42) failed inside the results cache's LRU ('invalid size value (must be positive integer)').
    for (const method of ['query', 'queryArrow', 'queryStream', 'queryJson'] as const) {
      await expect((runtime[method] as (sql: unknown) => Promise<unknown>)(42)).rejects.toThrow(
        new TypeError(`${method}: the SQL must be a string (got number)`),
      );
    }
    // send('orders', 'bogus') resolved as if the dataset had been told something.
    await expect(runtime.send('orders', 'poll' as DatasetCommand)).rejects.toThrow(
      new RangeError("send: 'poll' is not a dataset command; use poll.now, polling.pause or polling.resume"),
    );
    await expect(runtime.send('orders', 'poll.now')).resolves.toBeUndefined();
  });

  it('answers with good options', async () => {
    const stream = await runtime.queryStream('SELECT * FROM orders', [], {
      batchRows: 3,
      idleTimeoutMs: 10_000,
    });
    let rows = 0;
    for await (const batch of stream.batches) rows += batch.numRows;
    expect(rows).toBe(8);
    const { rows: pinned } = await runtime.query('SELECT count(*) AS n FROM orders', [], {
      snapshots: { orders: 1 },
      waitForReady: true,
      readyTimeoutMs: 1_000,
      noCache: true,
    });
    expect(pinned).toEqual([{ n: 8 }]);
  });
});
