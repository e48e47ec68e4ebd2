/**
 * Spice's task history: every query is a row of `spice.runtime.task_history` (Spice's columns), kept
 * for `retention_period` (and at most MAX_TASK_ROWS rows), queryable like any table — on a simulated
 * clock on its own, and in a real runtime (DuckDB and SQLite datasets, a failed query, a stream).
 */
import { collectGarbage, type LocalAws, startLocalAws } from '@ferry/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, memoryLogger, type Runtime } from '../src/index.js';
import { MAX_TASK_BYTES, MAX_TASK_ROWS, TaskHistory } from '../src/query/task-history.js';
import { BUCKET, publishVersion, spicepod, tempDir } from './support.js';

describe('TaskHistory', () => {
  const config = {
    enabled: true,
    capturedOutput: 'truncated' as const,
    retentionPeriodMs: 60_000,
    retentionCheckIntervalMs: 60_000,
  };

  it('records each query with its outcome, keeps retention_period, and says when it changed', () => {
    let now = 1_000_000;
    const history = new TaskHistory(config, () => now);
    try {
      history.record({
        sql: 'SELECT 1',
        startMs: now,
        durationMs: 2.5,
        labels: { datasets: '' },
        rows: [{ a: 1 }, { a: 2 }, { a: 3 }, { a: 4 }],
      });
      now += 30_000;
      history.record({
        sql: 'SELECT nope',
        startMs: now,
        durationMs: 1,
        labels: {},
        error: new Error('no such column: nope'),
      });
      const first = history.changed();
      expect(
        first?.rows.map((row) => [
          row.input,
          row.error_message,
          row.execution_duration_ms,
          row.captured_output,
        ]),
      ).toEqual([
        ['SELECT 1', null, 2.5, '[{"a":1},{"a":2},{"a":3}]'],
        ['SELECT nope', 'no such column: nope', 1, null],
      ]);
      expect(first?.rows[0]).toMatchObject({
        task: 'sql_query',
        parent_span_id: null,
        start_us: 1_000_000_000,
        end_us: 1_000_002_500,
      });
      expect(first?.rows[0]?.trace_id).toMatch(/^[0-9a-f]{32}$/);
      history.sent(first as NonNullable<typeof first>);
      expect(history.changed()).toBeUndefined();
      now += 45_000;
      const pruned = history.changed();
      expect(pruned?.rows.map((row) => row.input)).toEqual(['SELECT nope']);
    } finally {
      history.close();
    }
  });

  it(`keeps at most ${MAX_TASK_ROWS} rows, the newest`, () => {
    const history = new TaskHistory({ ...config, capturedOutput: 'none' }, () => 5_000);
    try {
      for (let i = 0; i < MAX_TASK_ROWS + 5; i++)
        history.record({ sql: `SELECT ${i}`, startMs: 5_000, durationMs: 0, labels: {} });
      const rows = history.changed()?.rows ?? [];
      expect(rows.length).toBe(MAX_TASK_ROWS);
      expect(rows[0]?.input).toBe('SELECT 5');
    } finally {
      history.close();
    }
  });

  it('keeps the first 16 KiB of a long statement without the rest of it', () => {
    const history = new TaskHistory(config, () => 5_000);
    try {
      // 200 statements of ~250 KB each (an IN list a BI tool generates); the rows keep 16 KiB of each.
      const list = Array.from({ length: 40_000 }, (_, k) => k).join(',');
      const statement = (i: number) => `SELECT * FROM orders WHERE id IN (${i},${list})`;
      collectGarbage();
      const before = process.memoryUsage().heapUsed;
      for (let i = 0; i < 200; i++) {
        history.record({
          sql: statement(i),
          startMs: 5_000,
          durationMs: 0,
          labels: {},
          rows: [{ list: statement(i) }],
        });
      }
      collectGarbage();
      const kept = process.memoryUsage().heapUsed - before;
      const rows = history.changed()?.rows ?? [];
      expect(rows.map((row) => row.input.length)).toEqual(Array(200).fill(16_384));
      expect(rows[199]?.input).toBe(statement(199).slice(0, 16_384));
      expect(rows[0]?.captured_output?.length).toBe(1_024);
      // 200 × (16 KiB + 1 KiB) is ~3.4 MB; the whole statements (and answers) would be ~100 MB.
      expect(kept).toBeLessThan(20 * 2 ** 20);
    } finally {
      history.close();
    }
  });

  it(`keeps the newest rows within ${MAX_TASK_BYTES / 2 ** 20} MiB of texts`, () => {
    const history = new TaskHistory({ ...config, capturedOutput: 'none' }, () => 5_000);
    try {
      const body = 'x'.repeat(16_384);
      for (let i = 0; i < 3_000; i++)
        history.record({ sql: `SELECT ${i} -- ${body}`, startMs: 5_000, durationMs: 0, labels: {} });
      const rows = history.changed()?.rows ?? [];
      const bytes = rows.reduce((sum, row) => sum + 512 + 2 * row.input.length, 0);
      expect(bytes).toBeLessThanOrEqual(MAX_TASK_BYTES);
      expect(bytes).toBeGreaterThan(MAX_TASK_BYTES - 2 * 33_000);
      expect(rows.at(-1)?.input.startsWith('SELECT 2999 --')).toBe(true);
      expect(rows[0]?.input.startsWith(`SELECT ${3_000 - rows.length} --`)).toBe(true);
    } finally {
      history.close();
    }
  });

  it('records nothing when disabled', () => {
    const history = new TaskHistory({ ...config, enabled: false });
    history.record({ sql: 'SELECT 1', startMs: 0, durationMs: 0, labels: {} });
    expect(history.changed()?.rows ?? []).toEqual([]);
    history.close();
  });
});

