/**
 * `ferry publish`: builds a snapshot of one dataset (from a DuckDB query, or an existing DuckDB /
 * SQLite file) and publishes it to a store with @ferry/writer, showing upload progress on stderr
 * (a bar on a terminal, plain lines otherwise), then prints the new snapshot's id, key, size and
 * checksum on stdout.
 */

import { rmSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type FileFormat, parseDuration, parseEndpoint } from '@ferry/core/base';
import type { PublishResult, SnapshotSource } from '@ferry/writer';
import { choiceOption, expectPositionals, type Parsed, stringOption } from '../args.js';
import type { CliIo, Command } from '../command.js';
import { KeyFileError, UsageError } from '../errors.js';
import { createProgress, formatBytes } from '../progress.js';

const HELP = `Usage: ferry publish --location URI --dataset NAME [--engine duckdb|sqlite]
                     (--sql QUERY | --file DB) [--signing-key FILE [--valid-for DURATION]] [S3 options]
       ferry publish --incremental --location URI --dataset NAME --sql STATEMENTS
                     [--state-dir DIR] [S3 options]
       ferry publish --heartbeat --location URI --dataset NAME --signing-key FILE
                     [--valid-for DURATION] [S3 options]

Build a snapshot of a dataset and publish it: upload the file to its dated key, then make it
current in <location>metadata.json. Readers of the location pick it up on their next poll.
With --signing-key, the snapshot is signed (readers with ferry_trusted_keys serve only signed
snapshots) and a heartbeat statement valid for --valid-for is signed; --heartbeat re-signs only
the heartbeat, for a schedule that runs more often than --valid-for even when nothing changed.

Options:
      --location URI        Snapshot store: s3://bucket/prefix/ or file:///absolute/dir/ (required)
      --dataset NAME        Dataset (and table) name (required)
      --engine ENGINE       duckdb or sqlite; default duckdb for --sql, the file's own for --file
      --sql QUERY           One DuckDB SELECT giving the rows (it may read local CSV/Parquet/JSON:
                            SELECT * FROM read_csv('orders.csv'))
      --file DB             Publish an existing DuckDB or SQLite file holding table NAME
      --not-null COLUMNS    Comma-separated columns to declare NOT NULL (with --sql)
      --incremental         Start from the dataset's current snapshot and apply --sql to it (INSERT,
                            UPDATE, DELETE; several ';'-separated for DuckDB, one for SQLite), so the
                            new snapshot shares unchanged blocks with the last one
      --state-dir DIR       Where --incremental keeps its copy of the current snapshot between runs
                            (default .ferry-writer in the working directory); downloaded when absent
      --no-block-manifest   Do not upload the block manifest sidecar (<key>.ferry-blocks.json)
      --json                Print the result as JSON
  Signing (see docs/deploy.md#signed-snapshots):
      --signing-key FILE    The writer's Ed25519 private key (ferry keygen writes one)
      --heartbeat           Only re-sign the heartbeat statement of the current snapshot
      --valid-for DURATION  How long the heartbeat statement is valid; default 1h
  S3 (otherwise the AWS SDK's environment and credential chain apply):
      --s3-endpoint URL     S3-compatible endpoint (path-style addressing)
      --s3-region REGION    Bucket region
      --allow-http          Permit an http:// endpoint
      --s3-key KEY          Access key id
      --s3-secret SECRET    Secret access key
  -h, --help                Show this help
`;

const ENGINES: readonly FileFormat[] = ['duckdb', 'sqlite'];

function required(parsed: Parsed, name: string): string {
  const value = stringOption(parsed, name);
  if (value === undefined || value === '') throw new UsageError('publish', `--${name} is required`);
  return value;
}

function storeParams(parsed: Parsed): Record<string, string | boolean> {
  const params: Record<string, string | boolean> = {};
  const endpoint = stringOption(parsed, 's3-endpoint');
  const region = stringOption(parsed, 's3-region');
  const key = stringOption(parsed, 's3-key');
  const secret = stringOption(parsed, 's3-secret');
  if ((key === undefined) !== (secret === undefined)) {
    throw new UsageError('publish', '--s3-key and --s3-secret go together; pass both or neither');
  }
  const allowHttp = parsed.values['allow-http'] === true;
  if (endpoint !== undefined) {
    // Checked here so the fix names the flags, not the spicepod keys the store's messages use.
    const url = parseEndpoint(endpoint);
    if (url === undefined) {
      throw new UsageError(
        'publish',
        `--s3-endpoint '${endpoint}' is not an http(s) URL; give it as https://host[:port]`,
      );
    }
    if (url.http && !allowHttp) {
      throw new UsageError(
        'publish',
        `--s3-endpoint '${endpoint}' is plain http; pass --allow-http to accept an unencrypted connection, or use https`,
      );
    }
    params.endpoint = endpoint;
  }
  if (region !== undefined) params.region = region;
  if (allowHttp) params.allowHttp = true;
  if (key !== undefined && secret !== undefined) {
    params.auth = 'key';
    params.accessKeyId = key;
    params.secretAccessKey = secret;
  }
  return params;
}

