/**
 * `node bench/dist/cpu-split.js [--seconds N] [--rounds N] [--rows N]`: where a cheap query's CPU
 * goes, on the CPU. B9's cheap load (64 keep-alive clients, a new text every request) runs in
 * alternating windows against `ferry serve` (the default spicepod, a `file://` store) and B9's
 * plain server in Ferry's thread shape (`threaded-server.ts`, the floor of that shape), and prints,
 * per server and window, the throughput and the CPU per query of each thread (`/proc/<pid>/task`).
 *
 * With Linux `perf` on the PATH (and permission to attach), the last window of each server is also
 * sampled on the CPU (`perf record -F 1999 -g`, the servers run with `--perf-basic-prof` so
 * JavaScript frames are named), and the samples are summed per query: by kind of code (DuckDB's scan
 * and the rest of DuckDB, JavaScript, V8 and Node's C++, the garbage collector, malloc, the kernel),
 * and per thread (named by the server's own code that runs on it) by the innermost JavaScript
 * function on the stack. Unlike a V8 CPU profile, which samples a thread whether it runs or waits
 * for a core, `perf` counts only time on a CPU: on a saturated machine the two differ a lot.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toolOptions } from './args.js';
import { CHEAP_CLIENTS as CLIENTS, cheapOperation, prepareCheapLoad } from './cheap-load.js';
import { failureNote, runLoad } from './load.js';
import { kindsOfReport, type ThreadSplit, threadsOfScript } from './perf-samples.js';
import { threadCpuSeconds } from './proc-cpu.js';
import { startFerryServe, startServerProcess, stop, waitReady } from './serve-process.js';

/** perf's sampling rate (per second), odd so as not to beat with timers. */
const HZ = 1999;

const { seconds, rounds, rows } = toolOptions('cpu-split', process.argv.slice(2), {
  seconds: 8,
  rounds: 3,
  rows: 200_000,
});

function hasPerf(): boolean {
  try {
    execFileSync('perf', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** `perf record` on `pid` for `ms`; resolves with the data file, or undefined when perf failed. */
async function perfRecord(pid: number, ms: number, file: string): Promise<string | undefined> {
  const child = spawn(
    'perf',
    ['record', '-F', String(HZ), '-g', '-p', String(pid), '-o', file, '--', 'sleep', String(ms / 1000)],
    {
      stdio: 'ignore',
    },
  );
  const [code] = (await once(child, 'exit')) as [number | null];
  return code === 0 ? file : undefined;
}

/** A `perf record` file's samples per kind of code and per thread, in µs per query (perf-samples.ts). */
function perfSplit(
  file: string,
  mainTid: number,
  queries: number,
): { kinds: Map<string, number>; threads: ThreadSplit[] } {
  const run = (args: readonly string[]): string =>
    execFileSync('perf', [...args], {
      encoding: 'utf8',
      maxBuffer: 2 * 1024 * 1024 * 1024,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  return {
    kinds: kindsOfReport(
      run(['report', '-i', file, '--no-children', '-g', 'none', '--sort', 'dso,sym', '--stdio']),
      queries,
    ),
    threads: threadsOfScript(run(['script', '-i', file]), mainTid, queries, HZ),
  };
}

const top = (map: Map<string, number>, n: number): [string, number][] =>
  [...map].sort((a, b) => b[1] - a[1]).slice(0, n);

const workDir = await mkdtemp(join(tmpdir(), 'ferry-cpu-split-'));
const children: ChildProcess[] = [];
const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
const perf = hasPerf();
try {
  console.log(`building ${rows.toLocaleString('en-US')}-row files in ${workDir}`);
  const { pod, threadedArgs } = await prepareCheapLoad(workDir, rows);
  const perfOption = perf ? ['--perf-basic-prof'] : [];
  if (perf) process.env.FERRY_BENCH_SERVE_NODE_OPTIONS = perfOption.join(' ');
  const ferry = await startFerryServe(pod, join(workDir, 'data'), process.env);
  children.push(ferry.child);
  const threaded = await startServerProcess([...perfOption, ...threadedArgs], process.env);
  children.push(threaded.child);
  const servers = [
    { name: 'ferry serve', url: new URL(ferry.url), pid: ferry.child.pid ?? 0 },
    { name: 'threaded server', url: new URL(threaded.url), pid: threaded.child.pid ?? 0 },
  ];
  await waitReady(agent, servers[0]?.url as URL);
  const operation = (base: URL) => cheapOperation(base, agent, rows);
  for (const server of servers)
    await runLoad({ clients: CLIENTS, warmupMs: 0, durationMs: 3_000, operation: operation(server.url) });
  for (let round = 0; round < rounds; round++) {
    for (const server of servers) {
      const sampled = perf && round === rounds - 1;
      const before = threadCpuSeconds(server.pid);
      const began = performance.now();
      const recording = sampled
        ? perfRecord(server.pid, seconds * 1000, join(workDir, `${server.pid}.perf`))
        : undefined;
      const result = await runLoad({
        clients: CLIENTS,
        warmupMs: 0,
        durationMs: seconds * 1000,
        operation: operation(server.url),
      });
      const recorded = await recording;
      const after = threadCpuSeconds(server.pid);
      const queries = (result.throughput * (performance.now() - began)) / 1000;
      const threads = [...after]
        .map(([tid, cpuS]) => ({ tid, perQuery: ((cpuS - (before.get(tid) ?? 0)) * 1e6) / queries }))
        .filter((thread) => thread.perQuery >= 5)
        .sort((a, b) => b.perQuery - a.perQuery);
      const all = threads.reduce((sum, thread) => sum + thread.perQuery, 0);
      const main = threads.find((thread) => thread.tid === String(server.pid))?.perQuery ?? 0;
      const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
      console.log(
        `${server.name}, window ${round + 1}: ${result.throughput.toFixed(0)} q/s, CPU per query ${all.toFixed(0)} µs (main thread ${main.toFixed(0)} µs; others ${threads
          .filter((thread) => thread.tid !== String(server.pid))
          .map((thread) => thread.perQuery.toFixed(0))
          .join(' ')}), load ${load}`,
      );
      const failed = failureNote(`  ${server.name}`, result);
      if (failed !== undefined) console.log(failed);
      if (sampled && recorded === undefined) {
        console.log('  perf could not record this window (permission to attach?): the /proc figures only');
      }
      if (recorded === undefined) continue;
      const split = perfSplit(recorded, server.pid, (result.throughput * seconds * 1000) / 1000);
      console.log(`  on the CPU (perf), µs per query:`);
      for (const [kind, us] of top(split.kinds, 20)) console.log(`    ${us.toFixed(0).padStart(6)}  ${kind}`);
      console.log(
        '  by thread, µs per query, and its top functions (innermost JavaScript frame on the stack):',
      );
      for (const thread of split.threads.filter((each) => each.total >= 5)) {
        const owners = top(thread.owners, thread.label === 'main thread' ? 25 : 8).filter(
          ([, us]) => us >= 1,
        );
        console.log(`    ${thread.total.toFixed(0).padStart(6)}  ${thread.label}`);
        if (thread.label.endsWith('.so thread') || thread.label === 'node thread') continue;
        for (const [owner, us] of owners) console.log(`      ${us.toFixed(1).padStart(6)}  ${owner}`);
      }
    }
  }
} finally {
  agent.destroy();
  await Promise.all(children.map((child) => stop(child)));
  await rm(workDir, { recursive: true, force: true });
  for (const child of children) await rm(`/tmp/perf-${child.pid}.map`, { force: true });
}
