/**
 * Readers that stop reading large SQLite results (a slow HTTP client, a Flight ticket not yet
 * redeemed, an application holding a stream) hold no query thread: with more such streams open
 * than the SQLite pool has threads, a point lookup is still answered, and every stream still gets
 * all its rows once read. Before, each stream waiting for its consumer blocked a thread of the pool,
 * and the lookups behind them waited until a stream's idle bound (60 s) cut it. Real worker threads
 * on a file:// store, the runtime's default thread counts.
 */
import { mkdir, rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { publishSnapshot } from '@ferry/writer';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createRuntime, memoryLogger, type Runtime } from '../src/index.js';
import { podYaml, tempDir } from './support.js';

const ROWS = 50_000;

let work: string;
let runtime: Runtime;

beforeAll(async () => {
  work = await tempDir('ferry-slow-readers-');
  await mkdir(join(work, 'store'));
  const location = `file://${join(work, 'store')}/`;
  await publishSnapshot({
    dataset: 'users',
    engine: 'sqlite',
    location,
    source: { sql: `SELECT i::BIGINT AS id, 'user ' || i AS name FROM range(${ROWS}) t(i)` },
    notNull: ['id'],
  });
  runtime = await createRuntime(
    { yaml: podYaml(location, [{ name: 'users', engine: 'sqlite', interval: '1h' }]), baseDir: work },
    { logger: memoryLogger(), dataDir: join(work, 'data') },
  );
  await runtime.ready('users');
});

afterAll(async () => {
  await runtime?.close();
  await rm(work, { recursive: true, force: true });
});

it('streams nobody reads hold no SQLite thread: a lookup is answered beside them, and each still ends whole', async () => {
  const streams = await Promise.all(
    Array.from({ length: availableParallelism() + 2 }, () =>
      runtime.queryStream('SELECT id, name FROM users ORDER BY id', [], { batchRows: 1_000 }),
    ),
  );
  let late: NodeJS.Timeout | undefined;
  const answered = await Promise.race([
    runtime.query('SELECT name FROM users WHERE id = 4242'),
    new Promise<'held'>((resolve) => {
      late = setTimeout(() => resolve('held'), 10_000);
    }),
  ]);
  clearTimeout(late);
  expect(answered === 'held' ? 'held behind the unread streams' : answered.rows).toEqual([
    { name: 'user 4242' },
  ]);
  for (const stream of streams) {
    let rows = 0;
    let last = -1n;
    for await (const batch of stream.batches) {
      rows += batch.numRows;
      last = batch.getChild('id')?.get(batch.numRows - 1) as bigint;
    }
    expect({ rows, last }).toEqual({ rows: ROWS, last: BigInt(ROWS - 1) });
  }
});
