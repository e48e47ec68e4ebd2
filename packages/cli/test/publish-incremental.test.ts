/**
 * `ferry publish --incremental` as a user runs it (the built CLI, a file:// store): a full publish,
 * then an INSERT applied to the current snapshot from the writer's state directory, with the block
 * manifest beside each snapshot; refused without a base, and with flags that do not apply; and
 * `ferry serve` reading it: only the changed blocks fetched, as its /metrics say.
 */
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ferry, startFerry } from './helpers.js';

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

describe('ferry serve reading an incremental publish', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ferry-cli-delta-serve-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('fetches only the changed blocks and says so on /metrics', async () => {
    const location = pathToFileURL(`${join(dir, 'store')}/`).href;
    const publish = (extra: readonly string[]) =>
      ferry(['publish', '--location', location, '--dataset', 'events', ...extra]);
    const full = await publish([
      '--sql',
      "SELECT i::BIGINT AS id, 'event-' || i AS name FROM range(200000) t(i)",
    ]);
    expect(full.code, full.stderr).toBe(0);
    const pod = join(dir, 'spicepod.yaml');
    await writeFile(
      pod,
      [
        'version: v1',
        'kind: Spicepod',
        'name: delta',
        'snapshots:',
        `  location: ${location}`,
        'datasets:',
        '  - from: postgres:public.events',
        '    name: events',
        '    acceleration:',
        '      engine: duckdb',
        '      mode: file',
        '      refresh_mode: snapshot',
        '      refresh_check_interval: 1s',
        '      snapshots: enabled',
        '',
      ].join('\n'),
    );
    const serve = startFerry(['serve', pod, '--http', '127.0.0.1:0', '--flight', '127.0.0.1:0'], {
      cwd: dir,
    });
    try {
      const base = (await serve.waitForStdout(/^Listening on (\S+)$/m, 60_000))[1] as string;
      const count = async (): Promise<unknown> =>
        (await fetch(`${base}/v1/sql`, { method: 'POST', body: 'SELECT count(*) AS n FROM events' })).json();
      await expect.poll(count, { timeout: 60_000, interval: 200 }).toEqual([{ n: 200_000 }]);
      const next = await publish([
        '--incremental',
        '--sql',
        "INSERT INTO events SELECT i, 'event-' || i FROM range(200000, 202000) t(i)",
        '--state-dir',
        join(dir, 'state'),
        '--json',
      ]);
      expect(next.code, next.stderr).toBe(0);
      const size = (JSON.parse(next.stdout) as { size: number }).size;
      await expect.poll(count, { timeout: 60_000, interval: 200 }).toEqual([{ n: 202_000 }]);
      const metrics = await (await fetch(`${base}/metrics`)).text();
      const sample = (line: RegExp): number => Number(line.exec(metrics)?.[1]);
      const reused = sample(/^ferry_dataset_last_download_bytes\{dataset="events",source="reused"\} (\d+)$/m);
      const fetched = sample(
        /^ferry_dataset_last_download_bytes\{dataset="events",source="fetched"\} (\d+)$/m,
      );
      expect(reused + fetched).toBe(size);
      expect(fetched).toBeLessThan(size / 2);
      expect(sample(/^ferry_snapshot_reused_bytes_total (\d+)$/m)).toBe(reused);
    } finally {
      serve.child.kill('SIGTERM');
    }
    expect((await serve.exited).code).toBe(0);
  }, 180_000);
});
