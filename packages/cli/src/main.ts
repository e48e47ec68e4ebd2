/**
 * The `ferry` executable's ES module, run by `ferry.cjs` (which sizes libuv's threadpool first):
 * runs the CLI with this process's streams and environment, then exits with its code. Signal
 * handlers are installed only by commands that wait for one (`serve`), so Ctrl-C still ends any
 * other command at once (`publish` first removes its build folder). Once a signal has asked for a
 * clean shutdown, the process ends within {@link SHUTDOWN_LIMIT_MS} whatever still runs, and a
 * second signal ends it at once.
 */
import { runCli } from './cli.js';

/**
 * The longest a clean shutdown may take: the servers' drain period (5 s, in-flight requests
 * finish) and 1 s for the runtime to stop its threads.
 */
const SHUTDOWN_LIMIT_MS = 6_000;

/**
 * Ends the process now, by the default action of `signal` (SIGINT: exit status 130; SIGTERM: 143).
 * Not `process.exit()`: it waits for every worker thread to stop, which a thread inside native code
 * does only once that call returns.
 */
function endNow(signal: 'SIGINT' | 'SIGTERM'): never {
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
  process.kill(process.pid, signal);
  // The signal is delivered before kill() returns to a single-threaded caller; never reached.
  process.exit(signal === 'SIGINT' ? 130 : 143);
}

let shutdown: Promise<string> | undefined;
/** Ends the process if a clean shutdown, once asked for, takes too long (kept alive until then). */
let deadline: NodeJS.Timeout | undefined;

function waitForShutdown(): Promise<string> {
  shutdown ??= new Promise<string>((resolve) => {
    let received = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      received++;
      if (received > 1) {
        process.stderr.write(`ferry: ${signal} again; exiting without a clean shutdown\n`);
        endNow('SIGINT');
      }
      deadline = setTimeout(() => {
        process.stderr.write(
          `ferry: the shutdown did not finish within ${SHUTDOWN_LIMIT_MS / 1000} s; exiting without waiting for it\n`,
        );
        endNow('SIGTERM');
      }, SHUTDOWN_LIMIT_MS);
      resolve(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
  return shutdown;
}

const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  waitForShutdown,
});
clearTimeout(deadline);
process.exitCode = code;
// Exit even if a library left a handle open (a keep-alive socket); normally the loop is empty by now.
setTimeout(() => process.exit(code), 2_000).unref();
