/**
 * The `ferry` command line: dispatches to a subcommand, refuses an argument it does not take,
 * prints `--help`, and turns errors into exit codes — 2 for a usage error (with a pointer to
 * `--help`), 1 for any other failure (its one-sentence message), 0 on success.
 */
import { parseCommandLine, refuseExtraPositionals } from './args.js';
import type { CliIo, Command } from './command.js';
import { fleetCommand } from './commands/fleet.js';
import { keygenCommand } from './commands/keygen.js';
import { publishCommand } from './commands/publish.js';
import { quickstartCommand } from './commands/quickstart.js';
import { serveCommand } from './commands/serve.js';
import { statusCommand } from './commands/status.js';
import { validateCommand } from './commands/validate.js';
import { UsageError } from './errors.js';

export const COMMANDS: readonly Command[] = [
  serveCommand,
  publishCommand,
  keygenCommand,
  validateCommand,
  statusCommand,
  quickstartCommand,
  fleetCommand,
];

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((command) => command.name.length));
  return [
    'Usage: ferry <command> [options]',
    '',
    'Ferry serves snapshot read replicas: datasets whose DuckDB or SQLite file is replaced,',
    'while serving, by snapshots a writer publishes to S3 or a file:// store.',
    '',
    'Commands:',
    ...COMMANDS.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`),
    '',
    "Run 'ferry <command> --help' for a command's options.",
    '',
  ].join('\n');
}

/**
 * `argv` without the `--` that npm and pnpm users put before a script's arguments (`pnpm quickstart
 * -- --duration 40`, which pnpm passes through): first, or right after the command's name. A `--`
 * anywhere later ends the options, as usual.
 */
function withoutScriptSeparator(argv: readonly string[]): readonly string[] {
  if (argv[0] === '--') return argv.slice(1);
  if (argv[1] === '--') return [argv[0] as string, ...argv.slice(2)];
  return argv;
}

/** Runs one `ferry` invocation (`argv` without node and the script); resolves with the exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    const [name, ...rest] = withoutScriptSeparator(argv);
    if (name === '--help' || name === '-h' || name === 'help') {
      // `ferry help serve` is `ferry serve --help`; anything more is an argument help does not take.
      const [topic, extra] = rest;
      if (extra !== undefined) throw new UsageError(undefined, `unexpected argument '${extra}'`);
      const command = COMMANDS.find((candidate) => candidate.name === topic);
      if (topic !== undefined && command === undefined)
        throw new UsageError(undefined, `unknown command '${topic}'`);
      io.stdout.write(command?.help ?? mainHelp());
      return EXIT_OK;
    }
    if (name === undefined) {
      io.stderr.write(mainHelp());
      return EXIT_USAGE;
    }
    const command = COMMANDS.find((candidate) => candidate.name === name);
    if (command === undefined) {
      throw new UsageError(
        undefined,
        name.startsWith('-') ? `unknown option '${name}'` : `unknown command '${name}'`,
      );
    }
    const parsed = parseCommandLine(command.name, rest, command.options);
    if (parsed.help) {
      io.stdout.write(command.help);
      return EXIT_OK;
    }
    refuseExtraPositionals(command.name, parsed, command.positionals ?? []);
    return await command.run(parsed, io);
  } catch (error) {
    if (error instanceof UsageError) {
      const help = error.command === undefined ? 'ferry --help' : `ferry ${error.command} --help`;
      io.stderr.write(`ferry: ${error.message}\nRun '${help}' for usage.\n`);
      return EXIT_USAGE;
    }
    const message = error instanceof Error ? error.message : String(error);
    io.stderr.write(`ferry: error: ${message}\n`);
    if (io.env.FERRY_DEBUG === '1' && error instanceof Error && error.stack !== undefined) {
      io.stderr.write(`${error.stack}\n`);
    }
    return EXIT_FAILURE;
  }
}
