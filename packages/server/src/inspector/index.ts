/**
 * The inspector's public face: the built-in page's routes (`inspectorRoutes`), the hub behind its
 * overview and detail streams, the machine graph the page draws, and the Stately inspector bridge.
 */
export {
  InspectorAssetNotFoundError,
  InspectorAssetsMissingError,
  InspectorUnauthorizedError,
  InvalidInspectorUrlError,
} from './errors.js';
export {
  type ActivityEntry,
  type DetailSnapshot,
  type DetailUpdate,
  type HistoryEntry,
  type InspectorEvent,
  InspectorHub,
  type InspectorHubOptions,
  type OverviewSnapshot,
  type OverviewUpdate,
} from './hub.js';
export {
  datasetMachineGraph,
  eventLabel,
  type GraphEdge,
  type GraphState,
  type GraphTrigger,
  type MachineGraph,
  machineGraph,
  type StateNodeLike,
} from './machine-graph.js';
export {
  type OverviewCounts,
  type OverviewRow,
  overviewCounts,
  overviewRow,
  type RowHealth,
  type StoreSync,
} from './overview.js';
export { type InspectorRoutes, type InspectorRoutesOptions, inspectorRoutes } from './routes.js';
export { type InspectorSessionOptions, SESSION_COOKIE } from './session.js';
export { type StatelyBridge, type StatelyBridgeOptions, startStatelyBridge } from './stately-bridge.js';
export type { SseStreamOptions } from './stream.js';