/** The PEM of `--signing-key`, with a warning when others may read it. */
async function signingKey(parsed: Parsed, io: CliIo): Promise<string | undefined> {
  const file = stringOption(parsed, 'signing-key');
  if (file === undefined) return undefined;
  const path = resolve(file);
  try {
    const mode = (await stat(path)).mode;
    if ((mode & 0o077) !== 0) {
      io.stderr.write(
        `Warning: signing key ${path} can be read by others (mode ${(mode & 0o777).toString(8)}); chmod 600 it\n`,
      );
    }
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new KeyFileError(path, `cannot be read (${(error as Error).message})`, { cause: error });
  }
}

function validForMs(parsed: Parsed): number | undefined {
  const text = stringOption(parsed, 'valid-for');
  if (text === undefined) return undefined;
  try {
    return parseDuration(text);
  } catch (error) {
    throw new UsageError('publish', `--valid-for: ${(error as Error).message}`);
  }
}

async function heartbeat(parsed: Parsed, io: CliIo, location: string, dataset: string): Promise<number> {
  if (stringOption(parsed, 'sql') !== undefined || stringOption(parsed, 'file') !== undefined) {
    throw new UsageError('publish', '--heartbeat publishes no snapshot; drop --sql and --file');
  }
  const key = await signingKey(parsed, io);
  if (key === undefined) throw new UsageError('publish', '--heartbeat needs --signing-key FILE');
  const { publishHeartbeat } = await import('@ferry/writer');
  const result = await publishHeartbeat({
    dataset,
    location,
    storeParams: storeParams(parsed),
    signingKey: key,
    validForMs: validForMs(parsed) ?? DEFAULT_VALID_FOR_MS,
  });
  if (parsed.values.json === true) {
    io.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  }
  io.stdout.write(
    `Signed the heartbeat of ${dataset}: snapshot ${result.snapshotId} is current, valid until ${new Date(result.validUntilMs).toISOString()} (key ${result.keyId})\n`,
  );
  return 0;
}

const DEFAULT_VALID_FOR_MS = 60 * 60 * 1000;

/**
 * Runs a publish with its build folder in a temporary folder of its own. SIGINT or SIGTERM (Ctrl-C,
 * a CronJob's deadline) still ends it at once, as every command but `serve`, but first removes that
 * folder: it holds a whole copy of the snapshot, and one left per interrupted run fills the disk.
 * (An object already uploaded is named by no metadata.json, so readers never see it.)
 */
