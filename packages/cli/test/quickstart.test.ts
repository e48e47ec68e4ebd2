/**
 * `ferry quickstart --dir` as a user runs it: a non-empty folder it did not make is refused (exit 2,
 * the folder named, byte for byte untouched, nothing started); a new folder is created, marked and
 * served from; the same folder is reused on the next run, with what the earlier run left removed.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ferry, snapshotOf, startFerry } from './helpers.js';

const MARKER = '.ferry-quickstart';

function quickstart(dir: string) {
  return ferry(
    ['quickstart', '--dir', dir, '--duration', '1', '--every', '1', '--http', '127.0.0.1:0', '--no-flight'],
    {
      timeoutMs: 120_000,
    },
  );
}

describe('ferry quickstart --dir', () => {
  let root: string;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'ferry-quickstart-'));
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('refuses a non-empty folder it did not make with exit 2 and leaves it byte-identical', async () => {
    const foreign = join(root, 'my-project');
    await mkdir(join(foreign, 'data'), { recursive: true });
    await writeFile(join(foreign, 'spicepod.yaml'), 'version: v1\nkind: Spicepod\nname: mine\n');
    await writeFile(join(foreign, 'data', 'orders.duckdb'), new Uint8Array([0, 1, 2, 3, 255]));
    await writeFile(join(foreign, 'README.md'), '# my project\n');
    const before = await snapshotOf(foreign);

    const result = await ferry(['quickstart', '--dir', foreign, '--http', '127.0.0.1:0', '--no-flight']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      `ferry: --dir '${foreign}' is not empty and was not made by ferry quickstart (it has no ${MARKER} file), so it is left untouched; pass a new or empty folder with --dir, or leave --dir out\n` +
        "Run 'ferry quickstart --help' for usage.\n",
    );
    expect(await snapshotOf(foreign)).toEqual(before);
  });

  it('says when it stops (pnpm-style -- before the arguments), and prints the snapshot numbers queries show', async () => {
    const dir = join(root, 'numbered');
    const run = startFerry(
      [
        'quickstart',
        '--',
        '--dir',
        dir,
        '--duration',
        '600',
        '--every',
        '0.5',
        '--http',
        '127.0.0.1:0',
        '--no-flight',
      ],
      { timeoutMs: 180_000 },
    );
    try {
      await run.waitForStdout(
        /^It stops by itself in 600 s \(--duration, at \d\d:\d\d:\d\d\); Ctrl-C stops it sooner\.$/m,
        120_000,
      );
      const base = (run.stdout().match(/^Ferry is serving 3 datasets at (\S+)$/m) as RegExpMatchArray)[1];
      // Wait until a republished snapshot of orders is served, then compare with what was printed.
      let answer: { version: number; n: number } | undefined;
      await expect
        .poll(
          async () => {
            const response = await fetch(`${base}/v1/sql`, {
              method: 'POST',
              body: 'SELECT max(version) AS version, count(*) AS n FROM orders',
            });
            answer = response.ok
              ? ((await response.json()) as { version: number; n: number }[])[0]
              : undefined;
            return answer?.version ?? -1;
          },
          { timeout: 120_000, interval: 250 },
        )
        .toBeGreaterThan(0);
      const printed = [
        ...run.stdout().matchAll(/^published orders snapshot (\d+) \((\d+) rows, duckdb\)$/gm),
      ];
      expect(printed[0]?.slice(1)).toEqual(['0', '1000']);
      // The version a query shows is the number quickstart printed when it published those rows.
      expect(printed.map((m) => `${m[1]} ${m[2]}`)).toContain(`${answer?.version} ${answer?.n}`);
      expect(run.stderr()).not.toContain('but its rows say version');
    } finally {
      run.child.kill('SIGINT');
      await run.exited;
    }
  }, 300_000);

  it("--check queries a server on a port fetch() refuses as a 'bad port' (6665–6669, 10080, …)", async () => {
    // WHATWG fetch blocks ports browsers block; '--http 127.0.0.1:6669' serves on one, and the
    // check said only 'ferry: error: fetch failed' (exit 1).
    const result = await ferry(
      [
        'quickstart',
        '--dir',
        join(root, 'blocked-port'),
        '--check',
        '--duration',
        '8',
        '--every',
        '0.5',
        '--http',
        '127.0.0.1:6669',
        '--no-flight',
      ],
      { timeoutMs: 120_000 },
    );
    expect(result.stdout).toMatch(/^check: orders serves snapshot \d+ \(\d+ rows\)$/m);
    expect(result.stdout).toContain('check: ok — queries answered and newer snapshots were swapped in\n');
    expect(result.stderr).not.toContain('fetch failed');
    expect(result.code).toBe(0);
  }, 180_000);

  it('creates and marks a new folder, then reuses it, removing what the earlier run left', async () => {
    const dir = join(root, 'qs');
    const first = await quickstart(dir);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^Ferry is serving 3 datasets at http:/m);
    // data/ holds live files once a dataset has bootstrapped, which a 1 s run may not reach.
    expect((await readdir(dir)).filter((entry) => entry !== 'data').sort()).toEqual([
      MARKER,
      'spicepod.yaml',
    ]);

    await mkdir(join(dir, 'data'), { recursive: true });
    const stale = join(dir, 'data', 'left-over.duckdb');
    await writeFile(stale, 'stale');
    await writeFile(join(dir, 'spicepod.yaml'), 'stale pod');
    const second = await quickstart(dir);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/^Ferry is serving 3 datasets at http:/m);
    expect(existsSync(stale)).toBe(false);
    expect(await readFile(join(dir, 'spicepod.yaml'), 'utf8')).toMatch(/^# Written by `ferry quickstart`/);
    expect((await readdir(dir)).filter((entry) => entry !== 'data').sort()).toEqual([
      MARKER,
      'spicepod.yaml',
    ]);
  });
});
