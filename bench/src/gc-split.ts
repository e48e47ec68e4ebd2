/**
 * `node bench/dist/gc-split.js [--seconds N] [--warmup N] [--rows N]`: what a cheap query costs the
 * garbage collector, per thread. B9's cheap load (cheap-load.ts) runs against `ferry serve` (the
 * default spicepod) and then against B9's plain server in Ferry's thread shape, each started with
 * V8's `--trace-gc-nvp`; after a warm-up, one window's collections are summed per V8 isolate (one
 * per thread) and divided by the queries answered in it: the bytes allocated, the bytes that
 * survived a young-generation collection (a scavenge copies them) and that were promoted to the
 * old generation, and the pauses (scavenges; mark-compacts apart). The main thread is the isolate
 * that started first (gc-trace.ts `firstIsolate`: it starts every worker).
 *
 * Why: a scavenge's cost grows with what survives it, and what survives is what a query keeps past
 * the next collection (caches, queued work). A CPU profile shows the pauses but not the bytes
 * that make them.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toolOptions } from './args.js';
import { CHEAP_CLIENTS, cheapOperation, prepareCheapLoad } from './cheap-load.js';
import { firstIsolate, NVP_LINE, sumCollections } from './gc-trace.js';
import { failureNote, runLoad } from './load.js';
import { startFerryServe, startServerProcess, stop, waitReady } from './serve-process.js';

const { seconds, warmup, rows } = toolOptions('gc-split', process.argv.slice(2), {
  seconds: 20,
  warmup: 15,
  rows: 200_000,
});

const workDir = await mkdtemp(join(tmpdir(), 'ferry-gc-split-'));
const agent = new Agent({ keepAlive: true, maxSockets: CHEAP_CLIENTS });
try {
  console.log(`building ${rows.toLocaleString('en-US')}-row files in ${workDir}`);
  const { pod, threadedArgs } = await prepareCheapLoad(workDir, rows);
  process.env.FERRY_BENCH_SERVE_NODE_OPTIONS = '--trace-gc-nvp';
  const servers = [
    { name: 'ferry serve', start: () => startFerryServe(pod, join(workDir, 'data'), process.env) },
    {
      name: 'threaded server',
      start: () => startServerProcess(['--trace-gc-nvp', ...threadedArgs], process.env),
    },
  ];
  for (const server of servers) {
    const { url, child, lines } = await server.start();
    try {
      const base = new URL(url);
      const read: { line: string; at: number }[] = [];
      const window: string[] = [];
      let recording = false;
      lines.on('line', (line) => {
        if (!NVP_LINE.test(line)) return;
        read.push({ line, at: performance.now() });
        if (recording) window.push(line);
      });
      await waitReady(agent, base);
      const load = (ms: number) =>
        runLoad({
          clients: CHEAP_CLIENTS,
          warmupMs: 0,
          durationMs: ms,
          operation: cheapOperation(base, agent, rows),
        });
      await load(warmup * 1000);
      recording = true;
      const result = await load(seconds * 1000);
      recording = false;
      const queries = result.throughput * seconds;
      console.log(
        `${server.name}: ${result.throughput.toFixed(0)} q/s over ${seconds} s (after ${warmup} s of warm-up)`,
      );
      const failed = failureNote(`  ${server.name}`, result);
      if (failed !== undefined) console.log(failed);
      console.log(
        '  per query:   allocated  survived  promoted  scavenge pause  helpers  | scavenges  mark-compacts (pause)',
      );
      const first = firstIsolate(read);
      const isolates = [...sumCollections(window)].sort((a, b) => b[1].allocated - a[1].allocated);
      for (const [isolate, gc] of isolates) {
        const kb = (bytes: number) => `${(bytes / queries / 1024).toFixed(2)} KB`.padStart(10);
        const us = (ms: number) => `${((ms * 1000) / queries).toFixed(1)} µs`.padStart(9);
        console.log(
          `  ${(isolate === first ? 'main thread' : `worker ${isolate}`).padEnd(22)}${kb(gc.allocated)}${kb(gc.survived)}${kb(gc.promoted)}      ${us(gc.scavengeMs)}${us(gc.backgroundMs)}  | ${String(gc.scavenges).padStart(9)}  ${gc.markCompacts} (${gc.markCompactMs.toFixed(0)} ms)`,
        );
      }
    } finally {
      await stop(child);
    }
  }
} finally {
  agent.destroy();
  await rm(workDir, { recursive: true, force: true });
}
