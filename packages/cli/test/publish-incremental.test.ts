/**
 * `ferry publish --incremental` as a user runs it (the built CLI, a file:// store): a full publish,
 * then an INSERT applied to the current snapshot from the writer's state directory, with the block
 * manifest beside each snapshot; refused without a base, and with flags that do not apply.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ferry } from './helpers.js';

describe('ferry publish --incremental', () => {
  let dir: string;
  let location: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ferry-cli-incremental-'));
    location = pathToFileURL(`${join(dir, 'store')}/`).href;
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** `ferry publish --incremental` of dataset orders with `sql`, plus `extra` arguments. */
  const incremental = (sql: string, extra: readonly string[] = []) =>
    ferry([
      'publish',
      '--incremental',
      '--location',
      location,
      '--dataset',
      'orders',
      '--sql',
      sql,
      ...extra,
    ]);

  it('refuses a dataset with no snapshot yet, naming the fix', async () => {
    const refused = await incremental('DELETE FROM orders', ['--state-dir', join(dir, 'state')]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('publish a full snapshot first');
  });

  it('applies the statement to the current snapshot and publishes it with its block manifest', async () => {
    const full = await ferry([
      'publish',
      '--location',
      location,
      '--dataset',
      'orders',
      '--sql',
      'SELECT i::BIGINT AS id FROM range(1000) t(i)',
    ]);
    expect(full.code).toBe(0);
    const next = await incremental('INSERT INTO orders SELECT i FROM range(1000, 1010) t(i)', [
      '--state-dir',
      join(dir, 'state'),
      '--json',
    ]);
    expect(next.stderr).not.toContain('rror');
    expect(next.code).toBe(0);
    const result = JSON.parse(next.stdout) as {
      snapshotId: number;
      rowCount: number;
      key: string;
      base: unknown;
    };
    expect(result).toMatchObject({
      snapshotId: 1,
      rowCount: 1010,
      base: { snapshotId: 0, source: 'downloaded' },
    });
    const folder = join(dir, 'store', ...result.key.split('/').slice(0, -1));
    const names = await readdir(folder);
    expect(names.filter((name) => name.endsWith('.ferry-blocks.json'))).toHaveLength(2);
  });

  it('refuses flags that do not apply to --incremental', async () => {
    const refused = await incremental('DELETE FROM orders', ['--file', join(dir, 'x.duckdb')]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--file does not apply to --incremental');
  });
});
