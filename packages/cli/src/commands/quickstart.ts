/**
 * `ferry quickstart`: the whole product on one machine, offline. It starts a local S3 + SQS
 * (fauxqs on loopback, with the S3 → SQS notification bridge), publishes sample datasets (DuckDB and
 * SQLite), keeps publishing a new snapshot every few seconds, and runs `ferry serve` on a spicepod
 * that reloads on SQS notifications. It prints the HTTP and inspector addresses and a sample `curl`,
 * and stops cleanly on Ctrl-C (or after `--duration`). Its `--dir` is a folder it made itself (see
 * work-dir.ts); it never deletes a folder it did not create.
 */
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { type Parsed, parseCommandLine, stringOption } from '../args.js';
import type { CliIo, CliOutput, Command } from '../command.js';
import { UsageError } from '../errors.js';
import { requestText } from '../http-request.js';
import { claimWorkDir, WORK_DIR_MARKER } from '../work-dir.js';
import { serveCommand } from './serve.js';

const HELP = `Usage: ferry quickstart [options]

Run Ferry end to end on this machine, offline: a local S3 + SQS server, a writer publishing
snapshots of three sample datasets (orders and events in DuckDB, customers in SQLite) every few
seconds, and 'ferry serve' reloading them as S3 notifications arrive on SQS.

Options:
      --http HOST:PORT     Address of the HTTP server; default 127.0.0.1:8090
      --flight HOST:PORT   Address of the Arrow Flight server; default 127.0.0.1:50051
      --no-flight          Do not serve Arrow Flight
      --dir DIR            Working folder (spicepod, live files); default .ferry/quickstart.
                           Created and marked with a ${WORK_DIR_MARKER} file; an empty folder is
                           accepted; a non-empty folder quickstart did not make is refused
      --every SECONDS      Seconds between two publishes; default 5
      --duration SECONDS   Stop by itself after this long (default: run until Ctrl-C)
      --check              Before stopping, query every dataset over HTTP and fail (exit 1)
                           unless all answer and at least one newer snapshot was served
  -h, --help               Show this help
`;

const BUCKET = 'ferry-quickstart';
const PREFIX = 'snapshots/';
const LOCATION = `s3://${BUCKET}/${PREFIX}`;
/** What quickstart writes in its folder, removed again when it reuses the folder. */
const SPICEPOD = 'spicepod.yaml';
const DATA_DIR = 'data';
const OWNED_ENTRIES = [SPICEPOD, DATA_DIR];

interface Sample {
  readonly dataset: string;
  readonly engine: 'duckdb' | 'sqlite';
  sql(version: number): string;
}

/**
 * Each version grows the data, so a query shows which snapshot it read: the `version` column holds
 * the id of the snapshot the rows were published as (the writer numbers a new dataset's first
 * snapshot 0), the number `published … snapshot N` prints.
 */
const SAMPLES: readonly Sample[] = [
  {
    dataset: 'orders',
    engine: 'duckdb',
    sql: (version) =>
      `SELECT i::BIGINT AS id, 'customer-' || (i % 37) AS customer, ((i * 7919) % 10000 / 100)::DECIMAL(18,2) AS amount, ` +
      `TIMESTAMP '2026-11-29 08:00:00' + to_minutes(i::BIGINT) AS placed_at, i % 3 = 0 AS shipped, ${version}::BIGINT AS version ` +
      `FROM range(${1000 * (version + 1)}) t(i)`,
  },
  {
    dataset: 'customers',
    engine: 'sqlite',
    sql: (version) =>
      `SELECT i::BIGINT AS id, 'customer-' || i AS name, (i * 1.5)::DOUBLE AS score, ${version}::BIGINT AS version ` +
      `FROM range(${38 + version}) t(i)`,
  },
  {
    dataset: 'events',
    engine: 'duckdb',
    sql: (version) =>
      `SELECT i::BIGINT AS id, CASE i % 3 WHEN 0 THEN 'view' WHEN 1 THEN 'click' ELSE 'buy' END AS kind, ` +
      `${version}::BIGINT AS version FROM range(${500 * (version + 1)}) t(i)`,
  },
];

function seconds(parsed: Parsed, name: string, fallback: number | undefined): number | undefined {
  const text = stringOption(parsed, name);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) {
    throw new UsageError(
      'quickstart',
      `option '--${name}' needs a positive number of seconds, got '${text}'`,
    );
  }
  return value;
}

