/**
 * DuckDB's statements run on libuv's threadpool (Node-API async work), not on the query worker that
 * asks for them, so the query threads' lower priority must reach the pool's threads too
 * (`lowerThreadpoolPriority`). In a child process (the pool and priorities are the process's): the
 * threads that burn CPU while DuckDB runs a statement are all below the main thread's priority
 * once the pool was lowered, and at its priority without it. Where libuv names the pool's threads
 * (`libuv-worker`, Node 22 and 24), exactly those four are the ones lowered.
 */
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const threadPriority = pathToFileURL(
  fileURLToPath(new URL('../dist/query/thread-priority.js', import.meta.url)),
).href;
const duckdb = pathToFileURL(
  createRequire(fileURLToPath(new URL('../../engines/package.json', import.meta.url))).resolve(
    '@duckdb/node-api',
  ),
).href;

/**
 * The nice values of the threads (the main one apart) that used > 100 ms of CPU while DuckDB ran
 * (V8's own threads, compiling, use less). Each statement runs on whichever pool thread takes it,
 * so each is long enough (~0.5 s) that any thread that ran one passes 100 ms on a fast machine too:
 * with a tenth of the rows, three statements spread over three threads stayed under it (Node 24, CI).
 */
async function busyThreadNiceness(
  lower: boolean,
): Promise<{ lowered: number; busy: number[]; named: number[] }> {
  const script = `
    import { readdirSync, readFileSync } from 'node:fs';
    import { getPriority } from 'node:os';
    import { lowerThreadpoolPriority } from '${threadPriority}';
    import { DuckDBInstance } from '${duckdb}';
    const cpu = () => new Map(readdirSync('/proc/self/task').map((tid) => [tid, Number(readFileSync('/proc/self/task/' + tid + '/schedstat', 'utf8').split(' ')[0])]));
    const lowered = ${lower} ? await lowerThreadpoolPriority(10) : 0;
    const connection = await (await DuckDBInstance.create(':memory:', { threads: '1' })).connect();
    const before = cpu();
    for (let n = 0; n < 3; n++) await connection.runAndReadAll('SELECT count(*) FROM range(300000000) t(i) WHERE i % 7 = 3');
    const busy = [...cpu()].filter(([tid, ns]) => Number(tid) !== process.pid && ns - (before.get(tid) ?? 0) > 100e6).map(([tid]) => getPriority(Number(tid)));
    const named = readdirSync('/proc/self/task').filter((tid) => readFileSync('/proc/self/task/' + tid + '/comm', 'utf8').trim() === 'libuv-worker').map((tid) => getPriority(Number(tid)));
    console.log(JSON.stringify({ lowered, busy, named }));
  `;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script]);
  return JSON.parse(stdout.trim()) as { lowered: number; busy: number[]; named: number[] };
}

describe.runIf(process.platform === 'linux')("libuv's threadpool, where DuckDB's statements run", () => {
  it('runs DuckDB below the main thread once lowered, at its priority without', async () => {
    const lowered = await busyThreadNiceness(true);
    expect(lowered.lowered).toBe(4);
    expect(lowered.busy.length).toBeGreaterThan(0);
    expect(lowered.busy, JSON.stringify(lowered)).toEqual(lowered.busy.map(() => 10));
    // Where libuv names its pool threads (Node 22 and 24), every one of them is lowered, none else.
    expect(lowered.named, JSON.stringify(lowered)).toEqual(lowered.named.map(() => 10));
    if (lowered.named.length > 0) expect(lowered.named).toHaveLength(4);
    const left = await busyThreadNiceness(false);
    expect(left.busy.length).toBeGreaterThan(0);
    expect(left.busy, JSON.stringify(left)).toEqual(left.busy.map(() => 0));
  });
});
