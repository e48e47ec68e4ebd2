/**
 * The two query namespaces on real files: DuckDB's (every DuckDB dataset attached read-only
 * behind a view, SQLite datasets read in for joins across engines, resource limits, routing by
 * DuckDB's parser) and SQLite's (datasets attached to a read-only main, on demand past SQLite's
 * ten). Swaps are catalog changes; a query reads one generation of each dataset throughout.
 */
import { mkdir, readdir, readlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBConnection, DuckDBPreparedStatement } from '@duckdb/node-api';
import type { JsonValue } from '@ferry/core/base';
import type { Schema } from 'apache-arrow';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { batchObjects } from '../src/arrow-json.js';
import { batchesFromIpc } from '../src/arrow-results.js';
import { DuckDbNamespace } from '../src/duckdb-namespace.js';
import type { DuckDbNamespaceOptions, NamespaceCatalog, NamespaceDataset } from '../src/index.js';
import { PARAMETER_TYPES_METADATA } from '../src/namespace-types.js';
import { SqliteNamespace } from '../src/sqlite-namespace.js';
import { makeDuckDbFile, makeSqliteFile, makeTempDir } from './files.js';

let dir: string;
let remove: () => Promise<void>;
let generations: string;
let nextId = 0;

const paths = new Map<string, string>();

async function duckdbFile(name: string, table: string, version: number, rows = 100): Promise<string> {
  const path = join(generations, `${name}.duckdb`);
  await makeDuckDbFile(path, [
    `CREATE TABLE ${table} AS SELECT i::BIGINT AS id, ${version}::BIGINT AS version, 'c' || (i % 10) AS customer FROM range(${rows}) t(i)`,
  ]);
  paths.set(name, path);
  return path;
}

async function sqliteFile(name: string, table: string, version: number, rows = 30): Promise<string> {
  const path = join(generations, `${name}.sqlite`);
  const values = Array.from(
    { length: rows },
    (_, i) => `(${i}, ${version}, 'user-${i}', '2026-11-${String((i % 28) + 1).padStart(2, '0')}')`,
  );
  await makeSqliteFile(path, [
    `CREATE TABLE ${table} (id INTEGER NOT NULL, version INTEGER, name TEXT, joined DATE)`,
    `INSERT INTO ${table} VALUES ${values.join(', ')}`,
  ]);
  return path;
}

function dataset(
  name: string,
  engine: 'duckdb' | 'sqlite',
  path: string | null,
  snapshotId = 1,
  extra: Partial<NamespaceDataset> = {},
): NamespaceDataset {
  return {
    name,
    engine,
    generation: path === null ? null : { id: ++nextId, path, snapshotId },
    ...extra,
  };
}

function catalog(datasets: readonly NamespaceDataset[]): NamespaceCatalog {
  return { version: ++nextId, datasets };
}

beforeAll(async () => {
  ({ dir, remove } = await makeTempDir());
  generations = join(dir, 'generations');
  await mkdir(generations);
  await mkdir(join(dir, 'tmp'));
});

afterAll(async () => {
  await remove();
});

function duckdbOptions(extra: Partial<DuckDbNamespaceOptions> = {}): DuckDbNamespaceOptions {
  return {
    allowedDirectories: [`${generations}/`],
    tempDirectory: join(dir, 'tmp'),
    maxTempBytes: 256 * 1024 * 1024,
    memoryLimitBytes: 1024 * 1024 * 1024,
    threads: 2,
    settings: { memory: 'queryMemoryLimit', threads: 'queryThreads', temp: 'queryTempDirectorySize' },
    crossEngine: { maxRows: 10_000, maxBytes: 16 * 1024 * 1024 },
    privateRoots: [dir],
    ...extra,
  };
}

