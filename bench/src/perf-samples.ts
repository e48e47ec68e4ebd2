/**
 * Reading Linux `perf` output for `cpu-split.ts`, as pure functions of its text: `perf report
 * --no-children -g none --sort dso,sym --stdio` summed per kind of code, and `perf script` (call
 * stacks, JavaScript frames named by `--perf-basic-prof`: `JS:*` optimized, `JS:^` baseline, `JS:~`
 * interpreted) summed per thread and per innermost
 * JavaScript function. Figures come out in µs per query.
 */

/** The kind of code a symbol of `dso` belongs to. */
export function kindOf(dso: string, symbol: string): string {
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

/** `perf report`'s lines summed per {@link kindOf}, in µs per query (its event count is in ns of CPU). */
export function kindsOfReport(report: string, queries: number): Map<string, number> {
  const totalUs = Number(/Event count \(approx\.\): (\d+)/.exec(report)?.[1] ?? 0) / 1000;
  const kinds = new Map<string, number>();
  for (const line of report.split('\n')) {
    const match = /^\s*([\d.]+)%\s+(\S+(?: tid \d+)?)\s+\[.\]\s+(.*)$/.exec(line);
    if (match === null) continue;
    const kind = kindOf(match[2] ?? '', match[3] ?? '');
    kinds.set(kind, (kinds.get(kind) ?? 0) + (Number(match[1]) / 100) * (totalUs / queries));
  }
  return kinds;
}

/** Where a JavaScript frame's function is defined, short: `runtime/dist/query/x.js:12:3`, `piscina/dist/x.js:…`. */
function shortPlace(place: string): string {
  return place
    .replace(/.*\/(?:packages|node_modules\/\.pnpm\/[^/]+\/node_modules)\//, '')
    .replace(/^file:\/\/\/.*\/bench\/dist\//, 'bench/');
}

interface ThreadSamples {
  samples: number;
  /** The server's own files in its stacks, by samples. */
  readonly files: Map<string, number>;
  /** The library of each sample's innermost frame, by samples. */
  readonly dsos: Map<string, number>;
  /** Each sample's innermost JavaScript function, by samples. */
  readonly owners: Map<string, number>;
}

export interface ThreadSplit {
  /** `main thread`; else `<file> thread` for the server's own file seen most in its stacks; else `<library> thread`. */
  readonly label: string;
  /** µs per query. */
  readonly total: number;
  /** µs per query per innermost JavaScript function on the stack (`(no JavaScript frame: native code)` when none). */
  readonly owners: Map<string, number>;
}

const mostOf = (counts: Map<string, number>): string | undefined =>
  [...counts].sort((a, b) => b[1] - a[1])[0]?.[0];

/**
 * `perf script`'s samples per thread, largest first, in µs per query. A thread is named by the
 * server's own code it runs (a query worker's `query/duckdb-thread.js`), else by the library it
 * spends most in (libuv's pool threads and DuckDB's run `libduckdb.so`, V8's helpers `node`).
 */
export function threadsOfScript(script: string, mainTid: number, queries: number, hz: number): ThreadSplit[] {
  const byTid = new Map<string, ThreadSamples>();
  const bump = (counts: Map<string, number>, key: string): void => {
    counts.set(key, (counts.get(key) ?? 0) + 1);
  };
  for (const sample of script.split('\n\n')) {
    const lines = sample.split('\n');
    const tid = /^\S+\s+(\d+)/.exec(lines.find((line) => line.trim() !== '') ?? '')?.[1];
    const frames = lines.filter((line) => /^\s+[0-9a-f]+ /.test(line));
    if (tid === undefined || frames.length === 0) continue;
    let thread = byTid.get(tid);
    if (thread === undefined) {
      thread = { samples: 0, files: new Map(), dsos: new Map(), owners: new Map() };
      byTid.set(tid, thread);
    }
    thread.samples++;
    bump(
      thread.dsos,
      /\(([^()]*)\)\s*$/
        .exec(frames[0] ?? '')?.[1]
        ?.split('/')
        .pop() ?? '?',
    );
    let owner: string | undefined;
    for (const frame of frames) {
      const js = /JS:[*^~]?(\S*) (\S+?)(?:\+0x[0-9a-f]+)? /.exec(`${frame} `);
      if (js === null) continue;
      const place = shortPlace(js[2] ?? '');
      owner ??= `${js[1] || '(anonymous)'} ${place}`;
      const own =
        /^(?:runtime|server|engines|core|flight|store|snapshots)\/dist\/([^:]*\.js)|^(bench\/[^:]*\.js)/.exec(
          place,
        );
      if (own !== null) bump(thread.files, own[1] ?? own[2] ?? place);
    }
    bump(thread.owners, owner ?? '(no JavaScript frame: native code)');
  }
  const perSample = 1e6 / hz / queries;
  return [...byTid]
    .map(([tid, thread]) => {
      const file = mostOf(thread.files);
      const label =
        tid === String(mainTid)
          ? 'main thread'
          : file !== undefined
            ? `${file} thread`
            : `${mostOf(thread.dsos) ?? '?'} thread`;
      return {
        label,
        total: thread.samples * perSample,
        owners: new Map([...thread.owners].map(([owner, n]) => [owner, n * perSample])),
      };
    })
    .sort((a, b) => b.total - a.total);
}
