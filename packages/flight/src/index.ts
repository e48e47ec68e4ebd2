/**
 * @ferry/flight: Arrow Flight and Flight SQL over a Ferry runtime — `startFlightServer` (what
 * `ferry serve --flight` runs), the {@link ResultSource} seam the results come through, and the
 * proto files' location for clients built on the same protos.
 */
export { ANONYMOUS_TOKEN } from './auth.js';
export {
  ArrowConversionError,
  FlightCapacityError,
  FlightHandleNotFoundError,
  FlightRequestError,
  FlightUnauthenticatedError,
  FlightUnsupportedError,
  grpcErrorOf,
  publicMessage,
} from './errors.js';
export { flightDataToIpc, splitIpcStream } from './ipc.js';
export { FLIGHT_PROTO, FLIGHT_SQL_PROTO, PROTO_DIR, PROTO_LOADER_OPTIONS } from './protocol.js';
export {
  type ArrowResult,
  type ResultSource,
  type RuntimeResultSourceOptions,
  runtimeResultSource,
} from './result-source.js';
export {
  DEFAULT_FLIGHT_HOST,
  DEFAULT_FLIGHT_PORT,
  DEFAULT_WRITE_WINDOW_BYTES,
  type FlightServerOptions,
  type FlightTlsOptions,
  type RunningFlightServer,
  routeGrpcLogs,
  startFlightServer,
} from './server.js';
