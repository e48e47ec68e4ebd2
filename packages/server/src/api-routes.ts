/**
 * The built-in HTTP API, Spice's surface plus Ferry's own routes, as a fastify plugin: every route
 * is a thin layer over the embed API, and errors keep the runtime's code and message.
 *
 *   GET  /health                                     ok (no API key)
 *   GET  /v1/ready                                   ready | 503 not ready: …
 *   POST /v1/sql                                     rows, in the format `Accept` picks (Arrow: streamed);
 *                                                    Spice's cache headers, an ETag (If-None-Match: 304)
 *   GET  /v1/datasets                                ?status=true ?format=csv ?source=…
 *   GET  /v1/views                                   the spicepod's views; ?format=csv
 *   POST /v1/datasets/:name/commands                 Ferry's machine commands
 *   POST /v1/datasets/:name/acceleration/refresh     a poll now (Spice)
 *   GET  /v1/datasets/:name/acceleration/snapshots   ?limit=N (Spice's SnapshotSummary)
 *   GET  /v1/datasets/:name/acceleration/snapshots/:id  one snapshot (Spice's SnapshotInfo) | 404
 *   POST /v1/datasets/:name/acceleration/snapshots/current  400 ERR_SNAPSHOTS_READ_ONLY (a reader)
 *   GET  /v1/status                                  the endpoints served; ?format=csv
 *   GET  /metrics                                    Prometheus text format
 */
import { setMaxListeners } from 'node:events';
import type { Socket } from 'node:net';
import type { SqlDialect } from '@ferry/engines';
import {
  type DatasetInfo,
  MAX_STALENESS_HEADER,
  maxStalenessOption,
  memoryReturn,
  type QueryProvenance,
  type Runtime,
  SNAPSHOT_HEADER,
  snapshotHeaderValue,
  snapshotPinsOption,
} from '@ferry/runtime';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { bypassesCache, cacheHeaders, entityTag, matchesIfNoneMatch } from './cache-headers.js';
import { runCommand } from './commands.js';
import {
  DATASET_STATUS_COLUMNS,
  datasetStatusRow,
  datasetView,
  isServing,
  notReadyReason,
  pastStalenessBound,
} from './dataset-view.js';
import {
  BadRequestError,
  httpStatusFor,
  SnapshotsReadOnlyError,
  UnsupportedContentEncodingError,
} from './errors.js';
import { toCsv } from './formats.js';
import type { QueryOutcome, ServerMetrics } from './metrics.js';
import { snapshotEntry, snapshotSummary } from './snapshot-view.js';
import { exactJson, parseSqlRequest, SQL_BODY_HINT, SQL_BODY_SCHEMA } from './sql-request.js';
import {
  type AnswerOptions,
  answerSql,
  SQL_MEDIA_TYPES,
  type SqlAnswer,
  type SqlLimits,
  sqlMediaType,
} from './sql-response.js';

export interface ApiRoutesOptions {
  readonly runtime: Runtime;
  readonly metrics: ServerMetrics;
  /** True when an extra route already serves this method and path (it wins). */
  readonly taken: (method: string, path: string) => boolean;
  /** Endpoints served beside this one, listed by `GET /v1/status` after `http` and `metrics`. */
  readonly endpoints: readonly StatusEndpoint[];
  /** Caps on each `/v1/sql` answer. */
  readonly sqlLimits?: SqlLimits;
  /** Logs a failure that is the server's fault (a 500). */
  readonly onServerError?: (request: FastifyRequest, error: unknown) => void;
}

/** One row of `GET /v1/status` (Spice's shape). */
export interface StatusEndpoint {
  /** `flight`, for the Arrow Flight server. */
  readonly name: string;
  /** `host:port`. */
  readonly endpoint: string;
}

const FORMAT_QUERY = {
  type: 'object',
  properties: { format: { type: 'string', enum: ['json', 'csv'] } },
} as const;

const NAME_PARAMS = {
  type: 'object',
  properties: { name: { type: 'string', minLength: 1 } },
  required: ['name'],
} as const;

/** Answers a list of flat objects as JSON, or as CSV for `?format=csv`. */
function sendList(
  reply: FastifyReply,
  format: string | undefined,
  columns: readonly string[],
  items: readonly Record<string, unknown>[],
): FastifyReply {
  if (format === 'csv') return reply.type('text/csv; charset=utf-8').send(toCsv(columns, items));
  return reply.send(items);
}

/**
 * How statements tokenize (only named parameters depend on it): SQLite's way when every dataset is
 * an SQLite (or Turso) one, since such a pod runs every query in SQLite; DuckDB's otherwise.
 */
