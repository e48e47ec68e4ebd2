/**
 * Query threads run below the host thread's priority. The host thread answers probes
 * (`/health`, `/v1/ready`), accepts connections, refuses queries past the admission bound and
 * writes answers; the query threads (DuckDB workers and the threads DuckDB starts from them, the
 * SQLite read threads) do the bulk work. When cores are short — a burst of heavy queries — an
 * equal share left the host thread one runnable thread among many, and a probe waited seconds
 * (B15). On Linux, where a thread's nice value is its own and inherited by the threads it starts,
 * each query thread raises its own nice value by `queryThreadNiceness` when it starts; elsewhere
 * threads keep the process's priority. It is 2 by default: a nice value also yields the engines to
 * every other process on the machine, and at 10 (the default before) B9's cheap load beside its
 * clients served 0.82–0.87× a plain server, at 2 1.07–1.11×, while B15's probes took 56–67 ms at 2
 * against 30 at 10 (goal 500; docs/reliability.md).
 *
 * DuckDB's statements do not run on its worker threads, though: @duckdb/node-api runs them as
 * Node-API async work, on libuv's threadpool, which the whole process shares (its threads start
 * from whichever thread first queued work, at that thread's priority). Measured in B15: the host
 * thread, 90 % busy answering a burst, got ~45 % of a core while four pool threads at its priority
 * ran the admitted DuckDB queries, and probes waited up to 3 s. So the pool's threads are lowered
 * too ({@link lowerThreadpoolPriority}); the file system calls that share it (snapshot downloads'
 * writes, the host's few) then wait behind the host as well, which is the point.
 */

import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { readlink } from 'node:fs/promises';
import { getPriority, setPriority } from 'node:os';

/** Raises the calling thread's nice value by `niceness` (at most 19); false where it cannot. */
export function lowerThreadPriority(niceness: number): boolean {
  if (niceness <= 0 || process.platform !== 'linux') return false;
  try {
    // setpriority(2) on a thread id sets that thread only; `/proc/thread-self` is `<pid>/task/<tid>`.
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    setPriority(tid, Math.min(19, getPriority(tid) + niceness));
    return true;
  } catch {
    // A container without /proc, or refused: the thread keeps the process's priority.
    return false;
  }
}

/**
 * The ids of the threadpool threads that answered one round of `count` reads of
 * `/proc/thread-self`: an asynchronous `readlink` runs on a pool thread, so the link names that
 * thread, exactly (never another thread busy at the same moment). Queued at once, the reads wake
 * every idle pool thread.
 */
async function poolThreadsAnswering(count: number): Promise<Set<number>> {
  const links = await Promise.all(Array.from({ length: count }, () => readlink('/proc/thread-self')));
  return new Set(links.map((link) => Number(link.split('/').pop())));
}

/** libuv's name for its threadpool threads (libuv 1.50+, Node 22 and 24); older ones leave them unnamed. */
const POOL_THREAD_NAME = 'libuv-worker';

/** A thread's name (`comm`), or undefined once it has ended. */
function threadName(tid: number): string | undefined {
  try {
    return readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** This process's threads that libuv named as its threadpool's (none where libuv names no thread). */
function namedPoolThreads(): number[] {
  const named: number[] = [];
  for (const tid of readdirSync('/proc/self/task')) {
    if (threadName(Number(tid)) === POOL_THREAD_NAME) named.push(Number(tid));
  }
  return named;
}

let lowered: Promise<number> | undefined;

/**
 * Raises the nice value of libuv's threadpool threads by `niceness` (once per process; Linux only).
 * Where libuv names them (`libuv-worker`, Node 22 and 24) they are found by name once the pool has
 * started; elsewhere (Node 20) as the threads that answer reads of `/proc/thread-self`, in rounds
 * until every one is seen (one round here; at most 50). Before, Node 20 took the threads that used
 * CPU while the pool ran, and a V8 thread busy at that moment on a loaded machine was taken for a
 * pool thread, which then ran DuckDB at the host's priority. Resolves with how many were lowered (0
 * where it cannot).
 */
export function lowerThreadpoolPriority(niceness: number): Promise<number> {
  if (niceness <= 0 || process.platform !== 'linux') return Promise.resolve(0);
  lowered ??= (async () => {
    const size = Math.max(1, Math.min(1_024, Number(process.env.UV_THREADPOOL_SIZE) || 4));
    // The first read starts the whole pool (libuv starts every thread at once).
    let pool = await poolThreadsAnswering(8 * size);
    const named = namedPoolThreads();
    if (named.length > 0) pool = new Set(named);
    for (let round = 1; round < 50 && pool.size < size; round++) {
      for (const tid of await poolThreadsAnswering(8 * size)) pool.add(tid);
    }
    let count = 0;
    for (const tid of [...pool].slice(0, size)) {
      try {
        setPriority(tid, Math.min(19, getPriority(tid) + niceness));
        count++;
      } catch {
        // Ended, or refused: it keeps its priority.
      }
    }
    return count;
  })().catch(() => 0);
  return lowered;
}
