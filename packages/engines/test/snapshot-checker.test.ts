/**
 * The snapshot checker on real files: it gives the verdicts of `checkSnapshotFile` (pass, not a
 * database, missing table, schema mismatch, with the same messages), checks file after file on one
 * instance without keeping them attached, reads nothing outside its directory, and refuses to check
 * once closed.
 */
import { copyFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type ArrowSchema, SnapshotRejectedError } from '@ferry/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { arrowField } from '../src/arrow-types.js';
import { checkSnapshotFile } from '../src/open-engine.js';
import { createSnapshotChecker, type SnapshotChecker } from '../src/snapshot-checker.js';
import { copyFixtureFiles, type FixtureFile, makeDuckDbFile, makeTempDir } from './files.js';

let dir: string;
let remove: () => Promise<void>;
let fixtures: FixtureFile[];
let checker: SnapshotChecker;

const fixture = (dataset: string): FixtureFile => fixtures.find((x) => x.dataset === dataset) as FixtureFile;

/** The rejection `check` gives, as `{ code, message }` (or 'passed'). */
async function verdict(check: Promise<void>): Promise<{ code: string; message: string } | 'passed'> {
  try {
    await check;
    return 'passed';
  } catch (error) {
    return { code: (error as { code: string }).code, message: (error as Error).message };
  }
}

beforeAll(async () => {
  ({ dir, remove } = await makeTempDir());
  fixtures = await copyFixtureFiles(dir);
  checker = await createSnapshotChecker('duckdb', dir);
});

afterAll(async () => {
  await checker.close();
  await remove();
});

describe('createSnapshotChecker', () => {
  it('passes every fixture snapshot of its engine, one after another, on one instance', async () => {
    const duckdb = fixtures.filter((x) => x.engine === 'duckdb');
    expect(duckdb.length).toBeGreaterThan(0);
    for (let round = 0; round < 2; round++) {
      for (const file of duckdb) await checker.check(file.path, file.dataset, file.recorded);
    }
    const sqlite = await createSnapshotChecker('sqlite', dir);
    const users = fixture('users');
    await sqlite.check(users.path, users.dataset, users.recorded);
    await sqlite.close();
  });

  it('rejects exactly as checkSnapshotFile does', async () => {
    const orders = fixture('orders');
    const users = fixture('users');
    const renamed: ArrowSchema = {
      ...orders.recorded,
      fields: orders.recorded.fields.map((field, index) =>
        index === 0 ? { ...field, name: `${field.name}_renamed` } : field,
      ),
    };
    const cases: [string, string, ArrowSchema][] = [
      [users.path, 'users', users.recorded], // an SQLite file
      [orders.path, 'accounts', orders.recorded], // no such table
      [orders.path, 'orders', renamed], // schema mismatch
    ];
    for (const [path, table, recorded] of cases) {
      const expected = await verdict(checkSnapshotFile('duckdb', path, table, recorded));
      expect(expected).not.toBe('passed');
      expect(await verdict(checker.check(path, table, recorded))).toEqual(expected);
    }
    await expect(checker.check(users.path, 'users', users.recorded)).rejects.toBeInstanceOf(
      SnapshotRejectedError,
    );
  });

  it('rejects a file with a DuckDB header that DuckDB cannot read as not a database', async () => {
    const orders = fixture('orders');
    const broken = join(dir, 'broken.duckdb');
    const header = Buffer.alloc(4096);
    header.write('DUCK', 8, 'latin1');
    await writeFile(broken, header);
    const expected = await verdict(checkSnapshotFile('duckdb', broken, 'orders', orders.recorded));
    expect(expected).not.toBe('passed');
    expect(await verdict(checker.check(broken, 'orders', orders.recorded))).toEqual(expected);
  });

  it('keeps no file attached after a check: the next file under the same path is read afresh', async () => {
    const path = join(dir, 'reused.duckdb');
    await makeDuckDbFile(path, ['CREATE TABLE t (a BIGINT)']);
    const first: ArrowSchema = { fields: [arrowField('a', 'Int64', true)], metadata: {} };
    await checker.check(path, 't', first);
    await rm(path);
    await makeDuckDbFile(path, ['CREATE TABLE t (b VARCHAR)']);
    await expect(checker.check(path, 't', first)).rejects.toMatchObject({
      code: 'ERR_SNAPSHOT_SCHEMA_MISMATCH',
    });
  });

  it('cannot read a file outside its directory', async () => {
    const orders = fixture('orders');
    const inner = join(dir, 'inner');
    await mkdir(inner, { recursive: true });
    const confined = await createSnapshotChecker('duckdb', inner);
    try {
      await expect(confined.check(orders.path, 'orders', orders.recorded)).rejects.toMatchObject({
        code: 'ERR_ENGINE_OPEN',
      });
      const inside = join(inner, 'orders.duckdb');
      await copyFile(orders.path, inside);
      await confined.check(inside, 'orders', orders.recorded);
    } finally {
      await confined.close();
    }
  });

  it('refuses to check once closed; closing twice is fine', async () => {
    const orders = fixture('orders');
    const closing = await createSnapshotChecker('duckdb', dir);
    await closing.close();
    await closing.close();
    await expect(closing.check(orders.path, 'orders', orders.recorded)).rejects.toThrow(/closed/);
  });
});
