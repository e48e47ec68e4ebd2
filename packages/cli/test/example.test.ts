/**
 * `ferry serve --example` as a newcomer runs it from a fresh folder: the repository's fixture store
 * is laid out on file:// with its spicepod in .ferry/example and served (orders in DuckDB, users in
 * SQLite answer over HTTP); the folder is reused on the next run; a folder it did not make, or a
 * spicepod beside --example, is a usage error before anything starts.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ferry, startFerry } from './helpers.js';

async function sql(base: string, text: string): Promise<unknown> {
  const response = await fetch(`${base}/v1/sql`, { method: 'POST', body: text });
  return response.json();
}

describe('ferry serve --example', () => {
  let cwd: string;

  beforeAll(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'ferry-example-'));
  });

  afterAll(async () => {
    await rm(cwd, { recursive: true, force: true });
  });

  it('serves the fixture store on file:// from a folder of its own, and again on a second run', async () => {
    for (let run = 0; run < 2; run++) {
      const serve = startFerry(['serve', '--example', '--http', '127.0.0.1:0', '--flight', '127.0.0.1:0'], {
        cwd,
      });
      try {
        const base = (await serve.waitForStdout(/^Listening on (\S+)$/m, 60_000))[1] as string;
        expect(serve.stdout()).toContain(`Example: ${join(cwd, '.ferry/example/spicepod.yaml')} serves`);
        await expect
          .poll(() => sql(base, 'SELECT count(*) AS n FROM orders'), { timeout: 60_000, interval: 200 })
          .toEqual([{ n: 8 }]);
        await expect
          .poll(() => sql(base, 'SELECT count(*) AS n FROM users'), { timeout: 60_000, interval: 200 })
          .toEqual([{ n: 3 }]);
      } finally {
        serve.child.kill('SIGTERM');
      }
      expect((await serve.exited).code).toBe(0);
    }
    const pod = await readFile(join(cwd, '.ferry/example/spicepod.yaml'), 'utf8');
    expect(pod).toContain(`location: file://${join(cwd, '.ferry/example/store')}/`);
    const metadata = await readFile(join(cwd, '.ferry/example/store/metadata.json'), 'utf8');
    expect(metadata).not.toContain('s3://');
  }, 240_000);

  it('starts its threads under the V8 flags an operator gives Node (a heap limit, GC tracing)', async () => {
    // A thread given a V8 flag in an explicit execArgv is refused (ERR_WORKER_INVALID_EXEC_ARGV):
    // the threads inherit the process's options instead.
    const serve = startFerry(['serve', '--example', '--http', '127.0.0.1:0', '--flight', '127.0.0.1:0'], {
      cwd,
      nodeOptions: ['--max-old-space-size=2048', '--trace-gc'],
    });
    try {
      const base = (await serve.waitForStdout(/^Listening on (\S+)$/m, 60_000))[1] as string;
      await expect
        .poll(() => sql(base, 'SELECT count(*) AS n FROM users'), { timeout: 60_000, interval: 200 })
        .toEqual([{ n: 3 }]);
      expect(await sql(base, 'SELECT count(*) AS n FROM orders')).toEqual([{ n: 8 }]);
    } finally {
      serve.child.kill('SIGTERM');
    }
    const exited = await serve.exited;
    expect(exited.stderr).not.toContain('invalid execArgv');
    expect(exited.code).toBe(0);
  }, 120_000);

  it('refuses a spicepod beside --example, and a folder it did not make, before anything starts', async () => {
    const both = await ferry(['serve', '--example', 'spicepod.yaml'], { cwd });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("--example serves the example's own spicepod; leave out 'spicepod.yaml'");
    const mine = join(cwd, 'mine');
    await mkdir(mine);
    await writeFile(join(mine, 'notes.txt'), 'keep');
    const foreign = await ferry(['serve', '--example', '--example-dir', mine, '--no-flight'], { cwd });
    expect(foreign.code).toBe(2);
    expect(foreign.stderr).toContain(
      `--example-dir '${mine}' is not empty and was not made by ferry serve --example (it has no .ferry-example file)`,
    );
    expect(await readFile(join(mine, 'notes.txt'), 'utf8')).toBe('keep');
  });
});
