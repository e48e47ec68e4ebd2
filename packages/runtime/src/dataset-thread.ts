/**
 * The entry of a dataset thread: a {@link DatasetHost} on the thread's two ports (the coordinator's
 * `parentPort`, the host's transferred MessagePort). An uncaught error ends the thread — the
 * coordinator restarts it and it bootstraps again from its live file — once the host has wound
 * its native work down. The coordinator's `crash` drill (sent only through `@ferry/runtime/testing`)
 * raises such an error on purpose.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { DatasetHost } from './dataset-host.js';
import type { CoordinatorToDataset, DatasetWorkerData } from './protocol.js';

if (isMainThread || parentPort === null) {
  throw new Error('dataset-thread.js is the entry of a dataset thread; it is started by the coordinator.');
}

const coordinator = parentPort;
const { hostPort, ...data } = workerData as DatasetWorkerData;
const host = new DatasetHost(data, { coordinator, host: hostPort });

async function crash(error: unknown): Promise<void> {
  await host.crash(error);
  process.exit(1);
}
process.on('uncaughtException', (error) => void crash(error));
process.on('unhandledRejection', (error) => void crash(error));

coordinator.on('message', (message: CoordinatorToDataset) => {
  if (message.type === 'crash') {
    setImmediate(() => {
      throw new Error('crash drill: terminateDatasetThread() was called');
    });
  }
});

host.start();
