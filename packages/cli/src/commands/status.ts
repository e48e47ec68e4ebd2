/**
 * `ferry status`: asks a running `ferry serve` for its datasets (`GET /v1/datasets`) and prints
 * them as a table (or the JSON as received with `--json`).
 */
import type { DatasetView } from '@ferry/server';
import { expectPositionals, type Parsed, serverUrl, stringOption } from '../args.js';
import { apiKeyFromEnv, type CliIo, type Command } from '../command.js';
import { ApiKeyEnvError, ServerRequestError } from '../errors.js';
import { type HttpAnswer, requestText } from '../http-request.js';
import { formatTable } from '../table.js';

const HELP = `Usage: ferry status [--http 127.0.0.1:8090] [--api-key-env NAME] [--json]

Show the datasets of a running 'ferry serve': state, loaded snapshot, last poll and last error.

Options:
      --http HOST:PORT     Address of the server (or an http:// URL); default 127.0.0.1:8090
      --api-key-env NAME   Send the API key held in environment variable NAME
      --json               Print the server's JSON instead of a table
  -h, --help               Show this help
`;

function cell(value: string | number | null): string {
  return value === null ? '-' : String(value);
}

async function fetchDatasets(url: string, apiKey: string | undefined): Promise<DatasetView[]> {
  let response: HttpAnswer;
  try {
    response = await requestText(url, {
      headers: apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` },
    });
  } catch (error) {
    const reason = (error as { code?: string }).code ?? (error as Error).message;
    throw new ServerRequestError(url, reason, { cause: error });
  }
  const text = response.text;
  if (!response.ok) {
    let detail = text.trim();
    try {
      detail = (JSON.parse(text) as { error?: string }).error ?? detail;
    } catch {
      // Not JSON: keep the text.
    }
    throw new ServerRequestError(url, `HTTP ${response.status}: ${detail}`);
  }
  try {
    return JSON.parse(text) as DatasetView[];
  } catch (error) {
    throw new ServerRequestError(url, 'the answer is not JSON (is this a Ferry server?)', { cause: error });
  }
}

async function run(parsed: Parsed, io: CliIo): Promise<number> {
  expectPositionals('status', parsed, []);
  const base = serverUrl('status', stringOption(parsed, 'http') ?? '127.0.0.1:8090');
  const apiKey = apiKeyFromEnv(
    io.env,
    stringOption(parsed, 'api-key-env'),
    (name) => new ApiKeyEnvError(name),
  );
  const datasets = await fetchDatasets(`${base}/v1/datasets`, apiKey);
  if (parsed.values.json === true) {
    io.stdout.write(`${JSON.stringify(datasets, null, 2)}\n`);
    return 0;
  }
  if (datasets.length === 0) {
    io.stdout.write('No datasets.\n');
    return 0;
  }
  const rows = datasets.map((d) => [
    d.name,
    cell(d.engine),
    d.paused ? `${d.state} (paused)` : d.state,
    cell(d.snapshotId),
    cell(d.snapshotTime),
    cell(d.lastPollTime),
    cell(d.lastPollResult),
    cell(d.lastError),
  ]);
  io.stdout.write(
    formatTable(
      ['DATASET', 'ENGINE', 'STATE', 'SNAPSHOT', 'SNAPSHOT TIME', 'LAST POLL', 'RESULT', 'ERROR'],
      rows,
    ),
  );
  return 0;
}

export const statusCommand: Command = {
  name: 'status',
  summary: 'Show the datasets of a running server',
  help: HELP,
  options: {
    http: { type: 'string' },
    'api-key-env': { type: 'string' },
    json: { type: 'boolean' },
  },
  run,
};
