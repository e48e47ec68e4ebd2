/**
 * cpu-split's reading of `perf` output (perf-samples.ts), on text in perf's formats: `perf report`
 * lines summed per kind of code and scaled to µs per query by the event count, and `perf script`
 * stacks summed per thread, each thread named by the server's code it runs, each sample owned by
 * its innermost JavaScript function.
 */
import { describe, expect, it } from 'vitest';
import { kindOf, kindsOfReport, threadsOfScript } from '../src/perf-samples.js';

const REPORT = `# Samples: 8K of event 'cpu-clock:ppp'
# Event count (approx.): 4000000000
#
# Overhead  Shared Object  Symbol
    40.00%  libduckdb.so   [.] duckdb::GreaterThan::Operation<double>
    10.00%  libduckdb.so   [.] duckdb::Executor::ExecuteTask
    20.00%  [JIT] tid 101  [.] JS:*handler file:///srv/packages/server/dist/api-routes.js:125:18
     5.00%  node           [.] Builtins_LoadIC
    15.00%  node           [.] v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>
    10.00%  libc.so.6      [.] _int_malloc
`;

const frame = (address: string, symbol: string, dso: string) => `\t    ${address} ${symbol} (${dso})`;
const sample = (tid: number, ...frames: string[]) =>
  [`node ${tid} 1.000: 500250 cpu-clock:ppp:`, ...frames].join('\n');
const SCRIPT = [
  sample(
    101,
    frame('14d0ff3', 'Builtins_CallFunction+0x1b3', '/usr/bin/node'),
    frame(
      '7f61b7a47842',
      'JS:*#queryJson file:///srv/packages/runtime/dist/query/query-front.js:302:21+0x342',
      '/tmp/perf-101.map',
    ),
    frame(
      '7f61b7a15450',
      'JS:*handler file:///srv/packages/server/dist/api-routes.js:125:18+0x350',
      '/tmp/perf-101.map',
    ),
  ),
  sample(101, frame('c494db', 'v8::internal::Scavenger::ScavengeObject+0x12b', '/usr/bin/node')),
  sample(
    107,
    frame(
      '7f61b7a47842',
      'JS:~#attempt file:///srv/packages/engines/dist/duckdb-namespace.js:356:19+0x12',
      '/tmp/perf-101.map',
    ),
    frame(
      '7f61b7a47899',
      'JS:^answer file:///srv/packages/runtime/dist/query/duckdb-thread.js:70:22+0x40',
      '/tmp/perf-101.map',
    ),
    frame(
      '7f61b7a47900',
      'JS:*run file:///srv/packages/runtime/dist/query/duckdb-thread.js:140:33+0x40',
      '/tmp/perf-101.map',
    ),
  ),
  sample(
    109,
    frame('5d1234', 'duckdb::GreaterThan::Operation<double>+0x20', '/srv/node_modules/libduckdb.so'),
  ),
  sample(109, frame('5d1234', 'duckdb::Executor::ExecuteTask+0x20', '/srv/node_modules/libduckdb.so')),
].join('\n\n');

describe('perf-samples', () => {
  it('sorts symbols into kinds of code', () => {
    expect(kindOf('libduckdb.so', 'duckdb::GreaterThan::Operation<double>')).toBe('DuckDB: the scan');
    expect(kindOf('libduckdb.so', 'duckdb::Executor::ExecuteTask')).toBe(
      'DuckDB: the rest (parse, plan, executor, results)',
    );
    expect(kindOf('[JIT] tid 101', 'JS:*handler x.js:1:1')).toBe('JavaScript (JIT code, builtins)');
    expect(kindOf('node', 'Builtins_LoadIC')).toBe('JavaScript (JIT code, builtins)');
    expect(kindOf('node', 'v8::internal::Scavenger::ScavengeObject<x>')).toBe('V8: garbage collector');
    expect(kindOf('libc.so.6', '_int_malloc')).toBe('malloc');
    expect(kindOf('libc.so.6', 'pthread_mutex_lock')).toBe('libc (locks, copies)');
  });

  it('sums a report per kind, in µs per query', () => {
    // 4 s of CPU over 1,000 queries: 4,000 µs per query, split by the percentages.
    const kinds = kindsOfReport(REPORT, 1_000);
    expect(kinds.get('DuckDB: the scan')).toBeCloseTo(1_600);
    expect(kinds.get('DuckDB: the rest (parse, plan, executor, results)')).toBeCloseTo(400);
    expect(kinds.get('JavaScript (JIT code, builtins)')).toBeCloseTo(1_000);
    expect(kinds.get('V8: garbage collector')).toBeCloseTo(600);
    expect(kinds.get('malloc')).toBeCloseTo(400);
    expect([...kinds.values()].reduce((sum, us) => sum + us, 0)).toBeCloseTo(4_000);
  });

  it('names each thread and owns each sample by its innermost JavaScript function', () => {
    // 1,000 samples a second over 10 queries: 100 µs per query a sample.
    const threads = threadsOfScript(SCRIPT, 101, 10, 1_000);
    expect(threads.map((thread) => [thread.label, thread.total])).toEqual([
      ['main thread', 200],
      ['libduckdb.so thread', 200],
      ['query/duckdb-thread.js thread', 100],
    ]);
    const main = threads[0]?.owners;
    expect(main?.get('#queryJson runtime/dist/query/query-front.js:302:21')).toBe(100);
    expect(main?.get('(no JavaScript frame: native code)')).toBe(100);
    expect(threads[2]?.owners.get('#attempt engines/dist/duckdb-namespace.js:356:19')).toBe(100);
  });
});
