/**
 * The entry of a snapshot pool worker (piscina; see `snapshot-pool.ts`): one `SnapshotTaskRunner`
 * per worker, answering each task with a `SnapshotTaskReply`. Its warm checkers close after 10 s
 * without use, before piscina ends an idle worker (30 s by default), so a worker never ends with a
 * DuckDB instance open.
 */
import { isMainThread } from 'node:worker_threads';
import { serializeError } from '@ferry/core/base';
import type { SnapshotTask, SnapshotTaskReply } from '../common/protocol.js';
import { SnapshotTaskRunner } from './snapshot-tasks.js';

if (isMainThread) {
  throw new Error(
    'snapshot-pool/thread.js is the entry of a snapshot pool worker; it is started by the coordinator.',
  );
}

const runner = new SnapshotTaskRunner();

/** Runs a task; its failure is returned serialised, with its code and message. */
export default async function runSnapshotTask(task: SnapshotTask): Promise<SnapshotTaskReply> {
  try {
    return { ok: true, value: await runner.run(task) };
  } catch (error) {
    return { ok: false, error: serializeError(error) };
  }
}
