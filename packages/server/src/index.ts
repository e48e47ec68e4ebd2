/**
 * @ferry/server: the HTTP API over a Ferry runtime (Spice's HTTP surface plus Ferry's routes) on
 * fastify — `startServer`, the `Route` type for adding routes, the inspector (its page's routes
 * and the Stately inspector bridge), the error-to-status table, the response formats and the
 * prom-client registry `/metrics` serves.
 */
export { type ApiRoutesOptions, apiRoutes, type StatusEndpoint } from './api-routes.js';
export { presentedKeys, requestKeyChecker } from './auth.js';
export { type CommandAccepted, DATASET_COMMANDS, parseCommand, runCommand } from './commands.js';
export {
  type DatasetView,
  datasetView,
  isServing,
  type SpiceDatasetStatus,
  spiceStatus,
} from './dataset-view.js';
export {
  BadRequestError,
  BodyTooLargeError,
  errorCode,
  httpStatusFor,
  InvalidCommandError,
  MethodNotAllowedError,
  RouteNotFoundError,
  requestError,
  SnapshotNotFoundError,
  SnapshotsReadOnlyError,
  TableTooLargeError,
  UnauthorizedError,
  UnsupportedContentEncodingError,
} from './errors.js';
export { csvLine, toCsv, toTextTable } from './formats.js';
export { type ErrorBody, errorResponse, sendError, sendJson, sendText } from './http.js';
export * from './inspector/index.js';
export {
  createServerMetrics,
  QUERY_SECONDS_BUCKETS,
  type QueryOutcome,
  type ServerMetrics,
} from './metrics.js';
export { OpenRequests, type Route, type RouteContext } from './route.js';
export {
  createRequestHandler,
  DEFAULT_HOST,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_PORT,
  type RequestHandler,
  type RunningServer,
  type ServerOptions,
  startServer,
} from './server.js';
export { type SpiceSnapshotEntry, type SpiceSnapshotSummary, snapshotSummary } from './snapshot-view.js';
export { parseSqlRequest, SQL_BODY_HINT, type SqlRequest } from './sql-request.js';
export {
  ARROW_STREAM_TYPE,
  answerSql,
  JSON_LINES_TYPE,
  SQL_MEDIA_TYPES,
  type SqlAnswer,
  type SqlLimits,
  type SqlMediaType,
  TEXT_BATCH_ROWS,
} from './sql-response.js';
