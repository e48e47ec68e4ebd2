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
