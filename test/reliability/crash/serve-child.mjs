/**
 * The serving process of the crash-safety test: a Ferry runtime (the built dist, real threads) on
 * the spicepod named on the command line, reporting its log lines and swaps to the test over IPC
 * and answering queries the test sends. The test kills it with SIGKILL at random instants.
 */
import { createRuntime } from '@ferry/runtime';

const [spicepod, dataDir] = process.argv.slice(2);

function send(message) {
  process.send?.(message);
}

const line = (level) => (fields, message) => send({ type: 'log', level, message, fields });
const runtime = await createRuntime(spicepod, {
  dataDir,
  logger: { debug() {}, info: line('info'), warn: line('warn'), error: line('error') },
});
runtime.on('swap', (event) => send({ type: 'swap', from: event.from, to: event.to }));

process.on('message', async (message) => {
  if (message.type === 'query') {
    try {
      // The restore log line comes from the dataset thread a moment before the host's status says so.
      const result = await runtime.query(message.sql, [], { waitForReady: true, readyTimeoutMs: 10_000 });
      send({ type: 'result', id: message.id, rows: result.rows, snapshotId: result.snapshotId });
    } catch (error) {
      send({ type: 'result', id: message.id, error: { code: error.code, message: error.message } });
    }
  } else if (message.type === 'poll') {
    await runtime.send(message.dataset, 'poll.now').catch(() => undefined);
  }
});

send({ type: 'started' });
