/**
 * A bare worker thread that posts every message straight back: the round trip through it is the
 * floor of any thread hop (B1's second baseline).
 */
import { isMainThread, parentPort } from 'node:worker_threads';

if (isMainThread || parentPort === null) throw new Error('echo-worker.js runs as a worker thread.');
const port = parentPort;
port.on('message', (message: unknown) => port.postMessage(message));
