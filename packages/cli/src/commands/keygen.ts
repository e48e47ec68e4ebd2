/**
 * `ferry keygen`: makes an Ed25519 key pair for signed snapshots. The private key goes to FILE
 * (mode 0600, never overwritten unless --force) for the writer's `ferry publish --signing-key`;
 * the public key to FILE.pub for the readers' `ferry_trusted_keys`. Prints the key id and the
 * spicepod lines that trust the key.
 */
import { chmod, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { generateSigningKeyPair } from '@ferry/store/signing';
import { expectPositionals, type Parsed, stringOption } from '../args.js';
import type { CliIo, Command } from '../command.js';
import { KeyFileError, UsageError } from '../errors.js';

const HELP = `Usage: ferry keygen --out FILE [--force]

Make an Ed25519 key pair for signed snapshots. The private key (FILE, mode 0600) stays with the
writer: ferry publish --signing-key FILE. The public key (FILE.pub) goes to every reader, in
snapshots.params.ferry_trusted_keys (or a dataset's params.ferry_trusted_keys).

Options:
      --out FILE            Where to write the private key; the public key goes to FILE.pub (required)
      --force               Overwrite FILE and FILE.pub if they exist
  -h, --help                Show this help
`;

async function writeKey(path: string, text: string, mode: number, force: boolean): Promise<void> {
  try {
    await writeFile(path, text, { mode, flag: force ? 'w' : 'wx' });
    // An existing file keeps its mode through a write: set it.
    await chmod(path, mode);
  } catch (error) {
    throw new KeyFileError(
      path,
      (error as NodeJS.ErrnoException).code === 'EEXIST'
        ? 'exists (pass --force to replace it)'
        : `cannot be written (${(error as Error).message})`,
      { cause: error },
    );
  }
}

async function run(parsed: Parsed, io: CliIo): Promise<number> {
  expectPositionals('keygen', parsed, []);
  const out = stringOption(parsed, 'out');
  if (out === undefined || out === '') throw new UsageError('keygen', '--out is required');
  const force = parsed.values.force === true;
  const privatePath = resolve(out);
  const publicPath = `${privatePath}.pub`;
  const pair = generateSigningKeyPair();
  await writeKey(privatePath, pair.privatePem, 0o600, force);
  await writeKey(publicPath, pair.publicPem, 0o644, force);
  const indented = pair.publicPem
    .trim()
    .split('\n')
    .map((line) => `          ${line}`)
    .join('\n');
  io.stdout.write(
    [
      `Key ${pair.keyId}`,
      `  private key: ${privatePath} (mode 0600; keep it on the writer only)`,
      `  public key:  ${publicPath}`,
      '',
      "Trust it in each reader's spicepod:",
      '  snapshots:',
      '    params:',
      '      ferry_trusted_keys:',
      '        - |',
      indented,
      '',
    ].join('\n'),
  );
  return 0;
}

export const keygenCommand: Command = {
  name: 'keygen',
  summary: 'Make an Ed25519 key pair for signed snapshots',
  help: HELP,
  options: {
    out: { type: 'string' },
    force: { type: 'boolean' },
  },
  run,
};
