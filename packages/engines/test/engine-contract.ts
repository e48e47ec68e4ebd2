/**
 * The one contract every engine adapter passes (`engineContract(kind, open, makeFile)`): schema
 * mapping, query and JSON encoding, positional parameters, read-only refusals (the guard's exact
 * messages, and an untouched file with no side files afterwards), concurrent queries, close and
 * the file-level rejections. Engine-specific behaviour lives in each adapter's own test file.
 */
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ArrowSchema } from '@ferry/core';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { arrowField } from '../src/arrow-types.js';
import type { OpenOptions, SnapshotEngine } from '../src/engine.js';
import { checkTableSchema } from '../src/schema-check.js';
import { listDir, makeTempDir } from './files.js';

export type ContractKind = 'duckdb' | 'sqlite';
export type OpenFn = (path: string, options?: OpenOptions) => Promise<SnapshotEngine>;
export type MakeFile = (path: string, statements: readonly string[]) => Promise<void>;

const tables: Record<ContractKind, { ddl: string; schema: ArrowSchema; types: readonly string[] }> = {
  duckdb: {
    ddl: 'CREATE TABLE items (id BIGINT NOT NULL, name VARCHAR, big BIGINT, ratio DOUBLE, payload BLOB)',
    schema: {
      fields: [
        arrowField('id', 'Int64', false),
        arrowField('name', 'Utf8', true),
        arrowField('big', 'Int64', true),
        arrowField('ratio', 'Float64', true),
        arrowField('payload', 'Binary', true),
      ],
      metadata: {},
    },
    types: ['BIGINT', 'VARCHAR', 'BIGINT', 'DOUBLE', 'BLOB'],
  },
  sqlite: {
    ddl: 'CREATE TABLE items (id INTEGER NOT NULL, name TEXT, big INTEGER, ratio REAL, payload BLOB)',
    schema: {
      fields: [
        arrowField('id', 'Int64', false),
        arrowField('name', 'Utf8', true),
        arrowField('big', 'Int64', true),
        arrowField('ratio', 'Float64', true),
        arrowField('payload', 'Binary', true),
      ],
      metadata: {},
    },
    types: ['INTEGER', 'TEXT', 'INTEGER', 'REAL', 'BLOB'],
  },
};

const ROWS = [
  "(1, 'alpha', 9007199254740993, 0.5, '\\x00\\xFF\\x10')",
  "(2, 'beta', -9007199254740993, 1.25, NULL)",
  "(3, NULL, 42, NULL, '')",
];
// The same bytes in each engine's blob literal syntax.
const sqliteRows = [
  "(1, 'alpha', 9007199254740993, 0.5, x'00ff10')",
  "(2, 'beta', -9007199254740993, 1.25, NULL)",
  "(3, NULL, 42, NULL, x'')",
];

const EXPECTED_ROWS = [
  { id: 1, name: 'alpha', big: '9007199254740993', ratio: 0.5, payload: 'AP8Q' },
  { id: 2, name: 'beta', big: '-9007199254740993', ratio: 1.25, payload: null },
  { id: 3, name: null, big: 42, ratio: null, payload: '' },
];

const refusalTail =
  "are not permitted when refresh_mode is 'snapshot'; the accelerator is driven exclusively from the snapshot store";

