/**
 * The entry of a snapshot pool worker (piscina; see `snapshot-pool.ts`): one `SnapshotTaskRunner`
 * per worker, answering each task with a `SnapshotTaskReply`. Its warm checkers close after 10 s
 * without use, before piscina ends an idle worker (30 s by default), so a worker never ends with a
 * DuckDB instance open.
 */
import { isMainThread } from 'node:worker_threads';
import type { SnapshotTask, SnapshotTaskReply } from '../common/protocol.js';
import { SnapshotTaskRunner } from './snapshot-tasks.js';

if (isMainThread) {
  throw new Error(
    'snapshot-pool/thread.js is the entry of a snapshot pool worker; it is started by the coordinator.',
  );
}

const runner = new SnapshotTaskRunner();

export default function runSnapshotTask(task: SnapshotTask): Promise<SnapshotTaskReply> {
  return runner.reply(task);
}
