/**
 * `ferry serve <spicepod.yaml>`: starts the runtime, the Arrow Flight / Flight SQL server (on
 * 127.0.0.1:50051, as Spice does, unless `--no-flight`) and the HTTP server (with the inspector page
 * at /inspector unless `--no-inspector`, and a Stately inspector bridge with `--inspect <ws-url>`),
 * both over TLS with `--tls-cert`/`--tls-key`, prints the addresses, and on SIGINT/SIGTERM closes
 * the servers (in-flight requests finish), the bridge, then the runtime, and exits 0. Logs go to
 * stderr: pretty on a terminal, JSON lines otherwise.
 */
import { constants, existsSync } from 'node:fs';
import { access, mkdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { FerryError, LOG_LEVELS } from '@ferry/core/base';
import type { RunningFlightServer } from '@ferry/flight';
import type { Runtime } from '@ferry/runtime';
import { tlsPairProblem } from '@ferry/runtime/tls';
import type { Route, RunningServer, StatelyBridge } from '@ferry/server';
import {
  choiceOption,
  durationOption,
  expectPositionals,
  type Parsed,
  parseListenAddress,
  stringOption,
} from '../args.js';
import { apiKeyFromEnv, type CliIo, type Command } from '../command.js';
import { ApiKeyEnvError, ListenError, UsageError } from '../errors.js';
import { EXAMPLE_DIR, layOutExample } from '../example.js';
import { createCliLogger, type LogFormat } from '../log-format.js';

const HELP = `Usage: ferry serve <spicepod.yaml> [options]
       ferry serve --example [options]

Serve the spicepod's snapshot datasets over HTTP and Arrow Flight until SIGINT or SIGTERM.
--example serves a copy of Ferry's fixture store (orders in DuckDB, users in SQLite) on file://,
laid out with its spicepod in ${EXAMPLE_DIR} (or --example-dir DIR).
Prints "Flight on grpc://HOST:PORT" and "Listening on http://HOST:PORT" once both accept requests.

Options:
      --http HOST:PORT        Address to bind (HOST:PORT, :PORT or PORT); default 127.0.0.1:8090
                              (port 0 picks a free one)
      --flight HOST:PORT      Arrow Flight / Flight SQL address; default 127.0.0.1:50051
      --no-flight             Do not serve Arrow Flight
      --tls-cert FILE         Serve HTTPS and Flight over TLS with this PEM certificate chain
      --tls-key FILE          ... and this PEM private key (both or neither); without them,
                              the spicepod's runtime.tls applies (a pod with TLS is never
                              served in plaintext)
      --api-key-env NAME      Require the API key held in environment variable NAME
                              (X-API-Key or 'Authorization: Bearer <key>') on every route
                              but /health, /v1/ready and the inspector page's static files;
                              accepted beside the spicepod's runtime.auth.api-key keys
      --data-dir DIR          Directory for live files of datasets without a *_file param;
                              default .ferry/data beside the spicepod
      --example               Serve the example store instead of a spicepod (see above)
      --example-dir DIR       Where --example lays it out; default ${EXAMPLE_DIR}
      --query-timeout DURATION
                              The longest a query may run in its engine (30s, 2m, …); it is
                              then stopped there and answered 504 ERR_QUERY_TIMEOUT (Flight:
                              DEADLINE_EXCEEDED); default the spicepod's
                              runtime.query.ferry_timeout, else 30s
      --log-level LEVEL       debug, info (default), warn or error
      --log-format FORMAT     pretty (default on a terminal) or json (default otherwise)
      --no-inspector          Do not serve the inspector page (/inspector)
      --inspect WS-URL        Also stream the dataset machines to a Stately inspector
                              (@statelyai/inspect's WebSocket server, e.g. ws://127.0.0.1:8080)
      --inspect-dataset NAME  ... only this dataset's machine (with many datasets, pick one)
  -h, --help                  Show this help

Routes: POST /v1/sql, GET /v1/datasets[?status=true], GET /v1/status, GET /v1/ready,
        POST /v1/datasets/<name>/acceleration/refresh, POST /v1/datasets/<name>/commands,
        GET /v1/datasets/<name>/acceleration/snapshots, GET /health, GET /metrics,
        GET /inspector (with an API key, the page asks for it and keeps a session cookie)
Flight: Flight SQL statements, prepared statements and catalog commands; the same API key as a
        bearer token (or the Basic-auth handshake's password)
`;

/** `--tls-cert` and `--tls-key`, read once for both servers; both or neither. */
async function readTls(parsed: Parsed): Promise<{ cert: Buffer; key: Buffer } | undefined> {
  const certFile = stringOption(parsed, 'tls-cert');
  const keyFile = stringOption(parsed, 'tls-key');
  if (certFile === undefined && keyFile === undefined) return undefined;
  if (certFile === undefined || keyFile === undefined) {
    throw new UsageError(
      'serve',
      `--tls-cert and --tls-key go together; add ${certFile === undefined ? '--tls-cert' : '--tls-key'}`,
    );
  }
  const read = async (flag: string, file: string): Promise<Buffer> => {
    try {
      return await readFile(resolve(file));
    } catch (error) {
      throw new UsageError(
        'serve',
        `${flag} ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); give a PEM file`,
      );
    }
  };
  const cert = await read('--tls-cert', certFile);
  const key = await read('--tls-key', keyFile);
  // Checked as runtime.tls is, so a pair that cannot work is not reported as an address in use.
  const problem = tlsPairProblem(cert, key);
  if (problem !== undefined) {
    throw new UsageError(
      'serve',
      problem.mismatch
        ? `--tls-key ${keyFile} is not the private key of the certificate in --tls-cert ${certFile} (${problem.reason}); give the key that certificate was issued for`
        : `--tls-cert ${certFile} and --tls-key ${keyFile} cannot be used for TLS (${problem.reason}); give a PEM certificate chain and its private key`,
    );
  }
  return { cert, key };
}
const FORMATS: readonly LogFormat[] = ['pretty', 'json'];

/**
 * Makes the data directory (live files, the query engines' spill files) and checks it can be
 * written, before anything starts. An unusable one otherwise left every dataset failing at each
 * check and every query answered 500. A default beside a spicepod that is not there is left to the
 * runtime, which reports the spicepod.
 */
async function checkDataDir(given: string | undefined, spicepod: string, defaultDir: string): Promise<void> {
  let dir: string;
  if (given !== undefined) dir = resolve(given);
  else {
    const base = dirname(resolve(spicepod));
    if (!existsSync(base)) return;
    dir = join(base, defaultDir);
  }
  try {
    await mkdir(dir, { recursive: true });
    await access(dir, constants.W_OK | constants.X_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new UsageError(
      'serve',
      given !== undefined
        ? `--data-dir '${given}' cannot be used as the data directory (${code}); give a directory this user can create and write`
        : `the data directory '${dir}' (the default: ${defaultDir} beside the spicepod) cannot be used (${code}); pass --data-dir with a directory this user can create and write`,
    );
  }
}

/**
 * Why a server could not listen: the errno (`EADDRINUSE`, `EACCES`), also when gRPC wraps it in
 * its own message (`No address added out of total 1 resolved errors: [listen EADDRINUSE: …]`).
 */
function listenReason(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && code !== '') return code;
  const message = error instanceof Error ? error.message : String(error);
  return /\b(E[A-Z]{2,})\b/.exec(message)?.[1] ?? message;
}

async function run(parsed: Parsed, io: CliIo): Promise<number> {
  const example = parsed.values.example === true;
  const exampleDir = stringOption(parsed, 'example-dir');
  if (example && parsed.positionals.length > 0) {
    throw new UsageError(
      'serve',
      `--example serves the example's own spicepod; leave out '${parsed.positionals[0]}'`,
    );
  }
  if (!example && exampleDir !== undefined) {
    throw new UsageError(
      'serve',
      '--example-dir says where --example lays the example out; give --example too',
    );
  }
  let [spicepod] = example ? [''] : (expectPositionals('serve', parsed, ['spicepod.yaml']) as [string]);
  const { host, port } = parseListenAddress('serve', stringOption(parsed, 'http') ?? '127.0.0.1:8090');
  const apiKey = apiKeyFromEnv(
    io.env,
    stringOption(parsed, 'api-key-env'),
    (name) => new ApiKeyEnvError(name),
  );
  const level = choiceOption('serve', parsed, 'log-level', LOG_LEVELS) ?? 'info';
  const format =
    choiceOption('serve', parsed, 'log-format', FORMATS) ?? (io.stderr.isTTY === true ? 'pretty' : 'json');
  let dataDir = stringOption(parsed, 'data-dir');
  const queryTimeoutMs = durationOption('serve', parsed, 'query-timeout');
  const inspectUrl = stringOption(parsed, 'inspect');
  if (inspectUrl !== undefined && !/^wss?:\/\/[^/]/i.test(inspectUrl)) {
    throw new UsageError(
      'serve',
      `--inspect must be a WebSocket URL like ws://127.0.0.1:8080, got '${inspectUrl}'`,
    );
  }
  const inspectDataset = stringOption(parsed, 'inspect-dataset');
  if (inspectDataset !== undefined && inspectUrl === undefined) {
    throw new UsageError(
      'serve',
      '--inspect-dataset names the machine --inspect streams; give --inspect too',
    );
  }
  const withInspector = parsed.values['no-inspector'] !== true;
  const flightAddress =
    parsed.values['no-flight'] === true
      ? undefined
      : parseListenAddress('serve', stringOption(parsed, 'flight') ?? '127.0.0.1:50051', {
          name: 'flight',
          example: '127.0.0.1:50051',
        });
  if (
    flightAddress !== undefined &&
    port !== 0 &&
    flightAddress.port === port &&
    flightAddress.host === host
  ) {
    throw new UsageError(
      'serve',
      `--http and --flight are both ${host}:${port}; give Arrow Flight another port (default 50051)`,
    );
  }
  const tls = await readTls(parsed);
  const cliLogger = createCliLogger({ sink: io.stderr, format, level });
  // Installed before anything starts, so a signal during startup still shuts down cleanly.
  const shutdown = io.waitForShutdown();

  if (example) {
    const laidOut = await layOutExample(exampleDir ?? EXAMPLE_DIR);
    spicepod = laidOut.spicepod;
    dataDir ??= laidOut.dataDir;
    io.stdout.write(`Example: ${spicepod} serves a file:// copy of Ferry's fixture store (orders, users)\n`);
  }
  // Loaded on use, so `ferry validate` and `--help` start without the engines' native modules.
  const { apiKeyCheck, createRuntime, DEFAULT_DATA_DIR, redactingLogger } = await import('@ferry/runtime');
  await checkDataDir(dataDir, spicepod, DEFAULT_DATA_DIR);
  const { inspectorRoutes, startServer, startStatelyBridge } = await import('@ferry/server');
  const { routeGrpcLogs, startFlightServer } = await import('@ferry/flight');
  const runtime: Runtime = await createRuntime(spicepod, {
    logger: cliLogger,
    logLevel: level,
    env: io.env,
    ...(dataDir === undefined ? {} : { dataDir: resolve(dataDir) }),
    ...(queryTimeoutMs === undefined ? {} : { queryTimeoutMs }),
  });
  // The servers' log lines never show a secret the spicepod's references resolved to either.
  const logger = redactingLogger(cliLogger, runtime.config.secretReferences);
  // This process is ferry serve's: gRPC's own lines are log lines like the rest, not text between them.
  routeGrpcLogs(logger);
  // Started before anything is awaited, so the bridge sees each dataset machine being created.
  let bridge: StatelyBridge | undefined;
  try {
    bridge =
      inspectUrl === undefined
        ? undefined
        : startStatelyBridge(runtime, {
            url: inspectUrl,
            logger,
            ...(inspectDataset === undefined ? {} : { dataset: inspectDataset }),
          });
  } catch (error) {
    await runtime.close();
    if ((error as { code?: string }).code !== 'ERR_UNKNOWN_DATASET') throw error;
    // An --inspect-dataset the spicepod does not configure: said of the flag, not as a table.
    const names = runtime.datasets().map((dataset) => dataset.name);
    throw new FerryError(
      'ERR_UNKNOWN_DATASET',
      `--inspect-dataset '${inspectDataset}' is not a dataset of ${spicepod}; its datasets are: ${names.join(', ')}`,
      { cause: error },
    );
  }
  const key = apiKey === undefined ? {} : { apiKey };
  // The spicepod's runtime.auth.api-key keys apply on every endpoint, beside --api-key-env's.
  const auth = apiKeyCheck(runtime.config, [apiKey]);
  let routes: Route[];
  try {
    routes = withInspector ? inspectorRoutes(runtime, key) : [];
  } catch (error) {
    await bridge?.stop();
    await runtime.close();
    throw error;
  }
  const stopEarly = async (): Promise<void> => {
    await bridge?.stop();
    await runtime.close();
  };
  let flight: RunningFlightServer | undefined;
  if (flightAddress !== undefined) {
    try {
      flight = await startFlightServer(runtime, {
        ...flightAddress,
        logger,
        ...key,
        ...(tls === undefined ? {} : { tls }),
      });
    } catch (error) {
      await stopEarly();
      throw new ListenError(`${flightAddress.host}:${flightAddress.port}`, listenReason(error), {
        cause: error,
        flag: 'flight',
      });
    }
  }
  let server: RunningServer;
  try {
    server = await startServer(runtime, {
      host,
      port,
      logger,
      routes,
      ...key,
      ...(tls === undefined ? {} : { tls }),
      ...(flight === undefined ? {} : { endpoints: [{ name: 'flight', endpoint: flight.address }] }),
    });
  } catch (error) {
    await flight?.close();
    await stopEarly();
    throw new ListenError(`${host}:${port}`, listenReason(error), { cause: error });
  }
  if (flight !== undefined) io.stdout.write(`Flight on ${flight.url}\n`);
  io.stdout.write(`Listening on ${server.url}\n`);
  // A dataset whose configuration was refused is never served (its error is logged above).
  const datasets = runtime.datasets();
  const refused = datasets.filter((dataset) => dataset.from === undefined).map((dataset) => dataset.name);
  const served = datasets.length - refused.length;
  logger.info(
    {
      component: 'server',
      url: server.url,
      datasets: served,
      ...(refused.length === 0 ? {} : { refused }),
      auth: auth.required,
      apiKeys: auth.count,
      tls: tls !== undefined || runtime.tls !== undefined,
    },
    `Serving ${served} dataset(s) on ${server.url}${
      refused.length === 0
        ? ''
        : `; ${refused.length} refused by its configuration (${refused.join(', ')}: logged above)`
    }`,
  );
  if (withInspector) {
    logger.info(
      { component: 'inspector', url: `${server.url}/inspector` },
      `Inspector page at ${server.url}/inspector${auth.required ? ' (it asks for an API key)' : ''}`,
    );
  }

  const signal = await shutdown;
  logger.info(
    { component: 'server', signal },
    `Received ${signal}; closing the HTTP ${flight === undefined ? 'server' : 'and Flight servers'}, then the runtime`,
  );
  await Promise.all([server.close(), flight?.close()]);
  await bridge?.stop();
  await runtime.close();
  logger.info({ component: 'server' }, 'Stopped');
  return 0;
}

export const serveCommand: Command = {
  name: 'serve',
  positionals: ['spicepod.yaml'],
  summary: 'Serve a spicepod over HTTP until SIGINT/SIGTERM',
  help: HELP,
  options: {
    http: { type: 'string' },
    'api-key-env': { type: 'string' },
    'data-dir': { type: 'string' },
    example: { type: 'boolean' },
    'example-dir': { type: 'string' },
    'query-timeout': { type: 'string' },
    'log-level': { type: 'string' },
    'log-format': { type: 'string' },
    'no-inspector': { type: 'boolean' },
    inspect: { type: 'string' },
    'inspect-dataset': { type: 'string' },
    flight: { type: 'string' },
    'no-flight': { type: 'boolean' },
    'tls-cert': { type: 'string' },
    'tls-key': { type: 'string' },
  },
  run,
};
