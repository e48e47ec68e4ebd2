/**
 * `ferry validate <spicepod.yaml>`: loads the spicepod exactly as `serve` would (with this
 * process's environment for secrets) and prints every error and warning; exit 1 when there is any
 * error, else `ok: N datasets` and exit 0.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { loadSpicepod } from '@ferry/core';
import { spicepodFileReader } from '@ferry/runtime/spicepod-files';
import { tlsProblem } from '@ferry/runtime/tls';
import { expectPositionals, type Parsed } from '../args.js';
import type { CliIo, Command } from '../command.js';
import { SpicepodReadError } from '../errors.js';

const HELP = `Usage: ferry validate <spicepod.yaml>

Check a spicepod the way 'ferry serve' loads it and print every problem, each naming the
key and the fix. Secrets (\${secrets:NAME}, \${env:NAME}) are read from the environment (and
the .env files Spice reads); the files it names (views' sql_ref, runtime.tls) are read beside it,
and the TLS certificate and key are checked to work together.

Exit status: 0 when valid (prints "ok: N datasets"), 1 when there is any error, 2 on a usage error.

Options:
  -h, --help   Show this help
`;

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

async function run(parsed: Parsed, io: CliIo): Promise<number> {
  const [file] = expectPositionals('validate', parsed, ['spicepod.yaml']) as [string];
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new SpicepodReadError(file, { cause: error });
  }
  const load = loadSpicepod(text, {
    file,
    env: io.env,
    readFile: spicepodFileReader(dirname(resolve(file))),
  });
  const tls = load.config === undefined ? undefined : tlsProblem(load.config);
  const errors = [...load.errors.map((issue) => issue.message), ...(tls === undefined ? [] : [tls])];
  for (const message of errors) io.stdout.write(`error: ${message}\n`);
  for (const issue of load.warnings) io.stdout.write(`warning: ${issue.message}\n`);
  if (errors.length > 0) {
    io.stdout.write(
      `invalid: ${plural(errors.length, 'error')}, ${plural(load.warnings.length, 'warning')}\n`,
    );
    return 1;
  }
  const views = load.config?.views.length ?? 0;
  io.stdout.write(
    `ok: ${plural(load.datasets.length, 'dataset')}${views === 0 ? '' : `, ${plural(views, 'view')}`}\n`,
  );
  return 0;
}

export const validateCommand: Command = {
  name: 'validate',
  positionals: ['spicepod.yaml'],
  summary: 'Check a spicepod and print every configuration error',
  help: HELP,
  options: {},
  run,
};