describe('DuckDbNamespace', () => {
  let namespace: DuckDbNamespace;
  let orders1: string;
  let orders2: string;
  let customers: string;
  let users: string;

  beforeAll(async () => {
    orders1 = await duckdbFile('orders-1', 'orders', 1);
    orders2 = await duckdbFile('orders-2', 'orders', 2);
    customers = join(generations, 'customers.duckdb');
    await makeDuckDbFile(customers, [
      "CREATE TABLE customers AS SELECT 'c' || i AS customer, 'name ' || i AS name FROM range(10) t(i)",
    ]);
    users = await sqliteFile('users-1', 'users', 1);
    namespace = await DuckDbNamespace.create(duckdbOptions());
    await namespace.setCatalog(
      catalog([
        dataset('orders', 'duckdb', orders1, 11),
        dataset('customers', 'duckdb', customers, 21),
        dataset('users', 'sqlite', users, 31),
        dataset('late', 'duckdb', null),
      ]),
    );
  });

  afterAll(async () => {
    await namespace?.close();
  });

  async function rows(sql: string, params: unknown[] = []) {
    const route = await namespace.route(sql);
    return namespace.rows(sql, params as never, route);
  }

  /** Where `sql` runs and what it reads (the route without what the check learned). */
  async function where(sql: string) {
    const { engine, datasets } = await namespace.route(sql);
    return { engine, datasets };
  }

  it('routes by the parser: datasets read, CTEs excluded, SQLite-only and SQLite-dialect statements to SQLite', async () => {
    expect(await where('SELECT 1')).toEqual({ engine: 'duckdb', datasets: [] });
    expect(
      await where('WITH x AS (SELECT * FROM orders) SELECT * FROM x JOIN Customers USING (customer)'),
    ).toEqual({
      engine: 'duckdb',
      datasets: ['orders', 'customers'],
    });
    expect(await where('SELECT * FROM users u WHERE id IN (SELECT id FROM users)')).toEqual({
      engine: 'sqlite',
      datasets: ['users'],
    });
    expect(await where('SELECT * FROM [users]')).toEqual({ engine: 'sqlite', datasets: undefined });
    expect(await where('FROM users.users')).toEqual({ engine: 'sqlite', datasets: ['users'] });
    expect(await where('SELECT * FROM orders o JOIN users u ON o.id = u.id')).toEqual({
      engine: 'duckdb',
      datasets: ['orders', 'users'],
    });
    expect(await where("PRAGMA table_info('orders')")).toEqual({
      engine: 'duckdb',
      datasets: undefined,
    });
  });

  it("refuses what DuckDB may not run only where DuckDB runs it: a text reading only SQLite datasets goes to SQLite's check", async () => {
    // In SQLite `query` is a table name (no dataset has it), not DuckDB's query() table function.
    const sqlite = "SELECT * FROM users, query('SELECT 1')";
    for (let n = 0; n < 2; n++)
      expect(await where(sqlite)).toEqual({ engine: 'sqlite', datasets: ['users'] });
    const duckdb = "SELECT * FROM orders, query('SELECT 1')";
    for (let n = 0; n < 2; n++)
      await expect(namespace.route(duckdb)).rejects.toMatchObject({
        code: 'ERR_STATEMENT_REJECTED',
        message: expect.stringMatching(/query/),
      });
    expect(() => namespace.knownRoute(duckdb)).toThrow(/query/);
    await expect(where("SELECT * FROM read_csv('/etc/passwd')")).rejects.toMatchObject({
      code: 'ERR_STATEMENT_REJECTED',
    });
  });

  it('answers dataset-less queries, joins within DuckDB, and reports the snapshot each dataset was read at', async () => {
    expect(await rows('SELECT 1 AS one')).toMatchObject({ kind: 'rows', rows: [{ one: 1 }], read: [] });
    const joined = await rows(
      'SELECT c.name, count(*) AS n, max(o.version) AS v FROM orders o JOIN customers c USING (customer) WHERE c.customer = ? GROUP BY c.name',
      ['c3'],
    );
    expect(joined).toEqual({
      kind: 'rows',
      columns: [
        { name: 'name', type: 'VARCHAR' },
        { name: 'n', type: 'BIGINT' },
        { name: 'v', type: 'BIGINT' },
      ],
      rows: [{ name: 'name 3', n: 10, v: 1 }],
      read: [
        { name: 'orders', snapshotId: 11 },
        { name: 'customers', snapshotId: 21 },
      ],
      // Its one literal-free text is its own shape: what it read holds for the shape.
      shared: true,
    });
  });

  it('joins across engines: the SQLite dataset is read into DuckDB (typed from its declared types) and joined', async () => {
    const result = await rows(
      "SELECT count(*) AS n, min(u.joined) AS first, typeof(u.joined) AS t FROM orders o JOIN users u ON o.id = u.id WHERE u.name LIKE 'user-%' GROUP BY t",
    );
    expect(result).toMatchObject({
      kind: 'rows',
      rows: [{ n: 30, first: '2026-11-01', t: 'DATE' }],
      read: [
        { name: 'orders', snapshotId: 11 },
        { name: 'users', snapshotId: 31 },
      ],
    });
  });

  it('a result whose first chunk is small grows past it: every row, in order, in one batch', async () => {
    // DuckDB answers the UNION ALL's first part as a chunk of 10 rows, then full chunks: the
    // builder starts sized for 10 rows and grows to hold all 5,010.
    const sql =
      "SELECT range AS id, 'text ' || range AS s FROM range(10) UNION ALL SELECT range, 'text ' || range FROM range(10, 5010)";
    const route = await namespace.route(sql);
    const received: { ids: bigint[]; texts: string[] } = { ids: [], texts: [] };
    const batches: Uint8Array[] = [];
    const outcome = await namespace.batches(sql, [], route, {
      schema: () => undefined,
      batch: async (ipc) => {
        batches.push(ipc);
      },
    });
    for (const ipc of batches) {
      for (const batch of batchesFromIpc(ipc).batches) {
        for (let row = 0; row < batch.numRows; row++) {
          received.ids.push(batch.getChild('id')?.get(row) as bigint);
          received.texts.push(batch.getChild('s')?.get(row) as string);
        }
      }
    }
    const expected = Array.from({ length: 5_010 }, (_, k) => BigInt(k));
    expect(outcome).toMatchObject({ kind: 'done', rows: expected.length });
    expect(batches).toHaveLength(1);
    expect(received.ids).toEqual(expected);
    expect(received.texts).toEqual(expected.map((id) => `text ${id}`));
  });

  it('a swap: the next query reads the new generation; a query started before reads the old one to its end', async () => {
    // Prepared (and kept) before the swap: prepared again after it, on the new generation.
    expect(await rows('SELECT max(version) AS v FROM orders')).toMatchObject({ rows: [{ v: 1 }] });
    const sql = 'SELECT id, version FROM orders';
    const route = await namespace.route(sql);
    let release: (() => void) | undefined;
    const versions: bigint[] = [];
    let first = true;
    const streaming = namespace.batches(
      sql,
      [],
      route,
      {
        schema: () => undefined,
        batch: async (ipc) => {
          for (const batch of batchesFromIpc(ipc).batches) {
            for (let row = 0; row < batch.numRows; row++)
              versions.push(batch.getChild('version')?.get(row) as bigint);
          }
          if (first) {
            first = false;
            await new Promise<void>((resolve) => {
              release = resolve;
            });
          }
        },
      },
      { batchRows: 10 },
    );
    while (release === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
    await namespace.setCatalog(
      catalog([
        dataset('orders', 'duckdb', orders2, 12),
        dataset('customers', 'duckdb', customers, 21),
        dataset('users', 'sqlite', users, 31),
      ]),
    );
    expect(await rows('SELECT max(version) AS v FROM orders')).toMatchObject({
      rows: [{ v: 2 }],
      read: [{ name: 'orders', snapshotId: 12 }],
    });
    release();
    expect(await streaming).toMatchObject({
      kind: 'done',
      rows: 100,
      read: [{ name: 'orders', snapshotId: 11 }],
    });
    expect(new Set(versions)).toEqual(new Set([1n]));
    expect(versions).toHaveLength(100);
    // The connection that held the stream kept the statement prepared before the swap.
    expect(await rows('SELECT max(version) AS v FROM orders')).toMatchObject({ rows: [{ v: 2 }] });
  });

  it('names what it cannot read: an unknown table, a dataset serving nothing', async () => {
    await namespace.setCatalog(
      catalog([dataset('orders', 'duckdb', orders2, 12), dataset('late', 'duckdb', null)]),
    );
    await expect(rows('SELECT * FROM nope')).rejects.toMatchObject({
      code: 'ERR_NAMESPACE_TABLE',
      table: 'nope',
      reason: 'unknown',
    });
    await expect(rows('SELECT * FROM late')).rejects.toMatchObject({
      code: 'ERR_NAMESPACE_TABLE',
      table: 'late',
      reason: 'not-serving',
    });
    await expect(rows("PRAGMA table_info('late')")).rejects.toMatchObject({ reason: 'not-serving' });
  });

  it('caps results in rows and bytes, stopping as soon as one is passed', async () => {
    const sql = 'SELECT a.id, b.id AS other FROM orders a, orders b';
    const route = await namespace.route(sql);
    expect(await namespace.rows(sql, [], route, { maxRows: 1000 })).toMatchObject({
      kind: 'too-large',
      limit: 'rows',
    });
    expect(await namespace.rows(sql, [], route, { maxBytes: 1000 })).toMatchObject({
      kind: 'too-large',
      limit: 'bytes',
    });
  });

  it('counts a query that waited for a connection once: none is running after they all end', async () => {
    // Twice as many queries as connections: half wait, and each is handed a connection another
    // query let go. The count decides whether a query that ran out of memory tries again.
    const one = await DuckDbNamespace.create(duckdbOptions({ connections: 2 }));
    try {
      await one.setCatalog(catalog([dataset('orders', 'duckdb', orders1, 11)]));
      const sql = 'SELECT count(*) AS n FROM orders, range(20000)';
      const route = await one.route(sql);
      const answers = await Promise.all(Array.from({ length: 6 }, () => one.rows(sql, [], route)));
      expect(answers.map((answer) => answer.kind)).toEqual(Array(6).fill('rows'));
      expect(await one.inFlight()).toBe(0);
    } finally {
      await one.close();
    }
  });

  it('streams whose consumers stopped reading do not hold the connections: other queries still run', async () => {
    // A Flight result waiting for a DoGet that never comes (a load balancer sent it elsewhere), or
    // a client that stops reading: before, each held one of the instance's connections until the
    // stream idled out (60 s), and as many as the pool had made every other query wait (then time out).
    const one = await DuckDbNamespace.create(duckdbOptions({ connections: 2 }));
    try {
      await one.setCatalog(catalog([dataset('orders', 'duckdb', orders1, 11)]));
      const big = 'SELECT o.id, r.range AS k FROM orders o, range(1000) r';
      const bigRoute = await one.route(big);
      const stopped = new Error('consumer gone');
      const gone: (() => void)[] = [];
      const stalled = Array.from({ length: 3 }, () => {
        let batches = 0;
        const waiting = new Promise<void>((_resolve, reject) => gone.push(() => reject(stopped)));
        waiting.catch(() => undefined);
        return one
          .batches(
            big,
            [],
            bigRoute,
            {
              schema: () => undefined,
              // The first batch is taken; then the consumer never asks for more.
              batch: () => (batches++ === 0 ? Promise.resolve() : waiting),
            },
            { batchRows: 1_000 },
          )
          .catch((error: unknown) => error);
      });
      const sql = 'SELECT count(*) AS n FROM orders';
      const answer = await Promise.race([
        one.rows(sql, [], await one.route(sql)).then((result) => result.kind),
        new Promise((resolve) => setTimeout(() => resolve('still waiting for a connection'), 5_000)),
      ]);
      for (const leave of gone) leave();
      expect(answer).toBe('rows');
      for (const outcome of await Promise.all(stalled)) expect(outcome).toMatchObject({ cause: stopped });
      expect(await one.inFlight()).toBe(0);
    } finally {
      await one.close();
    }
  });

  it('lets go of a swapped-out generation once its queries end, also those stopped mid-result', async () => {
    // The data directory's old generations are unlinked after a swap; a file still open keeps its
    // space. A result left mid-way (its consumer gone, or over a cap) kept its connection's query
    // open in DuckDB, and with it the generation it read, until that connection ran another query:
    // a connection idle at the bottom of the pool held it for good (found by a soak of ferry serve:
    // a deleted generation open for the eight idle minutes after the load).
    const heldOpen = async (path: string): Promise<boolean> => {
      const fds = await readdir('/proc/self/fd');
      const targets = await Promise.all(fds.map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')));
      return targets.some((target) => target === path);
    };
    const one = await DuckDbNamespace.create(duckdbOptions({ connections: 1 }));
    try {
      const big = 'SELECT o.id, r.range AS k FROM orders o, range(1000) r';
      for (const [index, stopped] of ['consumer gone', 'over a cap'].entries()) {
        const first = await duckdbFile(`left-${index}-1`, 'orders', 1);
        const second = await duckdbFile(`left-${index}-2`, 'orders', 2);
        await one.setCatalog(catalog([dataset('orders', 'duckdb', first, 1)]));
        const route = await one.route(big);
        if (stopped === 'consumer gone') {
          const left = new Error('client gone');
          let batches = 0;
          const outcome = await one
            .batches(
              big,
              [],
              route,
              {
                schema: () => undefined,
                batch: () => (batches++ === 0 ? Promise.resolve() : Promise.reject(left)),
              },
              { batchRows: 1_000 },
            )
            .catch((error: unknown) => error);
          expect(outcome).toMatchObject({ cause: left });
        } else {
          expect(await one.rows(big, [], route, { maxRows: 10 })).toMatchObject({ kind: 'too-large' });
        }
        expect(await heldOpen(first)).toBe(true);
        await one.setCatalog(catalog([dataset('orders', 'duckdb', second, 2)]));
        expect({ stopped, held: await heldOpen(first) }).toEqual({ stopped, held: false });
      }
    } finally {
      await one.close();
    }
  });

  it('a query cancelled while it waits for a connection stops waiting: it fails at once', async () => {
    const one = await DuckDbNamespace.create(duckdbOptions({ connections: 1 }));
    try {
      await one.setCatalog(catalog([dataset('orders', 'duckdb', orders1, 11)]));
      const runaway = 'SELECT count(*) AS n FROM orders, range(1000000000000)';
      const busy = new AbortController();
      const running = one
        .rows(runaway, [], await one.route(runaway), { signal: busy.signal })
        .catch(() => 'ended');
      while ((await one.inFlight()) === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      const sql = 'SELECT count(*) AS n FROM orders';
      const waiting = new AbortController();
      const queued = one.rows(sql, [], await one.route(sql), { signal: waiting.signal }).then(
        () => 'answered',
        (error: unknown) => (error === waiting.signal.reason ? 'cancelled' : error),
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
      waiting.abort(new Error('the client went away'));
      const outcome = await Promise.race([
        queued,
        new Promise((resolve) => setTimeout(() => resolve('still waiting'), 2_000)),
      ]);
      busy.abort(new Error('done'));
      expect([outcome, await running, await queued]).toEqual(['cancelled', 'ended', 'cancelled']);
      expect(await one.inFlight()).toBe(0);
    } finally {
      await one.close();
    }
  });

  it('runs a text too large to keep prepared, and runs it again', async () => {
    // Over the prepared statements' per-entry bound (1 MiB charged as two bytes a character):
    // such a statement is not kept, and it must not be destroyed before its own query has run.
    const ids = Array.from({ length: 100_000 }, (_, index) => index).join(',');
    const sql = `SELECT count(*) AS n FROM orders WHERE id IN (${ids})`;
    expect(sql.length).toBeGreaterThan(512 * 1024);
    const all = await rows('SELECT count(*) AS n FROM orders');
    expect(all).toMatchObject({ kind: 'rows' });
    for (let run = 0; run < 2; run++)
      expect(await rows(sql)).toMatchObject({ kind: 'rows', rows: all.kind === 'rows' ? all.rows : [] });
  });

  it('keeps a text prepared from its second run on: a text run once leaves nothing behind', async () => {
    const prepare = vi.spyOn(DuckDBConnection.prototype, 'prepare');
    try {
      const sql = 'SELECT count(*) AS n FROM orders WHERE id > 777';
      const prepares = async (): Promise<number> => {
        const before = prepare.mock.calls.length;
        expect(await rows(sql)).toMatchObject({ kind: 'rows' });
        return prepare.mock.calls.length - before;
      };
      // The first run prepares (and checks) and lets go; the second prepares and keeps; the third
      // reuses it.
      const [first, second, third] = [await prepares(), await prepares(), await prepares()];
      expect(first).toBeGreaterThan(0);
      expect(second).toBeGreaterThan(0);
      expect(third).toBe(0);
    } finally {
      prepare.mockRestore();
    }
  });

  it('keeps local paths out of engine messages', async () => {
    // DuckDB repeats a column it cannot bind, here one spelled as a path under the data directory.
    const sql = `SELECT "${generations}/nothing-here" FROM orders`;
    const error = (await rows(sql).catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(/^Query on dataset 'orders' failed: Binder Error/);
    expect(error.message).not.toContain(dir);
    expect(error.message).toContain('<data dir>');
  });
});

describe('DuckDbNamespace, a text that names only generations', () => {
  it('started in one call while a swap detaches its generation: prepared again, it reads the new one', async () => {
    const first = await duckdbFile('race-1', 'orders', 1);
    const second = await duckdbFile('race-2', 'orders', 2);
    const ns = await DuckDbNamespace.create(duckdbOptions());
    const stream = DuckDBPreparedStatement.prototype.stream;
    try {
      await ns.setCatalog(catalog([dataset('orders', 'duckdb', first, 11)]));
      const sql = 'SELECT max(version) AS v FROM orders';
      const route = await ns.route(sql);
      expect(await ns.rows(sql, [], route)).toMatchObject({ rows: [{ v: 1 }], read: [{ snapshotId: 11 }] });
      // The swap lands after the query was started and before DuckDB binds it: the generation its
      // prepared text names is detached by then.
      let swapped = false;
      DuckDBPreparedStatement.prototype.stream = async function (this: DuckDBPreparedStatement) {
        if (!swapped) {
          swapped = true;
          await ns.setCatalog(catalog([dataset('orders', 'duckdb', second, 12)]));
        }
        return stream.call(this);
      };
      expect(await ns.rows(sql, [], route)).toMatchObject({
        rows: [{ v: 2 }],
        read: [{ name: 'orders', snapshotId: 12 }],
      });
      expect(swapped).toBe(true);
    } finally {
      DuckDBPreparedStatement.prototype.stream = stream;
      await ns.close();
    }
  });
});

describe('DuckDbNamespace limits', () => {
  it("a query over its class's memory fails fast, naming the dataset's duckdb_memory_limit", async () => {
    const orders = paths.get('orders-1') as string;
    const namespace = await DuckDbNamespace.create(duckdbOptions());
    try {
      await namespace.setCatalog(
        catalog([
          dataset('orders', 'duckdb', orders, 11, { memoryLimitBytes: 256 * 1024 * 1024, threads: 1 }),
        ]),
      );
      const sql =
        "SELECT length(string_agg(repeat('x', 100000), '')) FROM orders a, orders b WHERE a.id < 100 AND b.id < 100";
      const started = performance.now();
      await expect(namespace.rows(sql, [], await namespace.route(sql))).rejects.toMatchObject({
        code: 'ERR_QUERY_MEMORY',
        message:
          "The query on dataset 'orders' needed more than the 256 MiB of memory it may use (duckdb_memory_limit of dataset 'orders') and was stopped; narrow it (filter before joining, aggregate less) or raise duckdb_memory_limit of dataset 'orders'.",
      });
      expect(performance.now() - started).toBeLessThan(10_000);
      expect(
        await namespace.rows(
          'SELECT count(*) AS n FROM orders',
          [],
          await namespace.route('SELECT count(*) AS n FROM orders'),
        ),
      ).toMatchObject({ rows: [{ n: 100 }] });
    } finally {
      await namespace.close();
    }
  });

  it('a join across engines reads at most crossEngineMaxRows of the SQLite dataset', async () => {
    const namespace = await DuckDbNamespace.create(
      duckdbOptions({ crossEngine: { maxRows: 10, maxBytes: 1024 * 1024 } }),
    );
    try {
      const users = await sqliteFile('users-big', 'users', 1, 50);
      await namespace.setCatalog(
        catalog([
          dataset('orders', 'duckdb', paths.get('orders-1') as string, 11),
          dataset('users', 'sqlite', users, 31),
        ]),
      );
      const sql = 'SELECT count(*) FROM orders JOIN users USING (id)';
      await expect(namespace.rows(sql, [], await namespace.route(sql))).rejects.toMatchObject({
        code: 'ERR_CROSS_ENGINE_TOO_LARGE',
        message: expect.stringContaining("SQLite dataset 'users' has more than 10 rows"),
      });
    } finally {
      await namespace.close();
    }
  });
});

describe('a join across engines over an SQLite column of mixed value types', () => {
  let duck: DuckDbNamespace;
  let lite: SqliteNamespace;

  beforeAll(async () => {
    // SQLite keeps what each row was given: TEXT in an INTEGER column, numbers in a TEXT one,
    // anything where no type is declared; a REAL column holds 2^53 + 1 as the double 2^53.
    const mixed = join(generations, 'mixed.sqlite');
    await makeSqliteFile(mixed, [
      `CREATE TABLE mixed (id INTEGER, score INTEGER, name TEXT, anything, ratio REAL, amount NUMERIC,
        joined DATE, price DECIMAL(10,2), plain INTEGER, photo TEXT, big NUMERIC)`,
      "INSERT INTO mixed VALUES (1, 5, 'a', 1, 1.5, 3, '2026-01-01', 1.25, 10, 'p', 1)",
      "INSERT INTO mixed VALUES (2, 'n/a', 7, 'x', 2, 'abc', 'soon', 'n/a', 20, x'00ff', 2.5)",
      "INSERT INTO mixed VALUES (3, 2.5, 3.5, 2.5, NULL, 1.5, 20260103, 3, NULL, 'q', 9007199254740993)",
      'INSERT INTO mixed VALUES (4, NULL, NULL, NULL, 9007199254740993, NULL, NULL, NULL, 40, NULL, NULL)',
    ]);
    const empty = join(generations, 'empty.sqlite');
    await makeSqliteFile(empty, ['CREATE TABLE empty (id INTEGER, name TEXT, joined DATE)']);
    const pod = catalog([
      dataset('orders', 'duckdb', await duckdbFile('orders-mixed', 'orders', 1), 11),
      dataset('mixed', 'sqlite', mixed, 41),
      dataset('empty', 'sqlite', empty, 42),
    ]);
    duck = await DuckDbNamespace.create(duckdbOptions());
    await duck.setCatalog(pod);
    const main = join(dir, 'mixed-main.sqlite');
    await writeFile(main, '');
    lite = new SqliteNamespace({ mainPath: main, privateRoots: [dir] });
    lite.setCatalog(pod);
  });

  afterAll(async () => {
    await duck?.close();
    lite?.close();
  });

  /** The JSON objects of an Arrow answer (as HTTP answers them), and its column types. */
  const answer = (ipcs: readonly Uint8Array[]) => {
    const batches = ipcs.flatMap((ipc) => batchesFromIpc(ipc).batches);
    return {
      types: batches[0]?.schema.fields.map((field) => `${field.name}:${field.type}`),
      rows: batches.flatMap((batch) => batchObjects(batch).map((text) => JSON.parse(text))),
    };
  };
  const alone = (sql: string) => {
    const ipcs: Uint8Array[] = [];
    lite.batches(sql, [], { schema: () => undefined, batch: (ipc) => void ipcs.push(ipc) });
    return answer(ipcs);
  };
  const joined = async (sql: string) => {
    const ipcs: Uint8Array[] = [];
    await duck.batches(sql, [], await duck.route(sql), {
      schema: () => undefined,
      batch: async (ipc) => void ipcs.push(ipc),
    });
    return answer(ipcs);
  };

  it('answers each column as a query of the SQLite dataset alone does: its declared type when every value fits, else its values’ own', async () => {
    const columns = 'id, score, name, anything, ratio, amount, joined, price, plain';
    const expected = [
      {
        id: 1,
        score: '5',
        name: 'a',
        anything: '1',
        ratio: 1.5,
        amount: '3',
        joined: '2026-01-01',
        price: '1.25',
        plain: 10,
      },
      {
        id: 2,
        score: 'n/a',
        name: '7',
        anything: 'x',
        ratio: 2,
        amount: 'abc',
        joined: 'soon',
        price: 'n/a',
        plain: 20,
      },
      {
        id: 3,
        score: '2.5',
        name: '3.5',
        anything: '2.5',
        ratio: null,
        amount: '1.5',
        joined: '20260103',
        price: '3',
        plain: null,
      },
      {
        id: 4,
        score: null,
        name: null,
        anything: null,
        ratio: 2 ** 53,
        amount: null,
        joined: null,
        price: null,
        plain: 40,
      },
    ];
    expect(alone(`SELECT ${columns} FROM mixed ORDER BY id`).rows).toEqual(expected);
    const across = await joined(
      `SELECT ${columns.replaceAll(/(\w+)/g, 'm.$1')} FROM orders o JOIN mixed m ON o.id = m.id ORDER BY m.id`,
    );
    expect(across.rows).toEqual(expected);
    // A column whose values fit its declared type keeps it; DuckDB joins on the values as typed.
    expect(
      await rowsOf(
        "SELECT typeof(m.plain) AS t, count(*) AS n FROM orders o JOIN mixed m ON o.id = m.id WHERE m.score = 'n/a' GROUP BY t",
      ),
    ).toEqual([{ t: 'BIGINT', n: 1 }]);
  });

  it('a column no one type holds fails only the query that reads it, naming the dataset, the column and the fix', async () => {
    expect(
      await rowsOf('SELECT count(*) AS n, sum(m.plain) AS s FROM orders o JOIN mixed m ON o.id = m.id'),
    ).toEqual([{ n: 4, s: 70 }]);
    // A BLOB among text: a query of the dataset alone fails too, asking for a cast.
    expect(() => alone('SELECT photo FROM mixed')).toThrow(
      /column 'photo' holds a BLOB in row 2 and TEXT in row 1/,
    );
    await expect(rowsOf('SELECT m.photo FROM orders o JOIN mixed m ON o.id = m.id')).rejects.toMatchObject({
      code: 'ERR_QUERY_FAILED',
      message: expect.stringContaining(
        "SQLite dataset 'mixed' column 'photo' holds a BLOB in row 2 and TEXT in row 1, and a DuckDB column holds one type, so a query across engines cannot read it; read it in a query of 'mixed' alone (SQLite runs it: CAST(photo AS BLOB), or hex(photo) for text), or store one type in the column.",
      ),
    });
    expect(alone('SELECT hex(photo) AS h FROM mixed WHERE id = 2').rows).toEqual([{ h: '00FF' }]);
    // An integer beyond 2^53 among reals: no double holds it.
    expect(() => alone('SELECT big FROM mixed')).toThrow(/column 'big' row 3 holds INTEGER 9007199254740993/);
    await expect(
      rowsOf('SELECT m.id, m.big FROM orders o JOIN mixed m ON o.id = m.id'),
    ).rejects.toMatchObject({
      message: expect.stringContaining(
        "SQLite dataset 'mixed' column 'big' holds INTEGER 9007199254740993 in row 3, which its DOUBLE column (typed from its values) cannot hold",
      ),
    });
    expect(alone('SELECT CAST(big AS TEXT) AS b FROM mixed WHERE id = 3').rows).toEqual([
      { b: '9007199254740993' },
    ]);
  });

  it('an empty SQLite table joins with its declared types', async () => {
    expect(
      await duck.rows(
        'SELECT e.id, e.name, e.joined FROM orders o JOIN empty e ON o.id = e.id',
        [],
        await duck.route('SELECT e.id, e.name, e.joined FROM orders o JOIN empty e ON o.id = e.id'),
      ),
    ).toMatchObject({
      kind: 'rows',
      columns: [
        { name: 'id', type: 'BIGINT' },
        { name: 'name', type: 'VARCHAR' },
        { name: 'joined', type: 'DATE' },
      ],
      rows: [],
    });
  });

  async function rowsOf(sql: string) {
    const outcome = await duck.rows(sql, [], await duck.route(sql));
    return outcome.kind === 'rows' ? outcome.rows : outcome;
  }
});

describe('SqliteNamespace', () => {
  let namespace: SqliteNamespace;
  let main: string;

  beforeAll(async () => {
    main = join(dir, 'main.sqlite');
    await writeFile(main, '');
  });

  afterAll(() => {
    namespace?.close();
  });

  it('resolves datasets however SQLite quotes them, joins two, reports what each read', async () => {
    const users = await sqliteFile('u1', 'users', 1);
    const accounts = await sqliteFile('a1', 'accounts', 7, 10);
    namespace = new SqliteNamespace({ mainPath: main, privateRoots: [dir] });
    namespace.setCatalog(
      catalog([dataset('users', 'sqlite', users, 5), dataset('accounts', 'sqlite', accounts, 6)]),
    );
    for (const sql of [
      'SELECT count(*) AS n FROM users',
      'SELECT count(*) AS n FROM [users]',
      'SELECT count(*) AS n FROM `users`',
      'SELECT count(*) AS n FROM users.users',
    ]) {
      expect(namespace.rows(sql, [])).toMatchObject({
        kind: 'rows',
        rows: [{ n: 30 }],
        read: [{ name: 'users', snapshotId: 5 }],
      });
    }
    expect(
      namespace.rows(
        'SELECT count(*) AS n, max(a.version) AS v FROM users u JOIN accounts a ON u.id = a.id WHERE u.id < ?',
        [5],
      ),
    ).toMatchObject({
      rows: [{ n: 5, v: 7 }],
      read: expect.arrayContaining([
        { name: 'users', snapshotId: 5 },
        { name: 'accounts', snapshotId: 6 },
      ]),
    });
    expect(() => namespace.rows("INSERT INTO users VALUES (1, 1, 'x', NULL)", [])).toThrow(/not permitted/);
  });

  it('keeps a text prepared from its second run on: a text run once leaves nothing behind', async () => {
    const users = await sqliteFile('u-seen', 'users', 1);
    namespace?.close();
    namespace = new SqliteNamespace({ mainPath: main, privateRoots: [dir] });
    namespace.setCatalog(catalog([dataset('users', 'sqlite', users, 5)]));
    const prepare = vi.spyOn(Database.prototype, 'prepare');
    try {
      const sql = 'SELECT count(*) AS n FROM users WHERE id > 7';
      const prepares = (): number => {
        const before = prepare.mock.calls.filter(([text]) => text === sql).length;
        expect(namespace.rows(sql, [])).toMatchObject({ kind: 'rows' });
        return prepare.mock.calls.filter(([text]) => text === sql).length - before;
      };
      expect([prepares(), prepares(), prepares()]).toEqual([1, 1, 0]);
    } finally {
      prepare.mockRestore();
    }
  });

  it('reports what a statement reads by its shape, whatever its literals let SQLite fold away', async () => {
    // The datasets come from the program of the shape with its literals as parameters: constant
    // folding (`WHERE 0 AND EXISTS (…)` opens no table) never hides a dataset from other texts.
    const tag = Math.random();
    for (const flag of [0, 1]) {
      expect(
        namespace.rows(`SELECT count(*) AS n WHERE ${flag} AND EXISTS (SELECT 1 FROM users) -- ${tag}`, []),
      ).toMatchObject({ rows: [{ n: flag }], read: [{ name: 'users', snapshotId: 5 }] });
    }
    // Literals that cannot be parameters (a type's length): explained as written.
    expect(
      namespace.rows(`SELECT CAST(name AS VARCHAR(10)) AS s FROM users WHERE id = 1 -- ${tag}`, []),
    ).toMatchObject({
      rows: [{ s: 'user-1' }],
      read: [{ name: 'users', snapshotId: 5 }],
    });
    // An EXPLAIN compiles its statement and opens no table: it reads no dataset.
    expect(namespace.rows('EXPLAIN QUERY PLAN SELECT * FROM users', [])).toMatchObject({
      kind: 'rows',
      read: [],
    });
  });

  it('attaches past SQLite\u2019s ten on demand, and refuses one query over more than ten', async () => {
    const many: NamespaceDataset[] = [];
    for (let index = 0; index < 12; index++) {
      many.push(
        dataset(`d${index}`, 'sqlite', await sqliteFile(`d${index}`, `d${index}`, index, 3), 100 + index),
      );
    }
    namespace.setCatalog(catalog(many));
    for (let index = 11; index >= 0; index--) {
      expect(namespace.rows(`SELECT max(version) AS v FROM d${index}`, [])).toMatchObject({
        rows: [{ v: index }],
      });
    }
    const eleven = Array.from({ length: 11 }, (_, index) => `SELECT id FROM d${index}`).join(' UNION ALL ');
    expect(() => namespace.rows(`SELECT count(*) FROM (${eleven})`, [])).toThrow(
      /more than 10 SQLite datasets/,
    );
    expect(() => namespace.rows('SELECT * FROM nowhere', [])).toThrow(
      expect.objectContaining({ reason: 'unknown' }),
    );
  });

  it('a new generation is attached between queries; caps stop reading; batches carry Arrow types', async () => {
    const first = await sqliteFile('g1', 'users', 1, 50);
    const second = await sqliteFile('g2', 'users', 2, 50);
    namespace.setCatalog(catalog([dataset('users', 'sqlite', first, 1)]));
    expect(namespace.rows('SELECT max(version) AS v FROM users', [])).toMatchObject({ rows: [{ v: 1 }] });
    namespace.setCatalog(catalog([dataset('users', 'sqlite', second, 2)]));
    expect(namespace.rows('SELECT max(version) AS v FROM users', [])).toMatchObject({
      rows: [{ v: 2 }],
      read: [{ name: 'users', snapshotId: 2 }],
    });
    expect(namespace.rows('SELECT * FROM users a, users b', [], { maxRows: 100 })).toMatchObject({
      kind: 'too-large',
      limit: 'rows',
    });
    // A statement kept across a swap answers the new generation's columns (they are remembered
    // per statement only until an attachment moves).
    const widened = join(generations, 'g3.sqlite');
    await makeSqliteFile(widened, [
      'CREATE TABLE users (id INTEGER NOT NULL, version INTEGER, name TEXT, joined DATE, plan TEXT)',
      "INSERT INTO users VALUES (1, 3, 'user-1', '2026-11-02', 'pro')",
    ]);
    const everything = 'SELECT * FROM users WHERE id = ?';
    expect(namespace.rows(everything, [1])).toMatchObject({
      columns: [{ name: 'id' }, { name: 'version' }, { name: 'name' }, { name: 'joined' }],
      rows: [{ id: 1, version: 2, name: 'user-1', joined: '2026-11-02' }],
    });
    namespace.setCatalog(catalog([dataset('users', 'sqlite', widened, 3)]));
    expect(namespace.rows(everything, [1])).toMatchObject({
      columns: [{ name: 'id' }, { name: 'version' }, { name: 'name' }, { name: 'joined' }, { name: 'plan' }],
      rows: [{ id: 1, version: 3, name: 'user-1', joined: '2026-11-02', plan: 'pro' }],
      read: [{ name: 'users', snapshotId: 3 }],
    });
    namespace.setCatalog(catalog([dataset('users', 'sqlite', second, 2)]));
    const batches: Uint8Array[] = [];
    let schema: Schema | undefined;
    const outcome = namespace.batches(
      'SELECT id, name, joined, version * 1.5 AS f FROM users',
      [],
      {
        schema: (given) => {
          schema = given;
        },
        batch: (ipc) => {
          batches.push(ipc);
        },
      },
      { batchRows: 20 },
    );
    expect(outcome).toMatchObject({ kind: 'done', rows: 50 });
    expect(batches).toHaveLength(3);
    const decoded = schema as Schema;
    // Each batch's bytes carry the same schema.
    expect(batchesFromIpc(batches[0] as Uint8Array).schema.fields.map(String)).toEqual(
      decoded.fields.map(String),
    );
    expect(decoded.fields.map((field) => `${field.name}:${field.type}`)).toEqual([
      'id:Int64',
      'name:Utf8',
      'joined:Date32<DAY>',
      'f:Float64',
    ]);
    const firstBatch = batchesFromIpc(batches[0] as Uint8Array).batches[0];
    expect(firstBatch?.get(1)?.toJSON()).toEqual({
      id: 1n,
      name: 'user-1',
      joined: Date.UTC(2026, 10, 2),
      f: 3,
    });
  });

  it("names each parameter's type as the statement's program uses it (asked with parameterTypes)", async () => {
    const path = join(generations, 'typed.sqlite');
    await makeSqliteFile(path, [
      `CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, score REAL, joined DATE, admin BOOLEAN,
        amount DECIMAL(10,2), tag VARCHAR(8), anything)`,
      'CREATE INDEX people_name ON people (name, joined)',
      "INSERT INTO people VALUES (1, 'a', 1.5, '2026-01-02', 1, '3.25', 't', 7)",
    ]);
    namespace?.close();
    namespace = new SqliteNamespace({ mainPath: main, privateRoots: [dir] });
    namespace.setCatalog(catalog([dataset('people', 'sqlite', path, 3)]));
    const typesOf = (sql: string, params: readonly JsonValue[]) => {
      let types: string | undefined;
      const outcome = namespace.batches(
        sql,
        params,
        {
          schema: (schema) => {
            types = schema.metadata.get(PARAMETER_TYPES_METADATA);
          },
          batch: () => {},
        },
        { parameterTypes: true },
      );
      expect(outcome.kind).toBe('done');
      return types === undefined ? undefined : JSON.parse(types);
    };
    // The rowid sought, an index's columns sought in order, columns compared in a scan.
    expect(typesOf('SELECT name FROM people WHERE id = ?', [1])).toEqual(['Int64']);
    expect(typesOf('SELECT id FROM people WHERE name = ? AND joined > ?', ['a', '2026-01-01'])).toEqual([
      'Utf8',
      'Date32',
    ]);
    expect(
      typesOf('SELECT id FROM people WHERE score > ? AND admin = ? AND amount < ? AND tag <> ?', [
        1,
        1,
        9,
        'x',
      ]),
    ).toEqual(['Float64', 'Boolean', { Decimal128: [10, 2] }, 'Utf8']);
    // IN lists, the other side of the comparison, LIMIT and OFFSET; `$n` and `?NNN` numbering.
    expect(
      typesOf('SELECT id FROM people WHERE ?2 < score AND id IN (?1, 5) LIMIT ?3 OFFSET ?4', [1, 0, 10, 0]),
    ).toEqual(['Int64', 'Float64', 'Int64', 'Int64']);
    // Nothing to go by: a parameter only selected, a column with no declared type.
    expect(typesOf('SELECT ? AS v, id FROM people WHERE anything = ?', [1, 7])).toEqual([null, null]);
    // Wrapped as Flight prepares it (no row computed), and with the values still unbound.
    expect(
      typesOf('SELECT * FROM (SELECT id FROM people WHERE name = ? AND score > ?\n) LIMIT 0', [null, null]),
    ).toEqual(['Utf8', 'Float64']);
    // A statement with no program of its own to read (SQLite cannot explain an EXPLAIN): none known.
    expect(typesOf('EXPLAIN SELECT id FROM people WHERE id = ?', [1])).toEqual([]);
    // Not asked: nothing in the schema.
    let plain: Schema | undefined;
    namespace.batches('SELECT id FROM people WHERE id = ?', [1], {
      schema: (schema) => {
        plain = schema;
      },
      batch: () => {},
    });
    expect(plain?.metadata.has(PARAMETER_TYPES_METADATA)).toBe(false);
  });
});

describe('DuckDbNamespace pinned reads', () => {
  let namespace: DuckDbNamespace;
  const generationsOf: NamespaceDataset[] = [];

  beforeAll(async () => {
    for (let version = 1; version <= 6; version++) {
      const path = await duckdbFile(`pinned-${version}`, 'orders', version);
      generationsOf.push(dataset('orders', 'duckdb', path, 100 + version));
    }
    namespace = await DuckDbNamespace.create(duckdbOptions());
    await namespace.setCatalog({
      ...catalog([generationsOf[5] as NamespaceDataset]),
      views: [{ name: 'recent', sql: 'SELECT * FROM orders WHERE id < 5' }],
    });
  });

  afterAll(async () => {
    await namespace?.close();
  });

  const pinTo = (index: number) => {
    const generation = generationsOf[index]?.generation;
    if (generation === null || generation === undefined) throw new Error('no generation');
    return [{ name: 'orders', generation }];
  };

  async function read(sql: string, index?: number) {
    const route = await namespace.route(sql);
    const outcome = await namespace.rows(sql, [], route, index === undefined ? {} : { pins: pinTo(index) });
    if (outcome.kind !== 'rows') throw new Error(outcome.kind);
    return { rows: outcome.rows, read: outcome.read };
  }

  it('reads each pinned generation (also under a spicepod view) while the current one is served unpinned', async () => {
    const sql = 'SELECT max(version) AS v FROM orders';
    expect(await read(sql)).toEqual({ rows: [{ v: 6 }], read: [{ name: 'orders', snapshotId: 106 }] });
    expect(await read(sql, 1)).toEqual({ rows: [{ v: 2 }], read: [{ name: 'orders', snapshotId: 102 }] });
    expect((await read('SELECT max(version) AS v FROM recent', 1)).rows).toEqual([{ v: 2 }]);
    expect((await read('SELECT max(version) AS v FROM spice.public.orders', 2)).rows).toEqual([{ v: 3 }]);
    // A pin on a dataset the statement does not read changes nothing.
    expect((await read('SELECT 41 + 1 AS n', 1)).rows).toEqual([{ n: 42 }]);
  });

  it('keeps four sets of pins; one let go is made again on its next query; pins hold across a swap', async () => {
    const sql = 'SELECT max(version) AS v, count(*) AS n FROM orders';
    // Six sets of pins, one after the other (the first ones are let go), then the first again.
    for (const index of [0, 1, 2, 3, 4, 5, 0]) {
      expect((await read(sql, index)).rows).toEqual([{ v: index + 1, n: 100 }]);
    }
    // Concurrent readers of several pins while the catalog moves to another generation.
    const reads = [0, 1, 2, 3, 0, 1].map((index) => read(sql, index));
    const swap = namespace.setCatalog(catalog([generationsOf[3] as NamespaceDataset]));
    const answers = await Promise.all(reads);
    await swap;
    expect(answers.map((answer) => answer.rows[0]?.v)).toEqual([1, 2, 3, 4, 1, 2]);
    expect((await read(sql)).rows).toEqual([{ v: 4, n: 100 }]);
    expect((await read(sql, 5)).rows).toEqual([{ v: 6, n: 100 }]);
    expect(await namespace.inFlight()).toBe(0);
  });

  it('closes a pinned instance no query used for pinnedIdleMs; its next query opens it again', async () => {
    // 1.5 s idle: long enough that the first instance is still open when the second query ends on a
    // loaded machine (200 ms was not, under CI's other processes).
    const idle = await DuckDbNamespace.create({ ...duckdbOptions(), pinnedIdleMs: 1_500 });
    try {
      await idle.setCatalog(catalog([generationsOf[5] as NamespaceDataset]));
      const sql = 'SELECT max(version) AS v FROM orders';
      const pinned = async (index: number) => {
        const outcome = await idle.rows(sql, [], await idle.route(sql), { pins: pinTo(index) });
        if (outcome.kind !== 'rows') throw new Error(outcome.kind);
        return outcome.rows;
      };
      expect(await pinned(1)).toEqual([{ v: 2 }]);
      expect(await pinned(2)).toEqual([{ v: 3 }]);
      expect(idle.pinnedInstances).toBe(2);
      await expect.poll(() => idle.pinnedInstances, { timeout: 15_000 }).toBe(0);
      expect(await pinned(1)).toEqual([{ v: 2 }]);
      expect(idle.pinnedInstances).toBe(1);
    } finally {
      await idle.close();
    }
  });
});