function dialectFor(runtime: Runtime): () => SqlDialect {
  return () => {
    const engines = runtime.datasets().map((info) => info.engine);
    return engines.length > 0 && engines.every((engine) => engine === 'sqlite' || engine === 'turso')
      ? 'sqlite'
      : 'duckdb';
  };
}

/**
 * `x-ferry-dataset` / `x-ferry-snapshot-id`: the datasets the result was read from, in order; and
 * `x-ferry-snapshot`, the same as `orders=17, users=4` (what a client sends back to pin them).
 */
function provenanceHeaders(reply: FastifyReply, result: QueryProvenance): void {
  if (result.datasets.length === 0) return;
  reply
    .header('x-ferry-dataset', result.datasets.map((read) => read.name).join(', '))
    .header('x-ferry-snapshot-id', result.datasets.map((read) => String(read.snapshotId)).join(', '))
    .header(SNAPSHOT_HEADER, snapshotHeaderValue(result.datasets));
}

/** One request header's text (repeated headers joined as HTTP joins them); undefined when absent. */
function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/** Each connection's signal (made on its first query). */
const connectionSignals = new WeakMap<Socket, AbortSignal>();

/**
 * A signal that fires when the client goes away: its connection closes. One per connection, not
 * per request (an `AbortSignal` costs ~7 µs to make on Node 20): a keep-alive connection's queries
 * share it, each taking its listener off when it ends (a query that finished has none to fire), and
 * a request that comes on a connection already closed starts cancelled.
 */
function clientGone(request: FastifyRequest): AbortSignal {
  const { socket } = request.raw;
  let signal = connectionSignals.get(socket);
  if (signal === undefined) {
    const controller = new AbortController();
    signal = controller.signal;
    // Pipelined requests run at once on one connection, each query listening: no leak warning.
    setMaxListeners(0, signal);
    connectionSignals.set(socket, signal);
    const gone = (): void => controller.abort(new Error('the HTTP client went away'));
    // Closed before its first query began (a close already emitted would never be heard).
    if (socket.destroyed) gone();
    else socket.once('close', gone);
  }
  return signal;
}

/**
 * Ends an answer whose query failed after its first bytes went out: the connection is destroyed
 * before the body's end is written, so no client takes what it got for a complete answer. A limit
 * that did its job (a timeout, an idle reader, a result too large) was logged by the runtime; only
 * a failure of the server's own is logged here.
 */
