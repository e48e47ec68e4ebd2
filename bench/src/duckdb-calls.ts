/**
 * Where a DuckDB query's single-client time goes beneath Ferry's own code (issue 36's one-client
 * cells). The same statements on the same file, one thread, alternating query by query:
 *
 * - `direct`: what B1's baseline runs, one asynchronous call (`runAndReadAll` of a bound statement,
 *   or of a new text);
 * - `stream`: Ferry's calls on the generation's attachment (`prepare` a new text, `startStream`,
 *   `getResult`, `fetchChunk` until it is empty, `destroySync`);
 * - `stream + view`: the same through the dataset's view over that attachment, which is what Ferry
 *   runs for a text it cannot name by generations (duckdb-instance.ts);
 * - `stream, one call`: `stream` started with one call (`stream()`: bound and run on DuckDB's
 *   threads), which is what Ferry runs for a text that names only generations (duckdb-namespace.ts).
 *
 * Then the thread hop: a bare worker echo in a tight loop (B1's hop floor) and after both threads
 * slept 1 ms, as they do while an engine runs a query.
 *
 *   node bench/dist/duckdb-calls.js [--seconds 4] [--rounds 3] [--rows 200000]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { type DuckDBConnection, DuckDBInstance, type DuckDBPreparedStatement } from '@duckdb/node-api';
import { toolOptions } from './args.js';
import { buildFile, keyedColumns, QUERY_COLUMNS } from './data.js';

const { seconds, rounds, rows } = toolOptions('duckdb-calls', process.argv.slice(2), {
  seconds: 4,
  rounds: 3,
  rows: 200_000,
});

const TABLE = 'orders';

/**
 * Ferry's calls for one statement: stream it and read every chunk until the empty one. Started
 * with `startStream()` (bound on this thread) and `getResult()`, or, `inOneCall`, with `stream()`
 * (bound and run on DuckDB's threads: how Ferry starts a text that names only generations).
 */
async function streamed(statement: DuckDBPreparedStatement, inOneCall = false): Promise<number> {
  const result = inOneCall ? await statement.stream() : await statement.startStream().getResult();
  let read = 0;
  for (;;) {
    const chunk = await result.fetchChunk();
    if (chunk === null || chunk.rowCount === 0) return read;
    read += chunk.getRows().length;
  }
}

/** Ferry's calls for a new text: prepared, streamed, destroyed. */
async function streamedText(connection: DuckDBConnection, sql: string, inOneCall = false): Promise<number> {
  const statement = await connection.prepare(sql);
  try {
    return await streamed(statement, inOneCall);
  } finally {
    statement.destroySync();
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1] ?? Number.NaN;
}

/** Runs each way in turn, query by query, for `seconds`; the p50 (ms) of each, per round. */
async function alternate(
  ways: Readonly<Record<string, () => Promise<unknown>>>,
): Promise<Map<string, number[]>> {
  const medians = new Map<string, number[]>();
  for (let round = 0; round < rounds; round++) {
    const times = new Map<string, number[]>();
    const end = performance.now() + seconds * 1000;
    while (performance.now() < end) {
      for (const [name, way] of Object.entries(ways)) {
        const start = performance.now();
        await way();
        const took = performance.now() - start;
        const list = times.get(name) ?? [];
        list.push(took);
        times.set(name, list);
      }
    }
    for (const [name, list] of times) medians.set(name, [...(medians.get(name) ?? []), median(list)]);
  }
  return medians;
}

function report(title: string, medians: Map<string, number[]>, base: string): void {
  console.log(`\n${title} (p50 per round, ms; difference from ${base} in µs)`);
  const baseline = medians.get(base) ?? [];
  for (const [name, list] of medians) {
    const diffs = list.map((value, index) => Math.round((value - (baseline[index] ?? Number.NaN)) * 1000));
    const shown = list.map((value) => value.toFixed(3)).join(' / ');
    console.log(`  ${name.padEnd(16)} ${shown}${name === base ? '' : `   (${diffs.join(' / ')} µs)`}`);
  }
}

