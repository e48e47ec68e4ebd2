/**
 * The file:// store's lock across processes: several processes contend for one lock while some of
 * them die holding it (SIGKILL inside the critical section), so the others keep breaking abandoned
 * locks at the same time. Each holder proves it is alone by creating a witness file with O_EXCL; a
 * second holder at any moment fails that and reports the overlap.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withLock } from '../src/file-lock.js';

const LOCK_MODULE = new URL('../dist/file-lock.js', import.meta.url).href;

/**
 * One contender: up to `iterations` critical sections, dying in each with probability `crash`. At
 * 0.3 most acquisitions find a dead holder's lock, so several contenders break locks at once: the
 * O_EXCL lock with "rename a stale lock aside" this replaced let two holders in on every run.
 */
const WORKER = `
import { open, rm } from 'node:fs/promises';
import { withLock } from ${JSON.stringify(LOCK_MODULE)};
const [lock, witness, iterations, crash] = process.argv.slice(2);
for (let i = 0; i < Number(iterations); i++) {
  await withLock(lock, { timeoutMs: 30_000, staleMs: 60_000 }, async () => {
    let handle;
    try {
      handle = await open(witness, 'wx');
    } catch {
      process.stdout.write('OVERLAP\\n');
      process.exit(3);
    }
    await handle.close();
    await new Promise((resolve) => setImmediate(resolve));
    await rm(witness);
    if (Math.random() < Number(crash)) process.kill(process.pid, 'SIGKILL');
  });
  process.stdout.write('.');
}
`;

interface Outcome {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly sections: number;
  readonly overlap: boolean;
}

function runWorker(script: string, args: readonly string[]): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, [script, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      err += chunk;
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code !== 0 && code !== 3 && signal !== 'SIGKILL') {
        reject(new Error(`worker exited ${code ?? signal}: ${err}`));
        return;
      }
      resolve({ code, signal, sections: out.split('.').length - 1, overlap: out.includes('OVERLAP') });
    });
  });
}

describe('withLock across processes', () => {
  let dir: string;
  let script: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ferry-file-lock-'));
    script = join(dir, 'worker.mjs');
    await writeFile(script, WORKER);
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('never lets two processes hold the lock, while holders die and abandoned locks are broken', async () => {
    const area = join(dir, 'area');
    await mkdir(area);
    const lock = join(area, '.metadata.json.ferry-lock');
    const witness = join(dir, 'witness');
    const contenders = 6;
    const rounds = 12;
    let sections = 0;
    let crashes = 0;
    let overlaps = 0;
    for (let round = 0; round < rounds; round++) {
      const outcomes = await Promise.all(
        Array.from({ length: contenders }, () => runWorker(script, [lock, witness, '40', '0.3'])),
      );
      for (const outcome of outcomes) {
        sections += outcome.sections;
        if (outcome.signal === 'SIGKILL') crashes++;
        if (outcome.overlap) overlaps++;
      }
    }
    expect(overlaps).toBe(0);
    // The run really contended and really broke locks of dead holders.
    expect(crashes).toBeGreaterThanOrEqual((contenders * rounds) / 2);
    expect(sections).toBeGreaterThan(contenders * rounds);
    // A lock left by the last dead holder is broken too, and nothing of the lock stays behind.
    await withLock(lock, { timeoutMs: 5_000, staleMs: 60_000 }, async () => undefined);
    expect(await readdir(area)).toEqual([]);
  }, 180_000);
});
