/**
 * The entry of a dataset thread: a {@link DatasetHost} on the thread's two ports (the coordinator's
 * `parentPort`, the host's transferred MessagePort), its snapshot tasks sent to the coordinator,
 * which runs them on the shared snapshot pool. This entry's module graph is xstate, the machine and
 * the thread protocol (`test/architecture/thread-imports.test.ts`). An uncaught error ends the
 * thread — the coordinator restarts it and it bootstraps again from its live file — once the host
 * has waited for its work in flight. The host's crash drill (sent only through
 * `@ferry/runtime/testing`) raises such an error on purpose.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { DatasetWorkerData, HostToDataset } from '../common/protocol.js';
import type { CrashDrill } from '../common/test-hooks.js';
import { checkBuildId } from '../common/thread-files.js';
import { DatasetHost } from './dataset-host.js';

if (isMainThread || parentPort === null) {
  throw new Error('dataset/thread.js is the entry of a dataset thread; it is started by the coordinator.');
}

const coordinator = parentPort;
const { hostPort, buildId, ...data } = workerData as DatasetWorkerData;
checkBuildId(buildId, import.meta.url);

const host = new DatasetHost(data, { coordinator, host: hostPort });

async function crash(error: unknown): Promise<void> {
  await host.crash(error);
  process.exit(1);
}
process.on('uncaughtException', (error) => void crash(error));
process.on('unhandledRejection', (error) => void crash(error));

hostPort.on('message', (message: HostToDataset | CrashDrill) => {
  if (message.type === 'test-crash') {
    setImmediate(() => {
      throw new Error('crash drill: terminateDatasetThread() was called');
    });
  }
});

host.start();
