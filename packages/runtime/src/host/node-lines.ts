/**
 * The Node lines Ferry supports, in one place: `engines` in every package.json says the same range
 * (test/architecture/node-lines.test.ts checks it), CI runs every test on each line (`.ci/run`),
 * and docs/node-versions.md says why these and what differed. A runtime started on another Node
 * says so once, in one line of its own, and runs on: it may work, but nothing here tested it.
 */

/** Each supported line and its oldest release (vite 8, the test toolchain, needs 20.19 / 22.12). */
export const SUPPORTED_NODE_LINES: readonly { readonly major: number; readonly minor: number }[] = [
  { major: 20, minor: 19 },
  { major: 22, minor: 12 },
  { major: 24, minor: 0 },
];

/** The same as an `engines.node` range: `^20.19.0 || ^22.12.0 || ^24.0.0`. */
export const SUPPORTED_NODE_RANGE = SUPPORTED_NODE_LINES.map(
  ({ major, minor }) => `^${major}.${minor}.0`,
).join(' || ');

let said = false;

/** Whether `version` (`v24.21.0`) is in a supported line, at or after its oldest release. */
export function isSupportedNode(version: string): boolean {
  const [major, minor] = version.replace(/^v/, '').split('.').map(Number);
  return SUPPORTED_NODE_LINES.some((line) => line.major === major && (minor ?? 0) >= line.minor);
}

/**
 * The line to log when this Node is not a supported one, once per process (undefined when
 * supported, or already said).
 */
export function nodeLineNoticeOnce(version: string = process.version): string | undefined {
  if (said || isSupportedNode(version)) return undefined;
  said = true;
  const lines = SUPPORTED_NODE_LINES.map((line) => line.major);
  return `Node ${version} is not a Node line Ferry supports (${lines.slice(0, -1).join(', ')} and ${lines.at(-1)}: ${SUPPORTED_NODE_RANGE}); it starts, but nothing is tested on it: run Ferry on one of those lines.`;
}

/**
 * From this many datasets on, a runtime on Node 20 says how to start it reliably. Node 20's V8
 * (11.3) has a garbage-collector stall that Node 22's and 24's do not: a thread whose share of a
 * collection is done while the sweeper's background job still waits for one of V8's four helper
 * threads posts its next sweeping task at once, again and again, instead of after a delay. With
 * hundreds of dataset threads those threads spin together and starve the helpers they wait on.
 * Measured with 1,000 datasets on a 2-core machine (bench/RESULTS.md, "1,000 datasets on Node
 * 20"): all serving in 65–66 s in three runs of seven and in 198–226 s (RSS 8.2–8.8 → 9.8–10.3
 * GiB) in the other four; `node --single-threaded-gc` (V8's collector without helper threads)
 * 55–56 s in three of three, Node 22 68–73 s in three of three. V8 reads the flag when it
 * starts, so only the command line can give it; setting it later (`v8.setFlagsFromString`) aborts
 * the process.
 */
export const MANY_DATASETS_ON_NODE_20 = 200;

/**
 * The line to log when a runtime with `datasets` datasets starts on Node 20 without
 * `--single-threaded-gc` among `execArgv` (undefined otherwise).
 */
export function manyThreadsNotice(
  datasets: number,
  version: string = process.version,
  execArgv: readonly string[] = process.execArgv,
): string | undefined {
  if (datasets < MANY_DATASETS_ON_NODE_20 || !version.startsWith('v20.')) return undefined;
  if (execArgv.some((arg) => arg === '--single-threaded-gc' || arg === '--single_threaded_gc'))
    return undefined;
  return `${datasets} datasets on Node ${version}: V8's garbage collector on this Node line can stall start-up for minutes with this many threads; run Ferry on Node 22 or 24, or start Node with --single-threaded-gc (node --single-threaded-gc <ferry> serve …).`;
}
