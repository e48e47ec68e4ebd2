/**
 * V8's `--trace-gc-nvp` lines (one per collection, `name=value` pairs) summed per isolate, for
 * gc-split.ts.
 */

/** One isolate's collections in the window. */
export interface IsolateGc {
  scavenges: number;
  scavengeMs: number;
  /** The scavenges' parallel work on V8's helper threads. */
  backgroundMs: number;
  markCompacts: number;
  markCompactMs: number;
  allocated: number;
  survived: number;
  promoted: number;
}

/** `[pid:0xisolate]   123 ms: pause=… gc=s … allocated=…`: a line of `--trace-gc-nvp`. */
export const NVP_LINE = /^\[\d+:(0x[0-9a-f]+)\]\s+(\d+) ms: (.*)$/;

/** Sums `--trace-gc-nvp` lines per isolate (in the order isolates first appear). */
export function sumCollections(lines: readonly string[]): Map<string, IsolateGc> {
  const isolates = new Map<string, IsolateGc>();
  for (const line of lines) {
    const match = NVP_LINE.exec(line);
    if (match === null) continue;
    const fields = new Map<string, string>();
    for (const pair of (match[3] as string).split(' ')) {
      const at = pair.indexOf('=');
      if (at > 0) fields.set(pair.slice(0, at), pair.slice(at + 1));
    }
    const number = (name: string): number => Number(fields.get(name) ?? 0) || 0;
    const gc = isolates.get(match[1] as string) ?? {
      scavenges: 0,
      scavengeMs: 0,
      backgroundMs: 0,
      markCompacts: 0,
      markCompactMs: 0,
      allocated: 0,
      survived: 0,
      promoted: 0,
    };
    isolates.set(match[1] as string, gc);
    const kind = fields.get('gc');
    if (kind === 's') {
      gc.scavenges++;
      gc.scavengeMs += number('pause');
      gc.backgroundMs += number('background.scavenge.parallel');
      gc.allocated += number('allocated');
      gc.survived += number('new_space_survived');
      gc.promoted += number('promoted');
    } else if (kind === 'mc' || kind === 'ms') {
      gc.markCompacts++;
      gc.markCompactMs += number('pause');
    }
  }
  return isolates;
}

/**
 * The isolate that started first: the process's main thread (it starts every worker). A line's
 * time is since its isolate started, so `at` (when the line was read, ms) minus it is when that
 * isolate started, give or take the pipe's delay; the earliest over all lines is the main thread's.
 */
export function firstIsolate(
  lines: readonly { readonly line: string; readonly at: number }[],
): string | undefined {
  let first: { isolate: string; started: number } | undefined;
  for (const { line, at } of lines) {
    const match = NVP_LINE.exec(line);
    if (match === null) continue;
    const started = at - Number(match[2]);
    if (first === undefined || started < first.started) first = { isolate: match[1] as string, started };
  }
  return first?.isolate;
}
