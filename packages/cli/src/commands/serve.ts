/**
 * `ferry serve <spicepod.yaml>`: starts the runtime and the HTTP server (with the inspector page at
 * /inspector unless `--no-inspector`, and a Stately inspector bridge with `--inspect <ws-url>`),
 * prints the address, and on SIGINT/SIGTERM closes the server (in-flight requests finish), the
 * bridge, then the runtime, and exits 0. Logs go to stderr: pretty on a terminal, JSON lines otherwise.
 */
import { resolve } from 'node:path';
import type { LogLevel, Runtime } from '@ferry/runtime';
import type { Route, RunningServer, StatelyBridge } from '@ferry/server';
import { choiceOption, expectPositionals, type Parsed, parseHttpAddress, stringOption } from '../args.js';
import { apiKeyFromEnv, type CliIo, type Command } from '../command.js';
import { ApiKeyEnvError, ListenError, UsageError } from '../errors.js';
import { createCliLogger, type LogFormat } from '../log-format.js';

const HELP = `Usage: ferry serve <spicepod.yaml> [options]

Serve the spicepod's snapshot datasets over HTTP until SIGINT or SIGTERM.
Prints "Listening on http://HOST:PORT" once the server accepts requests.

Options:
      --http HOST:PORT        Address to bind; default 127.0.0.1:8090 (port 0 picks a free one)
      --api-key-env NAME      Require the API key held in environment variable NAME
                              ('Authorization: Bearer <key>') on every route but /health
                              and the inspector page's static files
      --data-dir DIR          Directory for live files of datasets without a *_file param;
                              default .ferry/data beside the spicepod
      --log-level LEVEL       debug, info (default), warn or error
      --log-format FORMAT     pretty (default on a terminal) or json (default otherwise)
      --no-inspector          Do not serve the inspector page (/inspector)
      --inspect WS-URL        Also stream the dataset machines to a Stately inspector
                              (@statelyai/inspect's WebSocket server, e.g. ws://127.0.0.1:8080)
  -h, --help                  Show this help

Routes: POST /v1/sql, GET /v1/datasets, POST /v1/datasets/<name>/commands,
        GET /v1/ready, GET /health, GET /metrics,
        GET /inspector (with an API key, open /inspector?key=<key>)
`;

const LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];
const FORMATS: readonly LogFormat[] = ['pretty', 'json'];

async function run(parsed: Parsed, io: CliIo): Promise<number> {
  const [spicepod] = expectPositionals('serve', parsed, ['spicepod.yaml']) as [string];
  const { host, port } = parseHttpAddress('serve', stringOption(parsed, 'http') ?? '127.0.0.1:8090');
  const apiKey = apiKeyFromEnv(
    io.env,
    stringOption(parsed, 'api-key-env'),
    (name) => new ApiKeyEnvError(name),
  );
  const level = choiceOption('serve', parsed, 'log-level', LEVELS) ?? 'info';
  const format =
    choiceOption('serve', parsed, 'log-format', FORMATS) ?? (io.stderr.isTTY === true ? 'pretty' : 'json');
  const dataDir = stringOption(parsed, 'data-dir');
  const inspectUrl = stringOption(parsed, 'inspect');
  if (inspectUrl !== undefined && !/^wss?:\/\/[^/]/i.test(inspectUrl)) {
    throw new UsageError(
      'serve',
      `--inspect must be a WebSocket URL like ws://127.0.0.1:8080, got '${inspectUrl}'`,
    );
  }
  const withInspector = parsed.values['no-inspector'] !== true;
  const logger = createCliLogger({ sink: io.stderr, format, level });
  // Installed before anything starts, so a signal during startup still shuts down cleanly.
  const shutdown = io.waitForShutdown();

  // Loaded on use, so `ferry validate` and `--help` start without the engines' native modules.
  const { createRuntime } = await import('@ferry/runtime');
  const { inspectorRoutes, startServer, startStatelyBridge } = await import('@ferry/server');
  const runtime: Runtime = await createRuntime(spicepod, {
    logger,
    logLevel: level,
    env: io.env,
    ...(dataDir === undefined ? {} : { dataDir: resolve(dataDir) }),
  });
  // Started before anything is awaited, so the bridge sees each dataset machine being created.
  const bridge: StatelyBridge | undefined =
    inspectUrl === undefined ? undefined : startStatelyBridge(runtime, { url: inspectUrl, logger });
  const key = apiKey === undefined ? {} : { apiKey };
  let routes: Route[];
  try {
    routes = withInspector ? inspectorRoutes(runtime, key) : [];
  } catch (error) {
    await bridge?.stop();
    await runtime.close();
    throw error;
  }
  let server: RunningServer;
  try {
    server = await startServer(runtime, { host, port, logger, routes, ...key });
  } catch (error) {
    await bridge?.stop();
    await runtime.close();
    const reason = (error as { code?: string }).code ?? (error as Error).message;
    throw new ListenError(`${host}:${port}`, reason, { cause: error });
  }
  io.stdout.write(`Listening on ${server.url}\n`);
  logger.info(
    { component: 'server', url: server.url, datasets: runtime.datasets().length, auth: apiKey !== undefined },
    `Serving ${runtime.datasets().length} dataset(s) on ${server.url}`,
  );
  if (withInspector) {
    logger.info(
      { component: 'inspector', url: `${server.url}/inspector` },
      `Inspector page at ${server.url}/inspector${apiKey === undefined ? '' : '?key=<API key>'}`,
    );
  }

  const signal = await shutdown;
  logger.info(
    { component: 'server', signal },
    `Received ${signal}; closing the HTTP server, then the runtime`,
  );
  await server.close();
  await bridge?.stop();
  await runtime.close();
  logger.info({ component: 'server' }, 'Stopped');
  return 0;
}

export const serveCommand: Command = {
  name: 'serve',
  summary: 'Serve a spicepod over HTTP until SIGINT/SIGTERM',
  help: HELP,
  options: {
    http: { type: 'string' },
    'api-key-env': { type: 'string' },
    'data-dir': { type: 'string' },
    'log-level': { type: 'string' },
    'log-format': { type: 'string' },
    'no-inspector': { type: 'boolean' },
    inspect: { type: 'string' },
  },
  run,
};
