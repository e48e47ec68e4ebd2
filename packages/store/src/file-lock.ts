/**
 * A per-object lock file for the file:// store, so a conditional put (check the ETag, then rename)
 * is atomic against every other writer using the store, in this process or another.
 *
 * Why not a plain O_EXCL file with "rename a stale lock aside": breaking a stale lock that way races.
 * A breaker that judged the lock stale a moment ago can take away the fresh lock that replaced it,
 * and two writers then both hold the lock. (proper-lockfile has the same window: two breakers that
 * both saw a stale lock each remove "it", the second removing the first one's fresh lock.) Here:
 *
 * - A lock is one file `L` that is never seen half-written: its owner record (`pid`, `host`, `at`, a
 *   random `token`) is written to a temporary file that is then hard-linked to `L`, which fails if
 *   `L` exists. Exactly one of any number of contenders creates `L`.
 * - A lock instance is identified by its content and inode (the token makes every instance's content
 *   unique). Before removing an abandoned instance X, a breaker must create the marker
 *   `L.<id of X>.<n>.break` the same exclusive way; only the marker's creator re-reads `L` and removes
 *   it if it is still X. While the marker exists nobody else may remove X, and X's owner is gone, so
 *   between that re-read and the removal `L` cannot become another instance. A breaker that comes
 *   late finds the marker (or, after it is cleaned up, an `L` that is no longer X) and removes
 *   nothing. A breaker that died holding a marker is itself abandoned: the next one uses level n+1.
 * - Abandoned means: the owner's process is gone (same host), or the file is older than `staleMs`
 *   (another host's owner; a lock is held only around a check and a rename, never near `staleMs`).
 *   That is the one assumption, as for any lock that must survive its owner's crash.
 *
 * So two holders at once are impossible unless a live holder outlasts `staleMs`. The test
 * `file-lock.test.ts` runs processes that contend and crash while holding the lock, and checks
 * that no two ever hold it together.
 */
import { createHash, randomUUID } from 'node:crypto';
import { link, lstat, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { registerErrors } from '@ferry/core/base';

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
  readonly token: string;
}

/** The levels of break markers tried for one lock instance before waiting for the markers to clear. */
const MAX_BREAK_LEVELS = 8;

export class LockTimeoutError extends Error {
  constructor(readonly lockPath: string) {
    super(`Timed out waiting for lock ${lockPath}`);
    this.name = 'LockTimeoutError';
  }
}
registerErrors({ LockTimeoutError });

/** Whether process `pid` of this host still runs (a process of another user counts as running). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'ENOENT';
}

interface Instance {
  /** Content and inode, hashed: unique per lock instance. */
  readonly id: string;
  readonly abandoned: boolean;
}

/** The instance at `path` now, or undefined when there is none. */
async function instanceAt(path: string, staleMs: number): Promise<Instance | undefined> {
  let text: string;
  let ino: bigint;
  let mtimeMs: number;
  try {
    const [content, info] = await Promise.all([readFile(path, 'utf8'), lstat(path, { bigint: true })]);
    text = content;
    ino = info.ino;
    mtimeMs = Number(info.mtimeMs);
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
  const id = createHash('sha256').update(`${ino}\n${text}`).digest('hex').slice(0, 24);
  if (Date.now() - mtimeMs > staleMs) return { id, abandoned: true };
  let owner: Partial<LockOwner>;
  try {
    owner = JSON.parse(text) as Partial<LockOwner>;
  } catch {
    // Not written by this module (locks are linked in whole): only age can tell.
    return { id, abandoned: false };
  }
  const abandoned = owner.host === hostname() && typeof owner.pid === 'number' && !isAlive(owner.pid);
  return { id, abandoned };
}

/** Create `path` holding a fresh owner record, atomically and only if it does not exist. */
async function createExclusive(path: string): Promise<LockOwner | undefined> {
  const owner: LockOwner = { pid: process.pid, host: hostname(), at: Date.now(), token: randomUUID() };
  const staged = `${path}.${owner.token}.ferry-tmp`;
  await writeFile(staged, JSON.stringify(owner), { flag: 'wx' });
  try {
    await link(staged, path);
    return owner;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw error;
  } finally {
    await rm(staged, { force: true });
  }
}

/** Remove `path` if it is still the instance `owner` created (the token is in its content). */
async function removeIfOwned(path: string, owner: LockOwner): Promise<void> {
  try {
    const current = JSON.parse(await readFile(path, 'utf8')) as Partial<LockOwner>;
    if (current.token === owner.token) await rm(path, { force: true });
  } catch (error) {
    if (!isMissing(error) && !(error instanceof SyntaxError)) throw error;
  }
}

/**
 * Remove the abandoned instance `stale` of `lockPath`, unless someone else is already doing so or it
 * is no longer there. Returns whether the caller should try to acquire again at once.
 */
async function breakAbandoned(lockPath: string, stale: Instance, staleMs: number): Promise<boolean> {
  for (let level = 1; level <= MAX_BREAK_LEVELS; level++) {
    const marker = `${lockPath}.${stale.id}.${level}.break.ferry-lock`;
    const mine = await createExclusive(marker);
    if (mine === undefined) {
      // Another breaker holds this level: wait for it, unless it died there.
      if ((await instanceAt(marker, staleMs))?.abandoned !== true) return false;
      continue;
    }
    try {
      if ((await instanceAt(lockPath, staleMs))?.id === stale.id) await rm(lockPath, { force: true });
    } finally {
      // Nobody removes X after this: it is gone, and a late breaker's re-read sees another instance.
      for (let lower = level; lower >= 1; lower--) {
        await rm(`${lockPath}.${stale.id}.${lower}.break.ferry-lock`, { force: true });
      }
    }
    return true;
  }
  return false;
}

/** Acquire `lockPath`, run `body`, release. */
export async function withLock<T>(
  lockPath: string,
  options: LockOptions,
  body: () => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let owner: LockOwner | undefined;
  for (let attempt = 0; ; attempt++) {
    owner = await createExclusive(lockPath);
    if (owner !== undefined) break;
    const current = await instanceAt(lockPath, options.staleMs);
    if (current === undefined) continue;
    if (current.abandoned && (await breakAbandoned(lockPath, current, options.staleMs))) continue;
    if (Date.now() >= deadline) throw new LockTimeoutError(lockPath);
    await delay(Math.min(2 ** attempt, 25));
  }
  try {
    return await body();
  } finally {
    await removeIfOwned(lockPath, owner);
  }
}
