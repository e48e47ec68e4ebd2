/**
 * A per-object lock file for the file:// store, so a conditional put (check the ETag, then rename)
 * is atomic against every other writer using the store, in this process or another. The lock is
 * created with O_EXCL and records its owner; a lock whose owner process is gone, or that is older
 * than `staleMs`, is broken. Locks are held only around the check and the rename, never while a
 * body is written, so a healthy holder never comes near `staleMs`.
 */
import { link, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';

export interface LockOptions {
  /** Give up (retryable error) after waiting this long. */
  readonly timeoutMs: number;
  /** A lock older than this is considered abandoned. */
  readonly staleMs: number;
}

interface LockOwner {
  readonly pid: number;
  readonly host: string;
  readonly at: number;
}

export class LockTimeoutError extends Error {
  constructor(readonly lockPath: string) {
    super(`Timed out waiting for lock ${lockPath}`);
    this.name = 'LockTimeoutError';
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function isStale(lockPath: string, staleMs: number): Promise<boolean> {
  let text: string;
  let mtimeMs: number;
  try {
    const [content, info] = await Promise.all([readFile(lockPath, 'utf8'), stat(lockPath)]);
    text = content;
    mtimeMs = info.mtimeMs;
  } catch {
    // Gone since we looked: it is free, not stale.
    return false;
  }
  if (Date.now() - mtimeMs > staleMs) return true;
  let owner: Partial<LockOwner>;
  try {
    owner = JSON.parse(text) as Partial<LockOwner>;
  } catch {
    // Empty or partial: its owner is writing it right now, or died doing so (then age decides).
    return false;
  }
  return owner.host === hostname() && typeof owner.pid === 'number' && !isAlive(owner.pid);
}

/** Break a stale lock without breaking a fresh one that replaced it in the meantime. */
async function breakLock(lockPath: string, staleMs: number): Promise<void> {
  const aside = `${lockPath}.${process.pid}.${Math.random().toString(36).slice(2)}.stale`;
  try {
    await rename(lockPath, aside);
  } catch {
    return;
  }
  // The rename took whatever held the name by then. If that was a fresh lock, give it back, unless
  // yet another lock took the name meanwhile (link never overwrites).
  if (!(await isStale(aside, staleMs))) {
    await link(aside, lockPath).catch(() => undefined);
    await rm(aside, { force: true });
    return;
  }
  await rm(aside, { force: true });
}

/** Acquire `lockPath`, run `body`, release. */
export async function withLock<T>(
  lockPath: string,
  options: LockOptions,
  body: () => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  for (let attempt = 0; ; attempt++) {
    try {
      const handle = await open(lockPath, 'wx');
      try {
        const owner: LockOwner = { pid: process.pid, host: hostname(), at: Date.now() };
        await handle.writeFile(JSON.stringify(owner));
      } finally {
        await handle.close();
      }
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (await isStale(lockPath, options.staleMs)) {
        await breakLock(lockPath, options.staleMs);
        continue;
      }
      if (Date.now() >= deadline) throw new LockTimeoutError(lockPath);
      await delay(Math.min(2 ** attempt, 25));
    }
  }
  try {
    return await body();
  } finally {
    await rm(lockPath, { force: true });
  }
}