function cutAnswer(
  request: FastifyRequest,
  reply: FastifyReply,
  error: unknown,
  onServerError: ApiRoutesOptions['onServerError'],
): void {
  if (httpStatusFor(error) === 500) onServerError?.(request, error);
  reply.raw.destroy();
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A request body as text; the 415 for a compressed one (read as text it would be refused as not
 * UTF-8, which names the wrong fix), the 400 for one that is not UTF-8.
 */
function utf8Body(request: FastifyRequest, body: Buffer): string | Error {
  const coding = headerText(request.headers['content-encoding'])?.trim();
  if (coding !== undefined && coding !== '' && coding.toLowerCase() !== 'identity') {
    return new UnsupportedContentEncodingError(coding);
  }
  try {
    return strictUtf8.decode(body);
  } catch {
    return new BadRequestError(
      'The request body is not valid UTF-8 (invalid UTF-8 sequence); send the SQL encoded as UTF-8.',
    );
  }
}

/** The address the request came in on, as `host:port`. */
function localEndpoint(request: FastifyRequest): string {
  const { localAddress, localPort } = request.raw.socket;
  const host = localAddress?.includes(':') === true ? `[${localAddress}]` : (localAddress ?? '');
  return `${host}:${localPort ?? ''}`;
}

export async function apiRoutes(app: FastifyInstance, options: ApiRoutesOptions): Promise<void> {
  const { runtime, metrics } = options;
  const dialect = dialectFor(runtime);
  // JSON for any JSON media type (`application/json`, `…/…+json`); any other body is text. Either
  // must be UTF-8 (Spice: 400 "invalid UTF-8 sequence"): replacing a byte would run other SQL.
  // An integer past 2^53 JSON.parse would make a double (Spice's serde reads it exactly) is a bigint.
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser(
    /^[a-z]+\/(?:[\w.-]+\+)?json\s*(?:;|$)/i,
    { parseAs: 'buffer' },
    (request, body, done) => {
      const text = utf8Body(request, body as Buffer);
      if (text instanceof Error) done(text);
      // No body, only a JSON type (a client that labels every request so): read as no body, so
      // a refresh needs none and an empty /v1/sql is told it holds no SQL, not that it is bad JSON.
      else if (text.trim() === '') done(null, '');
      else {
        const exact = exactJson(text);
        json(request, exact.text, (error, body) =>
          error ? done(error, undefined) : done(null, exact.revive(body)),
        );
      }
    },
  );
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body, done) => {
    const text = utf8Body(request, body as Buffer);
    if (text instanceof Error) done(text);
    else done(null, text);
  });

  const route = (definition: RouteOptions): void => {
    const methods = [definition.method].flat();
    if (!methods.some((method) => options.taken(method, definition.url))) app.route(definition);
  };

  route({
    method: 'GET',
    url: '/health',
    config: { public: true },
    // Spice's body, newline included (its routes.rs: `get(|| async { "ok\n" })`).
    handler: (_request, reply) => reply.type('text/plain; charset=utf-8').send('ok\n'),
  });

  // Open without a key, as in Spice (a probe has none); the names of the datasets not ready yet
  // are told only to a caller that presents a key (or when none is required).
  route({
    method: 'GET',
    url: '/v1/ready',
    config: { public: true },
    handler: (request, reply) => {
      // Spice's runtime.ready_state: on_load (default) waits for every dataset to serve;
      // on_registration only for every dataset to have started (served, failed or waiting).
      const registered = runtime.config.readyState === 'on_registration';
      const pending = runtime
        .datasets()
        .filter((info) =>
          registered
            ? info.state === 'starting' || info.state === 'stopped'
            : !isServing(info) || pastStalenessBound(info),
        );
      reply.type('text/plain; charset=utf-8');
      if (pending.length === 0) return reply.send('ready');
      if (!request.keyAccepted) return reply.code(503).send('not ready');
      const list = pending.map((info) => `${info.name} (${notReadyReason(info)})`).join(', ');
      return reply.code(503).send(`not ready: ${list}`);
    },
  });

  route({
    method: 'POST',
    url: '/v1/sql',
    schema: { body: SQL_BODY_SCHEMA },
    config: { hint: SQL_BODY_HINT },
    handler: async (request, reply) => {
      const { sql, params } = parseSqlRequest(request.body, dialect);
      const type = sqlMediaType(request.headers.accept, () => request.accepts().type([...SQL_MEDIA_TYPES]));
      // Beside CORS's `Vary: Origin`, when it set one (the answer depends on both).
      const vary = reply.getHeader('vary');
      reply.header('vary', vary === undefined ? 'Accept' : `${String(vary)}, Accept`);
      const pins = snapshotPinsOption(headerText(request.headers[SNAPSHOT_HEADER]));
      const bound = maxStalenessOption(headerText(request.headers[MAX_STALENESS_HEADER]));
      // A client holding the answer as it is now is told so (within its staleness bound), and the query does not run.
      const version =
        request.headers['if-none-match'] === undefined
          ? undefined
          : runtime.resultVersion(sql, params, { ...pins, ...bound });
      if (version !== undefined && matchesIfNoneMatch(request.headers, entityTag(version, type))) {
        return reply.code(304).header('etag', entityTag(version, type)).send();
      }
      let answer: SqlAnswer | undefined;
      const queryOptions: AnswerOptions = {
        signal: clientGone(request),
        noCache: bypassesCache(request.headers),
        protocol: 'http',
        ...bound,
        ...pins,
      };
      // Once the response has gone out (not when its last batch was taken: a large answer's text
      // sits in the socket while the client reads), its garbage can be collected.
      reply.raw.once('close', () => answer !== undefined && memoryReturn.ended(answer.bytes()));
      const started = performance.now();
      let outcome: QueryOutcome = 'error';
      try {
        answer = await answerSql(runtime, sql, params, type, queryOptions, options.sqlLimits, (error) =>
          cutAnswer(request, reply, error, options.onServerError),
        );
        outcome = 'ok';
        provenanceHeaders(reply, answer.provenance);
        cacheHeaders(reply, sql, params, answer.provenance, type);
        return reply.type(answer.contentType).send(answer.body);
      } finally {
        metrics.observeQuery((performance.now() - started) / 1000, outcome);
      }
    },
  });

  route({
    method: 'GET',
    url: '/v1/datasets',
    schema: {
      querystring: {
        type: 'object',
        properties: {
          ...FORMAT_QUERY.properties,
          status: { type: 'boolean' },
          source: { type: 'string' },
        },
      },
    },
    handler: (request, reply) => {
      const query = request.query as { format?: string; status?: boolean; source?: string };
      const infos = runtime
        .datasets()
        .filter((info) => query.source === undefined || info.from?.split(':')[0] === query.source);
      const view = { status: query.status === true, secrets: runtime.config.secretReferences };
      const items = infos.map((info) => datasetView(info, view));
      const columns = Object.keys(datasetView(TEMPLATE_INFO, view));
      return sendList(reply, query.format, columns, items as unknown as Record<string, unknown>[]);
    },
  });

  // The spicepod's views (Spice lists them in no route of its own): name, description, SQL, dependsOn.
  route({
    method: 'GET',
    url: '/v1/views',
    schema: { querystring: FORMAT_QUERY },
    handler: (request, reply) => {
      const { format } = request.query as { format?: string };
      const items = runtime.config.views.map((view) => ({
        name: view.name,
        description: view.description ?? null,
        sql: view.sql,
        dependsOn: format === 'csv' ? view.dependsOn.join(' ') : view.dependsOn,
      }));
      return sendList(reply, format, ['name', 'description', 'sql', 'dependsOn'], items);
    },
  });

  route({
    method: 'POST',
    url: '/v1/datasets/:name/commands',
    schema: { params: NAME_PARAMS },
    config: { hint: 'send { "command": "poll.now" | "polling.pause" | "polling.resume" }' },
    handler: async (request, reply) => {
      const { name } = request.params as { name: string };
      return reply.code(202).send(await runCommand(runtime, name, request.body));
    },
  });

  route({
    method: 'POST',
    url: '/v1/datasets/:name/acceleration/refresh',
    schema: { params: NAME_PARAMS },
    handler: async (request, reply) => {
      const { name } = request.params as { name: string };
      const overrides = request.body as { refresh_sql?: unknown; refresh_mode?: unknown } | undefined;
      if (typeof overrides === 'object' && overrides !== null) {
        const refused = (['refresh_sql', 'refresh_mode'] as const).filter((key) => overrides[key] != null);
        if (refused.length > 0) {
          throw new BadRequestError(
            `Dataset '${name}' refreshes from its snapshot store (refresh_mode: snapshot), so ${refused.join(' and ')} cannot apply; send the refresh without a body (or {}).`,
          );
        }
      }
      await runtime.send(name, 'poll.now');
      return reply.code(201).send({ message: `Dataset refresh triggered for ${name}.` });
    },
  });

  route({
    method: 'GET',
    url: '/v1/datasets/:name/acceleration/snapshots',
    schema: {
      params: NAME_PARAMS,
      // At most the largest integer a number holds exactly (the runtime takes no other).
      querystring: {
        type: 'object',
        properties: { limit: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } },
      },
    },
    config: { hint: 'limit is a positive integer: keep the last N snapshots' },
    handler: async (request, reply) => {
      const { name } = request.params as { name: string };
      const { limit } = request.query as { limit?: number };
      const listing = await runtime.snapshots(name, limit === undefined ? {} : { limit });
      return reply.send(snapshotSummary(listing));
    },
  });

  // Spice's newer snapshot routes: one snapshot's entry, and setting the current one (a writer's job).
  route({
    method: 'GET',
    url: '/v1/datasets/:name/acceleration/snapshots/:id',
    schema: {
      params: {
        type: 'object',
        properties: { ...NAME_PARAMS.properties, id: { type: 'integer', minimum: 0 } },
        required: ['name', 'id'],
      },
    },
    config: { hint: 'the snapshot id is a whole number' },
    handler: async (request, reply) => {
      const { name, id } = request.params as { name: string; id: number };
      return reply.send(await snapshotEntry(runtime, name, id));
    },
  });
  route({
    method: 'POST',
    url: '/v1/datasets/:name/acceleration/snapshots/current',
    schema: { params: NAME_PARAMS },
    handler: (request) => {
      const { name } = request.params as { name: string };
      throw new SnapshotsReadOnlyError(runtime.status(name).name);
    },
  });

  route({
    method: 'GET',
    url: '/v1/status',
    schema: {
      querystring: {
        type: 'object',
        properties: { ...FORMAT_QUERY.properties, datasets: { type: 'boolean' } },
      },
    },
    handler: (request, reply) => {
      const endpoint = localEndpoint(request);
      const { format, datasets } = request.query as { format?: string; datasets?: boolean };
      const items = [
        // Spice's order: http, flight, metrics.
        { name: 'http', endpoint, status: 'Ready' },
        ...options.endpoints.map((other) => ({ ...other, status: 'Ready' })),
        { name: 'metrics', endpoint, status: 'Ready' },
        // Ferry's extension (?datasets=true): a row per dataset with its snapshot and staleness.
        ...(datasets === true ? runtime.datasets().map(datasetStatusRow) : []),
      ];
      const columns = datasets === true ? DATASET_STATUS_COLUMNS : ['name', 'endpoint', 'status'];
      return sendList(reply, format, columns, items);
    },
  });

  route({
    method: 'GET',
    url: '/metrics',
    handler: async (_request, reply) => reply.type(metrics.contentType).send(await metrics.scrape()),
  });
}

/** A dataset whose view has every column, so the CSV header is there even with no rows. */
const TEMPLATE_INFO: DatasetInfo = {
  name: '',
  engine: undefined,
  state: 'starting',
  status: undefined,
  error: undefined,
  stalenessMs: null,
  newerSnapshotId: null,
  maxStalenessMs: null,
};
