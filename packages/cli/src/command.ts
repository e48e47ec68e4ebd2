/**
 * What a `ferry` subcommand is (name, help text, options, `run`), and the process surface commands
 * use (output streams, environment, the shutdown signal), passed in so the whole CLI can run
 * inside a test process as well as from `main.ts`.
 */
import type { OptionSpec, Parsed } from './args.js';

export interface CliOutput {
  write(text: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

export interface CliIo {
  readonly stdout: CliOutput;
  readonly stderr: CliOutput;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Resolves with the signal's name when the process is asked to stop (SIGINT / SIGTERM). */
  waitForShutdown(): Promise<string>;
}

export interface Command {
  readonly name: string;
  /** One line for `ferry --help`. */
  readonly summary: string;
  /** The full `ferry <name> --help` text. */
  readonly help: string;
  readonly options: OptionSpec;
  /**
   * The names of the arguments it takes besides options, in order (`['spicepod.yaml']`); none when
   * left out. Any further argument is a usage error (exit 2) before the command runs; a missing one
   * is the command's to report.
   */
  readonly positionals?: readonly string[];
  /** Returns the exit code. */
  run(parsed: Parsed, io: CliIo): Promise<number>;
}

/**
 * The API key named by `--api-key-env`, or undefined when the flag is absent. Surrounding
 * whitespace is not part of it: a secret made from a file ends in a newline, which no HTTP header
 * can carry (the server would require it, and `ferry status` could not send it).
 */
export function apiKeyFromEnv(
  env: CliIo['env'],
  name: string | undefined,
  onMissing: (name: string) => Error,
): string | undefined {
  if (name === undefined) return undefined;
  const value = env[name]?.trim();
  if (value === undefined || value === '') throw onMissing(name);
  return value;
}