describe('spice.runtime.task_history in a runtime', () => {
  let aws: LocalAws;
  let runtime: Runtime;

  beforeAll(async () => {
    aws = await startLocalAws();
    await aws.createBucket(BUCKET);
    await publishVersion(aws, 'orders', 'duckdb', 1, { rows: 10, prefix: 'history/' });
    await publishVersion(aws, 'users', 'sqlite', 1, { rows: 5, prefix: 'history/' });
    const dataDir = await tempDir('ferry-history-');
    const yaml = spicepod(
      aws,
      [
        { name: 'orders', engine: 'duckdb', interval: '10m' },
        { name: 'users', engine: 'sqlite', interval: '10m' },
      ],
      { prefix: 'history/' },
    );
    runtime = await createRuntime({ yaml, baseDir: dataDir }, { logger: memoryLogger(), dataDir });
    await runtime.ready(undefined, { timeoutMs: 30_000 });
  });

  afterAll(async () => {
    await runtime?.close();
    await aws?.close();
  });

  it('holds every query run before it, with its outcome, queryable like any table', async () => {
    await runtime.query('SELECT count(*) AS n FROM orders');
    await runtime.query('SELECT count(*) AS n FROM users');
    await expect(runtime.query('SELECT missing_column FROM orders')).rejects.toThrow();
    const stream = await runtime.queryStream('SELECT * FROM orders');
    for await (const _batch of stream.batches);
    const { rows } = await runtime.query(
      "SELECT task, input, error_message IS NOT NULL AS failed, labels['datasets'] AS datasets, execution_duration_ms >= 0 AS timed, end_time >= start_time AS ordered FROM spice.runtime.task_history WHERE input NOT LIKE '%task_history%' ORDER BY start_time",
    );
    expect(rows).toEqual([
      {
        task: 'sql_query',
        input: 'SELECT count(*) AS n FROM orders',
        failed: false,
        datasets: 'orders',
        timed: true,
        ordered: true,
      },
      {
        task: 'sql_query',
        input: 'SELECT count(*) AS n FROM users',
        failed: false,
        datasets: 'users',
        timed: true,
        ordered: true,
      },
      {
        task: 'sql_query',
        input: 'SELECT missing_column FROM orders',
        failed: true,
        datasets: null,
        timed: true,
        ordered: true,
      },
      {
        task: 'sql_query',
        input: 'SELECT * FROM orders',
        failed: false,
        datasets: 'orders',
        timed: true,
        ordered: true,
      },
    ]);
    const columns = await runtime.query('DESCRIBE spice.runtime.task_history');
    expect(columns.rows.map((row) => row.column_name)).toEqual([
      'trace_id',
      'span_id',
      'parent_span_id',
      'task',
      'input',
      'captured_output',
      'start_time',
      'end_time',
      'execution_duration_ms',
      'error_message',
      'labels',
    ]);
    // The history queries (and the DESCRIBE) are rows for the next one; the one running is not yet.
    const again = await runtime.query(
      "SELECT count(*) AS n FROM spice.runtime.task_history WHERE input LIKE '%task_history%'",
    );
    expect(again.rows).toEqual([{ n: 2 }]);
  });

  it('records a stream its reader left before its end as cancelled, with the rows it read', async () => {
    // As an HTTP client that goes away mid-answer leaves it: recorded as a success before.
    const sql = 'SELECT id FROM orders ORDER BY id';
    const stream = await runtime.queryStream(sql, [], { batchRows: 2 });
    for await (const _batch of stream.batches) break;
    const { rows } = await runtime.query(
      `SELECT error_message, labels['rows'] AS rows FROM spice.runtime.task_history WHERE input = '${sql}'`,
    );
    expect(rows).toEqual([
      {
        error_message: 'The query was cancelled by its caller before it finished; nothing more is read.',
        rows: '2',
      },
    ]);
  });

  it('records a stream cancelled before anyone read it', async () => {
    const sql = 'SELECT id, 2 AS unread FROM orders ORDER BY id';
    const stream = await runtime.queryStream(sql, [], { batchRows: 2 });
    stream.cancel();
    const { rows } = await runtime.query(
      `SELECT error_message, labels['rows'] AS rows FROM spice.runtime.task_history WHERE input = '${sql}'`,
    );
    expect(rows).toEqual([
      {
        error_message: 'The query was cancelled by its caller before it finished; nothing more is read.',
        rows: '0',
      },
    ]);
  });

  it('records a stream stopped by a limit while its reader was blocked, then left, as stopped by it', async () => {
    // As an HTTP answer whose client stopped reading: the idle limit stops it, the answer is cut.
    const sql = 'SELECT id, 1 AS idle FROM orders ORDER BY id';
    const stream = await runtime.queryStream(sql, [], { batchRows: 2, idleTimeoutMs: 50 });
    const batches = stream.batches[Symbol.asyncIterator]();
    await batches.next();
    await new Promise((resolve) => stream.stopped.addEventListener('abort', resolve, { once: true }));
    await batches.return?.();
    const { rows } = await runtime.query(
      `SELECT error_message FROM spice.runtime.task_history WHERE input = '${sql}'`,
    );
    expect(rows).toEqual([
      { error_message: expect.stringMatching(/^The result stream was not read for 50 ms/) },
    ]);
  });
});