function spicepodYaml(
  endpoint: string,
  region: string,
  key: string,
  secret: string,
  queueUrl: string,
): string {
  const datasets = SAMPLES.flatMap((sample) => [
    `  - from: postgres:public.${sample.dataset}`,
    `    name: ${sample.dataset}`,
    '    acceleration:',
    `      engine: ${sample.engine}`,
    '      mode: file',
    '      refresh_mode: snapshot',
    '      refresh_check_interval: 1m',
    '      snapshots: enabled',
  ]);
  return [
    '# Written by `ferry quickstart`: serve snapshots from the local S3, reloading on SQS notifications.',
    'version: v1',
    'kind: Spicepod',
    'name: quickstart',
    'snapshots:',
    '  enabled: true',
    `  location: ${LOCATION}`,
    '  bootstrap_on_failure_behavior: retry',
    '  params:',
    `    s3_region: ${region}`,
    `    s3_endpoint: ${endpoint}`,
    '    allow_http: true',
    '    s3_auth: key',
    `    s3_key: ${key}`,
    `    s3_secret: ${secret}`,
    `    s3_queue_url: ${queueUrl}`,
    `    s3_queue_endpoint: ${endpoint}`,
    'datasets:',
    ...datasets,
    '',
  ].join('\n');
}

async function run(parsed: Parsed, io: CliIo): Promise<number> {
  const every = seconds(parsed, 'every', 5) ?? 5;
  const duration = seconds(parsed, 'duration', undefined);
  const check = parsed.values.check === true;
  const http = stringOption(parsed, 'http') ?? '127.0.0.1:8090';
  const flightArgs =
    parsed.values['no-flight'] === true
      ? ['--no-flight']
      : ['--flight', stringOption(parsed, 'flight') ?? '127.0.0.1:50051'];
  const dir = resolve(stringOption(parsed, 'dir') ?? '.ferry/quickstart');
  const out = io.stdout;
  const shutdown = io.waitForShutdown();

  // Before anything starts: a folder quickstart did not make is refused, and left untouched.
  await claimWorkDir(dir, OWNED_ENTRIES);
  // The AWS SDK's Node-version notice, said once in Ferry's own line; the SDK in every thread stays quiet.
  const { sdkNoticeOnce } = await import('@ferry/runtime');
  const notice = sdkNoticeOnce();
  if (notice.line !== undefined) io.stderr.write(`${notice.line}\n`);
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const { localStoreParams, startLocalAws, startNotificationBridge } = await import('@ferry/local-aws');
  const { publishSnapshot } = await import('@ferry/writer');

  out.write('Starting a local S3 + SQS server (fauxqs) on loopback…\n');
  const aws = await startLocalAws();
  await aws.createBucket(BUCKET);
  const queueUrl = await aws.createQueue('ferry-quickstart-events');
  const bridge = startNotificationBridge(aws, { bucket: BUCKET, queueUrl, prefix: PREFIX });
  const storeParams = localStoreParams(aws);
  const versions = new Map<string, number>();
  const publish = async (sample: Sample): Promise<void> => {
    const version = (versions.get(sample.dataset) ?? -1) + 1;
    const result = await publishSnapshot({
      dataset: sample.dataset,
      engine: sample.engine,
      location: LOCATION,
      storeParams,
      source: { sql: sample.sql(version) },
      notNull: ['id'],
    });
    versions.set(sample.dataset, result.snapshotId);
    if (result.snapshotId !== version) {
      io.stderr.write(
        `quickstart: ${sample.dataset} was published as snapshot ${result.snapshotId}, but its rows say version ${version}\n`,
      );
    }
    out.write(
      `published ${sample.dataset} snapshot ${result.snapshotId} (${result.rowCount} rows, ${sample.engine})\n`,
    );
  };
  for (const sample of SAMPLES) await publish(sample);

  const spicepod = join(dir, SPICEPOD);
  await writeFile(
    spicepod,
    spicepodYaml(
      aws.endpoint,
      aws.region,
      aws.credentials.accessKeyId,
      aws.credentials.secretAccessKey,
      queueUrl,
    ),
  );

  // The writer keeps publishing, one dataset at a time, while Ferry serves.
  let next = 0;
  let writing: Promise<void> = Promise.resolve();
  const writer = setInterval(() => {
    const sample = SAMPLES[next++ % SAMPLES.length] as Sample;
    writing = writing.then(() =>
      publish(sample).catch((error: unknown) => {
        io.stderr.write(`quickstart: publishing ${sample.dataset} failed: ${(error as Error).message}\n`);
      }),
    );
  }, every * 1000);

  // `ferry serve` runs until Ctrl-C, or until --duration has passed (after the --check).
  let url: string | undefined;
  let listening: (value: string) => void = () => undefined;
  const started = new Promise<string>((resolvePromise) => {
    listening = resolvePromise;
  });
  const stdout: CliOutput = {
    ...(out.isTTY === undefined ? {} : { isTTY: out.isTTY }),
    write(text: string) {
      const match = /Listening on (\S+)/.exec(text);
      if (match?.[1] !== undefined) {
        url = match[1];
        listening(url);
      }
      return out.write(text);
    },
  };
  let checkFailed = false;
  const serveIo: CliIo = {
    stdout,
    stderr: io.stderr,
    env: io.env,
    waitForShutdown: async () => {
      const address = await Promise.race([started, shutdown]);
      if (address !== url) return address;
      out.write(
        [
          '',
          `Ferry is serving ${SAMPLES.length} datasets at ${url}`,
          `  inspector:  ${url}/inspector`,
          `  datasets:   curl ${url}/v1/datasets`,
          `  query:      curl -X POST ${url}/v1/sql -d 'SELECT max(version) AS version, count(*) AS n FROM orders'`,
          `  metrics:    curl ${url}/metrics`,
          `A new snapshot is published every ${every} s (its rows' version column is its snapshot id).`,
          stopLine(duration, check),
          '',
        ].join('\n'),
      );
      if (duration === undefined) return shutdown;
      const timer = new Promise<string>((resolvePromise) =>
        setTimeout(() => resolvePromise('duration'), duration * 1000),
      );
      const reason = await Promise.race([timer, shutdown]);
      if (check) checkFailed = !(await selfCheck(url, out));
      return reason;
    },
  };
  let code: number;
  try {
    code = await serveCommand.run(
      parseCommandLine(
        'serve',
        [spicepod, '--http', http, '--data-dir', join(dir, DATA_DIR), ...flightArgs],
        serveCommand.options,
      ),
      serveIo,
    );
  } finally {
    clearInterval(writer);
    await writing;
    await bridge.stop();
    await aws.close();
  }
  if (checkFailed) return 1;
  return code;
}

