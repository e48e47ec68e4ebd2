/**
 * Query threads run below the host thread's priority. The host thread answers probes
 * (`/health`, `/v1/ready`), accepts connections, refuses queries past the admission bound and
 * writes answers; the query threads (DuckDB workers and the threads DuckDB starts from them, the
 * SQLite read threads) do the bulk work. When cores are short — a burst of heavy queries — an
 * equal share left the host thread one runnable thread among many, and a probe waited seconds
 * (B15). On Linux, where a thread's nice value is its own and inherited by the threads it starts,
 * each query thread raises its own nice value by `queryThreadNiceness` (default 10) when it
 * starts; elsewhere threads keep the process's priority.
 */
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** Raises the calling thread's nice value by `niceness` (at most 19); false where it cannot. */
export function lowerThreadPriority(niceness: number): boolean {
  if (niceness <= 0 || process.platform !== 'linux') return false;
  try {
    // `/proc/thread-self` is `<pid>/task/<tid>`; setpriority(2) on a thread id sets that thread only.
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    setPriority(tid, Math.min(19, getPriority(tid) + niceness));
    return true;
  } catch {
    // A container without /proc, or refused: the thread keeps the process's priority.
    return false;
  }
}
