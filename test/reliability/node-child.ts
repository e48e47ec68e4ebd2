/**
 * Runs a script in a child Node (this Node's binary) and collects how it ended and what it printed:
 * the tests of native crashes (better-sqlite3 aborting the process) run their loops there, so a
 * regression shows as the child's abort, not the test runner's.
 */
import { spawn } from 'node:child_process';

export interface NodeChildResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** stdout then stderr as they came, trimmed. */
  readonly out: string;
}

/** Runs `node ...flags -e script`; resolves when the child exits. */
export async function runNodeChild(script: string, flags: readonly string[] = []): Promise<NodeChildResult> {
  const child = spawn(process.execPath, [...flags, '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const collect = (chunk: Buffer): void => {
    out += chunk.toString();
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('exit', (exitCode, exitSignal) => resolve([exitCode, exitSignal])),
  );
  return { code, signal, out: out.trim() };
}
