/**
 * The built-in HTTP API, a Spice-compatible subset: `POST /v1/sql`, `GET /v1/datasets`,
 * `POST /v1/datasets/:name/commands`, `GET /v1/ready`, `GET /health` and `GET /metrics`.
 * Every route is a thin layer over the embed API; errors keep the runtime's code and message.
 */
import type { JsonValue } from '@ferry/core';
import type { DatasetCommand, Runtime } from '@ferry/runtime';
import { datasetView, isServing } from './dataset-view.js';
import { BadRequestError, InvalidCommandError } from './errors.js';
import { sendJson, sendText } from './http.js';
import { collectMetrics } from './metrics.js';
import { formatMetrics, type Histogram, PROMETHEUS_CONTENT_TYPE } from './prometheus.js';
import type { Route, RouteContext } from './router.js';

const COMMANDS: readonly DatasetCommand[] = ['poll.now', 'polling.pause', 'polling.resume'];

interface SqlRequest {
  readonly sql: string;
  readonly params: readonly JsonValue[];
}

function parseJson(body: Buffer, what: string): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw new BadRequestError(
      `The ${what} body is not valid JSON (${(error as Error).message}); fix the JSON.`,
      {
        cause: error,
      },
    );
  }
}

/** `text/plain` (or any non-JSON type): the body is the SQL; `application/json`: `{ sql, params? }`. */
export function parseSqlRequest(body: Buffer, contentType: string | undefined): SqlRequest {
  let sql: unknown;
  let params: unknown = [];
  if (contentType !== undefined && /\bjson\b/i.test(contentType)) {
    const value = parseJson(body, '/v1/sql');
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new BadRequestError(
        'The /v1/sql JSON body must be an object: { "sql": "SELECT …", "params": [] }.',
      );
    }
    sql = (value as { sql?: unknown }).sql;
    params = (value as { params?: unknown }).params ?? [];
    if (typeof sql !== 'string') {
      throw new BadRequestError('The /v1/sql JSON body has no "sql" string; send { "sql": "SELECT …" }.');
    }
    if (!Array.isArray(params)) {
      throw new BadRequestError(
        '"params" of the /v1/sql JSON body must be an array of values, one per placeholder.',
      );
    }
  } else {
    sql = body.toString('utf8');
  }
  if ((sql as string).trim() === '') {
    throw new BadRequestError('The /v1/sql body holds no SQL; send one SELECT statement as the body.');
  }
  return { sql: sql as string, params: params as JsonValue[] };
}

async function postSql(context: RouteContext, latency: Histogram): Promise<void> {
  const { sql, params } = parseSqlRequest(await context.body(), context.req.headers['content-type']);
  const started = performance.now();
  let outcome = 'error';
  try {
    const result = await context.runtime.query(sql, params);
    outcome = 'ok';
    sendJson(context.res, 200, result.rows, {
      'x-ferry-dataset': result.dataset,
      ...(result.snapshotId === null ? {} : { 'x-ferry-snapshot-id': String(result.snapshotId) }),
    });
  } finally {
    latency.observe((performance.now() - started) / 1000, { outcome });
  }
}

function getReady(context: RouteContext): void {
  const pending = context.runtime.datasets().filter((info) => !isServing(info));
  if (pending.length === 0) {
    sendText(context.res, 200, 'ready');
    return;
  }
  const list = pending.map((info) => `${info.name} (${info.state})`).join(', ');
  sendText(context.res, 503, `not ready: ${list}`);
}

async function postCommand(context: RouteContext): Promise<void> {
  const name = context.params.name as string;
  const value = parseJson(await context.body(), 'command');
  const command = (value as { command?: unknown } | null)?.command;
  if (!COMMANDS.includes(command as DatasetCommand)) throw new InvalidCommandError(name, command);
  await context.runtime.send(name, command as DatasetCommand);
  sendJson(context.res, 202, { dataset: name, command, accepted: true });
}

/** The built-in routes; `latency` records POST /v1/sql query times for /metrics. */
export function apiRoutes(runtime: Runtime, latency: Histogram): Route[] {
  return [
    { method: 'GET', path: '/health', public: true, handle: ({ res }) => sendText(res, 200, 'ok') },
    { method: 'GET', path: '/v1/ready', handle: getReady },
    { method: 'POST', path: '/v1/sql', handle: (context) => postSql(context, latency) },
    {
      method: 'GET',
      path: '/v1/datasets',
      handle: ({ res }) => sendJson(res, 200, runtime.datasets().map(datasetView)),
    },
    { method: 'POST', path: '/v1/datasets/:name/commands', handle: postCommand },
    {
      method: 'GET',
      path: '/metrics',
      handle: ({ res }) =>
        sendText(res, 200, formatMetrics(collectMetrics(runtime, latency, Date.now())), {
          'content-type': PROMETHEUS_CONTENT_TYPE,
        }),
    },
  ];
}
