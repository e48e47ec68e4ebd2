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
 * and, for the main thread, by the innermost JavaScript function of the server's own code or of a
 * package on the stack. Unlike a V8 CPU profile, which samples a thread whether it runs or waits
 * for a core, `perf` counts only time on a CPU: on a saturated machine the two differ a lot.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { publishSnapshot } from '@ferry/writer';
import { buildFile, keyedColumns, QUERY_COLUMNS } from './data.js';
import { runLoad } from './load.js';
import { startFerryServe, startServerProcess, stop, waitReady } from './serve-process.js';

const CLIENTS = 64;
const DUCK = 'orders';
const LITE = 'users';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '3' },
    rows: { type: 'string', default: '200000' },
  },
});
const seconds = Number(values.seconds);
const rounds = Math.max(1, Number(values.rounds));
const rows = Number(values.rows);

/** B9's cheap load (scenarios/b9-http.ts), every text new. */
const randomId = (): number => Math.floor(Math.random() * rows);
const CHEAP: readonly (() => string)[] = [
  () =>
    `SELECT count(*) AS n, sum(amount) AS s FROM ${DUCK} WHERE amount > ${(Math.random() * 1000).toFixed(6)}`,
  () => `SELECT note FROM ${LITE} WHERE id = ${randomId()}`,
  () => `SELECT category, amount FROM ${DUCK} WHERE id = ${randomId()}`,
  () => {
    const k = randomId();
    return `SELECT id, note FROM ${LITE} WHERE id BETWEEN ${k} AND ${k + 20}`;
  },
];

/** CPU time (µs) of each thread of `pid`. */
function threadCpu(pid: number): Map<string, number> {
  const cpu = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const fields = (readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1] ?? '').split(' ');
      // utime and stime (fields 14 and 15 of stat), in clock ticks of 10 ms.
      cpu.set(tid, (Number(fields[11]) + Number(fields[12])) * 10_000);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return cpu;
}