const workDir = await mkdtemp(join(tmpdir(), 'ferry-duckdb-calls-'));
const worker = new Worker(new URL('./echo-worker.js', import.meta.url));
try {
  console.log(`building a ${rows.toLocaleString('en-US')}-row DuckDB file in ${workDir}`);
  const file = await buildFile(workDir, 'duckdb', TABLE, rows, keyedColumns(1, QUERY_COLUMNS));
  const direct = await (await DuckDBInstance.create(file.path, { access_mode: 'READ_ONLY' })).connect();
  // As Ferry attaches a generation and names it by the dataset (duckdb-instance.ts).
  const attached = await (await DuckDBInstance.create(':memory:')).connect();
  await attached.run(`ATTACH '${file.path.replaceAll("'", "''")}' AS ferry_g1 (READ_ONLY)`);
  await attached.run(`CREATE VIEW ${TABLE} AS SELECT * FROM ferry_g1.main.${TABLE}`);
  const generation = `ferry_g1.main.${TABLE}`;

  let n = 0;
  const id = (): bigint => BigInt((n++ * 7919) % rows);
  const point = 'SELECT * FROM %t WHERE id = ?';
  const bound = {
    direct: await direct.prepare(point.replace('%t', TABLE)),
    stream: await attached.prepare(point.replace('%t', generation)),
    view: await attached.prepare(point.replace('%t', TABLE)),
  };
  const run = (statement: DuckDBPreparedStatement, way: (s: DuckDBPreparedStatement) => Promise<unknown>) => {
    statement.clearBindings();
    statement.bindBigInt(1, id());
    return way(statement);
  };
  report(
    `DuckDB point lookup, bound parameter (${rows.toLocaleString('en-US')} rows)`,
    await alternate({
      direct: () => run(bound.direct, async (s) => (await s.runAndReadAll()).getRows()),
      stream: () => run(bound.stream, streamed),
      'stream + view': () => run(bound.view, streamed),
      'stream, one call': () => run(bound.stream, (statement) => streamed(statement, true)),
    }),
    'direct',
  );

  const aggregate = (table: string): string =>
    `SELECT category, count(*) AS n, sum(amount) AS total, avg(qty) AS mean_qty FROM ${table} WHERE qty < ${7 + n++} GROUP BY category ORDER BY category`;
  report(
    'DuckDB aggregate, a new literal in every text',
    await alternate({
      direct: async () => (await direct.runAndReadAll(aggregate(TABLE))).getRows(),
      stream: () => streamedText(attached, aggregate(generation)),
      'stream + view': () => streamedText(attached, aggregate(TABLE)),
      'stream, one call': () => streamedText(attached, aggregate(generation), true),
    }),
    'direct',
  );

  const echo = (): Promise<void> =>
    new Promise((resolve) => {
      worker.once('message', () => resolve());
      worker.postMessage(0);
    });
  // Ten echoes back to back (the last five timed), then one after both threads slept 1 ms.
  const hops = new Map<string, number[]>();
  for (let round = 0; round < rounds; round++) {
    const tight: number[] = [];
    const idle: number[] = [];
    const until = performance.now() + seconds * 1000;
    while (performance.now() < until) {
      for (let i = 0; i < 10; i++) {
        const start = performance.now();
        await echo();
        if (i >= 5) tight.push(performance.now() - start);
      }
      await sleep(1);
      const start = performance.now();
      await echo();
      idle.push(performance.now() - start);
    }
    hops.set('tight loop', [...(hops.get('tight loop') ?? []), median(tight)]);
    hops.set('after 1 ms idle', [...(hops.get('after 1 ms idle') ?? []), median(idle)]);
  }
  report('A thread hop: a bare worker echo, there and back', hops, 'tight loop');
} finally {
  await worker.terminate();
  await rm(workDir, { recursive: true, force: true });
}