export function engineContract(
  kind: ContractKind,
  open: OpenFn,
  makeFile: MakeFile,
  label: string = kind,
): void {
  describe(`engine contract: ${label}`, () => {
    let dir: string;
    let remove: () => Promise<void>;
    let path: string;
    let digest: string;
    let engine: SnapshotEngine;
    const table = tables[kind];

    beforeAll(async () => {
      ({ dir, remove } = await makeTempDir());
      path = join(dir, `items.${kind}`);
      const values = kind === 'duckdb' ? ROWS : sqliteRows;
      await makeFile(path, [table.ddl, `INSERT INTO items VALUES ${values.join(', ')}`]);
      digest = createHash('sha256')
        .update(await readFile(path))
        .digest('hex');
      engine = await open(path);
    });

    afterAll(async () => {
      await engine.close();
      await remove();
    });

    it('maps the table to the Arrow schema a writer records', async () => {
      expect(await engine.schema('items')).toEqual(table.schema);
      await expect(checkTableSchema(engine, 'items', table.schema)).resolves.toBeUndefined();
    });

    it('reports a missing table by name', async () => {
      await expect(engine.schema('nope')).rejects.toMatchObject({
        code: 'ERR_TABLE_NOT_FOUND',
        table: 'nope',
      });
      expect(await engine.columns('nope')).toBeUndefined();
    });

    it('returns JSON-safe rows with column names and engine types', async () => {
      const result = await engine.query('SELECT * FROM items ORDER BY id');
      expect(result.columns).toEqual(
        table.schema.fields.map((f, i) => ({ name: f.name, type: table.types[i] })),
      );
      expect(result.rows).toEqual(EXPECTED_ROWS);
      expect(JSON.parse(JSON.stringify(result.rows))).toEqual(EXPECTED_ROWS);
    });

    it('keeps duplicate column names apart', async () => {
      const result = await engine.query('SELECT id AS a, name AS a FROM items WHERE id = 1');
      expect(result.columns.map((c) => c.name)).toEqual(['a', 'a:1']);
      expect(result.rows).toEqual([{ a: 1, 'a:1': 'alpha' }]);
    });

    it('binds positional ? and $n parameters', async () => {
      expect((await engine.query('SELECT name FROM items WHERE id = ?', [2])).rows).toEqual([
        { name: 'beta' },
      ]);
      const numbered = await engine.query('SELECT id FROM items WHERE id = $2 OR name = $1 ORDER BY id', [
        'alpha',
        3,
      ]);
      expect(numbered.rows).toEqual([{ id: 1 }, { id: 3 }]);
      const nulls = await engine.query('SELECT count(*) AS n FROM items WHERE ratio > ? OR ? IS NULL', [
        1,
        null,
      ]);
      expect(nulls.rows).toEqual([{ n: 3 }]);
      await expect(engine.query('SELECT ? AS x', [[1, 2]])).rejects.toMatchObject({
        code: 'ERR_INVALID_PARAMETER',
      });
    });

    it.each([
      ['INSERT INTO items (id) VALUES (9)', `writes to accelerated table items ${refusalTail}`],
      ['update "items" SET name = \'x\'', `updates on accelerated table items ${refusalTail}`],
      ['/* sweep */ DELETE FROM main.items', `deletes on accelerated table main.items ${refusalTail}`],
      ['-- gone\nTRUNCATE items', `truncate on accelerated table items ${refusalTail}`],
      [
        'WITH doomed AS (SELECT 1) INSERT INTO items SELECT * FROM items',
        `writes to accelerated table items ${refusalTail}`,
      ],
    ])('refuses the write %j with Spice’s message', async (sql, message) => {
      await expect(engine.query(sql)).rejects.toMatchObject({ code: 'ERR_WRITE_REJECTED', message });
    });

    it.each([
      ['CREATE TABLE t (x INTEGER)', 'CREATE'],
      ['DROP TABLE items', 'DROP'],
      ['ALTER TABLE items ADD COLUMN x INTEGER', 'ALTER'],
      ["ATTACH 'other.db' AS other", 'ATTACH'],
      ['DETACH other', 'DETACH'],
      ['PRAGMA user_version = 5', 'PRAGMA'],
      ['BEGIN', 'BEGIN'],
      ['VACUUM', 'VACUUM'],
      ['SELECT 1; SELECT 2', 'MULTIPLE'],
      ['  -- nothing\n ; ', 'EMPTY'],
    ])('refuses %j as %s', async (sql, statement) => {
      await expect(engine.query(sql)).rejects.toMatchObject({ code: 'ERR_STATEMENT_REJECTED', statement });
    });

    it('allows PRAGMA table_info', async () => {
      const result = await engine.query('PRAGMA table_info(items)');
      expect(result.rows.map((row) => row.name)).toEqual(table.schema.fields.map((f) => f.name));
    });

    it('reports engine errors as ERR_QUERY_FAILED', async () => {
      await expect(engine.query('SELECT no_such_column FROM items')).rejects.toMatchObject({
        code: 'ERR_QUERY_FAILED',
      });
    });

    it('answers concurrent queries each with its own result', async () => {
      const ids = Array.from({ length: 24 }, (_, i) => (i % 3) + 1);
      const results = await Promise.all(
        ids.map((id) => engine.query('SELECT id, name FROM items WHERE id = ?', [id])),
      );
      expect(results.map((r) => r.rows[0]?.id)).toEqual(ids);
    });

    it('leaves the file byte-for-byte unchanged, with no side files', async () => {
      expect(await listDir(dir)).toEqual([`items.${kind}`]);
      expect(
        createHash('sha256')
          .update(await readFile(path))
          .digest('hex'),
      ).toBe(digest);
    });

    it('finishes running queries on close, then refuses new ones', async () => {
      const own = await open(path);
      const running = own.query('SELECT count(*) AS n FROM items');
      const closed = own.close();
      await expect(running).resolves.toMatchObject({ rows: [{ n: 3 }] });
      await closed;
      await own.close();
      await expect(own.query('SELECT 1')).rejects.toMatchObject({ code: 'ERR_ENGINE_CLOSED' });
    });

    it('rejects a file that is not a database, and a missing table on open', async () => {
      const scratch = await makeTempDir();
      onTestFinished(scratch.remove);
      const junk = join(scratch.dir, `junk.${kind}`);
      await writeFile(junk, '<html>Service Unavailable</html>'.repeat(8));
      await expect(open(junk)).rejects.toMatchObject({ code: 'ERR_SNAPSHOT_NOT_A_DATABASE' });
      const empty = join(scratch.dir, `empty.${kind}`);
      await writeFile(empty, '');
      await expect(open(empty)).rejects.toMatchObject({ code: 'ERR_SNAPSHOT_NOT_A_DATABASE' });
      await expect(open(join(scratch.dir, `absent.${kind}`))).rejects.toMatchObject({
        code: 'ERR_ENGINE_OPEN',
      });
      await expect(open(path, { table: 'orders' })).rejects.toMatchObject({
        code: 'ERR_SNAPSHOT_MISSING_TABLE',
      });
      const withTable = await open(path, { table: 'items' });
      await withTable.close();
    });
  });
}