async function withBuildFolder<T>(publish: (workDir: string) => Promise<T>): Promise<T> {
  const workDir = await mkdtemp(join(tmpdir(), 'ferry-publish-'));
  const onSignal = (signal: NodeJS.Signals): void => {
    rmSync(workDir, { recursive: true, force: true });
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    // The signal's own default action: exit status 130 / 143, as without this handler.
    process.kill(process.pid, signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    return await publish(workDir);
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    await rm(workDir, { recursive: true, force: true });
  }
}

async function run(parsed: Parsed, io: CliIo): Promise<number> {
  expectPositionals('publish', parsed, []);
  const location = required(parsed, 'location');
  const dataset = required(parsed, 'dataset');
  if (parsed.values.heartbeat === true) return heartbeat(parsed, io, location, dataset);
  if (parsed.values.incremental === true) return runIncremental(parsed, io, location, dataset);
  const engine = choiceOption('publish', parsed, 'engine', ENGINES);
  const sql = stringOption(parsed, 'sql');
  const file = stringOption(parsed, 'file');
  if ((sql === undefined) === (file === undefined)) {
    throw new UsageError('publish', 'pass exactly one of --sql QUERY or --file DB');
  }
  const source: SnapshotSource = sql !== undefined ? { sql } : { file: resolve(file as string) };
  const notNull = stringOption(parsed, 'not-null')
    ?.split(',')
    .map((column) => column.trim())
    .filter((column) => column !== '');
  if (notNull !== undefined && file !== undefined) {
    throw new UsageError('publish', '--not-null applies to --sql only (a file keeps its own constraints)');
  }

  const key = await signingKey(parsed, io);
  const validFor = validForMs(parsed);
  if (validFor !== undefined && key === undefined) {
    throw new UsageError('publish', '--valid-for applies with --signing-key only');
  }
  const progress = createProgress(io.stderr, `Uploading ${dataset}`);
  // Loaded on use: the writer pulls in DuckDB and SQLite.
  const { publishSnapshot } = await import('@ferry/writer');
  let result: PublishResult;
  try {
    result = await withBuildFolder((workDir) =>
      publishSnapshot({
        dataset,
        location,
        source,
        workDir,
        storeParams: storeParams(parsed),
        ...(engine === undefined ? {} : { engine }),
        ...(notNull === undefined ? {} : { notNull }),
        ...(key === undefined ? {} : { signingKey: key }),
        ...(validFor === undefined ? {} : { heartbeatValidForMs: validFor }),
        ...(parsed.values['no-block-manifest'] === true ? { blockManifest: false } : {}),
        onProgress: (bytes, total) => progress.update(bytes, total),
      }),
    );
  } finally {
    progress.done();
  }
  return printResult(io, parsed, dataset, result);
}

/** `--incremental`: the statements of --sql applied to the current snapshot (`publishIncremental`). */
async function runIncremental(parsed: Parsed, io: CliIo, location: string, dataset: string): Promise<number> {
  const sql = required(parsed, 'sql');
  for (const name of ['file', 'engine', 'not-null']) {
    if (parsed.values[name] !== undefined) {
      throw new UsageError(
        'publish',
        `--${name} does not apply to --incremental (the current snapshot sets it)`,
      );
    }
  }
  const stateDir = resolve(stringOption(parsed, 'state-dir') ?? '.ferry-writer');
  const key = await signingKey(parsed, io);
  const validFor = validForMs(parsed);
  const progress = createProgress(io.stderr, `Uploading ${dataset}`);
  const { publishIncremental } = await import('@ferry/writer');
  let result: PublishResult;
  try {
    result = await publishIncremental({
      dataset,
      location,
      statements: [sql],
      stateDir,
      storeParams: storeParams(parsed),
      ...(parsed.values['no-block-manifest'] === true ? { blockManifest: false } : {}),
      ...(key === undefined ? {} : { signingKey: key }),
      ...(validFor === undefined ? {} : { heartbeatValidForMs: validFor }),
      onProgress: (bytes, total) => progress.update(bytes, total),
    });
  } finally {
    progress.done();
  }
  return printResult(io, parsed, dataset, result);
}

function printResult(io: CliIo, parsed: Parsed, dataset: string, result: PublishResult): number {
  if (parsed.values.json === true) {
    io.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  }
  io.stdout.write(
    [
      `Published ${dataset} snapshot ${result.snapshotId}`,
      `  snapshot-id: ${result.snapshotId}`,
      `  key:         ${result.key}`,
      `  uri:         ${result.uri}`,
      `  size:        ${result.size} bytes (${formatBytes(result.size)})`,
      `  checksum:    sha256:${result.checksum}`,
      `  rows:        ${result.rowCount}`,
      ...(result.signed === undefined
        ? []
        : [
            `  signed by:   key ${result.signed.keyId}`,
            `  heartbeat:   valid until ${new Date(result.signed.heartbeat.validUntilMs).toISOString()}`,
          ]),
      '',
    ].join('\n'),
  );
  return 0;
}

export const publishCommand: Command = {
  name: 'publish',
  summary: 'Publish a snapshot of a dataset to a snapshot store',
  help: HELP,
  options: {
    location: { type: 'string' },
    dataset: { type: 'string' },
    engine: { type: 'string' },
    sql: { type: 'string' },
    file: { type: 'string' },
    'not-null': { type: 'string' },
    incremental: { type: 'boolean' },
    'state-dir': { type: 'string' },
    'no-block-manifest': { type: 'boolean' },
    json: { type: 'boolean' },
    'signing-key': { type: 'string' },
    heartbeat: { type: 'boolean' },
    'valid-for': { type: 'string' },
    's3-endpoint': { type: 'string' },
    's3-region': { type: 'string' },
    'allow-http': { type: 'boolean' },
    's3-key': { type: 'string' },
    's3-secret': { type: 'string' },
  },
  run,
};