function hasPerf(): boolean {
  try {
    execFileSync('perf', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The kind of code a `perf report` symbol line belongs to. */
function kindOf(dso: string, symbol: string): string {
  if (dso === 'libduckdb.so') {
    return /GreaterThan|ColumnSegment|ColumnData|RowGroup|alp::|Alp|Bitpacking|fastunpack|FilterSelection|IsNan|AggregateFunction|TableScan/.test(
      symbol,
    )
      ? 'DuckDB: the scan'
      : 'DuckDB: the rest (parse, plan, executor, results)';
  }
  if (/better_sqlite3/.test(dso)) return 'SQLite';
  if (/kernel/.test(dso)) return 'kernel';
  if (/^libc/.test(dso))
    return /malloc|free|unlink_chunk|consolidate/.test(symbol) ? 'malloc' : 'libc (locks, copies)';
  if (/^\[JIT\]/.test(dso) || /^Builtins_/.test(symbol)) return 'JavaScript (JIT code, builtins)';
  if (/Scaveng|MarkCompact|Sweeper|Marking|Evacuat|cppgc|Heap::|GCTracer/.test(symbol))
    return 'V8: garbage collector';
  if (/compiler::|maglev|Compiler|Compilation/.test(symbol)) return 'V8: compiler';
  if (dso === 'node') return "V8 and Node's C++ (lookups, maps, JSON, messages)";
  return 'other';
}

/** `perf record` on `pid` for `ms`; resolves with the data file, or undefined when perf failed. */
async function perfRecord(pid: number, ms: number, file: string): Promise<string | undefined> {
  const child = spawn(
    'perf',
    ['record', '-F', '1999', '-g', '-p', String(pid), '-o', file, '--', 'sleep', String(ms / 1000)],
    {
      stdio: 'ignore',
    },
  );
  const [code] = (await once(child, 'exit')) as [number | null];
  return code === 0 ? file : undefined;
}

/** The samples of a `perf record` file per kind of code, and the main thread's per innermost JS function, in µs per query. */
function perfSplit(
  file: string,
  mainTid: number,
  queries: number,
): { kinds: Map<string, number>; main: Map<string, number> } {
  const report = execFileSync(
    'perf',
    ['report', '-i', file, '--no-children', '-g', 'none', '--sort', 'dso,sym', '--stdio'],
    {
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  const total = Number(/Event count \(approx\.\): (\d+)/.exec(report)?.[1] ?? 0) / 1000; // ns → µs
  const kinds = new Map<string, number>();
  for (const line of report.split('\n')) {
    const match = /^\s*([\d.]+)%\s+(\S+(?: tid \d+)?)\s+\[.\]\s+(.*)$/.exec(line);
    if (match === null) continue;
    const kind = kindOf(match[2] ?? '', match[3] ?? '');
    kinds.set(kind, (kinds.get(kind) ?? 0) + (Number(match[1]) / 100) * (total / queries));
  }
  const script = execFileSync('perf', ['script', '-i', file, '--tid', String(mainTid)], {
    encoding: 'utf8',
    maxBuffer: 1024 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const main = new Map<string, number>();
  const period = 1e6 / 1999; // µs per sample
  for (const sample of script.split('\n\n')) {
    const frames = sample.split('\n').filter((line) => /^\s+[0-9a-f]+ /.test(line));
    if (frames.length === 0) continue;
    let owner = '(no JavaScript frame: native)';
    for (const frame of frames) {
      const js = /JS:\*?(\S*) (\S+?)(?:\+0x[0-9a-f]+)? /.exec(`${frame} `);
      if (js === null) continue;
      const where = (js[2] ?? '').replace(/.*\/(?:packages|node_modules\/\.pnpm\/[^/]+\/node_modules)\//, '');
      owner = `${js[1] || '(anonymous)'} ${where}`;
      break;
    }
    main.set(owner, (main.get(owner) ?? 0) + period / queries);
  }
  return { kinds, main };
}

const top = (map: Map<string, number>, n: number): [string, number][] =>
  [...map].sort((a, b) => b[1] - a[1]).slice(0, n);

const workDir = await mkdtemp(join(tmpdir(), 'ferry-cpu-split-'));
const children: ChildProcess[] = [];
const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
const perf = hasPerf();
try {
  console.log(`building ${rows.toLocaleString('en-US')}-row files in ${workDir}`);
  const duck = await buildFile(workDir, 'duckdb', DUCK, rows, keyedColumns(1, QUERY_COLUMNS));
  const lite = await buildFile(workDir, 'sqlite', LITE, rows, keyedColumns(1, QUERY_COLUMNS));
  const location = pathToFileURL(join(workDir, 'store/')).href;
  for (const file of [duck, lite]) {
    await publishSnapshot({ dataset: file.dataset, location, source: { file: file.path }, workDir });
  }
  const dataset = (name: string, engine: string) =>
    `  - from: postgres:public.${name}\n    name: ${name}\n    acceleration:\n      engine: ${engine}\n      mode: file\n      refresh_mode: snapshot\n      snapshots: enabled\n`;
  const pod = join(workDir, 'spicepod.yaml');
  await writeFile(
    pod,
    `version: v1\nkind: Spicepod\nname: cpu-split\nsnapshots:\n  enabled: true\n  location: ${location}\ndatasets:\n${dataset(DUCK, 'duckdb')}${dataset(LITE, 'sqlite')}`,
  );
  const perfOption = perf ? ['--perf-basic-prof'] : [];
  if (perf) process.env.FERRY_BENCH_SERVE_NODE_OPTIONS = perfOption.join(' ');
  const ferry = await startFerryServe(pod, join(workDir, 'data'), process.env);
  children.push(ferry.child);
  const threaded = await startServerProcess(
    [
      ...perfOption,
      fileURLToPath(new URL('./threaded-server.js', import.meta.url)),
      duck.path,
      lite.path,
      LITE,
    ],
    process.env,
  );
  children.push(threaded.child);
  const servers = [
    { name: 'ferry serve', url: new URL(ferry.url), pid: ferry.child.pid ?? 0 },
    { name: 'threaded server', url: new URL(threaded.url), pid: threaded.child.pid ?? 0 },
  ];
  await waitReady(agent, servers[0]?.url as URL);
  const post = (base: URL, sql: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = request(
        {
          agent,
          host: base.hostname,
          port: base.port,
          path: '/v1/sql',
          method: 'POST',
          headers: { 'content-type': 'text/plain' },
        },
        (res) => {
          res.resume();
          res.on('end', () =>
            res.statusCode === 200 ? resolve() : reject(new Error(`answered ${res.statusCode}`)),
          );
        },
      );
      req.on('error', reject);
      req.end(sql);
    });
  const operation = (base: URL) => {
    let n = 0;
    return () => post(base, (CHEAP[n++ % CHEAP.length] as () => string)());
  };
  for (const server of servers)
    await runLoad({ clients: CLIENTS, warmupMs: 0, durationMs: 3_000, operation: operation(server.url) });
  for (let round = 0; round < rounds; round++) {
    for (const server of servers) {
      const sampled = perf && round === rounds - 1;
      const before = threadCpu(server.pid);
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
      const after = threadCpu(server.pid);
      const queries = (result.throughput * (performance.now() - began)) / 1000;
      const threads = [...after]
        .map(([tid, us]) => ({ tid, perQuery: (us - (before.get(tid) ?? 0)) / queries }))
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
      if (recorded === undefined) continue;
      const split = perfSplit(recorded, server.pid, (result.throughput * seconds * 1000) / 1000);
      console.log(`  on the CPU (perf), µs per query:`);
      for (const [kind, us] of top(split.kinds, 20)) console.log(`    ${us.toFixed(0).padStart(6)}  ${kind}`);
      console.log('  main thread, by the innermost JavaScript function on the stack, µs per query:');
      for (const [owner, us] of top(split.main, 25))
        console.log(`    ${us.toFixed(1).padStart(6)}  ${owner}`);
    }
  }
} finally {
  agent.destroy();
  await Promise.all(children.map((child) => stop(child)));
  await rm(workDir, { recursive: true, force: true });
  for (const child of children) await rm(`/tmp/perf-${child.pid}.map`, { force: true });
}
