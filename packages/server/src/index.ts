/**
 * @ferry/server: the HTTP API over a Ferry runtime (a Spice-compatible subset) — `startServer`,
 * the router and its `Route` type for adding routes, the inspector (its page's routes and the
 * Stately inspector bridge), the error-to-status table, and the small Prometheus text formatter
 * `/metrics` uses.
 */
export { apiRoutes, parseSqlRequest } from './api-routes.js';
export { apiKeyChecker, presentedKey } from './auth.js';
export { type DatasetView, datasetView, isServing } from './dataset-view.js';
export {
  BadRequestError,
  BodyTooLargeError,
  errorCode,
  httpStatusFor,
  InvalidCommandError,
  MethodNotAllowedError,
  RouteNotFoundError,
  UnauthorizedError,
} from './errors.js';
export { type ErrorBody, readBody, sendError, sendJson, sendText } from './http.js';
export * from './inspector/index.js';
export { collectMetrics } from './metrics.js';
export {
  DEFAULT_SECONDS_BUCKETS,
  formatMetrics,
  formatValue,
  Histogram,
  type Labels,
  type MetricFamily,
  type MetricType,
  PROMETHEUS_CONTENT_TYPE,
  type Sample,
} from './prometheus.js';
export { matchRoute, type Route, type RouteContext, type RouteMatch } from './router.js';
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