/** When and how quickstart stops, said before it starts waiting. */
function stopLine(duration: number | undefined, check: boolean): string {
  if (duration === undefined) return 'It runs until Ctrl-C, which stops everything.';
  const at = new Date(Date.now() + duration * 1000).toTimeString().slice(0, 8);
  const checking = check ? ', after querying every dataset (--check)' : '';
  return `It stops by itself in ${duration} s (--duration, at ${at})${checking}; Ctrl-C stops it sooner.`;
}

/** Queries every dataset over HTTP; true when all answer and at least one serves a republished snapshot. */
async function selfCheck(url: string, out: CliOutput): Promise<boolean> {
  let newer = false;
  for (const sample of SAMPLES) {
    let body: unknown;
    try {
      const answer = await requestText(`${url}/v1/sql`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', accept: 'application/json' },
        body: `SELECT max(version) AS version, count(*) AS n FROM ${sample.dataset}`,
      });
      body = answer.ok ? JSON.parse(answer.text) : `HTTP ${answer.status}: ${answer.text.trim()}`;
    } catch (error) {
      body = (error as { code?: string }).code ?? (error as Error).message;
    }
    if (!Array.isArray(body)) {
      out.write(
        `check: ${sample.dataset} failed: ${typeof body === 'string' ? body : JSON.stringify(body)}\n`,
      );
      return false;
    }
    const row = body[0] as { version?: number; n?: number } | undefined;
    out.write(`check: ${sample.dataset} serves snapshot ${row?.version} (${row?.n} rows)\n`);
    if ((row?.version ?? 0) > 0) newer = true;
  }
  out.write(
    newer
      ? 'check: ok — queries answered and newer snapshots were swapped in\n'
      : 'check: no newer snapshot was served\n',
  );
  return newer;
}

export const quickstartCommand: Command = {
  name: 'quickstart',
  summary: 'Run a local S3 + SQS, a publishing writer and `ferry serve`, offline',
  help: HELP,
  options: {
    http: { type: 'string' },
    flight: { type: 'string' },
    'no-flight': { type: 'boolean' },
    dir: { type: 'string' },
    every: { type: 'string' },
    duration: { type: 'string' },
    check: { type: 'boolean' },
  },
  run,
};
