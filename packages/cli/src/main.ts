#!/usr/bin/env node
/**
 * The `ferry` executable: runs the CLI with this process's streams and environment, then exits
 * with its code. Signal handlers are installed only by commands that wait for one (`serve`), so
 * Ctrl-C still ends any other command at once; a second signal during shutdown exits immediately.
 */
import { runCli } from './cli.js';

let shutdown: Promise<string> | undefined;

function waitForShutdown(): Promise<string> {
  shutdown ??= new Promise<string>((resolve) => {
    let received = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      received++;
      if (received > 1) {
        process.stderr.write(`ferry: ${signal} again; exiting without a clean shutdown\n`);
        process.exit(130);
      }
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
process.exitCode = code;
// Exit even if a library left a handle open (a keep-alive socket); normally the loop is empty by now.
setTimeout(() => process.exit(code), 2_000).unref();
