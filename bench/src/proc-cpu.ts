/**
 * CPU time from Linux's `/proc`: a process's (every thread, `/proc/<pid>/stat`) and each of its
 * threads' (`/proc/<pid>/task/<tid>/stat`), as utime + stime.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

/** Clock ticks per second of `/proc/…/stat` (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** utime + stime of a `stat` line, in seconds. */
function statCpuSeconds(stat: string): number {
  // Fields after the command (which may hold spaces and parentheses) start after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** CPU seconds the process `pid` has used so far, every thread. */
export async function processCpuSeconds(pid: number): Promise<number> {
  return statCpuSeconds(await readFile(`/proc/${pid}/stat`, 'utf8'));
}

/** CPU seconds each thread of `pid` has used so far, by thread id. */
export function threadCpuSeconds(pid: number): Map<string, number> {
  const cpu = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      cpu.set(tid, statCpuSeconds(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')));
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return cpu;
}
