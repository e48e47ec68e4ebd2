/**
 * `ferry publish` ended by SIGINT / SIGTERM mid-upload (Ctrl-C, a CronJob's deadline): it still
 * ends at once with the signal's status, and leaves no build folder, with its whole copy of the
 * snapshot, in the temporary directory; the store is as before (metadata.json untouched).
 */
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ferry, startFerry } from './helpers.js';

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('ferry publish interrupted', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)(
    'ends at once on %s mid-upload and leaves no build folder behind',
    async (signal) => {
      const dir = await mkdtemp(join(tmpdir(), 'ferry-publish-signal-'));
      dirs.push(dir);
      const temp = join(dir, 'tmp');
      const root = join(dir, 'store');
      await mkdir(temp);
      await mkdir(root);
      const location = pathToFileURL(`${root}/`).href;
      const env = { TMPDIR: temp };
      const first = await ferry(
        ['publish', '--location', location, '--dataset', 'big', '--sql', 'SELECT 1::BIGINT AS id'],
        { env },
      );
      expect(first.code).toBe(0);
      const metadata = await readFile(join(root, 'metadata.json'), 'utf8');

      const running = startFerry(
        [
          'publish',
          '--location',
          location,
          '--dataset',
          'big',
          '--sql',
          'SELECT i::BIGINT AS id, md5(i::VARCHAR) AS a, md5((i * 7)::VARCHAR) AS b FROM range(2000000) t(i)',
        ],
        { env },
      );
      // Some bytes have reached the store: the build folder exists and holds the whole file.
      await running.waitForStderr(/Uploading big: \d+% \([1-9]/);
      running.child.kill(signal);
      const ended = await running.exited;
      expect(ended.signal).toBe(signal);
      expect(await readdir(temp)).toEqual([]);
      expect(await readFile(join(root, 'metadata.json'), 'utf8')).toBe(metadata);
    },
    60_000,
  );
});

describe('ferry publish --incremental killed', () => {
  it('the next run removes the work copy a killed run left in the state directory', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ferry-publish-killed-'));
    dirs.push(dir);
    const location = pathToFileURL(`${join(dir, 'store')}/`).href;
    const state = join(dir, 'state');
    const full = await ferry([
      'publish',
      '--location',
      location,
      '--dataset',
      'big',
      '--sql',
      'SELECT i::BIGINT AS id, md5(i::VARCHAR) AS a, md5((i * 7)::VARCHAR) AS b FROM range(2000000) t(i)',
    ]);
    expect(full.code).toBe(0);
    const incremental = (sql: string) => [
      'publish',
      '--incremental',
      '--location',
      location,
      '--dataset',
      'big',
      '--state-dir',
      state,
      '--sql',
      sql,
    ];
    const first = await ferry(incremental('INSERT INTO big VALUES (-1, 1, 1)'));
    expect(first.code).toBe(0);
    const kept = (await readdir(state)).sort();

    // Killed (SIGKILL: no handler runs) while uploading its work copy of the whole database.
    const running = startFerry(incremental('INSERT INTO big VALUES (-2, 2, 2)'));
    await running.waitForStderr(/Uploading big: \d+% \([1-9]/);
    running.child.kill('SIGKILL');
    await running.exited;
    expect((await readdir(state)).length).toBeGreaterThan(kept.length);

    const next = await ferry(incremental('INSERT INTO big VALUES (-3, 3, 3)'));
    expect(next.code).toBe(0);
    expect((await readdir(state)).sort()).toEqual(kept);
  }, 120_000);
});
