/**
 * @ferry/cli: the `ferry` command (bin: dist/ferry.cjs). The library surface lets tools and tests run
 * the same commands in-process and reuse the CLI's logger.
 */
export { type ListenAddress, parseListenAddress, serverUrl } from './args.js';
export { COMMANDS, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, runCli } from './cli.js';
export type { CliIo, CliOutput, Command } from './command.js';
export * from './errors.js';
export { type CliLoggerOptions, createCliLogger, type LogFormat, type LogSink } from './log-format.js';
export { createProgress, formatBytes, type Progress, type ProgressOutput } from './progress.js';
export { formatTable } from './table.js';
export { type ClaimedWorkDir, claimWorkDir, WORK_DIR_MARKER } from './work-dir.js';
